//! The `cargo:` lines a build script prints: the only place this crate
//! (and the crates that assemble manifests with [`crate::record`]) writes
//! them. Each is one whole line; a value is never allowed to carry a
//! line break, which would let the rest of it be read as another directive.

use std::borrow::Cow;
use std::io::{self, Write};

/// Where `cargo:` lines go: a writer (stdout in a build script, a buffer in
/// tests) or nowhere.
///
/// ```
/// let mut buf = Vec::new();
/// let mut out = ck_jit_build::CargoOutput::to(&mut buf);
/// out.rerun_if_changed("kernels");
/// out.finish().unwrap();
/// assert_eq!(buf, b"cargo:rerun-if-changed=kernels\n");
/// ```
pub struct CargoOutput<'a> {
    out: Option<&'a mut dyn Write>,
    error: Option<io::Error>,
}

impl<'a> CargoOutput<'a> {
    /// Lines go to `out`.
    pub fn to(out: &'a mut dyn Write) -> CargoOutput<'a> {
        CargoOutput {
            out: Some(out),
            error: None,
        }
    }

    /// Lines go to `out` when `print`, else nowhere: what a builder's
    /// `cargo_metadata(print)` setting chooses.
    pub fn to_if(print: bool, out: &'a mut dyn Write) -> CargoOutput<'a> {
        if print {
            CargoOutput::to(out)
        } else {
            CargoOutput::silent()
        }
    }

    /// Lines go nowhere.
    pub fn silent<'b>() -> CargoOutput<'b> {
        CargoOutput {
            out: None,
            error: None,
        }
    }

    /// `cargo:rerun-if-changed=PATH`.
    pub fn rerun_if_changed(&mut self, path: &str) {
        self.line("rerun-if-changed", path);
    }

    /// `cargo:rerun-if-env-changed=VAR`.
    pub fn rerun_if_env_changed(&mut self, var: &str) {
        self.line("rerun-if-env-changed", var);
    }

    /// Reads the environment variable `name`, announcing it with
    /// `cargo:rerun-if-env-changed` unless cargo sets it for every build
    /// script run (`OUT_DIR`, `CARGO_MANIFEST_DIR`): changing it reruns the
    /// build script.
    pub fn var(&mut self, name: &str) -> Option<std::ffi::OsString> {
        crate::env::var(name, |n| self.rerun_if_env_changed(n))
    }

    /// `cargo:warning=MESSAGE`, prefixed so the user sees who says it.
    pub fn warning(&mut self, message: &str) {
        self.warning_from("ck-jit-build", message);
    }

    /// `cargo:warning=WHO: MESSAGE`: a warning of another crate that
    /// prints through this one (`ck-jit-ck` for what it finds in CK).
    pub fn warning_from(&mut self, who: &str, message: &str) {
        self.line("warning", &format!("{who}: {message}"));
    }

    fn line(&mut self, key: &str, value: &str) {
        let Some(out) = self.out.as_mut() else {
            return;
        };
        if self.error.is_some() {
            return;
        }
        if let Err(e) = writeln!(out, "cargo:{key}={}", one_line(value)) {
            self.error = Some(e);
        }
    }

    /// Flushes and reports the first write error, if any.
    pub fn finish(mut self) -> io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        match self.out.as_mut() {
            Some(out) => out.flush(),
            None => Ok(()),
        }
    }
}

/// `value` with line breaks escaped, so it stays one directive.
fn one_line(value: &str) -> Cow<'_, str> {
    if value.contains(['\n', '\r']) {
        Cow::Owned(value.replace('\n', "\\n").replace('\r', "\\r"))
    } else {
        Cow::Borrowed(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_written_whole_and_single() {
        let mut buf = Vec::new();
        let mut out = CargoOutput::to(&mut buf);
        out.rerun_if_changed("/r/kernels");
        out.rerun_if_env_changed("CK_JIT_NAME");
        out.warning("two\nlines\rhere");
        out.finish().unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert_eq!(
            text,
            "cargo:rerun-if-changed=/r/kernels\n\
             cargo:rerun-if-env-changed=CK_JIT_NAME\n\
             cargo:warning=ck-jit-build: two\\nlines\\rhere\n"
        );
    }

    #[test]
    fn reading_a_variable_announces_it_unless_cargo_sets_it() {
        let mut buf = Vec::new();
        let mut out = CargoOutput::to(&mut buf);
        let _ = out.var("CK_JIT_NAME");
        let _ = out.var("OUT_DIR");
        out.finish().unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "cargo:rerun-if-env-changed=CK_JIT_NAME\n"
        );
    }

    #[test]
    fn lines_go_to_the_writer_only_when_printing_is_on() {
        for print in [true, false] {
            let mut buf = Vec::new();
            let mut out = CargoOutput::to_if(print, &mut buf);
            out.rerun_if_changed("x");
            out.finish().unwrap();
            assert_eq!(buf.is_empty(), !print);
        }
    }

    #[test]
    fn silent_output_writes_nothing_and_succeeds() {
        let mut out = CargoOutput::silent();
        out.rerun_if_changed("x");
        out.warning("y");
        assert!(out.finish().is_ok());
    }

    #[test]
    fn a_write_error_is_reported_not_swallowed() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("closed"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut sink = Broken;
        let mut out = CargoOutput::to(&mut sink);
        out.rerun_if_changed("x");
        assert!(out.finish().is_err());
    }
}
