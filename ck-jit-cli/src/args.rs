//! The command line: every command and flag with its help text, and the
//! parsers of flag values (sizes, metadata conditions). Parsing only; nothing here
//! reads a manifest or touches the cache.

use std::path::PathBuf;

use ck_jit_rt::Query;
use clap::{ArgGroup, Args, Parser, Subcommand};

const ABOUT: &str = "Inspect, pre-build and maintain the ck-jit kernel cache";

const LONG_ABOUT: &str = "\
Inspect, pre-build and maintain the ck-jit kernel cache.

Kernels are source files (blobs) listed in a manifest; a program compiles
each one on its first call into a disk cache. This tool builds those cache
entries ahead of time through the same code path, so a program finds them
and never runs a compiler, and keeps the cache in shape.

The manifest is --manifest, else $CK_JIT_MANIFEST, else
$CK_JIT_ROOT/ck_jit_manifest.json, else the one a cargo build of the crate
here wrote (found through `cargo metadata`, as cargo tools find a crate:
the package whose directory holds the current one, or --package; the
newest build, or --profile's; either one asks for that build even where
the variables are set). The cache is --cache-dir, else
$CK_JIT_CACHE_DIR, else ~/.cache/<manifest name>.

Exit status: 0 done, 1 some of the work failed, 2 the request was wrong
(unknown blob, bad flags, unreadable manifest).";

const EXAMPLES: &str = "\
Examples:
  ck-jit list                               # in a crate's directory, after cargo build
  ck-jit --package my-kernels --profile release list
  ck-jit --manifest dist/ck_jit_manifest.json list
  ck-jit build --all -j 8
  ck-jit build fmha_fwd_d128_bf16 kernels/vadd_f32.cpp --force
  ck-jit gc --max-size 2G
  ck-jit verify --json";

const SELECTION: &str = "\
Blobs can be named by blob name (vadd_f32), file name (vadd_f32.cpp),
source path (kernels/vadd_f32.cpp, relative to the tree root, or absolute)
or cached object (~/.cache/ck_jit/v1/vadd_f32/<prekey>/<key>.so), mixed
freely. --family and --where narrow the selection (all blobs when nothing
is named); repeated --family means any of them, repeated --where all of them.
A --where condition compares a metadata value as a family query does:
KEY=VALUE, KEY!=VALUE, KEY>=N, KEY>N, KEY<=N, KEY<N (integers), KEY (a set
flag: present and not 0/false/no/off/empty) or !KEY (an unset flag); one
--where may hold several, separated by commas.";

const LIST_EXAMPLES: &str = "\
Examples:
  ck-jit list
  ck-jit list --family fwd --where dtype=bf16
  ck-jit list --where 'hdim>=128' --where lse --where '!dropout'
  ck-jit list vadd_f32 kernels/vadd_f64.cpp --json";

const BUILD_EXAMPLES: &str = "\
Examples:
  ck-jit build --all
  ck-jit build --family fwd -j 16
  ck-jit build --family fwd --where 'dtype=bf16,hdim<=128'
  ck-jit build --blob-list hot_kernels.txt
  grep -l bf16 kernels/*.cpp | ck-jit build --blob-list -
  ck-jit build vadd_f32 --force";

const CLEAN_EXAMPLES: &str = "\
Examples:
  ck-jit clean vadd_f32
  ck-jit clean --where dtype=f64 --dry-run
  ck-jit clean --all";

const GC_EXAMPLES: &str = "\
Examples:
  ck-jit gc --max-size 500M
  ck-jit gc --max-entries 1000 --dry-run
  CK_JIT_CACHE_MAX_SIZE=2G ck-jit gc";

const STAT_EXAMPLES: &str = "\
Examples:
  ck-jit stat
  ck-jit stat --cache-dir /shared/ck_jit --json";

const VERIFY_EXAMPLES: &str = "\
Examples:
  ck-jit verify
  ck-jit verify --cache-dir /opt/app/kernel-cache --json";

const PACK_EXAMPLES: &str = "\
The pack holds each selected blob's cache entry (object, record, header
list) as a lazy call on this machine finds it, for one GPU architecture
(--arch, else CK_JIT_ARCH, else the device in use), with an index of
checksums, compiler identities and targets. Every blob must be cached:
build them first with the same CK_JIT_ARCH.

Examples:
  ck-jit build --all && ck-jit pack --all -o kernels-gfx942.tar.zst
  CK_JIT_ARCH=gfx950 ck-jit build --family fwd
  ck-jit pack --family fwd --arch gfx950 -o fwd-gfx950.tar.zst
  ck-jit pack --blob-list used-blobs.txt -o serving.tar.zst";

const UNPACK_EXAMPLES: &str = "\
Every file of every pack is checked against its index before anything is
installed; a damaged or truncated pack installs nothing. A pack built on
another kind of machine, for another GPU architecture (vs --arch, else
CK_JIT_ARCH, else the device detected) or by another compiler than the one
this machine would run is refused, naming its value and ours. Of several
packs, each blob's entry for the device itself wins over one of its family
(a gfx9 target on a gfx950); an entry the device cannot run is never
installed. Each entry appears in the cache whole or not at all.

Examples:
  ck-jit unpack kernels-gfx942.tar.zst
  ck-jit unpack kernels-gfx9.tar.zst kernels-gfx950.tar.zst --cache /opt/ck-jit/gfx950
  ck-jit unpack kernels.tar.zst --arch gfx942 --cache /opt/ck-jit/gfx942 --json";

const EXPORT_EXAMPLES: &str = "\
Examples:
  ck-jit export-manifest --profile release --to dist/
  ck-jit export-manifest --out-dir target/release/build/mycrate-1a2b3c/out --to dist/
  ck-jit export-manifest --from ck_jit_manifest.json --to /opt/app/kernels/ --root /opt/app/kernels";

/// `ck-jit [--manifest PATH] [--cache-dir DIR] [--json] <command> ...`
#[derive(Debug, Parser)]
#[command(
    name = "ck-jit",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = EXAMPLES,
    propagate_version = true
)]
pub struct Cli {
    /// Settings every command takes.
    #[command(flatten)]
    pub global: Global,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Where the manifest and the cache are, and how to report.
#[derive(Debug, Args)]
pub struct Global {
    /// Manifest file [default: $CK_JIT_MANIFEST, else $CK_JIT_ROOT/ck_jit_manifest.json,
    /// else the one the cargo build of the crate here wrote]
    #[arg(
        long,
        global = true,
        value_name = "PATH",
        help_heading = "Global options"
    )]
    pub manifest: Option<PathBuf>,
    /// Use the manifest of this cargo package's build [default: the package
    /// of the current directory, else the workspace's only one built]
    #[arg(
        short = 'p',
        long,
        global = true,
        value_name = "NAME",
        help_heading = "Global options"
    )]
    pub package: Option<String>,
    /// Use the cargo build of this profile (dev, release, or another)
    /// [default: the newest build]
    #[arg(
        long,
        global = true,
        value_name = "NAME",
        help_heading = "Global options"
    )]
    pub profile: Option<String>,
    /// Cache root [default: $CK_JIT_CACHE_DIR, else ~/.cache/MANIFEST_NAME]
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        help_heading = "Global options"
    )]
    pub cache_dir: Option<PathBuf>,
    /// Print one JSON document on stdout instead of text
    #[arg(long, global = true, help_heading = "Global options")]
    pub json: bool,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the manifest's blobs: source found, cached, family, arch, metadata
    #[command(after_help = format!("{SELECTION}\n\n{LIST_EXAMPLES}"))]
    List(ListArgs),
    /// Compile blobs into the cache ahead of time, in parallel
    #[command(after_help = format!("{SELECTION}\n\n{BUILD_EXAMPLES}"))]
    Build(BuildArgs),
    /// Remove the cache entries of blobs, or everything
    #[command(after_help = format!("{SELECTION}\n\n{CLEAN_EXAMPLES}"))]
    Clean(CleanArgs),
    /// Shrink the cache to a size or entry limit, least recently used first
    #[command(after_help = GC_EXAMPLES)]
    Gc(GcArgs),
    /// Summarise the cache: entries, size, age, entries per blob
    #[command(after_help = STAT_EXAMPLES)]
    Stat(StatArgs),
    /// Check every entry against its record; move bad ones to bad/
    #[command(after_help = VERIFY_EXAMPLES)]
    Verify(VerifyArgs),
    /// Write the cache entries of blobs into one pack file (tar + zstd) to ship
    #[command(after_help = format!("{SELECTION}\n\n{PACK_EXAMPLES}"))]
    Pack(PackArgs),
    /// Check packs and install their entries into a cache
    #[command(after_help = UNPACK_EXAMPLES)]
    Unpack(UnpackArgs),
    /// Copy (and check) the manifest a crate's build wrote, for deployment
    #[command(after_help = EXPORT_EXAMPLES)]
    ExportManifest(ExportArgs),
}

/// Which blobs a command works on (see the commands' help).
#[derive(Debug, Args)]
pub struct Selection {
    /// Blob names, file names, source paths or cached objects (.so)
    #[arg(value_name = "BLOB")]
    pub blobs: Vec<String>,
    /// Read more blobs from FILE, one per line ('#' starts a comment, '-' is stdin)
    #[arg(long, value_name = "FILE")]
    pub blob_list: Vec<PathBuf>,
    /// Only blobs of this family (manifest group); repeat for any of several
    #[arg(long, value_name = "NAME")]
    pub family: Vec<String>,
    /// Only blobs whose metadata meets COND (KEY=VALUE, KEY!=VALUE, KEY>=N, KEY<N, KEY, !KEY, ...); repeat to require all
    #[arg(long = "where", value_name = "COND", value_parser = parse_condition)]
    pub filters: Vec<Query>,
}

/// `ck-jit list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Which blobs (default: all).
    #[command(flatten)]
    pub select: Selection,
    /// Every blob of the manifest (the default when nothing is named)
    #[arg(long, conflicts_with_all = ["blobs", "blob_list", "family", "filters"])]
    pub all: bool,
}

/// `ck-jit build`.
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// Which blobs.
    #[command(flatten)]
    pub select: Selection,
    /// Every blob of the manifest
    #[arg(long, conflicts_with_all = ["blobs", "blob_list", "family", "filters"])]
    pub all: bool,
    /// Compiles at once [default: $CK_JIT_JOBS, else the number of cores];
    /// under make or cargo, no more than the jobserver's free slots either
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// Compile even blobs that are cached (replacing their entries)
    #[arg(long)]
    pub force: bool,
}

/// `ck-jit clean`.
#[derive(Debug, Args)]
pub struct CleanArgs {
    /// Which blobs.
    #[command(flatten)]
    pub select: Selection,
    /// Every entry in the cache (of any manifest), quarantined files and logs
    #[arg(long, conflicts_with_all = ["blobs", "blob_list", "family", "filters"])]
    pub all: bool,
    /// Say what would be removed, remove nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// `ck-jit gc`.
#[derive(Debug, Args)]
pub struct GcArgs {
    /// Largest total size to keep, e.g. 500M or 2G (powers of 1024) [default: $CK_JIT_CACHE_MAX_SIZE]
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_size: Option<u64>,
    /// Most entries to keep
    #[arg(long, value_name = "N")]
    pub max_entries: Option<u64>,
    /// Say what would be removed, remove nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// `ck-jit pack`.
#[derive(Debug, Args)]
pub struct PackArgs {
    /// Which blobs.
    #[command(flatten)]
    pub select: Selection,
    /// Every blob of the manifest
    #[arg(long, conflicts_with_all = ["blobs", "blob_list", "family", "filters"])]
    pub all: bool,
    /// The pack file to write (replaced whole)
    #[arg(short = 'o', long, value_name = "FILE")]
    pub out: PathBuf,
    /// The GPU architecture the pack is for (gfx942, sm_90) [default:
    /// $CK_JIT_ARCH, else the device in use]
    #[arg(long, value_name = "ARCH", value_parser = parse_arch)]
    pub arch: Option<DeviceArch>,
}

/// `ck-jit unpack`.
#[derive(Debug, Args)]
pub struct UnpackArgs {
    /// Pack files (several: the best entry of each blob is installed)
    #[arg(value_name = "PACK", required = true)]
    pub packs: Vec<PathBuf>,
    /// Cache to install into [default: --cache-dir, else $CK_JIT_CACHE_DIR,
    /// else the manifest's default cache]
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// The GPU architecture to judge the packs for (gfx942, sm_90)
    /// [default: $CK_JIT_ARCH, else the device in use]
    #[arg(long, value_name = "ARCH", value_parser = parse_arch)]
    pub arch: Option<DeviceArch>,
}

/// `ck-jit stat` (no flags of its own).
#[derive(Debug, Args)]
pub struct StatArgs {}

/// `ck-jit verify` (no flags of its own).
#[derive(Debug, Args)]
pub struct VerifyArgs {}

/// `ck-jit export-manifest`: from --out-dir, --from, --manifest, else the
/// cargo build of the crate here.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("input").args(["out_dir", "from"])))]
pub struct ExportArgs {
    /// The build's OUT_DIR, holding ck_jit_manifest.json [default: --manifest,
    /// else the cargo build of the crate here (see --package, --profile)]
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// The manifest file itself
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// Where to write it: a file, or a directory to put ck_jit_manifest.json in
    #[arg(long, value_name = "PATH")]
    pub to: PathBuf,
    /// Record this absolute tree root instead of the build's (where the
    /// sources are installed)
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

pub use ck_jit_rt::maintenance::parse_size;

use ck_jit_rt::arch::DeviceArch;

/// Parses `--arch`: one device architecture, as `CK_JIT_ARCH` names one.
pub fn parse_arch(text: &str) -> Result<DeviceArch, String> {
    DeviceArch::parse(text).ok_or_else(|| {
        format!(
            "'{}' names no device architecture (gfx942, gfx90a, gfx1100, sm_80, sm_90)",
            text.escape_debug()
        )
    })
}

/// Parses a `--where` condition (or several, separated by commas) as a
/// family query reads it.
pub fn parse_condition(text: &str) -> Result<Query, String> {
    let q: Query = text.parse().map_err(|e: ck_jit_rt::Error| e.to_string())?;
    if q == Query::new() {
        return Err(format!(
            "expected a condition such as dtype=bf16, hdim>=128, lse or !dropout, got '{}'",
            text.escape_debug()
        ));
    }
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn sizes_parse_with_binary_suffixes_and_refuse_nonsense() {
        assert_eq!(parse_size("123"), Ok(123));
        assert_eq!(parse_size("500M"), Ok(500 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("1.5k"), Ok(1536));
        assert_eq!(parse_size("10 MiB"), Ok(10 << 20));
        assert_eq!(parse_size("0"), Ok(0));
        for bad in ["", "M", "5X", "-1", "1e99G", "1..2"] {
            let e = parse_size(bad).unwrap_err();
            assert!(e.contains("expected a size"), "{bad}: {e}");
        }
    }

    #[test]
    fn conditions_read_as_queries_and_bad_ones_say_what_was_expected() {
        assert_eq!(
            parse_condition("dtype=bf16"),
            Ok(Query::new().eq("dtype", "bf16"))
        );
        assert_eq!(
            parse_condition("hdim>=128,lse,!dropout"),
            Ok(Query::new().ge("hdim", 128).has("lse").lacks("dropout"))
        );
        assert_eq!(parse_condition("k=a=b"), Ok(Query::new().eq("k", "a=b")));
        let e = parse_condition("hdim>=big").unwrap_err();
        assert!(e.contains("'>=' compares integers"), "{e}");
        assert!(parse_condition("=x")
            .unwrap_err()
            .contains("the key is empty"));
        assert!(parse_condition("")
            .unwrap_err()
            .contains("expected a condition"));
    }

    #[test]
    fn command_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
