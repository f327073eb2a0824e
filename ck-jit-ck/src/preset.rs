//! [`CkFmha`]: the preset for CK's fused-attention blobs. It runs CK's code
//! generator (or takes an already generated directory), classifies every
//! generated file from its declarations, and records each blob for the
//! requested targets its preprocessor guard admits, one manifest group per
//! blob kind and set of targets, with the compile command a CK build uses,
//! the entry symbol prefix and the traits the blob declares.
//!
//! It never compiles a blob; the only program it starts is CK's generator
//! (see [`codegen`](super::codegen)).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

use super::admit::{self, Admission};
use super::cmake;
use super::codegen::{self, Codegen};
use super::derived;
use super::error::{io_err, shown, Error};
use super::generated::{name_disagreement, GeneratedFile, Role};
use super::index::{self, BlobIndex};
use super::rules::RulesFile;
use super::symbol::mangled_template_prefix;
use super::vocab::{BlobDecl, Vocabulary};
use ck_jit_build::manifest::compact::COMPACT_FILE;
use ck_jit_build::manifest::{escape, Blob, Manifest, MANIFEST_FILE};
use ck_jit_build::assemble::{self, write_if_changed, Assembler, Refused};
use ck_jit_build::BlobGroup;
use ck_jit_build::CargoOutput;

/// Where CK keeps the FMHA example (headers and generator) in its tree.
pub const FMHA_EXAMPLE_DIR: &str = "example/ck_tile/01_fmha";

/// Where an aiter checkout keeps CK.
pub const AITER_CK_DIR: &str = "3rdparty/composable_kernel";

/// The subdirectory of `OUT_DIR` the generator writes into, one
/// subdirectory per direction.
pub const GENERATED_SUBDIR: &str = "ck_fmha";

/// The file in the manifest's directory that says what the manifest
/// written there was made from, and the size and mtime of every file the
/// build left there: a rerun that finds both as they were reuses them.
const WRITE_STAMP: &str = "ck_jit_ck_write.stamp";

/// What [`WRITE_STAMP`] holds.
#[derive(serde::Serialize, serde::Deserialize)]
struct WriteStamp {
    /// Everything the manifest was made from (see [`CkFmhaFiles::inputs`]).
    inputs: String,
    /// [`outputs_stamp`] after the manifest was written.
    outputs: String,
    /// What the build warned of, to warn of it again.
    disagreements: Vec<String>,
    /// The kinds of blobs no requested target keeps, as warned of.
    #[serde(default)]
    left_out: Vec<String>,
}

/// The size and mtime of the files a build leaves in `out_dir`: the
/// manifest in both forms and the kept index.
fn outputs_stamp(out_dir: &Path) -> String {
    let mut s = String::new();
    for f in [
        MANIFEST_FILE,
        COMPACT_FILE,
        index::INDEX_FILE,
        index::DETAIL_FILE,
    ] {
        let m = fs::metadata(out_dir.join(f)).ok();
        let mtime = m
            .as_ref()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        s.push_str(&format!("{f} {} {mtime}\n", m.map_or(0, |m| m.len())));
    }
    s
}

/// The stamp a build left in `out_dir`, if it says the manifest there was
/// made from `inputs` and every file it left is as it was.
fn reusable(out_dir: &Path, inputs: &str) -> Option<WriteStamp> {
    let bytes = fs::read(out_dir.join(WRITE_STAMP)).ok()?;
    let stamp: WriteStamp = serde_json::from_slice(&bytes).ok()?;
    (stamp.inputs == inputs && stamp.outputs == outputs_stamp(out_dir)).then_some(stamp)
}

/// Generated files read by one thread while the generators still run.
const READ_AHEAD_CHUNK: usize = 1024;

/// The directions of a generator older than `codegen/ops/` (CK 2024).
const CLASSIC_DIRECTIONS: &[&str] = &["fwd", "fwd_splitkv", "fwd_appendkv", "bwd"];

/// The GPU architecture compiled for unless [`CkFmha::arch`] says otherwise.
pub const DEFAULT_ARCH: &str = "gfx90a";

/// The C++ standard of a CK tree with no top-level `CMakeLists.txt` to read
/// it from: what CK built with before it made the standard the
/// `CK_CXX_STANDARD` option, and what every tree was recorded with before
/// the file was read, so such a tree compiles as it always did.
const FALLBACK_CXX_STANDARD: &str = "17";

/// Flags CK's `example/ck_tile/01_fmha/CMakeLists.txt` gives every FMHA
/// source (`EXAMPLE_FMHA_{FWD,BWD}_COMPILE_OPTIONS`), besides the fast-exp2
/// define of the forward kinds.
const CK_FMHA_FLAGS: &[&str] = &[
    "-Wno-undefined-func-template",
    "-Wno-float-equal",
    "-fgpu-flush-denormals-to-zero",
];

/// Records how to compile CK's FMHA blobs (the CK/aiter preset), from what
/// the CK version declares.
///
/// Give the CK tree with [`source`](CkFmha::source) (an aiter tree, with CK
/// under `3rdparty/composable_kernel`, is detected) and the preset runs CK's
/// `example/ck_tile/01_fmha/generate.py` once per direction the generator
/// offers (or those asked for with [`direction`](CkFmha::direction)) into
/// `OUT_DIR/ck_fmha/<direction>`, passing the architectures asked for as
/// `--targets` to a generator that takes it; or give an already generated
/// directory with [`generated_dir`](CkFmha::generated_dir). Every generated
/// file is read (see [`Role`]): a blob specialises an entry template for a
/// traits type the version's headers declare, and is recorded with what its
/// declarations say ([`Vocabulary::describe`](super::Vocabulary::describe));
/// a dispatcher calls the blobs' templates.
///
/// # Architectures
///
/// A blob is compiled for the requested targets ([`arch`](CkFmha::arch))
/// whose compile keeps its specialisations. Its conditional directives
/// (CK 2025 writes `#if !defined(__HIP_DEVICE_COMPILE__) ||
/// (defined(__gfx9__))` around them) are read with the blob and followed
/// by the C++ preprocessor's rules (`guard`,
/// [`cond`](crate::cond)) for each target's device pass and for the host
/// pass, with the macros that compile has defined when it reaches them
/// ([`macros`](crate::macros)): a table of the compiler's predefined
/// macros (no compiler is run), the group's `-D`/`-U` flags, and the
/// family macros the version's own `ck_tile/core/config.hpp` defines from
/// the target's (`gfx950` gets `__gfx9__` from CK 2025-11's, not from
/// CK 2024-10's). Its file name and `Arch` tag do not decide: with
/// `--targets gfx950` CK still writes `_gfx9` split-KV, append-KV and
/// paged-KV blobs guarded by `defined(__gfx9__)`, which gfx950 runs, while
/// its `_gfx9` forward blobs (`defined(__gfx9__) && !defined(__gfx950__))`
/// are for gfx942 only. A blob without conditionals (CK 2024,
/// `batch_prefill`) is for every target; the blobs no requested target
/// keeps are not recorded ([`CkFmhaFiles::left_out`]) and are announced,
/// one `cargo:warning` per kind with the count, an example and its
/// conditions. A condition that depends on what the build cannot know
/// (`__clang_major__ >= 20`) and malformed conditionals (an `#ifdef`
/// without its `#endif`) are errors naming the blob and the line, as the
/// compiler's would be.
///
/// Each kind, architecture tag and set of admitted targets becomes one
/// manifest group (`fwd`, or `fwd_gfx9` of family `fwd`; with gfx942 and
/// gfx950 asked for, `fwd_splitkv_gfx9` carries both `--offload-arch`
/// flags, `fwd_gfx9` only gfx942's). Blobs of one kind and tag that
/// different targets admit get the targets in their group's name
/// (`fwd_gfx9_gfx942`).
///
/// Each blob compiles as a CK build compiles it:
///
/// ```text
/// hipcc -std=c++<N> -O3 --offload-arch=<the requested targets its guard admits>
///       <the HIP-version flags of CK's CMakeLists.txt, for hip_version()>
///       <the options of 01_fmha/CMakeLists.txt for fwd or bwd sources>
///       -Wno-undefined-func-template
///       -I<ck>/include -I<ck>/example/ck_tile/01_fmha -I{root}/<direction>
///       -fPIC -shared {src} -o {out}
/// ```
///
/// where `N` is the standard CK's top-level `CMakeLists.txt` sets
/// (`CK_CXX_STANDARD`, 20 in CK 2025-11); a tree without that file (CK 2024
/// builds, copies holding only `include/` and `example/`) compiles with
/// `-std=c++17`, and a `cargo:warning` says so. The flags CK adds under a
/// condition on the HIP version are recorded only for a version given with
/// [`hip_version`](CkFmha::hip_version): the build script never runs the
/// compiler, and such a flag fails every compile on a compiler that lacks it.
///
/// The blob is entered through the first exported function whose mangled name
/// starts with its entry template's prefix (`_Z9fmha_fwd_I` for `fwd_`).
///
/// # Where things are recorded
///
/// The manifest root is the generated directory (`OUT_DIR/ck_fmha`, or the
/// one given), so blob sources are recorded relative to it and
/// `CK_JIT_ROOT` relocates them. The CK headers are recorded with absolute
/// paths: a relocated tree still needs the CK checkout at the path it had at
/// build time. To relocate both, set [`root`](CkFmha::root) to a directory
/// holding both the generated directory and the CK tree: paths under it are
/// then recorded relative to it (`-I{root}/third_party/ck/include`).
///
/// # Rerunning
///
/// The generator runs again only when its inputs change: a stamp in
/// `OUT_DIR/ck_fmha/<direction>.stamp` records the command and the size and
/// modification time of `generate.py` and of every file under `codegen/`.
/// Cargo is told to watch exactly those (never the generated files in
/// `OUT_DIR`); a [`generated_dir`](CkFmha::generated_dir) outside `OUT_DIR`
/// is watched itself.
///
/// Every generated file is read and lexed once per build, into one index
/// that the manifest (with the `together` sets of the dispatchers' calls,
/// so it is written once), [`write_stubs`](super::write_stubs),
/// [`CkFmhaFiles::dispatch_rules`] and [`CkFmhaFiles::check_dispatchers`]
/// are all made from. The index is kept in `OUT_DIR`
/// (`ck_jit_ck_index.json` and its detail beside it) under a key of the
/// generated listing with every file's size and modification time, the
/// headers of `01_fmha`, the requested targets and this crate's version: a
/// build whose key matches reads no generated file. A build whose inputs
/// are all as they were when the manifest was last written (that key, the
/// settings, CK's CMake options; `ck_jit_ck_write.stamp` says which) and
/// whose outputs are as it left them makes nothing again: it prints the
/// same `cargo:` lines and returns [`CkFmhaFiles`] whose manifest and
/// roles are read back only when asked for ([`CkFmhaFiles::reused`]).
///
/// # Example
///
/// ```no_run
/// // build.rs
/// use ck_jit_ck::CkFmha;
///
/// let files = CkFmha::new()
///     .source("third_party/aiter")
///     .direction("fwd")
///     .direction("batch_prefill")
///     .arch("gfx942")
///     .write();
/// for api in files.dispatchers() {
///     println!("dispatcher: {}", api.display());
/// }
/// ```
#[derive(Debug, Clone)]
pub struct CkFmha {
    source: Option<PathBuf>,
    generated: Option<PathBuf>,
    directions: Vec<String>,
    receipt: u32,
    filter: Option<String>,
    archs: Vec<String>,
    compiler: String,
    flags: Vec<String>,
    includes: Vec<PathBuf>,
    defines: Vec<(String, Option<String>)>,
    fast_exp2: bool,
    python: PathBuf,
    name: Option<String>,
    out_dir: Option<PathBuf>,
    root: Option<PathBuf>,
    cargo_metadata: bool,
    hip_version: Option<String>,
}

/// What [`CkFmha`] produced: the manifest and every generated file.
///
/// A build whose inputs are all as they were when the manifest was last
/// written (see [`CkFmha::try_write`]) reads nothing back at once: the
/// manifest, the files' roles and the index are read from `OUT_DIR` the
/// first time they are asked for.
#[derive(Debug, Clone)]
pub struct CkFmhaFiles {
    /// The manifest: see [`manifest`](Self::manifest).
    manifest: OnceLock<Manifest>,
    /// Where the manifest was written, if it was.
    pub manifest_path: Option<PathBuf>,
    /// What the manifest is made from, when that can be told again in a
    /// later build (the index was kept): see [`CkFmha::try_write`].
    pub(crate) inputs: Option<String>,
    /// A digest of [`inputs`](Self::inputs), kept after they are written
    /// with the manifest: what the outputs made from these files are kept
    /// under (see [`write_rules`](Self::write_rules)).
    pub(crate) made_from: Option<String>,
    /// The generated directory.
    pub generated_dir: PathBuf,
    /// The CK tree, if one was given.
    pub ck_root: Option<PathBuf>,
    /// Every generated source file: see [`files`](Self::files).
    files: OnceLock<Vec<GeneratedFile>>,
    /// The directions whose generator ran in this build (empty when every
    /// stamp matched or the files were given).
    pub regenerated: Vec<String>,
    /// Blobs whose file name disagrees with their declarations (the
    /// declarations win; each is also a `cargo:warning`).
    pub disagreements: Vec<String>,
    /// What every blob defines and what the dispatchers call, read once:
    /// what the stubs, the rules and the checks are made from.
    index: OnceLock<BlobIndex>,
    /// Where the files' roles and the index are read from when this build
    /// reused the last one's output.
    reused: Option<Arc<Reused>>,
    /// One line per kind of blob that no requested target keeps (also a
    /// `cargo:warning` each): its count, an example and its conditions.
    pub left_out_kinds: Vec<String>,
}

/// The index being kept in `OUT_DIR` on another thread while the manifest
/// is made and written, if this build read the files; whether the index
/// kept by an earlier build is this one's.
struct Keeping(
    Option<std::thread::JoinHandle<Option<(PathBuf, String)>>>,
    bool,
);

impl Keeping {
    /// Waits for the index to be kept. What the manifest was made from is
    /// told again (for a later build to reuse it) only when the index it
    /// reads is kept.
    fn finish(mut self, files: &mut CkFmhaFiles) {
        let kept = self.0.take().and_then(|h| h.join().ok().flatten());
        let index = files.index.get_mut();
        match (kept, index) {
            (Some(kept), Some(index)) => index.kept_at(kept),
            _ if self.1 => {}
            _ => {
                files.inputs = None;
                files.made_from = None;
            }
        }
    }
}

impl Drop for Keeping {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            let _ = h.join();
        }
    }
}

/// What [`CkFmha::generate`] left: the generated directory, the
/// directories to scan in it, the directions whose generator ran, and
/// what was read while the generators ran.
struct Generated {
    dir: PathBuf,
    scanned: Vec<PathBuf>,
    regenerated: Vec<String>,
    vocab: Option<Arc<Vocabulary>>,
    ahead: index::ReadAhead,
}

/// What every group's compile command is made from besides its blobs.
struct Made<'a> {
    options: &'a cmake::FmhaOptions,
    top: &'a cmake::TopLevelOptions,
    ck: &'a Path,
    root: &'a Path,
    generated: &'a Path,
}

/// A build that read every generated file: what is left to do before its
/// index is complete (the dispatchers' calls) and kept.
struct Fresh {
    vocab: Arc<Vocabulary>,
    detail: index::Detail,
    dispatchers: Vec<index::Dispatcher>,
    /// The files' roles before targets, as kept.
    roles: Vec<Role>,
}

impl Fresh {
    /// Checks the dispatchers' calls against the recorded blobs of `files`
    /// (the templates of the headers that launch them included), and
    /// keeps the index in `kept` (its directory and key) on another
    /// thread while the manifest is made and written.
    fn check_and_keep(
        self,
        files: &[GeneratedFile],
        kept: Option<(PathBuf, String)>,
    ) -> Result<(BlobIndex, Keeping), Error> {
        let Fresh {
            vocab,
            mut detail,
            mut dispatchers,
            roles,
        } = self;
        let templates: BTreeSet<String> = files
            .iter()
            .filter_map(|f| match &f.role {
                Role::Blob(d) => Some(d.templates.iter().cloned()),
                _ => None,
            })
            .flatten()
            .collect();
        detail.launchers = vocab.launcher_definitions(&templates);
        for d in &mut dispatchers {
            d.text.push_str(&detail.launchers);
        }
        // The blobs' part of the kept index is serialised meanwhile.
        let (calls, blobs) = std::thread::scope(|s| {
            let blobs = kept
                .is_some()
                .then(|| s.spawn(|| index::serialise_blobs(&detail.blobs)));
            let calls = index::check_calls(&vocab, &detail, files, &dispatchers);
            (calls, blobs.and_then(|h| h.join().ok().flatten()))
        });
        detail.calls = calls?;
        let index = BlobIndex::new(detail);
        let keeping = kept.map(|(dir, key)| {
            let index = index.clone();
            std::thread::spawn(move || index::keep(&dir, key, roles, &index, blobs))
        });
        Ok((index, Keeping(keeping, false)))
    }
}

/// The files' roles and index as kept in `kept` (its directory and key)
/// by an earlier build that read the same files, else every file read
/// (what was read `ahead` not again): the files with their roles, the
/// index when it was kept, and what a build that read the files has left
/// to do. Blobs whose names disagree with their declarations are noted in
/// `disagreements`.
fn read_or_load(
    example: &Path,
    mut files: Vec<GeneratedFile>,
    vocab: Option<Arc<Vocabulary>>,
    ahead: index::ReadAhead,
    kept: Option<(&Path, &str)>,
    disagreements: &mut Vec<String>,
) -> Result<(Vec<GeneratedFile>, BlobIndex, Option<Fresh>), Error> {
    if let Some((roles, index)) = kept.and_then(|(dir, key)| index::load(dir, key, &files)) {
        for (f, role) in files.iter_mut().zip(roles) {
            f.role = role;
        }
        for f in &files {
            if let Role::Blob(d) = &f.role {
                let stem = f.rel.rsplit('/').next().unwrap_or(&f.rel);
                let stem = stem.rsplit_once('.').map_or(stem, |(s, _)| s);
                if let Some(why) = name_disagreement(stem, d) {
                    disagreements.push(format!("{stem}: {why}"));
                }
            }
        }
        return Ok((files, index, None));
    }
    let vocab = match vocab {
        Some(v) => v,
        None => Arc::new(Vocabulary::read(example)?),
    };
    let (detail, dispatchers) = index::read(&vocab, &mut files, ahead, disagreements)?;
    let roles: Vec<Role> = files.iter().map(|f| f.role.clone()).collect();
    let fresh = Fresh {
        vocab,
        detail,
        dispatchers,
        roles,
    };
    Ok((files, BlobIndex::default(), Some(fresh)))
}

/// The group of a CK blob of `kind` whose entry takes the architecture
/// family `arch`: `fwd_gfx9`, or the kind alone. The preset and the
/// interceptor both name groups so, and tell apart groups of one name
/// their own way (targets, a number).
pub(crate) fn group_base(kind: &str, arch: Option<&str>) -> String {
    match arch {
        Some(a) => format!("{kind}_{a}"),
        None => kind.to_string(),
    }
}

/// The family of a group of CK blobs of `kind` named `group`: the kind,
/// whatever the architectures and commands, when the group's name is not
/// the kind itself.
pub(crate) fn family_of(kind: &str, group: &str) -> Option<String> {
    (group != kind).then(|| kind.to_string())
}

/// What a build that reused the last one's output reads its files' roles
/// and index from, when asked.
#[derive(Debug)]
struct Reused {
    /// Where the index was kept.
    dir: PathBuf,
    /// Its key.
    key: String,
    /// The generated files, their roles not yet known.
    scanned: Vec<GeneratedFile>,
    /// The requested targets and their macros.
    admission: Arc<Admission>,
}

impl CkFmhaFiles {
    /// The files of a build that reused the last one's output, nothing read
    /// yet.
    fn of_reuse(
        out_dir: PathBuf,
        generated: Generated,
        ck: PathBuf,
        stamp: WriteStamp,
        reused: Reused,
    ) -> CkFmhaFiles {
        CkFmhaFiles {
            manifest: OnceLock::new(),
            manifest_path: Some(out_dir.join(MANIFEST_FILE)),
            inputs: None,
            made_from: Some(super::derived::digest(&stamp.inputs)),
            generated_dir: generated.dir,
            ck_root: Some(ck),
            files: OnceLock::new(),
            regenerated: generated.regenerated,
            disagreements: stamp.disagreements,
            index: OnceLock::new(),
            reused: Some(Arc::new(reused)),
            left_out_kinds: stamp.left_out,
        }
    }

    /// The manifest (also written to [`manifest_path`](Self::manifest_path)
    /// by [`CkFmha::try_write`]).
    ///
    /// # Panics
    ///
    /// When the build reused the last one's output and the manifest it
    /// wrote can no longer be read: see [`try_manifest`](Self::try_manifest).
    pub fn manifest(&self) -> &Manifest {
        self.try_manifest()
            .unwrap_or_else(|e| panic!("ck-jit-ck: {e}"))
    }

    /// The manifest, read from [`manifest_path`](Self::manifest_path) the
    /// first time it is asked for when the build reused the last one's
    /// output.
    pub fn try_manifest(&self) -> Result<&Manifest, Error> {
        if let Some(m) = self.manifest.get() {
            return Ok(m);
        }
        let path = self
            .manifest_path
            .as_deref()
            .ok_or_else(|| Error::SourceTree {
                path: self.generated_dir.clone(),
                why: "no manifest was made or written for these files".into(),
            })?;
        let text = fs::read_to_string(path).map_err(io_err(path))?;
        let m = Manifest::from_json(&text).map_err(|e| Error::SourceTree {
            path: path.to_path_buf(),
            why: format!("the manifest written by the last build: {e}; build again"),
        })?;
        Ok(self.manifest.get_or_init(|| m))
    }

    /// Every generated source file, sorted by relative path.
    ///
    /// # Panics
    ///
    /// When the build reused the last one's output and the index it kept
    /// can no longer be read: see [`try_files`](Self::try_files).
    pub fn files(&self) -> &[GeneratedFile] {
        self.try_files()
            .unwrap_or_else(|e| panic!("ck-jit-ck: {e}"))
    }

    /// Every generated source file, their roles read from the index kept
    /// in `OUT_DIR` the first time they are asked for when the build
    /// reused the last one's output.
    pub fn try_files(&self) -> Result<&[GeneratedFile], Error> {
        self.load_reused()?;
        Ok(self.files.get().map_or(&[][..], Vec::as_slice))
    }

    /// Whether this build found every input as it was when the manifest
    /// was last written, and reused that build's output instead of
    /// making it again.
    pub fn reused(&self) -> bool {
        self.reused.is_some()
    }

    /// The index of the blobs (see [`try_files`](Self::try_files)).
    pub(crate) fn index(&self) -> Result<&BlobIndex, Error> {
        self.load_reused()?;
        self.index.get().ok_or_else(|| Error::SourceTree {
            path: self.generated_dir.clone(),
            why: "the index of the generated files is missing: build again".into(),
        })
    }

    /// Reads the files' roles and the index a reused build left unread.
    fn load_reused(&self) -> Result<(), Error> {
        let Some(r) = self.reused.as_deref() else {
            return Ok(());
        };
        if self.files.get().is_some() && self.index.get().is_some() {
            return Ok(());
        }
        let (roles, index) =
            index::load(&r.dir, &r.key, &r.scanned).ok_or_else(|| Error::SourceTree {
                path: r.dir.join(index::INDEX_FILE),
                why: "the index kept by the last build is missing or changed: build again".into(),
            })?;
        let mut files = r.scanned.clone();
        for (f, role) in files.iter_mut().zip(roles) {
            f.role = role;
        }
        admit::admit_targets(&mut files, &r.admission)?;
        let _ = self.files.set(files);
        let _ = self.index.set(index);
        Ok(())
    }

    /// The API dispatchers (`fmha_*_api.cpp`), for the consumer to compile.
    pub fn dispatchers(&self) -> impl Iterator<Item = &Path> {
        self.files()
            .iter()
            .filter(|f| f.role == Role::Dispatcher)
            .map(|f| f.path.as_path())
    }

    /// Blobs that no requested target's guard admits, not recorded: with
    /// only `gfx950` asked for, CK's forward blobs guarded by
    /// `defined(__gfx9__) && !defined(__gfx950__)`.
    pub fn left_out(&self) -> impl Iterator<Item = &Path> {
        self.files()
            .iter()
            .filter(|f| matches!(f.role, Role::OtherArch(_)))
            .map(|f| f.path.as_path())
    }

    /// Every call CK's dispatchers make of a blob specialisation, checked
    /// against the specialisations the recorded blobs define (see
    /// [`check_calls`](super::calls::check_calls)), `groups` by blob name:
    /// what [`Manifest::together`] records. Read with the blobs, once per
    /// build.
    pub fn check_dispatchers(&self) -> Result<super::calls::CallCheck, Error> {
        Ok(self.index()?.detail()?.calls.clone())
    }

    /// The error for dispatcher calls no recorded blob answers: calls that
    /// only left-out blobs define ([`left_out`](Self::left_out)) are
    /// [`Error::LeftOutCalls`], naming each such kind; the others
    /// [`Error::UnresolvedCalls`].
    pub(crate) fn unresolved_error(&self, calls: Vec<(PathBuf, usize, String)>) -> Error {
        let left_out_kind = (|| -> Result<BTreeMap<String, String>, Error> {
            let files = self.try_files()?;
            let mut kinds = BTreeMap::new();
            for b in &self.index()?.detail()?.blobs {
                if let Some(Role::OtherArch(d)) = files.get(b.file).map(|f| &f.role) {
                    for s in &b.specialisations {
                        kinds.insert(
                            super::calls::specialisation_key(&s.template, &s.args),
                            d.kind.clone(),
                        );
                    }
                }
            }
            Ok(kinds)
        })()
        .unwrap_or_default();
        let mut kinds: BTreeMap<String, (usize, (PathBuf, usize, String))> = BTreeMap::new();
        let mut other = Vec::new();
        for call in calls {
            match left_out_kind.get(&call.2) {
                Some(kind) => kinds.entry(kind.clone()).or_insert((0, call)).0 += 1,
                None => other.push(call),
            }
        }
        if kinds.is_empty() {
            return Error::UnresolvedCalls { calls: other };
        }
        Error::LeftOutCalls {
            kinds: kinds.into_iter().map(|(k, (n, c))| (k, n, c)).collect(),
        }
    }

    /// The recorded blob files, with what they declare.
    pub fn blobs(&self) -> impl Iterator<Item = (&BlobDecl, &Path)> {
        self.files().iter().filter_map(|f| match &f.role {
            Role::Blob(d) => Some((d.as_ref(), f.path.as_path())),
            _ => None,
        })
    }

    /// The dispatch rules of every dispatcher (see [`crate::rules`]): what
    /// each of CK's dispatcher functions decides, for a Rust caller to
    /// decide the same. Calls no blob answers are one error listing each
    /// with its file and line.
    pub fn dispatch_rules(&self) -> Result<Vec<RulesFile>, Error> {
        let blob_of: std::collections::HashMap<String, String> = self
            .index()?
            .detail()?
            .owners(self.try_files()?)
            .into_iter()
            .collect();
        let mut out = Vec::new();
        let mut unresolved = Vec::new();
        for api in self.dispatchers() {
            let mut text = fs::read_to_string(api).map_err(io_err(api))?;
            text.push_str(&self.index()?.detail()?.launchers);
            let name = api.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let r = super::rules::read::dispatcher_rules(name, &text, &blob_of)
                .map_err(|e| e.in_file(api))?;
            if r.rules.blobs.is_empty() && r.unresolved.is_empty() {
                // A dispatcher calls blobs (that is how it was told from a
                // host source); rules that reach none would decide nothing.
                return Err(Error::SourceTree {
                    path: api.to_path_buf(),
                    why: "no call of a blob template was found in this dispatcher or in the \
                          templates of the CK headers it can call: its rules would be empty"
                        .into(),
                });
            }
            unresolved.extend(
                r.unresolved
                    .into_iter()
                    .map(|(line, call)| (api.to_path_buf(), line, call)),
            );
            out.push(r.rules);
        }
        if !unresolved.is_empty() {
            return Err(self.unresolved_error(unresolved));
        }
        Ok(out)
    }

    /// Writes [`dispatch_rules`](Self::dispatch_rules) into `dir` (created
    /// if needed), one `<dispatcher>.rules.json` per dispatcher (CK's
    /// `fmha_fwd_api.cpp` gives `fmha_fwd_api.rules.json`); an unchanged
    /// file is not rewritten. Returns the paths written.
    ///
    /// A build that reused the last one's manifest finds the rules that
    /// build wrote to `dir` by a stamp there (`.ck_jit_rules.stamp`) and
    /// makes them again only when one of them changed since.
    pub fn write_rules<P: AsRef<Path>>(&self, dir: P) -> Result<Vec<PathBuf>, Error> {
        let dir = dir.as_ref();
        let stamp = derived::Stamp::new(dir, "rules", self.made_from.as_deref());
        if let Some(kept) = stamp.as_ref().and_then(derived::Stamp::load) {
            return Ok(kept.files);
        }
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        if let Some(stamp) = &stamp {
            stamp.forget();
        }
        let mut written = Vec::new();
        for rules in self.dispatch_rules()? {
            let stem = rules.file.strip_suffix(".cpp").unwrap_or(&rules.file);
            let path = dir.join(format!("{stem}.rules.json"));
            write_if_changed(&path, rules.to_json()).map_err(io_err(&path))?;
            written.push(path);
        }
        if let Some(stamp) = stamp {
            stamp.keep(&written, "");
        }
        Ok(written)
    }
}

impl Default for CkFmha {
    fn default() -> CkFmha {
        CkFmha::new()
    }
}

impl CkFmha {
    /// A preset with no tree yet: every direction, receipt 1, `hipcc`,
    /// `gfx90a`, `python3`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// let mut ck = ck_jit_ck::CkFmha::new();
    /// ```
    pub fn new() -> CkFmha {
        CkFmha {
            source: None,
            generated: None,
            directions: Vec::new(),
            receipt: 1,
            filter: None,
            archs: Vec::new(),
            compiler: "hipcc".into(),
            flags: Vec::new(),
            includes: Vec::new(),
            defines: Vec::new(),
            fast_exp2: true,
            python: "python3".into(),
            name: None,
            out_dir: None,
            root: None,
            cargo_metadata: true,
            hip_version: None,
        }
    }

    /// The CK tree: its `include/` and `example/ck_tile/01_fmha/` are the
    /// blobs' include directories, and its generator writes the blobs unless
    /// [`generated_dir`](CkFmha::generated_dir) is given. An aiter tree is
    /// accepted too: CK is then taken from its `3rdparty/composable_kernel`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::CkFmha::new().source("third_party/composable_kernel");
    /// ```
    pub fn source<P: AsRef<Path>>(&mut self, tree: P) -> &mut CkFmha {
        self.source = Some(tree.as_ref().to_path_buf());
        self
    }

    /// Takes the blobs from an already generated directory instead of
    /// running the generator: its files (at any depth, e.g. one
    /// subdirectory per direction, or all in one as CK's CMake writes them)
    /// are classified by what they declare, whatever their names: a blob
    /// specialises an entry template for a traits type the CK headers
    /// declare, a dispatcher calls those templates. The CK tree
    /// ([`source`](CkFmha::source)) is still required: its headers declare
    /// the traits, and it gives the blobs' include directories (add more
    /// with [`include`](CkFmha::include)).
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::CkFmha::new()
    ///     .source("third_party/composable_kernel")
    ///     .generated_dir("generated/fmha");
    /// ```
    pub fn generated_dir<P: AsRef<Path>>(&mut self, dir: P) -> &mut CkFmha {
        self.generated = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Adds a direction to generate (`generate.py -d`): any name the
    /// generator offers (`"fwd"`, `"batch_prefill"`); default every
    /// direction the generator offers (its `codegen/ops/fmha_*.py`
    /// modules). A name it does not offer is an error listing those it does.
    /// With [`generated_dir`](CkFmha::generated_dir), every generated blob
    /// is recorded whatever its direction.
    ///
    /// # Example
    ///
    /// ```no_run
    /// use ck_jit_ck::CkFmha;
    /// CkFmha::new().direction("fwd").direction("batch_prefill");
    /// ```
    pub fn direction(&mut self, direction: impl std::fmt::Display) -> &mut CkFmha {
        let direction = direction.to_string();
        if !self.directions.contains(&direction) {
            self.directions.push(direction);
        }
        self
    }

    /// The generator's `--receipt`. Default 1, CK's "generate more
    /// instances to cover all hdim": blobs are compiled on first use, so
    /// extra instances cost nothing at build time. CK's own CMake uses its
    /// default 0 for the forward directions, aiter uses 600.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::CkFmha::new().receipt(600);
    /// ```
    pub fn receipt(&mut self, receipt: u32) -> &mut CkFmha {
        self.receipt = receipt;
        self
    }

    /// The generator's `--filter` (an fnmatch pattern on kernel names),
    /// passed through unchanged to every direction's run.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::CkFmha::new().filter("*_d128_*");
    /// ```
    pub fn filter(&mut self, pattern: &str) -> &mut CkFmha {
        self.filter = Some(pattern.to_string());
        self
    }

    /// Adds a GPU architecture (`--offload-arch=<arch>`); default `gfx90a`
    /// when none is given. The architectures are the generator's
    /// `--targets`, and each blob is compiled for those its guard admits
    /// (see [Architectures](CkFmha#architectures)).
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::CkFmha::new().arch("gfx90a").arch("gfx942");
    /// ```
    pub fn arch(&mut self, arch: &str) -> &mut CkFmha {
        self.archs.push(arch.to_string());
        self
    }

    /// The compiler the runtime runs: a name looked up in `PATH` or a path.
    /// Default `hipcc`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::CkFmha::new().compiler("/opt/rocm/bin/hipcc");
    /// ```
    pub fn compiler(&mut self, program: &str) -> &mut CkFmha {
        self.compiler = program.to_string();
        self
    }

    /// Adds a flag after CK's own (`-fvisibility=hidden` is dropped).
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::CkFmha::new().flag("-mllvm").flag("-enable-post-misched=0");
    /// ```
    pub fn flag(&mut self, flag: &str) -> &mut CkFmha {
        self.flags.push(flag.to_string());
        self
    }

    /// The HIP version of the compiler the runtime runs (`MAJOR.MINOR.PATCH`
    /// as `hipconfig --version` prints it; a `-0` suffix is ignored). CK's
    /// top-level `CMakeLists.txt` is then evaluated for it and the flags it
    /// adds for that version (`-fno-offload-uniform-block`, `-mllvm
    /// -enable-post-misched=0`, ...) are recorded. Without it none of them
    /// is, since one the compiler does not know fails every compile.
    ///
    /// # Example
    ///
    /// ```no_run
    /// // ROCm 6.1
    /// ck_jit_ck::CkFmha::new().hip_version("6.1.40091");
    /// ```
    pub fn hip_version(&mut self, version: &str) -> &mut CkFmha {
        self.hip_version = Some(version.to_string());
        self
    }

    /// Adds an include directory (relative to the manifest root, or
    /// absolute).
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::CkFmha::new().include("/opt/ck/include");
    /// ```
    pub fn include<P: AsRef<Path>>(&mut self, dir: P) -> &mut CkFmha {
        self.includes.push(dir.as_ref().to_path_buf());
        self
    }

    /// Adds `-D<name>[=<value>]`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::CkFmha::new().define("CK_TILE_FLOAT_TO_BFLOAT16_DEFAULT", Some("3"));
    /// ```
    pub fn define(&mut self, name: &str, value: Option<&str>) -> &mut CkFmha {
        self.defines
            .push((name.to_string(), value.map(str::to_string)));
        self
    }

    /// Whether the forward kinds get `-DCK_TILE_FMHA_FWD_FAST_EXP2=1`, as
    /// CK's CMake does by default (`FMHA_FWD_FAST_EXP2`); default true.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::CkFmha::new().fast_exp2(false);
    /// ```
    pub fn fast_exp2(&mut self, on: bool) -> &mut CkFmha {
        self.fast_exp2 = on;
        self
    }

    /// The Python interpreter that runs the generator; default `python3`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::CkFmha::new().python("/usr/bin/python3.11");
    /// ```
    pub fn python<P: AsRef<Path>>(&mut self, program: P) -> &mut CkFmha {
        self.python = program.as_ref().to_path_buf();
        self
    }

    /// The cache name; default `CK_JIT_NAME`, else `ck_jit`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::CkFmha::new().name("my_attention");
    /// ```
    pub fn name(&mut self, name: &str) -> &mut CkFmha {
        self.name = Some(name.to_string());
        self
    }

    /// Where the generator writes and the manifest goes; default `OUT_DIR`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::CkFmha::new().out_dir("target/ck");
    /// ```
    pub fn out_dir<P: AsRef<Path>>(&mut self, dir: P) -> &mut CkFmha {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The manifest root: a directory holding the generated directory (and
    /// ideally the CK tree). Default: the generated directory itself.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::CkFmha::new().root("..");
    /// ```
    pub fn root<P: AsRef<Path>>(&mut self, dir: P) -> &mut CkFmha {
        self.root = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Whether to print `cargo:` lines (default true).
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::CkFmha::new().cargo_metadata(false);
    /// ```
    pub fn cargo_metadata(&mut self, print: bool) -> &mut CkFmha {
        self.cargo_metadata = print;
        self
    }

    /// Runs the generator if needed and assembles the manifest, without
    /// writing it or printing anything.
    ///
    /// # Example
    ///
    /// ```no_run
    /// let files = ck_jit_ck::CkFmha::new()
    ///     .generated_dir("generated")
    ///     .try_manifest()?;
    /// println!("{} blobs", files.manifest().blobs.len());
    /// # Ok::<(), ck_jit_ck::Error>(())
    /// ```
    pub fn try_manifest(&self) -> Result<CkFmhaFiles, Error> {
        let mut cargo = CargoOutput::silent();
        let (mut files, keeping) = self.plan(&mut cargo, false)?;
        keeping.finish(&mut files);
        Ok(files)
    }

    /// [`try_manifest`](CkFmha::try_manifest), then writes the manifest to
    /// `OUT_DIR/ck_jit_manifest.json` (only when its content changed) and
    /// prints the `cargo:` lines.
    ///
    /// # Example
    ///
    /// ```no_run
    /// let files = ck_jit_ck::CkFmha::new().source("ck").try_write()?;
    /// # Ok::<(), ck_jit_ck::Error>(())
    /// ```
    pub fn try_write(&self) -> Result<CkFmhaFiles, Error> {
        assemble::to_stdout(|lines| self.try_write_with_output(lines))
    }

    /// [`try_write`](CkFmha::try_write), sending the `cargo:` lines to
    /// `cargo_lines`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// let mut lines = Vec::new();
    /// ck_jit_ck::CkFmha::new().source("ck").try_write_with_output(&mut lines)?;
    /// # Ok::<(), ck_jit_ck::Error>(())
    /// ```
    pub fn try_write_with_output(&self, cargo_lines: &mut dyn Write) -> Result<CkFmhaFiles, Error> {
        let mut cargo = CargoOutput::to_if(self.cargo_metadata, cargo_lines);
        let (mut files, keeping) = self.plan(&mut cargo, true)?;
        if files.reused.is_some() {
            cargo
                .finish()
                .map_err(|source| ck_jit_build::Error::CargoOutput { source })?;
            return Ok(files);
        }
        let out_dir = self.resolve_out_dir(&mut cargo)?;
        // No stamp while the manifest is being written: a build cut short
        // does not leave one that a rerun would trust.
        let stamp_path = out_dir.join(WRITE_STAMP);
        let _ = fs::remove_file(&stamp_path);
        let path = assemble::write(files.try_manifest()?, &out_dir, cargo)?;
        keeping.finish(&mut files);
        if let Some(inputs) = files.inputs.take() {
            let stamp = WriteStamp {
                inputs,
                outputs: outputs_stamp(&out_dir),
                disagreements: files.disagreements.clone(),
                left_out: files.left_out_kinds.clone(),
            };
            if let Ok(bytes) = serde_json::to_vec(&stamp) {
                let _ = write_if_changed(&stamp_path, bytes);
            }
        }
        files.manifest_path = Some(path);
        Ok(files)
    }

    /// [`try_write`](CkFmha::try_write), panicking on error.
    ///
    /// # Panics
    ///
    /// When the tree or generator is missing, the generator fails, a file
    /// cannot be read, or the manifest cannot be written. The message is the
    /// [`Error`]'s.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::CkFmha::new().source("ck").write();
    /// ```
    pub fn write(&self) -> CkFmhaFiles {
        assemble::or_panic("ck-jit-ck", self.try_write())
    }

    fn resolve_out_dir(&self, cargo: &mut CargoOutput<'_>) -> Result<PathBuf, Error> {
        Ok(assemble::out_dir(
            self.out_dir.as_deref(),
            "is not set; call out_dir() when not running under cargo",
            cargo,
        )?)
    }

    /// The directions to generate: the requested ones (checked against
    /// those the generator offers), else every one it offers.
    fn directions(&self, example: &Path) -> Result<Vec<String>, Error> {
        let offered = offered_directions(example);
        if self.directions.is_empty() {
            return Ok(offered);
        }
        let mut d = self.directions.clone();
        d.sort();
        if let Some(bad) = d.iter().find(|d| !offered.contains(d)) {
            return Err(Error::SourceTree {
                path: example.join("codegen").join("ops"),
                why: format!(
                    "the generator offers no direction '{}' (it offers: {})",
                    escape(bad),
                    offered.join(", ")
                ),
            });
        }
        Ok(d)
    }

    /// Generates (unless the stamps match), reads and records the files.
    /// With `reuse`, a build whose inputs are all as they were when the
    /// manifest was last written returns the files unread (see
    /// [`CkFmhaFiles`]).
    fn plan(
        &self,
        cargo: &mut CargoOutput<'_>,
        reuse: bool,
    ) -> Result<(CkFmhaFiles, Keeping), Error> {
        let ck = self.ck_tree()?;
        let example = ck.join(FMHA_EXAMPLE_DIR);
        // The generator, its codegen modules and the headers that declare
        // the traits: what the manifest is made from.
        cargo.rerun_if_changed(&utf8(&example)?);
        let generated = self.generate(&example, cargo)?;
        let root = self.root_of(&generated.dir)?;
        let root_text = utf8(&root)?;
        let mut files = Vec::new();
        for dir in &generated.scanned {
            scan_dir(dir, &generated.dir, &mut files)?;
        }
        files.sort_by(|a, b| a.rel.cmp(&b.rel));
        let requested = self.default_targets();
        // Every file is read once, or not at all when the index kept by an
        // earlier build lists the same files, sizes and mtimes.
        let kept_at = self
            .out_dir
            .clone()
            .or_else(|| CargoOutput::silent().var("OUT_DIR").map(PathBuf::from));
        let key = index::key(&example, &requested, &generated.dir, &files)?;
        let name = assemble::cache_name(self.name.as_deref(), cargo)?;
        let options = cmake::fmha_compile_options(&example);
        let top = self.top_level_options(&ck, cargo)?;
        // Everything the manifest is made from: the same inputs make the
        // same manifest, which need not be made or written again.
        let inputs = format!("{key}\n{self:?}\n{name:?}\n{options:?}\n{top:?}\n{root_text}\n");
        let admission = Arc::new(Admission::new(
            &ck,
            &requested,
            Some(top.standard.as_deref().unwrap_or(FALLBACK_CXX_STANDARD)),
            &self.macro_flags(false, &options, &top),
            &self.macro_flags(true, &options, &top),
        )?);
        if let (true, true, Some(dir)) = (reuse, generated.regenerated.is_empty(), &kept_at) {
            let out_dir = self.resolve_out_dir(cargo)?;
            if let Some(stamp) = reusable(&out_dir, &inputs) {
                warn_of_disagreements(cargo, &stamp.disagreements);
                warn_of_left_out(cargo, &stamp.left_out);
                let reused = Reused {
                    dir: dir.clone(),
                    key,
                    scanned: files,
                    admission,
                };
                let files = CkFmhaFiles::of_reuse(out_dir, generated, ck, stamp, reused);
                return Ok((files, Keeping(None, false)));
            }
        }
        let mut disagreements = Vec::new();
        let (mut files, index, fresh) = read_or_load(
            &example,
            files,
            generated.vocab,
            generated.ahead,
            kept_at.as_deref().map(|dir| (dir, key.as_str())),
            &mut disagreements,
        )?;
        let targets_of = admit::admit_targets(&mut files, &admission)?;
        let left_out = admit::left_out_warnings(&files, &requested);
        if !files.iter().any(|f| matches!(f.role, Role::Blob(_))) {
            return Err(Error::NoBlobs { dir: generated.dir });
        }
        let (index, keeping) = match fresh {
            Some(fresh) => fresh.check_and_keep(&files, kept_at.map(|dir| (dir, key)))?,
            // The kept index is this build's: a reuse may read it.
            None => (index, Keeping(None, true)),
        };
        let made = Made {
            options: &options,
            top: &top,
            ck: &ck,
            root: &root,
            generated: &generated.dir,
        };
        let manifest = self.assemble(name, &made, &files, &targets_of, &index)?;
        warn_of_disagreements(cargo, &disagreements);
        warn_of_left_out(cargo, &left_out);
        let files = CkFmhaFiles {
            manifest: OnceLock::from(manifest),
            manifest_path: None,
            generated_dir: generated.dir,
            ck_root: Some(ck),
            files: OnceLock::from(files),
            regenerated: generated.regenerated,
            disagreements,
            index: OnceLock::from(index),
            made_from: Some(super::derived::digest(&inputs)),
            inputs: Some(inputs),
            reused: None,
            left_out_kinds: left_out,
        };
        Ok((files, keeping))
    }

    /// The CK tree given to [`source`](Self::source), resolved.
    fn ck_tree(&self) -> Result<PathBuf, Error> {
        match &self.source {
            Some(tree) => resolve_ck(tree),
            None => Err(Error::SourceTree {
                path: PathBuf::new(),
                why: "no CK tree given: call source() with a CK or aiter checkout (its \
                      headers declare the traits every blob is described by)"
                    .into(),
            }),
        }
    }

    /// Runs the generator for every direction whose stamp does not match
    /// (side by side, what one wrote read while the others still write),
    /// or takes the generated directory given.
    fn generate(&self, example: &Path, cargo: &mut CargoOutput<'_>) -> Result<Generated, Error> {
        if let Some(dir) = &self.generated {
            return self.given_generated(dir, cargo);
        }
        let (generate_py, targets) = self.generator(example)?;
        let base = self.resolve_out_dir(cargo)?.join(GENERATED_SUBDIR);
        fs::create_dir_all(&base).map_err(io_err(&base))?;
        let directions = self.directions(example)?;
        let dirs: Vec<(PathBuf, PathBuf)> = directions
            .iter()
            .map(|d| (base.join(d), base.join(format!("{d}.stamp"))))
            .collect();
        let started: Vec<AtomicBool> = directions.iter().map(|_| AtomicBool::new(false)).collect();
        let runs = self.codegen_runs(&generate_py, targets.as_deref(), &directions, &dirs, &started);
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
        // The vocabulary, read once by whichever needs it first.
        let words: OnceLock<Option<Arc<Vocabulary>>> = OnceLock::new();
        let shared_vocab = || words.get_or_init(|| Vocabulary::read(example).ok().map(Arc::new)).clone();
        let mut vocab: Option<Arc<Vocabulary>> = None;
        let mut readers = Vec::new();
        let mut early = index::ReadAhead::new();
        let mut failed = None;
        let mut ran = Vec::new();
        let outs: Vec<PathBuf> = dirs.iter().map(|(out, _)| out.clone()).collect();
        let watch = index::Watch::new(dirs.len());
        std::thread::scope(|s| {
            let watching = s.spawn(|| {
                behind_generators();
                watch.run(&shared_vocab, &outs, &base, &started)
            });
            let outcome = codegen::run_all(&runs, jobs, |i| {
                ran.push(i);
                if failed.is_some() {
                    return;
                }
                if vocab.is_none() {
                    vocab = shared_vocab();
                }
                if vocab.is_none() {
                    match Vocabulary::read(example) {
                        Ok(v) => vocab = Some(Arc::new(v)),
                        Err(e) => {
                            failed = Some(e);
                            return;
                        }
                    }
                }
                let mut written = Vec::new();
                if let Err(e) = scan_dir(&dirs[i].0, &base, &mut written) {
                    failed = Some(e);
                    return;
                }
                // What was read while the generator wrote, and is as it was.
                let (read, rest) = watch.close(i, written);
                early.extend(read);
                // While a generator still runs, it is what the build waits
                // for: what it wrote is read on the cycles it leaves (and
                // once none runs, these threads and the watch's share the
                // cores as equals).
                for part in rest.chunks(READ_AHEAD_CHUNK) {
                    let (v, part) = (vocab.clone(), part.to_vec());
                    readers.push(std::thread::spawn(move || {
                        behind_generators();
                        v.map(|v| index::read_ahead(&v, &part)).unwrap_or_default()
                    }));
                }
            });
            watch.stop();
            watching.thread().unpark();
            outcome
        })?;
        // A file the watch was reading when its generator exited (bwd's
        // dispatcher, whose calls take long to read) is not read twice.
        early.extend(watch.finish(vocab.as_deref()));
        if let Some(e) = failed {
            return Err(e);
        }
        ran.sort_unstable();
        let mut ahead = early;
        for r in readers {
            ahead.extend(r.join().unwrap_or_default());
        }
        Ok(Generated {
            dir: base,
            scanned: dirs.into_iter().map(|(out, _)| out).collect(),
            regenerated: ran.into_iter().map(|i| directions[i].clone()).collect(),
            vocab,
            ahead,
        })
    }

    /// One generator run per direction, writing into its directory of
    /// `dirs` (output, stamp) and raising its flag of `started`.
    fn codegen_runs<'a>(
        &'a self,
        generate_py: &'a Path,
        targets: Option<&'a str>,
        directions: &'a [String],
        dirs: &'a [(PathBuf, PathBuf)],
        started: &'a [AtomicBool],
    ) -> Vec<Codegen<'a>> {
        directions
            .iter()
            .zip(dirs)
            .zip(started)
            .map(|((d, (out, stamp)), started)| Codegen {
                python: &self.python,
                generate_py,
                direction: d,
                receipt: self.receipt,
                filter: self.filter.as_deref(),
                targets,
                out,
                stamp,
                started,
            })
            .collect()
    }

    /// The generated directory given, watched unless it is under
    /// `OUT_DIR`.
    fn given_generated(&self, dir: &Path, cargo: &mut CargoOutput<'_>) -> Result<Generated, Error> {
        let canon = fs::canonicalize(dir).map_err(|e| Error::SourceTree {
            path: dir.to_path_buf(),
            why: format!("generated directory: {e}"),
        })?;
        // A generated directory under OUT_DIR is the build's own output:
        // watching it would rerun the build script after every build.
        let out_dir = self
            .out_dir
            .clone()
            .or_else(|| CargoOutput::silent().var("OUT_DIR").map(PathBuf::from));
        let inside_out = out_dir
            .and_then(|o| fs::canonicalize(o).ok())
            .is_some_and(|o| canon.starts_with(o));
        if !inside_out {
            cargo.rerun_if_changed(&utf8(&canon)?);
        }
        Ok(Generated {
            dir: canon.clone(),
            scanned: vec![canon],
            regenerated: Vec::new(),
            vocab: None,
            ahead: index::ReadAhead::new(),
        })
    }

    /// The example's `generate.py` and the `--targets` to give it, when it
    /// knows that option and architectures were asked for.
    fn generator(&self, example: &Path) -> Result<(PathBuf, Option<String>), Error> {
        let generate_py = example.join("generate.py");
        if !generate_py.is_file() {
            return Err(Error::Generator { path: generate_py });
        }
        let generator = fs::read_to_string(&generate_py).map_err(io_err(&generate_py))?;
        // A generator that knows `--targets` writes blobs for those
        // architectures only.
        let targets = (generator.contains("--targets") && !self.archs.is_empty())
            .then(|| self.archs.join(","));
        Ok((generate_py, targets))
    }

    /// The root blob sources are recorded relative to: the one given
    /// (which must contain the generated directory), else that directory.
    fn root_of(&self, generated: &Path) -> Result<PathBuf, Error> {
        let Some(r) = &self.root else {
            return Ok(generated.to_path_buf());
        };
        let canon = fs::canonicalize(r).map_err(|source| ck_jit_build::Error::Root {
            path: r.clone(),
            source,
        })?;
        if !generated.starts_with(&canon) {
            return Err(Error::SourceTree {
                path: r.clone(),
                why: format!(
                    "the root must contain the generated directory '{}'",
                    shown(generated)
                ),
            });
        }
        Ok(canon)
    }

    /// The manifest of the recorded blobs of `files`: one group per kind,
    /// architecture tag and set of admitted targets (the compile command
    /// of a blob depends on nothing else), the sets of `index` called
    /// together.
    fn assemble(
        &self,
        name: String,
        made: &Made<'_>,
        files: &[GeneratedFile],
        targets_of: &[Vec<String>],
        index: &BlobIndex,
    ) -> Result<Manifest, Error> {
        let mut assembler = Assembler::new(name, &utf8(made.root)?);
        let mut members: BTreeMap<GroupKey, Vec<usize>> = BTreeMap::new();
        for (i, f) in files.iter().enumerate() {
            if let Role::Blob(d) = &f.role {
                let key = (
                    d.kind.clone(),
                    d.arch.clone(),
                    targets_of[i].clone(),
                    d.entry.clone(),
                );
                members.entry(key).or_default().push(i);
            }
        }
        // Blobs of one kind and tag admitted by different targets (a guard
        // naming a target the tag does not) get the targets in their
        // group's name too.
        let mut sets_per_name: BTreeMap<(&str, Option<&str>), BTreeSet<&[String]>> =
            BTreeMap::new();
        for (kind, arch, targets, _) in members.keys() {
            sets_per_name
                .entry((kind.as_str(), arch.as_deref()))
                .or_default()
                .insert(targets.as_slice());
        }
        let mut group_of_file = vec![0; files.len()];
        for (key, idx) in &members {
            let (kind, arch, targets, entry) = key;
            let mut name = group_base(kind, arch.as_deref());
            if sets_per_name[&(kind.as_str(), arch.as_deref())].len() > 1 {
                name = format!("{name}_{}", targets.join("_"));
            }
            let dirs: BTreeSet<PathBuf> = idx
                .iter()
                .filter_map(|&i| files[i].path.parent().map(Path::to_path_buf))
                .collect();
            let group = self.group(&name, kind, entry, targets, made, &dirs)?;
            let mut rendered = group.render()?;
            rendered.family = family_of(kind, &name);
            rendered.neutral = neutral_of(idx.iter().filter_map(|&i| match &files[i].role {
                Role::Blob(d) => Some(&**d),
                _ => None,
            }));
            let id = assembler.group(rendered);
            for &i in idx {
                group_of_file[i] = id;
            }
        }
        // Paths are compared as strings: `files` are relative to the
        // generated directory, which is `prefix` under the root.
        let prefix = match made.generated.strip_prefix(made.root) {
            Ok(p) if p.as_os_str().is_empty() => String::new(),
            Ok(p) => format!("{}/", utf8(p)?.replace('\\', "/")),
            Err(_) => String::new(),
        };
        for (f, group) in files.iter().zip(group_of_file) {
            let Role::Blob(d) = &f.role else {
                continue;
            };
            let file_name = f.rel.rsplit('/').next().unwrap_or(&f.rel);
            let stem = file_name.rsplit_once('.').map_or(file_name, |(s, _)| s);
            let blob = Blob {
                name: stem.to_string(),
                source: format!("{prefix}{}", f.rel),
                group,
                symbol: None,
                meta: d.meta.clone(),
            };
            // One stem in two directories: both files are named.
            assembler.blob(blob).map_err(|refused| match refused {
                Refused::Duplicate(e) => Error::from(e),
                Refused::Name(e) => Error::FileName {
                    path: f.path.clone(),
                    why: e.to_string(),
                },
            })?;
        }
        let mut manifest = assembler.finish()?;
        // What each dispatcher call runs together, so the runtime compiles
        // an operation's blobs at its first call together.
        manifest
            .set_together(&index.together)
            .map_err(|e| Error::SourceTree {
                path: made.generated.to_path_buf(),
                why: format!("the dispatchers' call sets: {e}"),
            })?;
        Ok(manifest)
    }

    /// The standard and HIP-version flags of CK's top-level
    /// `CMakeLists.txt`, watched when it exists; where it does not, or sets
    /// no standard, a warning names the standard assumed.
    fn top_level_options(
        &self,
        ck: &Path,
        cargo: &mut CargoOutput<'_>,
    ) -> Result<cmake::TopLevelOptions, Error> {
        let path = ck.join("CMakeLists.txt");
        let hip = match &self.hip_version {
            Some(v) => Some(
                cmake::HipVersion::parse(v)
                    .ok_or_else(|| Error::HipVersion { version: v.clone() })?,
            ),
            None => None,
        };
        let top = cmake::top_level_options(ck, hip)?;
        let why = match &top {
            Some(t) => {
                cargo.rerun_if_changed(&utf8(&path)?);
                if t.standard.is_some() {
                    return Ok(t.clone());
                }
                "sets no C++ standard"
            }
            None => "does not exist",
        };
        cargo.warning_from(
            "ck-jit-ck",
            &format!(
                "'{}' {why}: CK's FMHA blobs are recorded with -std=c++{FALLBACK_CXX_STANDARD}",
                shown(&path)
            ),
        );
        Ok(top.unwrap_or_default())
    }

    /// The architectures asked for, or the default one.
    fn default_targets(&self) -> Vec<String> {
        if self.archs.is_empty() {
            vec![DEFAULT_ARCH.to_string()]
        } else {
            self.archs.clone()
        }
    }

    /// The `-D` and `-U` flags of the compile command of a forward or
    /// (`bwd`) backward kind's group, in the order [`group`](Self::group)
    /// gives them: what the preprocessor has defined when it reads a blob.
    fn macro_flags(
        &self,
        bwd: bool,
        options: &cmake::FmhaOptions,
        top: &cmake::TopLevelOptions,
    ) -> Vec<String> {
        let cmake_flags = if bwd { &options.bwd } else { &options.fwd };
        let mut flags: Vec<String> = top.hip_flags.clone();
        for f in cmake_flags {
            if f.starts_with("-DCK_TILE_FMHA_FWD_FAST_EXP2") && !self.fast_exp2 {
                flags.push("-DCK_TILE_FMHA_FWD_FAST_EXP2=0".into());
            } else {
                flags.push(f.clone());
            }
        }
        flags.extend(self.flags.iter().cloned());
        for (name, value) in &self.defines {
            flags.push(match value {
                Some(v) => format!("-D{name}={v}"),
                None => format!("-D{name}"),
            });
        }
        flags
    }

    /// The group `name` of blobs of one kind compiled for `targets`: CK's
    /// compile command.
    fn group(
        &self,
        name: &str,
        kind: &str,
        entry: &str,
        targets: &[String],
        made: &Made<'_>,
        blob_dirs: &BTreeSet<PathBuf>,
    ) -> Result<BlobGroup, Error> {
        let (options, top, ck, root) = (made.options, made.top, made.ck, made.root);
        let mut g = BlobGroup::new(name);
        let standard = top.standard.as_deref().unwrap_or(FALLBACK_CXX_STANDARD);
        g.compiler(&self.compiler)
            .flags([format!("-std=c++{standard}"), "-O3".to_string()]);
        for t in targets {
            g.flag(&format!("--offload-arch={t}"));
        }
        // CMake puts directory options before the target's own.
        g.flags(&top.hip_flags);
        // CK's CMake gives forward and backward sources different options.
        let cmake_flags = if kind.starts_with("bwd") {
            &options.bwd
        } else {
            &options.fwd
        };
        for f in cmake_flags {
            let fast_exp2 = f.starts_with("-DCK_TILE_FMHA_FWD_FAST_EXP2");
            if fast_exp2 && !self.fast_exp2 {
                g.flag("-DCK_TILE_FMHA_FWD_FAST_EXP2=0");
            } else {
                g.flag(f);
            }
        }
        g.flags(CK_FMHA_FLAGS).flags(&self.flags);
        g.include(under_root(&ck.join("include"), root));
        g.include(under_root(&ck.join(FMHA_EXAMPLE_DIR), root));
        for dir in blob_dirs {
            g.include(under_root(dir, root));
        }
        for dir in &self.includes {
            g.include(dir);
        }
        for (name, value) in &self.defines {
            g.define(name, value.as_deref());
        }
        g.symbol_prefix(&mangled_template_prefix(entry));
        Ok(g)
    }
}

/// Traits whose absence is the neutral variant: a family query that does
/// not mention one gets the blob without it (no logits soft-cap, no
/// attention sink, no quantisation scale, no skipping of short queries),
/// never whichever variant sorts first. Each with the values, in order of
/// preference, that mean "without".
const NEUTRAL: &[(&str, &[&str])] = &[
    ("logits", &["false"]),
    ("sink", &["false"]),
    ("qscale", &["no", "none", "false"]),
    ("squant", &["false"]),
    ("skip", &["false"]),
];

/// The neutral values of a set of blobs: for each [`NEUTRAL`] trait they
/// vary in, its "without" value.
pub(crate) fn neutral_of<'a>(
    decls: impl Iterator<Item = &'a BlobDecl>,
) -> BTreeMap<String, String> {
    let mut seen: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut has_hdim_v = false;
    for d in decls {
        has_hdim_v |= d.meta.contains_key(crate::vocab::HDIM_V);
        for (key, _) in NEUTRAL {
            if let Some(v) = d.meta.get(*key) {
                seen.entry(key).or_default().insert(v.as_str());
            }
        }
    }
    let mut out = BTreeMap::new();
    for (key, without) in NEUTRAL {
        let Some(values) = seen.get(key).filter(|v| v.len() > 1) else {
            continue;
        };
        if let Some(v) = without.iter().find(|w| values.contains(*w)) {
            out.insert((*key).to_string(), (*v).to_string());
        }
    }
    // A query that names the head dimension only is for hdim_v = hdim, as
    // CK's callers mostly are: it gets a kernel whose V head covers it
    // (`hdim = 192` a 192 one, not the (192, 128) tile).
    if has_hdim_v {
        out.insert(
            crate::vocab::HDIM_V.to_string(),
            ck_jit_build::manifest::neutral_at_least("hdim"),
        );
    }
    out
}

/// A group's identity: kind, architecture tag, admitted targets, entry.
type GroupKey = (String, Option<String>, Vec<String>, String);

/// The directions CK's generator offers: its `codegen/ops/fmha_*.py`
/// modules (`generate.py` registers each under its name without `fmha_`);
/// the four classic ones for a generator without that directory.
fn offered_directions(example: &Path) -> Vec<String> {
    let mut d: Vec<String> = fs::read_dir(example.join("codegen").join("ops"))
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".py")?;
            (stem != "__init__").then(|| stem.strip_prefix("fmha_").unwrap_or(stem).to_string())
        })
        .collect();
    if d.is_empty() {
        d = CLASSIC_DIRECTIONS.iter().map(|d| d.to_string()).collect();
    }
    d.sort();
    d
}

/// `path` relative to `root` when inside it (`.` for the root itself),
/// else unchanged (absolute).
fn under_root(path: &Path, root: &Path) -> PathBuf {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
        Ok(rel) => rel.to_path_buf(),
        Err(_) => path.to_path_buf(),
    }
}

/// The CK tree of `tree`: itself, or the CK inside an aiter checkout.
fn resolve_ck(tree: &Path) -> Result<PathBuf, Error> {
    let canon = fs::canonicalize(tree).map_err(|e| Error::SourceTree {
        path: tree.to_path_buf(),
        why: if e.kind() == io::ErrorKind::NotFound {
            "does not exist".into()
        } else {
            e.to_string()
        },
    })?;
    if !canon.is_dir() {
        return Err(Error::SourceTree {
            path: tree.to_path_buf(),
            why: "is not a directory".into(),
        });
    }
    let aiter_ck = canon.join(AITER_CK_DIR);
    let ck = if aiter_ck.join(FMHA_EXAMPLE_DIR).is_dir() {
        aiter_ck
    } else {
        canon
    };
    if !ck.join("include").is_dir() {
        return Err(Error::SourceTree {
            path: tree.to_path_buf(),
            why: format!(
                "'{}' has no include/ directory; is this a composable_kernel (or aiter) checkout?",
                shown(&ck)
            ),
        });
    }
    Ok(ck)
}

/// One `cargo:warning` per kind of blob no requested target keeps.
fn warn_of_left_out(cargo: &mut CargoOutput<'_>, left_out: &[String]) {
    for line in left_out {
        cargo.warning_from("ck-jit-ck", line);
    }
}

/// One `cargo:warning` for the blobs whose names disagree with their
/// declarations, if any.
fn warn_of_disagreements(cargo: &mut CargoOutput<'_>, disagreements: &[String]) {
    if let Some(first) = disagreements.first() {
        cargo.warning_from(
            "ck-jit-ck",
            &format!(
                "{} CK blob names disagree with their declarations (the declarations are \
             recorded), e.g. {}",
                disagreements.len(),
                escape(first)
            ),
        );
    }
}

/// Lowers the calling thread's priority below the generators' (nice 10,
/// on Linux; nothing elsewhere): a thread reading what one generator wrote
/// while another still runs takes the cycles it leaves, not its core. A
/// thread's priority cannot be raised again, so only threads of their own
/// (which end with their reading) are lowered.
fn behind_generators() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority on this thread's own id; no memory
    // is involved.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid);
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10);
    }
}

/// The C++ sources under `dir` (see [`codegen::walk`]), by path relative
/// to `base`.
fn scan_dir(dir: &Path, base: &Path, out: &mut Vec<GeneratedFile>) -> Result<(), Error> {
    codegen::walk(dir, &mut |path, name| {
        if !index::is_source(name) {
            return Ok(());
        }
        let rel = index::relative(&path, base).ok_or_else(|| Error::FileName {
                path: path.clone(),
                why: "is not a UTF-8 path under the generated directory".into(),
            })?;
        out.push(GeneratedFile {
            path,
            rel,
            role: Role::Host,
        });
        Ok(())
    })
}

fn utf8(path: &Path) -> Result<String, Error> {
    match path.to_str() {
        Some(s) if !s.contains(['\n', '\r']) => Ok(s.to_string()),
        _ => Err(ck_jit_build::Error::RerunPath {
            path: path.to_path_buf(),
        }
        .into()),
    }
}
