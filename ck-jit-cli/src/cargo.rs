//! Finds the manifest a cargo package's build script wrote, the way cargo
//! tools find a crate: `cargo metadata` names the workspace's packages and
//! the directory builds go to, and the manifest is
//! `<build dir>[/<target triple>]/<profile dir>/build/<package>-<hash>/out/ck_jit_manifest.json`.
//!
//! The package is `--package`, else the one whose directory holds the
//! current directory, else the workspace's only package with a built
//! manifest. Of several builds (profiles, or hashes of one profile) the
//! newest manifest wins, unless `--profile` names the profile.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

use ck_jit_rt::manifest::MANIFEST_FILE;
use serde::Deserialize;

use crate::error::CliError;

/// A cargo workspace as `cargo metadata --no-deps` describes it.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    /// Where build scripts' `OUT_DIR`s are: cargo's build directory (the
    /// target directory unless `build.build-dir` moves it).
    build_dir: PathBuf,
    packages: Vec<Package>,
}

#[derive(Debug)]
struct Package {
    name: String,
    /// The directory of its `Cargo.toml`.
    dir: PathBuf,
}

/// The part of `cargo metadata`'s output read here.
#[derive(Deserialize)]
struct Metadata {
    workspace_root: PathBuf,
    target_directory: PathBuf,
    #[serde(default)]
    build_directory: Option<PathBuf>,
    packages: Vec<MetadataPackage>,
}

#[derive(Deserialize)]
struct MetadataPackage {
    name: String,
    manifest_path: PathBuf,
}

/// The manifest chosen, and how many builds it was chosen from.
#[derive(Debug)]
pub struct Found {
    /// The manifest file.
    pub path: PathBuf,
    /// How many builds of the package hold a manifest (of the profile asked
    /// for, if any).
    pub among: usize,
    /// Whether those builds are of more than one profile.
    pub several_profiles: bool,
}

/// One build of a package that holds a manifest.
#[derive(Debug)]
struct Build {
    path: PathBuf,
    profile_dir: String,
    modified: SystemTime,
}

impl Workspace {
    /// Runs `cargo metadata` (`$CARGO`, else `cargo`) in `cwd`. The error
    /// says why there is no workspace: cargo is missing, or `cwd` is not in
    /// a cargo project.
    pub fn load(cwd: &Path) -> Result<Workspace, String> {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = Command::new(&cargo)
            .args(["metadata", "--format-version", "1", "--no-deps"])
            .current_dir(cwd)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", Path::new(&cargo).display()))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let why = stderr
                .lines()
                .find(|l| !l.trim().is_empty())
                .map(|l| l.trim().trim_start_matches("error: "))
                .unwrap_or("no message");
            return Err(format!("`cargo metadata` failed: {why}"));
        }
        Workspace::from_metadata(&out.stdout)
    }

    /// Reads `cargo metadata --format-version 1` output.
    fn from_metadata(json: &[u8]) -> Result<Workspace, String> {
        let m: Metadata = serde_json::from_slice(json)
            .map_err(|e| format!("`cargo metadata` printed what is not its format: {e}"))?;
        Ok(Workspace {
            root: m.workspace_root,
            build_dir: m.build_directory.unwrap_or(m.target_directory),
            packages: m
                .packages
                .into_iter()
                .map(|p| Package {
                    dir: p
                        .manifest_path
                        .parent()
                        .map(Path::to_path_buf)
                        .unwrap_or_default(),
                    name: p.name,
                })
                .collect(),
        })
    }

    /// The manifest of `package` (else the package `cwd` is in, else the
    /// only one built), of profile `profile` (else the newest).
    pub fn find(
        &self,
        cwd: &Path,
        package: Option<&str>,
        profile: Option<&str>,
    ) -> Result<Found, CliError> {
        let profile_dir = profile.map(profile_dir);
        let name = self.choose(cwd, package, profile_dir)?;
        let mut builds = self.builds(name, profile_dir);
        if builds.is_empty() {
            let build = match profile {
                None | Some("dev") => "cargo build".to_string(),
                Some("release") => "cargo build --release".to_string(),
                Some(p) => format!("cargo build --profile {p}"),
            };
            let which = match (profile, profile_dir) {
                (Some(p), Some(d)) => format!(" of profile {p} ({d}/)"),
                _ => String::new(),
            };
            return Err(CliError::Usage(format!(
                "no build{which} of package {name} holds a {MANIFEST_FILE} under {}; \
                 run `{build}` for it first (its build script writes the manifest), \
                 or pass --manifest PATH",
                self.build_dir.display()
            )));
        }
        builds.sort_by(|a, b| b.modified.cmp(&a.modified).then(a.path.cmp(&b.path)));
        let several_profiles = builds
            .iter()
            .any(|b| b.profile_dir != builds[0].profile_dir);
        Ok(Found {
            among: builds.len(),
            several_profiles,
            path: builds.swap_remove(0).path,
        })
    }

    /// The package's name: the one asked for, else the innermost one whose
    /// directory holds `cwd`, else the only one with a built manifest (or
    /// the only one at all).
    fn choose<'a>(
        &'a self,
        cwd: &Path,
        package: Option<&'a str>,
        profile_dir: Option<&str>,
    ) -> Result<&'a str, CliError> {
        let names = || {
            self.packages
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if let Some(name) = package {
            return match self.packages.iter().find(|p| p.name == name) {
                Some(p) => Ok(&p.name),
                None => Err(CliError::Usage(format!(
                    "--package {name}: no such package in the cargo workspace at {}; \
                     its packages: {}",
                    self.root.display(),
                    names()
                ))),
            };
        }
        let cwd = canonical(cwd);
        if let Some(p) = self
            .packages
            .iter()
            .filter(|p| cwd.starts_with(canonical(&p.dir)))
            .max_by_key(|p| p.dir.components().count())
        {
            return Ok(&p.name);
        }
        let built: Vec<&Package> = self
            .packages
            .iter()
            .filter(|p| !self.builds(&p.name, profile_dir).is_empty())
            .collect();
        match (built.as_slice(), self.packages.as_slice()) {
            ([one], _) => Ok(&one.name),
            ([], [one]) => Ok(&one.name),
            ([], _) => Err(CliError::Usage(format!(
                "no package of the cargo workspace at {} has a build holding a {MANIFEST_FILE} \
                 (its packages: {}); run `cargo build` for the one whose build script writes it, \
                 or pass --package NAME",
                self.root.display(),
                names()
            ))),
            (several, _) => Err(CliError::Usage(format!(
                "{} packages of the cargo workspace at {} have a built manifest: {}; \
                 pass --package NAME to choose one",
                several.len(),
                self.root.display(),
                several
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// Every build of package `name` holding a manifest, in profile
    /// directory `profile_dir` or any: `<build dir>/<profile>/build/...` and,
    /// for builds for another target, `<build dir>/<triple>/<profile>/build/...`.
    fn builds(&self, name: &str, profile_dir: Option<&str>) -> Vec<Build> {
        let mut found = Vec::new();
        for top in subdirs(&self.build_dir) {
            let mut profiles = vec![top.clone()];
            profiles.extend(subdirs(&top));
            for dir in profiles {
                let Some(profile) = dir.file_name().map(|n| n.to_string_lossy().into_owned())
                else {
                    continue;
                };
                if profile_dir.is_some_and(|p| p != profile) {
                    continue;
                }
                for build in subdirs(&dir.join("build")) {
                    let ours = build
                        .file_name()
                        .is_some_and(|n| is_build_of(&n.to_string_lossy(), name));
                    if !ours {
                        continue;
                    }
                    let path = build.join("out").join(MANIFEST_FILE);
                    let modified = match path.metadata() {
                        Ok(m) if m.is_file() => m.modified(),
                        _ => continue,
                    };
                    found.push(Build {
                        path,
                        profile_dir: profile.clone(),
                        modified: modified.unwrap_or(SystemTime::UNIX_EPOCH),
                    });
                }
            }
        }
        found
    }
}

/// The directory cargo puts a profile's builds in.
pub fn profile_dir(profile: &str) -> &str {
    match profile {
        "dev" | "test" => "debug",
        "release" | "bench" => "release",
        other => other,
    }
}

/// Whether `dir` (a name under `build/`) is a build of package `name`:
/// `<name>-<hash>`, the hash hexadecimal (so `foo` is not `foo-bar-<hash>`).
fn is_build_of(dir: &str, name: &str) -> bool {
    dir.strip_prefix(name)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|hash| !hash.is_empty() && hash.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The directories in `dir` (none when it cannot be read).
fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_directories_match_the_package_and_a_hash_only() {
        assert!(is_build_of("ck-fmha-0123456789abcdef", "ck-fmha"));
        assert!(is_build_of("foo-1a2b", "foo"));
        assert!(!is_build_of("foo-bar-0123456789abcdef", "foo"));
        assert!(!is_build_of("foo-", "foo"));
        assert!(!is_build_of("foo", "foo"));
        assert!(!is_build_of("foobar-1a2b", "foo"));
    }

    #[test]
    fn profiles_map_to_cargo_directories() {
        assert_eq!(profile_dir("dev"), "debug");
        assert_eq!(profile_dir("test"), "debug");
        assert_eq!(profile_dir("release"), "release");
        assert_eq!(profile_dir("bench"), "release");
        assert_eq!(profile_dir("profiling"), "profiling");
    }

    #[test]
    fn metadata_gives_the_build_directory_before_the_target_directory() {
        let json = br#"{"packages":[{"name":"a","manifest_path":"/w/a/Cargo.toml","id":"x"}],
            "workspace_root":"/w","target_directory":"/w/target","build_directory":"/w/build",
            "version":1}"#;
        let ws = Workspace::from_metadata(json).unwrap();
        assert_eq!(ws.build_dir, Path::new("/w/build"));
        assert_eq!(ws.packages[0].dir, Path::new("/w/a"));
        let older = br#"{"packages":[],"workspace_root":"/w","target_directory":"/w/target"}"#;
        assert_eq!(
            Workspace::from_metadata(older).unwrap().build_dir,
            Path::new("/w/target")
        );
        assert!(Workspace::from_metadata(b"not json").is_err());
    }
}
