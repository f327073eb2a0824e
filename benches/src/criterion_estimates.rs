//! Reads the medians criterion wrote for this run, so an in-process bench
//! can print its ratio against the baseline it measured alongside.
//!
//! Criterion stores `<dir>/<group>/<function>/new/estimates.json`, where
//! `<dir>` is `$CARGO_TARGET_DIR/criterion`, else the target directory
//! `cargo metadata` names, plus `criterion`. Ids used here are plain
//! `[a-z0-9_]`, which criterion keeps as they are.

use std::path::PathBuf;
use std::process::Command;
use std::time::SystemTime;

/// Where criterion writes its results, found the way criterion finds it.
pub fn dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty()) {
        return PathBuf::from(d).join("criterion");
    }
    let from_cargo = std::env::var_os("CARGO").and_then(|cargo| {
        let out = Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--no-deps"])
            .output()
            .ok()?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        Some(PathBuf::from(v["target_directory"].as_str()?))
    });
    from_cargo
        .unwrap_or_else(crate::workdir::target_dir)
        .join("criterion")
}

/// The median time per iteration (ns) criterion estimated for
/// `group/function`, if it was written at or after `since` (so a function
/// a filter skipped does not report an old figure).
pub fn median_ns(group: &str, function: &str, since: SystemTime) -> Option<f64> {
    let path = dir()
        .join(group)
        .join(function)
        .join("new")
        .join("estimates.json");
    let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
    if modified < since {
        return None;
    }
    let text = std::fs::read(&path).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&text).ok()?;
    v["median"]["point_estimate"].as_f64()
}
