//! Starting the `load-probe` process and reading the one JSON line it
//! prints, for the benches that need fresh processes (cold loads and
//! stampedes).

use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Starts `exe args...` with stdout captured (stderr passes through).
pub fn spawn<S: AsRef<std::ffi::OsStr>>(exe: &Path, args: &[S]) -> Result<Child, String> {
    Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))
}

/// Waits for a probe and parses its report; an exit failure or an
/// `error` field is an error carrying the probe's message.
pub fn finish(child: Child) -> Result<serde_json::Value, String> {
    let out = child
        .wait_with_output()
        .map_err(|e| format!("waiting for a probe: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or("");
    let v: serde_json::Value = serde_json::from_str(line)
        .map_err(|e| format!("probe printed {line:?} ({e}), exit {}", out.status))?;
    if let Some(e) = v.get("error") {
        return Err(format!("probe failed: {e}"));
    }
    if !out.status.success() {
        return Err(format!("probe exited with {}", out.status));
    }
    Ok(v)
}

/// The numbers of a JSON array field (empty when absent).
pub fn numbers(v: &serde_json::Value, field: &str) -> Vec<f64> {
    v[field]
        .as_array()
        .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
        .unwrap_or_default()
}
