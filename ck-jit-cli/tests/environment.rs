//! Variables the tool cannot read are refused before any work, naming the
//! variable, its value and what it should look like.

use std::process::Command;

const CK_JIT: &str = env!("CARGO_BIN_EXE_ck-jit");

fn stat_with(vars: &[(&str, &str)]) -> (i32, String) {
    let dir = std::env::temp_dir().join(format!("ck-jit-cli-env-{}", std::process::id()));
    let mut c = Command::new(CK_JIT);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("CK_JIT_") {
            c.env_remove(k);
        }
    }
    c.arg("stat")
        .env("CK_JIT_CACHE_DIR", dir.join("cache"))
        .envs(vars.iter().copied());
    let out = c.output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn malformed_variables_are_refused_naming_the_value_and_the_accepted_forms() {
    for (var, value, expected) in [
        ("CK_JIT_JOBS", "four", "positive whole number"),
        ("CK_JIT_JOBS", "0", "positive whole number"),
        ("CK_JIT_COMPILE_TIMEOUT", "1h", "positive number of seconds"),
        ("CK_JIT_LOCK_TIMEOUT", "-5", "positive number of seconds"),
        ("CK_JIT_OFFLINE", "maybe", "not a switch"),
        ("CK_JIT_VERIFY", "paranoid", "full, or default"),
    ] {
        let (code, stderr) = stat_with(&[(var, value)]);
        assert_eq!(code, 2, "{var}={value}: {stderr}");
        assert!(
            stderr.contains(&format!("{var}='{value}'")) && stderr.contains(expected),
            "{var}={value}: {stderr}"
        );
    }
    // Well-formed values run.
    let (code, stderr) = stat_with(&[
        ("CK_JIT_JOBS", "3"),
        ("CK_JIT_OFFLINE", "off"),
        ("CK_JIT_VERIFY", "full"),
        ("CK_JIT_COMPILE_TIMEOUT", "0.5"),
    ]);
    assert_eq!(code, 0, "{stderr}");
}
