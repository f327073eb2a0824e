//! Assembling and writing a manifest: the one path behind [`Build`] and
//! the crates that record blobs of their own kind (the CK crate's preset
//! and interceptor). Each of them decides *which* files are blobs and how
//! to compile them; this module resolves the cache name and
//! the output directory, checks every blob's name and source, refuses two
//! blobs with one name, sorts, validates and writes the file (only when it
//! changed, never half-written).
//!
//! It also holds the plumbing every builder's `try_write`,
//! `try_write_with_output` and `write` share ([`to_stdout`],
//! [`CargoOutput::to_if`], [`or_panic`]), so that it is written once.
//!
//! It reads the environment only through [`CargoOutput::var`], and starts no
//! program.
//!
//! [`Build`]: crate::Build

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::cargo::CargoOutput;
use crate::env;
use crate::error::Error;
use crate::manifest::{self, check_name, check_source, escape, Blob, Group, Manifest};

/// The cache name: the explicit one, else `CK_JIT_NAME`, else
/// [`manifest::DEFAULT_NAME`]; checked like a blob name.
pub fn cache_name(explicit: Option<&str>, cargo: &mut CargoOutput<'_>) -> Result<String, Error> {
    let name = match explicit {
        Some(n) => n.to_string(),
        None => match cargo.var(env::CK_JIT_NAME) {
            Some(v) if !v.is_empty() => v.into_string().map_err(|_| Error::Env {
                var: env::CK_JIT_NAME,
                why: "is not valid UTF-8",
            })?,
            _ => manifest::DEFAULT_NAME.to_string(),
        },
    };
    check_name(&name).map_err(|source| Error::CacheName {
        name: escape(&name),
        source,
    })?;
    Ok(name)
}

/// The directory the manifest goes to: the explicit one, else `OUT_DIR`;
/// created if missing, and canonical. `hint` names the setter(s) that
/// replace `OUT_DIR` outside cargo.
pub fn out_dir(
    explicit: Option<&Path>,
    hint: &'static str,
    cargo: &mut CargoOutput<'_>,
) -> Result<PathBuf, Error> {
    let dir = match explicit {
        Some(d) => d.to_path_buf(),
        None => cargo
            .var(env::OUT_DIR)
            .map(PathBuf::from)
            .ok_or(Error::Env {
                var: env::OUT_DIR,
                why: hint,
            })?,
    };
    let write_err = |source| Error::WriteManifest {
        path: dir.join(manifest::MANIFEST_FILE),
        source,
    };
    fs::create_dir_all(&dir).map_err(write_err)?;
    fs::canonicalize(&dir).map_err(write_err)
}

/// Writes `manifest` as `out_dir`'s manifest file and its compact form
/// beside it (each unless the file already holds exactly that), then
/// flushes the `cargo:` lines. Returns the JSON file's path. The manifest
/// is written as given: [`Assembler::finish`] validates it.
pub fn write(
    manifest: &Manifest,
    out_dir: &Path,
    cargo: CargoOutput<'_>,
) -> Result<PathBuf, Error> {
    let path = out_dir.join(manifest::MANIFEST_FILE);
    write_if_changed(&path, manifest.to_json()).map_err(|source| Error::WriteManifest {
        path: path.clone(),
        source,
    })?;
    // The form a program embeds (`embed_manifest!`): read in place, so a
    // lookup at run time parses nothing.
    let compact = out_dir.join(manifest::compact::COMPACT_FILE);
    write_if_changed(&compact, manifest.to_compact()).map_err(|source| Error::WriteManifest {
        path: compact.clone(),
        source,
    })?;
    cargo
        .finish()
        .map_err(|source| Error::CargoOutput { source })?;
    Ok(path)
}

/// A builder's `try_write`: its `try_write_with_output` (`write`) with the
/// `cargo:` lines going to stdout, locked for the whole write so no other
/// thread's output splits them.
pub fn to_stdout<T>(write: impl FnOnce(&mut dyn io::Write) -> T) -> T {
    let stdout = io::stdout();
    let mut lock = stdout.lock();
    write(&mut lock)
}

/// A builder's `write`: the result of its `try_write`, or a panic whose
/// message is `crate_name` and the error.
#[track_caller]
pub fn or_panic<T, E: std::fmt::Display>(crate_name: &str, result: Result<T, E>) -> T {
    match result {
        Ok(written) => written,
        Err(e) => panic!("{crate_name}: {e}"),
    }
}

/// Writes a manifest assembled outside [`Build`](crate::Build) (edited
/// after [`Build::try_manifest`](crate::Build::try_manifest), or made by
/// hand) into `out_dir`: the JSON file and the compact form that
/// `ck_jit_rt::embed_manifest!()` embeds, each only when its contents
/// changed. The manifest is validated first; nothing is written if it is
/// invalid. Returns the JSON file's path.
///
/// ```no_run
/// # fn main() -> Result<(), ck_jit_build::Error> {
/// let mut build = ck_jit_build::Build::new();
/// let mut manifest = build.try_manifest()?;
/// manifest.blobs.retain(|b| !b.name.ends_with("_slow"));
/// ck_jit_build::write_manifest(&manifest, std::env::var("OUT_DIR").unwrap())?;
/// # Ok(()) }
/// ```
pub fn write_manifest(manifest: &Manifest, out_dir: impl AsRef<Path>) -> Result<PathBuf, Error> {
    manifest.validate()?;
    let out_dir = out_dir.as_ref();
    fs::create_dir_all(out_dir).map_err(|source| Error::WriteManifest {
        path: out_dir.join(manifest::MANIFEST_FILE),
        source,
    })?;
    write(manifest, out_dir, CargoOutput::silent())
}

/// Writes `text` to `path` unless it already holds exactly that, through a
/// temporary file in the same directory so a reader never sees half of it
/// and an unchanged file keeps its mtime (nothing downstream rebuilds).
pub fn write_if_changed(path: &Path, text: impl AsRef<[u8]>) -> io::Result<()> {
    let text = text.as_ref();
    if fs::read(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{file_name}.tmp"));
    fs::write(&tmp, text)?;
    fs::rename(&tmp, path).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

/// Why [`Assembler::blob`] refused a blob: its name or source path
/// (for the caller to report with the file it came from), or a second blob
/// of the same name.
#[derive(Debug)]
pub enum Refused {
    /// The name or the source path is not acceptable.
    Name(manifest::ManifestError),
    /// Another blob already has this name.
    Duplicate(Error),
}

/// A manifest being assembled: groups and blobs in, a checked, sorted,
/// validated [`Manifest`] out.
pub struct Assembler {
    manifest: Manifest,
    /// Blob name -> source, to name both files of a duplicate.
    sources: BTreeMap<String, String>,
}

impl Assembler {
    /// An empty manifest for cache `name` over the canonical `root`.
    pub fn new(name: String, root: &str) -> Assembler {
        Assembler {
            manifest: Manifest::new(name, root),
            sources: BTreeMap::new(),
        }
    }

    /// Adds a rendered group; returns its index for the blobs that use it.
    pub fn group(&mut self, group: Group) -> u32 {
        self.manifest.groups.push(group);
        (self.manifest.groups.len() - 1) as u32
    }

    /// Adds a blob after checking its name and source path, refusing a
    /// second blob of the same name (naming both sources).
    pub fn blob(&mut self, blob: Blob) -> Result<(), Refused> {
        check_name(&blob.name).map_err(Refused::Name)?;
        check_source(&blob.name, &blob.source).map_err(Refused::Name)?;
        if let Some(first) = self.sources.get(&blob.name) {
            return Err(Refused::Duplicate(Error::DuplicateBlob {
                name: blob.name.clone(),
                first: first.clone(),
                second: blob.source.clone(),
            }));
        }
        self.sources.insert(blob.name.clone(), blob.source.clone());
        self.manifest.blobs.push(blob);
        Ok(())
    }

    /// Sorts the blobs and validates the whole manifest.
    pub fn finish(self) -> Result<Manifest, Error> {
        let mut manifest = self.manifest;
        manifest.finish()?;
        Ok(manifest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(name: &str, source: &str) -> Blob {
        Blob {
            name: name.into(),
            source: source.into(),
            group: 0,
            symbol: None,
            meta: BTreeMap::new(),
        }
    }

    fn group() -> Group {
        Group {
            name: "g".into(),
            compiler: "cc".into(),
            args: vec!["{src}".into(), "-o".into(), "{out}".into()],
            cwd: None,
            symbol: manifest::SymbolSpec::Exact("{name}".into()),
            depfile: false,
            family: None,
            neutral: Default::default(),
        }
    }

    #[test]
    fn blobs_come_out_sorted_and_a_second_name_names_both_files() {
        let mut r = Assembler::new("n".into(), "/root");
        r.group(group());
        r.blob(blob("b", "x/b.c")).unwrap();
        r.blob(blob("a", "x/a.c")).unwrap();
        match r.blob(blob("a", "y/a.c")) {
            Err(Refused::Duplicate(e)) => {
                let text = e.to_string();
                assert!(text.contains("x/a.c") && text.contains("y/a.c"), "{text}");
            }
            other => panic!("expected a duplicate, got {other:?}"),
        }
        let m = r.finish().unwrap();
        let names: Vec<&str> = m.blobs.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn a_hostile_name_or_source_is_refused_as_a_name() {
        let mut r = Assembler::new("n".into(), "/root");
        r.group(group());
        assert!(matches!(r.blob(blob("../x", "x.c")), Err(Refused::Name(_))));
        assert!(matches!(
            r.blob(blob("x", "/etc/x.c")),
            Err(Refused::Name(_))
        ));
    }
}
