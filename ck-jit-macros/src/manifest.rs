//! The manifest as the macro sees it at expansion time: where it is (the
//! only place this crate reads the environment), where a `manifest_file`
//! path starts from, and parsed content, cached so that many attributes in
//! one crate read and parse each file once.
//!
//! It only reads. No manifest means no check, never an error; a manifest
//! that exists but cannot be read or parsed is reported by `valid`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::SystemTime;

use ck_jit_manifest::{Manifest, MANIFEST_FILE};

/// Names a manifest file to check blob names against, for every attribute.
pub(crate) const CHECK_VAR: &str = "CK_JIT_CHECK_MANIFEST";

/// A parsed manifest, or why it could not be read or parsed.
pub(crate) type Loaded = Rc<Result<Manifest, String>>;

/// The manifest found for this expansion.
pub(crate) struct Found {
    /// Where it was read from.
    pub path: PathBuf,
    /// Named by [`CHECK_VAR`]: it applies to every attribute, also those
    /// with their own `manifest = ...`. The one in `OUT_DIR` only applies
    /// to attributes using the crate's default manifest.
    pub explicit: bool,
    /// Its content.
    pub manifest: Loaded,
}

/// The manifest to check against: `$CK_JIT_CHECK_MANIFEST`, else
/// `$OUT_DIR/ck_jit_manifest.json` when that file exists, else none.
pub(crate) fn find() -> Option<Found> {
    let (path, explicit) = locate(|name| std::env::var_os(name))?;
    let manifest = load(&path);
    Some(Found {
        path,
        explicit,
        manifest,
    })
}

/// The manifest's path and whether it was named explicitly, reading the
/// environment through `var`.
fn locate(var: impl Fn(&str) -> Option<OsString>) -> Option<(PathBuf, bool)> {
    if let Some(path) = var(CHECK_VAR).filter(|v| !v.is_empty()) {
        return Some((PathBuf::from(path), true));
    }
    // Cargo sets OUT_DIR for the crate being compiled when it has a build
    // script; without the file the crate's manifest comes from elsewhere.
    let path = Path::new(&var("OUT_DIR")?).join(MANIFEST_FILE);
    path.is_file().then_some((path, false))
}

/// The directory a relative `manifest_file = "..."` path starts from: the
/// one holding the source file of the attribute, as for `include_str!`;
/// else (a source without a file on disk) `CARGO_MANIFEST_DIR`; else the
/// current directory. Absolute, since the expansion embeds it.
pub(crate) fn base_dir(source_file: Option<PathBuf>) -> PathBuf {
    let dir = source_file
        .and_then(|file| file.parent().map(Path::to_path_buf))
        .or_else(|| std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from))
        .filter(|dir| !dir.as_os_str().is_empty())
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default();
    // Relative paths are the compiler's, relative to its working directory,
    // which is this process's.
    std::path::absolute(&dir).unwrap_or(dir)
}

/// What identifies one version of a file: its modification time and size.
/// A long-lived expansion server sees the file change between builds.
type Stamp = (Option<SystemTime>, u64);

thread_local! {
    static CACHE: RefCell<HashMap<PathBuf, (Stamp, Loaded)>> = RefCell::new(HashMap::new());
}

/// Reads and parses `path`, or returns the result of an earlier call for
/// the same unchanged file.
pub(crate) fn load(path: &Path) -> Loaded {
    let stamp = match std::fs::metadata(path) {
        Ok(meta) => (meta.modified().ok(), meta.len()),
        Err(e) => return Rc::new(Err(e.to_string())),
    };
    let cached = CACHE.with(|cache| {
        cache
            .borrow()
            .get(path)
            .filter(|(seen, _)| *seen == stamp)
            .map(|(_, loaded)| Rc::clone(loaded))
    });
    if let Some(loaded) = cached {
        return loaded;
    }
    let loaded = Rc::new(read(path));
    CACHE.with(|cache| {
        cache
            .borrow_mut()
            .insert(path.to_path_buf(), (stamp, Rc::clone(&loaded)))
    });
    loaded
}

fn read(path: &Path) -> Result<Manifest, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    Manifest::from_json(&text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    }

    #[test]
    fn the_check_variable_wins_then_out_dir_when_it_holds_a_manifest() {
        let fixtures = fixture("");
        let env = |check: Option<&str>, out_dir: Option<&Path>| {
            let check = check.map(OsString::from);
            let out_dir = out_dir.map(OsString::from);
            locate(move |name| match name {
                CHECK_VAR => check.clone(),
                "OUT_DIR" => out_dir.clone(),
                _ => None,
            })
        };
        assert_eq!(
            env(Some("/x/m.json"), Some(&fixtures)),
            Some((PathBuf::from("/x/m.json"), true))
        );
        // The fixtures folder has no ck_jit_manifest.json.
        assert_eq!(env(Some(""), Some(&fixtures)), None);
        assert_eq!(env(None, None), None);

        let out_dir =
            std::env::temp_dir().join(format!("ck-jit-macros-out-{}", std::process::id()));
        std::fs::create_dir_all(&out_dir).unwrap();
        std::fs::write(out_dir.join(MANIFEST_FILE), "{}").unwrap();
        assert_eq!(
            env(None, Some(&out_dir)),
            Some((out_dir.join(MANIFEST_FILE), false))
        );
        std::fs::remove_dir_all(&out_dir).unwrap();
    }

    #[test]
    fn the_fixture_manifest_loads_once_and_is_then_cached() {
        let path = fixture("manifest.json");
        let first = load(&path);
        let manifest = first.as_ref().as_ref().expect("fixture parses");
        assert!(manifest.blob("vadd_f32").is_some());
        assert!(Rc::ptr_eq(&first, &load(&path)), "parsed twice");
    }

    #[test]
    fn a_changed_file_is_parsed_again() {
        let dir = std::env::temp_dir().join(format!("ck-jit-macros-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("changing.json");
        std::fs::write(&path, "{").unwrap();
        let broken = load(&path);
        assert!(broken.is_err());
        let good = std::fs::read_to_string(fixture("manifest.json")).unwrap();
        std::fs::write(&path, good).unwrap();
        assert!(load(&path).is_ok(), "stale cache entry served");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unreadable_and_malformed_manifests_are_errors_not_panics() {
        let missing = load(&fixture("does-not-exist.json"));
        assert!(missing.is_err());
        let malformed = load(&fixture("malformed_manifest.json"));
        let Err(err) = malformed.as_ref() else {
            panic!("accepted")
        };
        assert!(err.starts_with("malformed manifest: "), "{err}");
    }
}
