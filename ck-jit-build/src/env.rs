//! The one place this crate reads the environment. Every variable that
//! cargo does not set itself is announced with `cargo:rerun-if-env-changed`
//! as it is read, so changing it reruns the build script; nothing else in
//! the crate may read the environment.

use std::ffi::OsString;

use crate::cargo::CargoOutput;

/// Cache name used when neither `Build::name()` nor a config file gives one.
pub(crate) const CK_JIT_NAME: &str = "CK_JIT_NAME";
/// Where the manifest is written; set by cargo.
pub(crate) const OUT_DIR: &str = "OUT_DIR";
/// Default tree root; set by cargo.
pub(crate) const CARGO_MANIFEST_DIR: &str = "CARGO_MANIFEST_DIR";

/// Variables cargo sets for every build script run: a change to them already
/// reruns it, and announcing them would only add noise.
const SET_BY_CARGO: &[&str] = &[OUT_DIR, CARGO_MANIFEST_DIR];

/// Reads `name`, announcing it to cargo unless cargo set it.
pub(crate) fn var(name: &str, cargo: &mut CargoOutput<'_>) -> Option<OsString> {
    if !SET_BY_CARGO.contains(&name) {
        cargo.rerun_if_env_changed(name);
    }
    std::env::var_os(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_announces_user_variables_only() {
        let mut buf = Vec::new();
        let mut out = CargoOutput::to(&mut buf);
        let _ = var(CK_JIT_NAME, &mut out);
        let _ = var(OUT_DIR, &mut out);
        let _ = var(CARGO_MANIFEST_DIR, &mut out);
        out.finish().unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "cargo:rerun-if-env-changed=CK_JIT_NAME\n"
        );
    }
}
