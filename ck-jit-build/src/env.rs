//! The one place this crate reads the environment. Every variable that
//! cargo does not set itself is announced with `cargo:rerun-if-env-changed`
//! as it is read (by [`CargoOutput::var`](crate::CargoOutput::var), the
//! one caller), so changing it reruns the build script; nothing else in
//! the crate may read the environment. It is the bottom of the crate: it
//! imports nothing from the modules above it.

use std::ffi::OsString;

/// Cache name used when neither `Build::name()` nor a config file gives one.
pub(crate) const CK_JIT_NAME: &str = "CK_JIT_NAME";
/// Where the manifest is written; set by cargo.
pub(crate) const OUT_DIR: &str = "OUT_DIR";
/// Default tree root; set by cargo.
pub(crate) const CARGO_MANIFEST_DIR: &str = "CARGO_MANIFEST_DIR";

/// Variables cargo sets for every build script run: a change to them already
/// reruns it, and announcing them would only add noise.
const SET_BY_CARGO: &[&str] = &[OUT_DIR, CARGO_MANIFEST_DIR];

/// Reads `name`, handing it to `announce` first unless cargo set it.
pub(crate) fn var(name: &str, announce: impl FnOnce(&str)) -> Option<OsString> {
    if !SET_BY_CARGO.contains(&name) {
        announce(name);
    }
    std::env::var_os(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_announces_user_variables_only() {
        let mut announced = Vec::new();
        for name in [CK_JIT_NAME, OUT_DIR, CARGO_MANIFEST_DIR] {
            let _ = var(name, |n| announced.push(n.to_string()));
        }
        assert_eq!(announced, [CK_JIT_NAME]);
    }
}
