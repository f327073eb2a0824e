//! [`Bindings`]: what a generator produced (the Rust source, the kernels
//! in it, the files clang read), how its items are printed and where it is
//! written.

use std::fs;
use std::path::{Path, PathBuf};

use crate::cargo::CargoOutput;
use crate::env;
use crate::Error;

/// Generated Rust source, with what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bindings {
    pub(crate) source: String,
    pub(crate) kernels: Vec<String>,
    pub(crate) inputs: Vec<PathBuf>,
}

impl Bindings {
    /// The Rust source: items to `include!` in a module.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The kernels of the `#[lazy_kernel]` block, in the header's order.
    pub fn kernels(&self) -> &[String] {
        &self.kernels
    }

    /// Every file clang read to make these bindings.
    pub fn inputs(&self) -> &[PathBuf] {
        &self.inputs
    }

    /// Writes the source to `path`, unless the file already holds exactly
    /// it (so an unchanged build does not recompile its includer). Returns
    /// whether it wrote.
    ///
    /// # Errors
    ///
    /// [`Error::WriteBindings`] when the file or its directory cannot be written.
    pub fn write_to<P: AsRef<Path>>(&self, path: P) -> Result<bool, Error> {
        let path = path.as_ref();
        if fs::read_to_string(path).is_ok_and(|old| old == self.source) {
            return Ok(false);
        }
        let err = |source| Error::WriteBindings {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(err)?;
        }
        // Through a temporary file: a reader never sees half a file.
        crate::assemble::write_if_changed(path, &self.source).map_err(err)?;
        Ok(true)
    }
}

/// The items as formatted Rust source, after `header` (comment lines).
pub(crate) fn render(header: &str, items: Vec<syn::Item>) -> String {
    let file = syn::File {
        shebang: None,
        attrs: Vec::new(),
        items,
    };
    let mut out = String::from(header);
    out.push_str(&prettyplease::unparse(&file));
    out
}

/// Runs `generate` with the `cargo:` lines printed to stdout when `print`,
/// then flushes them: the body of a generator's `try_generate`.
pub(crate) fn generate_printing(
    print: bool,
    generate: impl FnOnce(&mut CargoOutput<'_>) -> Result<Bindings, Error>,
) -> Result<Bindings, Error> {
    let mut stdout = std::io::stdout();
    let mut cargo = CargoOutput::to_if(print, &mut stdout);
    let b = generate(&mut cargo)?;
    cargo
        .finish()
        .map_err(|source| Error::CargoOutput { source })?;
    Ok(b)
}

/// Generates with `generate`, then writes the source to `file` (under
/// `OUT_DIR` when relative) unless unchanged: a generator's `try_write`.
pub(crate) fn generate_to(
    file: &Path,
    generate: impl FnOnce() -> Result<Bindings, Error>,
) -> Result<Bindings, Error> {
    let path = out_path(file, &mut CargoOutput::silent())?;
    let b = generate()?;
    b.write_to(&path)?;
    Ok(b)
}

/// `file` under `OUT_DIR` when relative, as is when absolute.
pub(crate) fn out_path(file: &Path, cargo: &mut CargoOutput<'_>) -> Result<PathBuf, Error> {
    if file.is_absolute() {
        return Ok(file.to_path_buf());
    }
    let out = cargo.var(env::OUT_DIR).ok_or(Error::Env {
        var: env::OUT_DIR,
        why: "is not set (run from a build script, or give an absolute path)",
    })?;
    Ok(PathBuf::from(out).join(file))
}

/// `cargo:rerun-if-changed` for every file read.
pub(crate) fn announce_inputs(inputs: &[PathBuf], cargo: &mut CargoOutput<'_>) {
    for p in inputs {
        if let Some(s) = p.to_str() {
            cargo.rerun_if_changed(s);
        }
    }
}
