//! [`Build`]: collects the groups, finds their files, assembles the manifest,
//! tells cargo what to watch and writes the manifest into `OUT_DIR`.
//!
//! It must never compile a blob nor start any program: it reads directory
//! listings and config files, and writes one file.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

use crate::assemble::{self, Assembler, Refused};
use crate::cargo::CargoOutput;
use crate::config::{self, Watch};
use crate::discover::{parse_glob, Found, Walker};
use crate::env;
use crate::error::{shown, Error, FileProblem};
use crate::group::BlobGroup;
use crate::manifest::{escape, Blob, Manifest};

/// Records how to compile every blob of a tree, and compiles none.
///
/// Configure with the setters, then call [`write`](Build::write) (or
/// [`try_write`](Build::try_write)) from `build.rs`. Explicit setters win
/// over a config file, which wins over the environment.
///
/// # Example
///
/// ```
/// use ck_jit_build::{BlobGroup, Build};
/// # let root = std::env::temp_dir().join(format!("ck-jit-build-doc-build-{}", std::process::id()));
/// # std::fs::create_dir_all(root.join("kernels"))?;
/// # std::fs::write(root.join("kernels/vadd.cpp"), "")?;
/// # // What cargo provides a build script.
/// # std::env::set_current_dir(&root)?;
/// # std::env::set_var("CARGO_MANIFEST_DIR", &root);
/// # std::env::set_var("OUT_DIR", root.join("out"));
///
/// // build.rs
/// Build::new()
///     .name("my_kernels")
///     .group(BlobGroup::new("vec").glob("kernels/*.cpp").flag("-O2"))
///     .write();
/// # let m = ck_jit_build::Manifest::from_json(&std::fs::read_to_string(root.join("out/ck_jit_manifest.json"))?)?;
/// # assert_eq!((m.name.as_str(), m.blobs[0].name.as_str()), ("my_kernels", "vadd"));
/// # std::fs::remove_dir_all(&root)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Build {
    root: Option<PathBuf>,
    name: Option<String>,
    out_dir: Option<PathBuf>,
    groups: Vec<BlobGroup>,
    config_files: Vec<PathBuf>,
    cargo_metadata: bool,
    watch: Option<Watch>,
}

impl Default for Build {
    fn default() -> Build {
        Build::new()
    }
}

/// A [`Build`] configured by the `ck-jit.toml` at `path`: the one-line
/// `build.rs` for a project that keeps its settings in that file.
///
/// # Example
///
/// ```
/// # let root = std::env::temp_dir().join(format!("ck-jit-build-doc-from-config-{}", std::process::id()));
/// # std::fs::create_dir_all(root.join("kernels"))?;
/// # std::fs::write(root.join("kernels/vadd.cpp"), "")?;
/// # std::fs::write(root.join("ck-jit.toml"), "name = \"my_kernels\"\n[[group]]\nname = \"vec\"\nglob = \"kernels/*.cpp\"\n")?;
/// # // What cargo provides a build script.
/// # std::env::set_current_dir(&root)?;
/// # std::env::set_var("CARGO_MANIFEST_DIR", &root);
/// # std::env::set_var("OUT_DIR", root.join("out"));
/// // build.rs
/// ck_jit_build::from_config("ck-jit.toml").write();
/// # let m = ck_jit_build::Manifest::from_json(&std::fs::read_to_string(root.join("out/ck_jit_manifest.json"))?)?;
/// # assert_eq!((m.name.as_str(), m.blobs[0].name.as_str()), ("my_kernels", "vadd"));
/// # std::fs::remove_dir_all(&root)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn from_config<P: AsRef<Path>>(path: P) -> Build {
    let mut build = Build::new();
    build.config_file(path);
    build
}

/// What the walk produced, before anything is printed or written.
struct Plan {
    manifest: Manifest,
    config_files: Vec<PathBuf>,
    watched: BTreeSet<PathBuf>,
    blob_files: Vec<PathBuf>,
    watch: Watch,
}

impl Build {
    /// A build with no groups, printing `cargo:` lines, rooted at
    /// `CARGO_MANIFEST_DIR` and writing into `OUT_DIR` unless told otherwise.
    ///
    /// # Example
    ///
    /// ```
    /// let mut build = ck_jit_build::Build::new();
    /// ```
    pub fn new() -> Build {
        Build {
            root: None,
            name: None,
            out_dir: None,
            groups: Vec::new(),
            config_files: Vec::new(),
            cargo_metadata: true,
            watch: None,
        }
    }

    /// The tree root: globs and files are relative to it, and the manifest
    /// records it (canonical, absolute) for the runtime. Default: the
    /// config file's `root`, else `CARGO_MANIFEST_DIR`. A relative path is
    /// relative to the current directory, which cargo sets to the package
    /// directory for build scripts.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::Build::new().root("third_party/ck/generated");
    /// ```
    pub fn root<P: AsRef<Path>>(&mut self, root: P) -> &mut Build {
        self.root = Some(root.as_ref().to_path_buf());
        self
    }

    /// The cache name: the directory the runtime caches compiled blobs
    /// under. It must be a safe file name component (ASCII letters, digits,
    /// `_`, `-`, `.`). Default: the config file's `name`, else
    /// `CK_JIT_NAME`, else `ck_jit`.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::Build::new().name("my_kernels");
    /// ```
    pub fn name(&mut self, name: &str) -> &mut Build {
        self.name = Some(name.to_string());
        self
    }

    /// Where to write the manifest. Default: `OUT_DIR`.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::Build::new().out_dir("target/ck-jit");
    /// ```
    pub fn out_dir<P: AsRef<Path>>(&mut self, dir: P) -> &mut Build {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Adds a group of blobs (a copy of `group`: pass it by value, by
    /// reference, or straight from a setter chain). Call once per group.
    ///
    /// # Example
    ///
    /// ```
    /// use ck_jit_build::{BlobGroup, Build};
    ///
    /// Build::new()
    ///     .group(BlobGroup::new("fwd").glob("fwd/*.cpp").exclude("*_api.cpp"))
    ///     .group(BlobGroup::new("bwd").glob("bwd/*.cpp"));
    /// ```
    pub fn group<G: Borrow<BlobGroup>>(&mut self, group: G) -> &mut Build {
        self.groups.push(group.borrow().clone());
        self
    }

    /// Loads settings from a `ck-jit.toml` when the build runs: its groups
    /// are added after those given with [`group`](Build::group), and its
    /// `name` and `root` apply unless set with [`name`](Build::name) and
    /// [`root`](Build::root). The file is watched for changes.
    ///
    /// # Example
    ///
    /// ```
    /// # let root = std::env::temp_dir().join(format!("ck-jit-build-doc-config-file-{}", std::process::id()));
    /// # std::fs::create_dir_all(root.join("kernels"))?;
    /// # std::fs::write(root.join("kernels/vadd.cpp"), "")?;
    /// # std::fs::write(root.join("ck-jit.toml"), "name = \"my_kernels\"\n[[group]]\nname = \"vec\"\nglob = \"kernels/*.cpp\"\n")?;
    /// # // What cargo provides a build script.
    /// # std::env::set_current_dir(&root)?;
    /// # std::env::set_var("CARGO_MANIFEST_DIR", &root);
    /// # std::env::set_var("OUT_DIR", root.join("out"));
    /// ck_jit_build::Build::new()
    ///     .config_file("ck-jit.toml")
    ///     .name("overrides_the_file")
    ///     .write();
    /// # let m = ck_jit_build::Manifest::from_json(&std::fs::read_to_string(root.join("out/ck_jit_manifest.json"))?)?;
    /// # assert_eq!((m.name.as_str(), m.blobs[0].name.as_str()), ("overrides_the_file", "vadd"));
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn config_file<P: AsRef<Path>>(&mut self, path: P) -> &mut Build {
        self.config_files.push(path.as_ref().to_path_buf());
        self
    }

    /// Whether to print `cargo:` lines (default true). Turn it off when
    /// running outside a build script.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::Build::new().cargo_metadata(false);
    /// ```
    pub fn cargo_metadata(&mut self, print: bool) -> &mut Build {
        self.cargo_metadata = print;
        self
    }

    /// What cargo watches to rerun the build script: the blob directories
    /// (default; a blob added alone is recorded at the next build, and
    /// editing a blob recompiles the crate) or the crate's own sources
    /// (editing a blob recompiles nothing). See [`Watch`] for the trade.
    /// Default: the config file's `watch`, else [`Watch::BlobDirectories`].
    ///
    /// # Example
    ///
    /// ```
    /// use ck_jit_build::{Build, Watch};
    ///
    /// // Iterating on kernels: an edited blob is recompiled by the runtime at
    /// // its next first call, the Rust crate is not.
    /// Build::new().watch(Watch::CrateSources);
    /// ```
    pub fn watch(&mut self, watch: Watch) -> &mut Build {
        self.watch = Some(watch);
        self
    }

    /// Builds the manifest without writing it or printing anything.
    ///
    /// # Example
    ///
    /// ```
    /// use ck_jit_build::{BlobGroup, Build};
    /// # let root = std::env::temp_dir().join(format!("ck-jit-build-doc-try-manifest-{}", std::process::id()));
    /// # std::fs::create_dir_all(root.join("kernels"))?;
    /// # std::fs::write(root.join("kernels/a.cpp"), "")?;
    /// # std::fs::write(root.join("kernels/b.cpp"), "")?;
    /// # // What cargo provides a build script.
    /// # std::env::set_current_dir(&root)?;
    /// # std::env::set_var("CARGO_MANIFEST_DIR", &root);
    /// # std::env::set_var("OUT_DIR", root.join("out"));
    ///
    /// let manifest = Build::new()
    ///     .root("kernels")
    ///     .group(BlobGroup::new("all").glob("*.cpp"))
    ///     .try_manifest()?;
    /// println!("{} blobs", manifest.blobs.len());
    /// # assert_eq!(manifest.blobs.len(), 2);
    /// # assert!(!root.join("out").exists(), "nothing written");
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_manifest(&self) -> Result<Manifest, Error> {
        let mut cargo = CargoOutput::silent();
        let out_dir = match &self.out_dir {
            Some(dir) => Some(dir.clone()),
            None => cargo.var(env::OUT_DIR).map(PathBuf::from),
        };
        let out_dir = out_dir.and_then(|d| fs::canonicalize(d).ok());
        Ok(self.plan(&mut cargo, out_dir.as_deref())?.manifest)
    }

    /// Builds the manifest and writes it to `OUT_DIR/ck_jit_manifest.json`,
    /// printing the `cargo:` lines that make cargo rerun the build script
    /// when a blob is added or removed. Returns the manifest's path.
    ///
    /// The file is only rewritten when its content changes, so its
    /// modification time stays put across builds of an unchanged tree.
    ///
    /// # Example
    ///
    /// ```
    /// use ck_jit_build::{BlobGroup, Build};
    /// # let root = std::env::temp_dir().join(format!("ck-jit-build-doc-try-write-{}", std::process::id()));
    /// # std::fs::create_dir_all(root.join("kernels"))?;
    /// # std::fs::write(root.join("kernels/vadd.cpp"), "")?;
    /// # // What cargo provides a build script.
    /// # std::env::set_current_dir(&root)?;
    /// # std::env::set_var("CARGO_MANIFEST_DIR", &root);
    /// # std::env::set_var("OUT_DIR", root.join("out"));
    ///
    /// let path = Build::new()
    ///     .group(BlobGroup::new("vec").glob("kernels/*.cpp"))
    ///     .try_write()?;
    /// # assert_eq!(path, std::fs::canonicalize(root.join("out"))?.join("ck_jit_manifest.json"));
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_write(&self) -> Result<PathBuf, Error> {
        assemble::to_stdout(|lines| self.try_write_with_output(lines))
    }

    /// [`try_write`](Build::try_write), sending the `cargo:` lines to
    /// `cargo_lines` instead of stdout (to inspect or test them).
    ///
    /// # Example
    ///
    /// ```
    /// use ck_jit_build::{BlobGroup, Build};
    /// # let root = std::env::temp_dir().join(format!("ck-jit-build-doc-try-write-with-output-{}", std::process::id()));
    /// # std::fs::create_dir_all(root.join("kernels"))?;
    /// # std::fs::write(root.join("kernels/vadd.cpp"), "")?;
    /// # // What cargo provides a build script.
    /// # std::env::set_current_dir(&root)?;
    /// # std::env::set_var("CARGO_MANIFEST_DIR", &root);
    /// # std::env::set_var("OUT_DIR", root.join("out"));
    ///
    /// let mut lines = Vec::new();
    /// Build::new()
    ///     .group(BlobGroup::new("vec").glob("kernels/*.cpp"))
    ///     .try_write_with_output(&mut lines)?;
    /// print!("{}", String::from_utf8_lossy(&lines));
    /// # assert!(String::from_utf8(lines)?.contains("cargo:rerun-if-changed="));
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_write_with_output(&self, cargo_lines: &mut dyn Write) -> Result<PathBuf, Error> {
        let mut cargo = CargoOutput::to_if(self.cargo_metadata, cargo_lines);
        let out_dir = assemble::out_dir(
            self.out_dir.as_deref(),
            "is not set; call out_dir() when not running under cargo",
            &mut cargo,
        )?;
        let plan = self.plan(&mut cargo, Some(&out_dir))?;
        let crate_src = match plan.watch {
            Watch::CrateSources => cargo
                .var(env::CARGO_MANIFEST_DIR)
                .map(|dir| PathBuf::from(dir).join("src"))
                .and_then(|src| fs::canonicalize(src).ok())
                .filter(|src| src.is_dir()),
            Watch::BlobDirectories => None,
        };
        let (lines, warnings) = rerun_lines(&plan, &out_dir, crate_src.as_deref())?;
        for line in &lines {
            cargo.rerun_if_changed(line);
        }
        for warning in &warnings {
            cargo.warning(warning);
        }
        assemble::write(&plan.manifest, &out_dir, cargo)
    }

    /// [`try_write`](Build::try_write), panicking on error: the convenient
    /// form for `build.rs`.
    ///
    /// # Panics
    ///
    /// When the manifest cannot be built or written: a bad glob, a file name
    /// that cannot be a blob name, a file in two groups, an empty group, an
    /// unreadable config, `OUT_DIR` unset, ... The message is the
    /// [`Error`]'s.
    ///
    /// # Example
    ///
    /// ```
    /// use ck_jit_build::{BlobGroup, Build};
    /// # let root = std::env::temp_dir().join(format!("ck-jit-build-doc-write-{}", std::process::id()));
    /// # std::fs::create_dir_all(root.join("kernels"))?;
    /// # std::fs::write(root.join("kernels/vadd.cpp"), "")?;
    /// # // What cargo provides a build script.
    /// # std::env::set_current_dir(&root)?;
    /// # std::env::set_var("CARGO_MANIFEST_DIR", &root);
    /// # std::env::set_var("OUT_DIR", root.join("out"));
    ///
    /// Build::new()
    ///     .group(BlobGroup::new("vec").glob("kernels/*.cpp"))
    ///     .write();
    /// # let m = ck_jit_build::Manifest::from_json(&std::fs::read_to_string(root.join("out/ck_jit_manifest.json"))?)?;
    /// # assert_eq!(m.blobs[0].name, "vadd");
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write(&self) -> PathBuf {
        assemble::or_panic("ck-jit-build", self.try_write())
    }

    /// Resolves settings, walks every group and assembles the manifest.
    /// `out_dir` (canonical) is never walked into.
    fn plan(&self, cargo: &mut CargoOutput<'_>, out_dir: Option<&Path>) -> Result<Plan, Error> {
        let mut config_name = None;
        let mut config_root = None;
        let mut config_watch = None;
        let mut groups = self.groups.clone();
        let mut config_files = Vec::new();
        for path in &self.config_files {
            let c = config::load(path)?;
            config_files.push(fs::canonicalize(path).unwrap_or_else(|_| path.clone()));
            if c.name.is_some() {
                config_name = c.name;
            }
            if c.watch.is_some() {
                config_watch = c.watch;
            }
            config_root = Some(c.root);
            groups.extend(c.groups);
        }

        let name = assemble::cache_name(self.name.as_deref().or(config_name.as_deref()), cargo)?;

        let root = match (&self.root, config_root) {
            (Some(r), _) => r.clone(),
            (None, Some(r)) => r,
            (None, None) => cargo
                .var(env::CARGO_MANIFEST_DIR)
                .map(PathBuf::from)
                .ok_or(Error::Env {
                    var: env::CARGO_MANIFEST_DIR,
                    why: "is not set; call root() when not running under cargo",
                })?,
        };
        let root_err = |source| Error::Root {
            path: root.clone(),
            source,
        };
        let root = fs::canonicalize(&root).map_err(root_err)?;
        if !root.is_dir() {
            return Err(root_err(io::Error::new(
                io::ErrorKind::NotADirectory,
                "not a directory",
            )));
        }
        let root_text = root.to_str().ok_or_else(|| {
            root_err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the path is not valid UTF-8",
            ))
        })?;

        if groups.is_empty() {
            return Err(Error::NoGroups);
        }
        let mut assembler = Assembler::new(name, root_text);
        let mut watched = BTreeSet::new();
        let mut blob_files = Vec::new();
        // Which group found a file.
        let mut owner: BTreeMap<String, usize> = BTreeMap::new();
        for (index, group) in groups.iter().enumerate() {
            if groups[..index].iter().any(|g| g.name == group.name) {
                return Err(Error::GroupSpec {
                    group: escape(&group.name),
                    why: "two groups have this name".into(),
                });
            }
            assembler.group(group.render()?);
            let found = find_files(group, &root, out_dir, &mut watched)?;
            let meta_pattern = group.compiled_meta_pattern()?;
            for f in found {
                if let Some(&first) = owner.get(&f.rel) {
                    return Err(Error::FileInTwoGroups {
                        path: f.rel,
                        first: groups[first].name.clone(),
                        second: group.name.clone(),
                    });
                }
                let blob = self::blob(group, index, &root, &f, meta_pattern.as_ref())?;
                assembler.blob(blob).map_err(|refused| match refused {
                    Refused::Duplicate(e) => e,
                    Refused::Name(source) => Error::BlobName {
                        group: group.name.clone(),
                        path: escape(&f.rel),
                        source,
                    },
                })?;
                owner.insert(f.rel.clone(), index);
                blob_files.push(f.abs);
            }
        }
        let manifest = assembler.finish()?;
        Ok(Plan {
            manifest,
            config_files,
            watched,
            blob_files,
            watch: self.watch.or(config_watch).unwrap_or_default(),
        })
    }
}

/// The files of `group`, sorted by root-relative path, de-duplicated,
/// excludes applied; adds the directories that decide them to `watched`.
fn find_files(
    group: &BlobGroup,
    root: &Path,
    out_dir: Option<&Path>,
    watched: &mut BTreeSet<PathBuf>,
) -> Result<Vec<Found>, Error> {
    let excludes = group.compiled_excludes()?;
    let mut walker = Walker::new(root, out_dir, &group.name);
    let mut found: BTreeMap<String, Found> = BTreeMap::new();
    for pattern in &group.globs {
        let components = parse_glob(pattern).map_err(|why| Error::Glob {
            group: group.name.clone(),
            pattern: escape(pattern),
            why,
        })?;
        for f in walker.glob(&components)? {
            found.entry(f.rel.clone()).or_insert(f);
        }
    }
    for file in &group.files {
        let f = explicit_file(group, root, file)?;
        if let Some(parent) = f.abs.parent() {
            walker.watched.insert(parent.to_path_buf());
        }
        found.entry(f.rel.clone()).or_insert(f);
    }
    watched.append(&mut walker.watched);
    let found: Vec<Found> = found
        .into_values()
        .filter(|f| !excludes.iter().any(|e| e.matches(&f.rel)))
        .collect();
    if found.is_empty() && !group.allow_empty {
        let looked_for = group
            .globs
            .iter()
            .cloned()
            .chain(group.files.iter().map(|f| f.to_string_lossy().into_owned()))
            .collect();
        return Err(Error::EmptyGroup {
            group: group.name.clone(),
            looked_for,
        });
    }
    Ok(found)
}

/// A file named explicitly: relative to the root, or absolute inside it.
fn explicit_file(group: &BlobGroup, root: &Path, file: &Path) -> Result<Found, Error> {
    let bad = |why: FileProblem| Error::File {
        group: group.name.clone(),
        path: file.to_path_buf(),
        why,
    };
    let rel: PathBuf = if file.is_absolute() {
        match file.strip_prefix(root) {
            Ok(rel) => rel.to_path_buf(),
            Err(_) => {
                let real = fs::canonicalize(file).map_err(|e| bad(FileProblem::reading(e)))?;
                match real.strip_prefix(root) {
                    Ok(rel) => rel.to_path_buf(),
                    Err(_) => {
                        return Err(Error::OutsideRoot {
                            group: group.name.clone(),
                            path: file.to_string_lossy().into_owned(),
                            target: real,
                        })
                    }
                }
            }
        }
    } else {
        file.to_path_buf()
    };
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::CurDir => {}
            Component::Normal(part) => parts.push(part),
            _ => return Err(bad(FileProblem::NotInRoot)),
        }
    }
    let abs = parts.iter().fold(root.to_path_buf(), |p, c| p.join(c));
    let meta = fs::metadata(&abs).map_err(|e| bad(FileProblem::reading(e)))?;
    if !meta.is_file() {
        return Err(bad(FileProblem::NotRegular));
    }
    let rel = parts
        .iter()
        .map(|p| p.to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    Ok(Found {
        rel,
        utf8: parts.iter().all(|p| p.to_str().is_some()),
        abs,
        // A handful of files: resolving each is cheaper than reasoning
        // about which of their directories are links.
        via_symlink: true,
    })
}

/// The blob for file `f` of `group` (number `index`), after every check a
/// file must pass to become one.
fn blob(
    group: &BlobGroup,
    index: usize,
    root: &Path,
    f: &Found,
    meta_pattern: Option<&regex_lite::Regex>,
) -> Result<Blob, Error> {
    if !f.utf8 {
        return Err(Error::NonUtf8Path {
            group: group.name.clone(),
            path: f.abs.clone(),
        });
    }
    if f.via_symlink {
        let real = fs::canonicalize(&f.abs).map_err(|e| Error::File {
            group: group.name.clone(),
            path: f.abs.clone(),
            why: FileProblem::Unresolvable(e),
        })?;
        if !real.starts_with(root) {
            return Err(Error::OutsideRoot {
                group: group.name.clone(),
                path: f.rel.clone(),
                target: real,
            });
        }
    }
    // Its name and path are checked when it is recorded.
    let stem = Path::new(&f.rel)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();

    let mut meta = group.meta.clone();
    if let Some(re) = meta_pattern {
        match re.captures(stem) {
            Some(caps) => {
                for key in re.capture_names().flatten() {
                    if let Some(m) = caps.name(key) {
                        meta.insert(key.to_string(), m.as_str().to_string());
                    }
                }
            }
            None if group.require_meta_match => {
                return Err(Error::MetaMismatch {
                    group: group.name.clone(),
                    path: f.rel.clone(),
                    pattern: group.meta_pattern.clone().unwrap_or_default(),
                })
            }
            None => {}
        }
    }
    if let Some(f_meta) = &group.meta_with {
        let file = crate::group::BlobFile {
            name: stem,
            path: &f.rel,
        };
        let entries = (f_meta.0)(&file).map_err(|why| Error::File {
            group: group.name.clone(),
            path: f.abs.clone(),
            why: FileProblem::Refused(why),
        })?;
        meta.extend(entries);
    }
    Ok(Blob {
        name: stem.to_string(),
        source: f.rel.clone(),
        // Group counts are tiny; a group index past u32 is not a real tree.
        group: u32::try_from(index).unwrap_or(u32::MAX),
        symbol: None,
        meta,
    })
}

/// The `rerun-if-changed` paths and the warnings for `plan`.
///
/// Blob contents never change the manifest (the runtime hashes sources when
/// it compiles), so only the set of files matters: what the globs' directory
/// listings say, and the config files. Cargo checks a directory line
/// recursively, so one line for the top-most listed directory covers every
/// listing below it, and 10,000 blobs cost a handful of lines rather than
/// 10,000. A directory holding the build output is the exception: watching
/// it would see cargo's own writes and rerun the build script every time, so
/// its subdirectories and its matched files are watched instead.
///
/// With [`Watch::CrateSources`] and the crate's `src` directory at hand
/// (`crate_src`), that directory replaces the blob directories.
fn rerun_lines(
    plan: &Plan,
    out_dir: &Path,
    crate_src: Option<&Path>,
) -> Result<(Vec<String>, Vec<String>), Error> {
    let mut paths: Vec<&Path> = plan.config_files.iter().map(PathBuf::as_path).collect();
    let mut warnings = Vec::new();
    if plan.watch == Watch::CrateSources {
        match crate_src {
            Some(src) => {
                if let Some(inside) = plan.watched.iter().find(|dir| dir.starts_with(src)) {
                    warnings.push(format!(
                        "blobs in '{}' are watched with the crate's sources: editing one \
                         still reruns the build script; keep blobs outside 'src'",
                        shown(inside)
                    ));
                }
                paths.push(src);
                return report(paths, warnings);
            }
            None => warnings.push(
                "Watch::CrateSources: the package has no 'src' directory; \
                 watching the blob directories instead"
                    .to_string(),
            ),
        }
    }
    let mut covered: Option<&Path> = None;
    // Sorted: a directory comes right before everything under it.
    for dir in &plan.watched {
        if covered.is_some_and(|c| dir.starts_with(c)) {
            continue;
        }
        if out_dir.starts_with(dir) {
            warnings.push(format!(
                "not watching '{}' for new blob files: it holds the build output, \
                 which changes every build; keep blobs in a subdirectory",
                shown(dir)
            ));
            paths.extend(
                plan.blob_files
                    .iter()
                    .filter(|f| f.parent() == Some(dir.as_path()))
                    .map(PathBuf::as_path),
            );
            continue;
        }
        paths.push(dir);
        covered = Some(dir);
    }
    report(paths, warnings)
}

/// `paths` as `rerun-if-changed` values, with `warnings`.
fn report(paths: Vec<&Path>, warnings: Vec<String>) -> Result<(Vec<String>, Vec<String>), Error> {
    let lines = paths
        .into_iter()
        .map(|p| match p.to_str() {
            Some(s) if !s.contains(['\n', '\r']) => Ok(s.to_string()),
            _ => Err(Error::RerunPath {
                path: p.to_path_buf(),
            }),
        })
        .collect::<Result<_, _>>()?;
    Ok((lines, warnings))
}
