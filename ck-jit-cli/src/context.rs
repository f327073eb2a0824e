//! Finds what a command works on: the manifest (`--manifest`, else
//! `CK_JIT_MANIFEST`, else `$CK_JIT_ROOT/ck_jit_manifest.json`, else the
//! one the build of the cargo package here wrote) and the cache
//! (`--cache-dir`, else the runtime's own resolution), and opens them the
//! way the runtime does. The environment is read only through
//! `ck_jit_rt::config`, and cargo's only through `cargo metadata`.

use std::path::{Path, PathBuf};

use ck_jit_rt::config::config;
use ck_jit_rt::maintenance::Cache;
use ck_jit_rt::manifest::MANIFEST_FILE;
use ck_jit_rt::Runtime;

use crate::args::Global;
use crate::cargo::Workspace;
use crate::error::CliError;
use crate::output::Output;

/// The resolved global settings of one run.
#[derive(Debug)]
pub struct Context {
    /// How to report.
    pub out: Output,
    manifest: Option<PathBuf>,
    package: Option<String>,
    profile: Option<String>,
    cache_dir: Option<PathBuf>,
}

impl Context {
    /// Settings from the command line (the environment is consulted lazily,
    /// only by what a command needs).
    pub fn new(global: &Global, out: Output) -> Context {
        Context {
            out,
            manifest: global.manifest.clone(),
            package: global.package.clone(),
            profile: global.profile.clone(),
            cache_dir: global.cache_dir.clone(),
        }
    }

    /// The manifest path: the flag, else `CK_JIT_MANIFEST`, else the one
    /// installed at `$CK_JIT_ROOT`, else the one the cargo package's build
    /// wrote. `--package` or `--profile` ask for the cargo build ahead of
    /// the variables.
    pub fn manifest_path(&self) -> Result<PathBuf, CliError> {
        let cfg = config();
        if let Some(p) = self.named_manifest()? {
            return Ok(p);
        }
        if self.package.is_none() && self.profile.is_none() {
            if let Some(p) = &cfg.manifest {
                return Ok(p.clone());
            }
            if let Some(root) = &cfg.root {
                return Ok(root.join(MANIFEST_FILE));
            }
        }
        self.cargo_manifest(
            "no manifest: expected --manifest PATH, or CK_JIT_MANIFEST, or CK_JIT_ROOT \
             (a tree with ck_jit_manifest.json installed beside its blobs)",
        )
    }

    /// The manifest named by `--manifest`, else the one the cargo package's
    /// build wrote: a build's manifest, never a deployed one the variables
    /// name. `expected` starts the usage error when there is neither.
    pub fn build_manifest_path(&self, expected: &str) -> Result<PathBuf, CliError> {
        match self.named_manifest()? {
            Some(p) => Ok(p),
            None => self.cargo_manifest(expected),
        }
    }

    /// `--manifest`, refused beside `--package` or `--profile` (which choose
    /// a cargo build's manifest instead), wherever on the line they are.
    fn named_manifest(&self) -> Result<Option<PathBuf>, CliError> {
        let Some(p) = &self.manifest else {
            return Ok(None);
        };
        for (given, flag) in [
            (self.package.is_some(), "--package"),
            (self.profile.is_some(), "--profile"),
        ] {
            if given {
                return Err(CliError::Usage(format!(
                    "--manifest and {flag} both say which manifest to use; give one \
                     ({flag} chooses a cargo build's)"
                )));
            }
        }
        Ok(Some(p.clone()))
    }

    /// The manifest of the cargo package here (or `--package`), of the
    /// newest build (or `--profile`'s), saying which one on stderr when
    /// there was a choice. Outside a cargo project (or without cargo) the
    /// usage error starts with `expected`, the other ways to name one.
    fn cargo_manifest(&self, expected: &str) -> Result<PathBuf, CliError> {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let workspace = Workspace::load(&cwd).map_err(|why| {
            CliError::Usage(format!(
                "{expected}, or a cargo package here whose build wrote one \
                 (looked for one: {why})"
            ))
        })?;
        let found = workspace.find(&cwd, self.package.as_deref(), self.profile.as_deref())?;
        if found.among > 1 {
            let shown = found.path.strip_prefix(&cwd).unwrap_or(&found.path);
            self.out.warn(&format!(
                "ck-jit: using {} (newest of {}{})",
                shown.display(),
                found.among,
                if found.several_profiles {
                    "; --profile to choose"
                } else {
                    ""
                }
            ));
        }
        Ok(found.path)
    }

    /// A runtime over the manifest, using `--cache-dir` when given.
    pub fn runtime(&self) -> Result<(Runtime, PathBuf), CliError> {
        let path = self.manifest_path()?;
        if !path.is_file() {
            return Err(CliError::Usage(format!(
                "manifest {} {}; expected the ck_jit_manifest.json a build wrote \
                 (see `ck-jit export-manifest`)",
                path.display(),
                if path.exists() {
                    "is not a file"
                } else {
                    "does not exist"
                }
            )));
        }
        let rt = Runtime::from_file(&path)?;
        let rt = match &self.cache_dir {
            Some(d) => rt.with_cache_dir(d),
            None => rt,
        };
        Ok((rt, path))
    }

    /// The cache for commands that need no manifest (gc, stat, verify,
    /// clean --all): `--cache-dir`, else `CK_JIT_CACHE_DIR`, else the
    /// manifest's default cache.
    pub fn cache(&self) -> Result<Cache, CliError> {
        let dir = match self
            .cache_dir
            .clone()
            .or_else(|| config().cache_dir.clone())
        {
            Some(d) => d,
            None => {
                let (rt, _) = self.runtime().map_err(|e| match e {
                    CliError::Usage(m) if m.starts_with("no manifest") => CliError::Usage(
                        "no cache: expected --cache-dir DIR or CK_JIT_CACHE_DIR, or a manifest \
                         (--manifest PATH, CK_JIT_MANIFEST, CK_JIT_ROOT or a cargo package's \
                         build) naming the default cache"
                            .into(),
                    ),
                    e => e,
                })?;
                rt.cache_dir()?
            }
        };
        open(&dir)
    }
}

/// Opens a cache root with the runtime's checks.
pub fn open(dir: &Path) -> Result<Cache, CliError> {
    Ok(Cache::open(dir, config().shared_cache)?)
}
