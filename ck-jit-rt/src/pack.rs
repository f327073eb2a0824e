//! Packs: the cache entries of a selection of blobs, built for one GPU
//! architecture by known compilers, as one file to ship (`ck-jit pack`),
//! and installed into another cache (`ck-jit unpack`) so that a host or
//! an image serves those kernels without compiling.
//!
//! A pack is a tar archive compressed with zstd. Its first member is the
//! index, [`INDEX_FILE`] ([`Index`]: pack format, cache format, host
//! machine, GPU architecture, each compiler's identity, and per entry the
//! blob, keys, targets, size and BLAKE3 checksum); then every file an
//! entry needs, at the path it has in a cache: the object
//! (`v1/<blob>/<prekey>/<key>.so`), its record (`.json`) and the header
//! set its record names (`deps/<digest>.json`). Every file of the archive
//! is listed in the index with its size and checksum.
//!
//! Unpacking refuses, before anything is written, a pack of another cache
//! format, host machine, compiler identity (the compiler this machine
//! would run now, when it has one) or GPU architecture (the device in use:
//! `--arch`, else `CK_JIT_ARCH`, else detected), naming the pack's value
//! and ours. Its files are then read into a staging directory in the
//! cache's `tmp/`, each checked against the index; one that differs, is
//! missing or is not listed (a damaged or truncated pack) fails the whole
//! unpack and nothing is installed. Only then is each entry published as a
//! compile publishes one (object linked into place, then its record
//! renamed): a lookup sees an entry whole or not at all. The staging
//! directory goes in every case (and is swept from `tmp/` if the process
//! is killed).
//!
//! Several packs at once are resolved per blob: an entry built for the
//! device's own architecture wins over one of its family (an AMD `gfx9`
//! target on a `gfx950`, NVIDIA `sm_80` machine code or PTX on an `sm_86`),
//! and an entry the device cannot run is never installed. The choice is
//! made here, at unpack: the runtime only looks entries up by key.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::cache::{safe_component, short_hash, Cache, Dep, Record, CACHE_FORMAT};
use crate::compile::{self, CompilerId};
use crate::config::Config;
use crate::error::Error;
use crate::gpu::arch::{self, DeviceArch, Platform};
use crate::runtime::Runtime;

/// Version of the pack layout this runtime writes and reads.
pub const PACK_FORMAT: u32 = 1;

/// The index's name inside a pack (its first member).
pub const INDEX_FILE: &str = "ck-jit-pack.json";

const KIND: &str = "ck-jit-pack";

/// The largest index read (a pack of tens of thousands of kernels has an
/// index of a few megabytes).
const MAX_INDEX: u64 = 256 << 20;

/// What a pack holds, written as its first member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Index {
    /// Always `ck-jit-pack`.
    pub kind: String,
    /// [`PACK_FORMAT`] of the writer.
    pub format: u32,
    /// The cache format of its entries (part of every key).
    pub cache_format: u32,
    /// Seconds since the epoch when it was written.
    pub created: u64,
    /// The machine its objects run on (`x86_64`, `aarch64`).
    pub host: String,
    /// The GPU architecture it was built for (`gfx942`, `sm_90`); `None`
    /// when none was named or found (host code, or kernels compiled for
    /// every target they were recorded with).
    pub arch: Option<String>,
    /// The compilers that built its entries.
    pub compilers: Vec<PackCompiler>,
    /// Its entries.
    pub entries: Vec<PackEntry>,
    /// Every other member of the archive, with size and checksum.
    pub files: Vec<PackFile>,
}

/// A compiler as the cache key sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackCompiler {
    /// The program a manifest group names (`hipcc`, `/opt/rocm/bin/hipcc`).
    pub program: String,
    /// The file it resolved to.
    pub path: String,
    /// The first line of its `--version` output (for messages).
    pub version: String,
    /// The hash of everything the key holds of it: its whole `--version`
    /// output, its files as `CK_JIT_COMPILER_CHECK` identifies them (by
    /// content, by default), and the compiler variables (`CPATH`,
    /// `HIP_PATH`, ...); never its path or its files' times.
    pub identity: String,
}

/// One cache entry of a pack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackEntry {
    /// The blob.
    pub blob: String,
    /// The GPU targets its object was compiled for (`gfx942`); empty for
    /// host code.
    pub arch: Vec<String>,
    /// The program of [`Index::compilers`] that built it.
    pub compiler: String,
    /// Its keys ([`Record`]).
    pub inputs: String,
    /// The key with the compiler's identity.
    pub prekey: String,
    /// The final key (the object's file stem).
    pub key: String,
    /// The object's size.
    pub size: u64,
    /// The object's BLAKE3 (as its record has it).
    pub checksum: String,
    /// The header set its record names (digest), if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub depset: String,
}

/// A member of the archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackFile {
    /// Its path, as in a cache.
    pub path: String,
    /// Its size.
    pub size: u64,
    /// Its BLAKE3.
    pub checksum: String,
}

impl Index {
    /// The GPU targets it serves: the architecture it was built for, else
    /// the targets its entries were compiled for (each once, sorted);
    /// empty when it holds host code only. What `ck-jit pack` says it
    /// wrote is what `ck-jit unpack` judges it by.
    pub fn targets(&self) -> Vec<String> {
        match &self.arch {
            Some(a) => vec![a.clone()],
            None => self
                .entries
                .iter()
                .flat_map(|e| e.arch.iter().cloned())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
        }
    }
}

impl PackEntry {
    /// The object's path in a pack (and a cache).
    pub fn object_path(&self) -> String {
        format!(
            "v1/{}/{}/{}.so",
            safe_component(&self.blob),
            self.prekey,
            self.key
        )
    }

    /// The record's path.
    pub fn record_path(&self) -> String {
        format!(
            "v1/{}/{}/{}.json",
            safe_component(&self.blob),
            self.prekey,
            self.key
        )
    }

    /// The header set's path, if it has one.
    pub fn depset_path(&self) -> Option<String> {
        (!self.depset.is_empty()).then(|| format!("deps/{}.json", self.depset))
    }
}

fn io_err(op: &'static str, path: &Path, e: impl Into<io::Error>) -> Error {
    Error::io(op, path, e.into())
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn blake3_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// The identity of a compiler as the cache key holds it (see
/// `InputsKey::prekey`), in a compiler variables' environment `env`.
fn identity(id: &CompilerId, env: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"ck-jit compiler by content\0");
    h.update(id.version.as_bytes());
    h.update(b"\0files\0");
    h.update(id.files.as_bytes());
    h.update(b"\0env\0");
    h.update(env.as_bytes());
    short_hash(&h.finalize())
}

fn describe(id: &CompilerId, env: &str, program: &str) -> PackCompiler {
    PackCompiler {
        program: program.to_string(),
        path: id.real.display().to_string(),
        version: id.version.lines().next().unwrap_or("").trim().to_string(),
        identity: identity(id, env),
    }
}

/// What [`write()`] wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Packed {
    /// The pack file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its index.
    pub index: Index,
}

/// Writes the verified cache entries of `blobs` (as `rt` plans them: its
/// `CK_JIT_ARCH` decides the architecture) into the pack `out`, replacing
/// it whole (written beside it, then renamed). Every blob must have an
/// entry, found as a lazy call would find it (the writable cache or a
/// read-only tier); none is compiled.
pub fn write(rt: &Runtime, blobs: &[String], out: &Path) -> Result<Packed, Error> {
    let Selection {
        compilers,
        device,
        chosen,
    } = choose(rt, blobs)?;
    let (small, files) = small_files(&chosen)?;
    let index = Index {
        kind: KIND.into(),
        format: PACK_FORMAT,
        cache_format: CACHE_FORMAT,
        created: now(),
        host: std::env::consts::ARCH.into(),
        arch: device,
        compilers: compilers.into_values().collect(),
        entries: chosen.iter().map(|(e, _, _)| e.clone()).collect(),
        files,
    };
    write_archive(out, &index, &chosen, &small)?;
    let bytes = fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    Ok(Packed {
        path: out.to_path_buf(),
        bytes,
        index,
    })
}

/// An entry chosen for a pack: what the index says of it, the root of the
/// cache it is in, and the entry there.
type Chosen = (PackEntry, PathBuf, crate::cache::Entry);

/// A small file of a pack (a record, a header set): its path in the pack,
/// its bytes, and its modification time.
type SmallFile = (String, Vec<u8>, u64);

/// What [`write()`] packs.
struct Selection {
    /// The compilers that built the entries, by program.
    compilers: BTreeMap<String, PackCompiler>,
    /// The one architecture the entries are for, if any.
    device: Option<String>,
    /// The entries.
    chosen: Vec<Chosen>,
}

/// The verified cache entries of `blobs`, with the compilers that made
/// them and the one architecture they are for; an error when one is not
/// cached, does not match its record, or the selection spans two
/// architectures or two identities of one compiler.
fn choose(rt: &Runtime, blobs: &[String]) -> Result<Selection, Error> {
    let env = crate::config::key_env(&rt.config().key_env);
    let mut compilers: BTreeMap<String, PackCompiler> = BTreeMap::new();
    let mut devices: BTreeSet<String> = BTreeSet::new();
    let mut missing = Vec::new();
    // (entry, where its cache's root is)
    let mut chosen: Vec<Chosen> = Vec::new();
    for blob in blobs {
        let owner = rt.owner(blob)?;
        let plan = owner.plan(blob)?;
        let (id, _) = plan.compilable()?;
        let program = plan.group.compiler.clone();
        let c = describe(id, &env, &program);
        if let Some(other) = compilers.get(&program) {
            if other.identity != c.identity {
                return Err(Error::Unpackable {
                    why: format!(
                        "compiler {program} has two identities in one run ({} and {}); \
                     it changed while packing",
                        other.identity, c.identity
                    ),
                });
            }
        }
        compilers.insert(program.clone(), c);
        if let Some(d) = &plan.device {
            devices.insert(d.arch.to_string());
        }
        let Some((entry, bytes)) = owner.cached_entry(&plan)? else {
            missing.push(blob.clone());
            continue;
        };
        if !bytes.was_hashed() && blake3_hex(&bytes) != entry.record.checksum {
            return Err(Error::Unpackable {
                why: format!(
                    "blob '{blob}': the cached object {} does not match its record; \
                 run `ck-jit verify`",
                    entry.object.display()
                ),
            });
        }
        drop(bytes);
        let root = match entry.tier() {
            Some(t) => t.to_path_buf(),
            None => owner.cache()?.root().to_path_buf(),
        };
        let r = &entry.record;
        chosen.push((
            PackEntry {
                blob: r.blob.clone(),
                // The arguments the key holds (narrowed to the device).
                arch: arch::target_names(&plan.group.args),
                compiler: program,
                inputs: r.inputs.clone(),
                prekey: r.prekey.clone(),
                key: r.key.clone(),
                size: r.size,
                checksum: r.checksum.clone(),
                depset: r.depset.clone(),
            },
            root,
            entry,
        ));
    }
    if !missing.is_empty() {
        return Err(Error::NotCached { blobs: missing });
    }
    if let crate::gpu::arch::ArchChoice::Fixed(archs) = &rt.config().arch {
        devices.extend(archs.iter().map(|a| a.to_string()));
    }
    if devices.len() > 1 {
        return Err(Error::Unpackable {
            why: format!(
                "the selection is for several architectures ({}); a pack holds one: set \
             CK_JIT_ARCH (or --arch) to one",
                devices.into_iter().collect::<Vec<_>>().join(", ")
            ),
        });
    }
    Ok(Selection {
        compilers,
        device: devices.into_iter().next(),
        chosen,
    })
}

/// The small files of the `chosen` entries (records, header sets), read
/// now, and the index's list of every file with its checksum; objects are
/// streamed from their files later and checked as they go.
fn small_files(chosen: &[Chosen]) -> Result<(Vec<SmallFile>, Vec<PackFile>), Error> {
    let mut small: Vec<SmallFile> = Vec::new();
    let mut files: Vec<PackFile> = Vec::new();
    let mut depsets_done = BTreeSet::new();
    for (e, root, entry) in chosen {
        let record = fs::read(&entry.record_path)
            .map_err(|err| io_err("reading", &entry.record_path, err))?;
        files.push(PackFile {
            path: e.object_path(),
            size: e.size,
            checksum: e.checksum.clone(),
        });
        files.push(PackFile {
            path: e.record_path(),
            size: record.len() as u64,
            checksum: blake3_hex(&record),
        });
        small.push((e.record_path(), record, entry.record.created));
        if let Some(dp) = e.depset_path() {
            if depsets_done.insert(dp.clone()) {
                let path = root.join(&dp);
                let bytes = fs::read(&path).map_err(|err| io_err("reading", &path, err))?;
                if short_hash(&blake3::hash(&bytes)) != e.depset {
                    return Err(Error::Unpackable {
                        why: format!(
                            "the header set {} does not match its name; run `ck-jit verify`",
                            path.display()
                        ),
                    });
                }
                files.push(PackFile {
                    path: dp.clone(),
                    size: bytes.len() as u64,
                    checksum: blake3_hex(&bytes),
                });
                small.push((dp, bytes, entry.record.created));
            }
        }
    }
    Ok((small, files))
}

/// Writes the pack `out` whole: `index`, the objects of `chosen` (each
/// checked against its checksum as it is copied), then the `small` files;
/// written beside `out`, synced, then renamed over it.
fn write_archive(
    out: &Path,
    index: &Index,
    chosen: &[Chosen],
    small: &[SmallFile],
) -> Result<(), Error> {
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".ck-jit-pack-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| io_err("creating a temp file in", &dir, e))?;
    let enc = zstd::Encoder::new(tmp.as_file(), 9).map_err(|e| io_err("compressing", out, e))?;
    let mut tar = tar::Builder::new(enc);
    let index_bytes = serde_json::to_vec_pretty(index).map_err(|e| io_err("encoding", out, e))?;
    append(&mut tar, INDEX_FILE, index.created, &index_bytes[..], out)?;
    for (e, _, entry) in chosen {
        let f = File::open(&entry.object).map_err(|err| io_err("opening", &entry.object, err))?;
        let mut reader = Hashing::new(f.take(e.size));
        append_sized(
            &mut tar,
            &e.object_path(),
            entry.record.created,
            e.size,
            &mut reader,
            out,
        )?;
        if reader.count != e.size || reader.hex() != e.checksum {
            return Err(Error::Unpackable {
                why: format!(
                    "blob '{}': the cached object {} changed while it was packed",
                    e.blob,
                    entry.object.display()
                ),
            });
        }
    }
    for (path, bytes, created) in small {
        append(&mut tar, path, *created, &bytes[..], out)?;
    }
    let enc = tar.into_inner().map_err(|e| io_err("writing", out, e))?;
    enc.finish().map_err(|e| io_err("writing", out, e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| io_err("syncing", tmp.path(), e))?;
    tmp.persist(out)
        .map_err(|e| io_err("writing", out, e.error))?;
    Ok(())
}

fn append<W: Write>(
    tar: &mut tar::Builder<W>,
    path: &str,
    mtime: u64,
    data: &[u8],
    out: &Path,
) -> Result<(), Error> {
    let mut r = data;
    append_sized(tar, path, mtime, data.len() as u64, &mut r, out)
}

fn append_sized<W: Write>(
    tar: &mut tar::Builder<W>,
    path: &str,
    mtime: u64,
    size: u64,
    data: &mut impl Read,
    out: &Path,
) -> Result<(), Error> {
    let mut h = tar::Header::new_gnu();
    h.set_size(size);
    h.set_mode(0o644);
    h.set_mtime(mtime);
    h.set_entry_type(tar::EntryType::Regular);
    tar.append_data(&mut h, path, data)
        .map_err(|e| io_err("writing", out, e))
}

/// A reader that hashes and counts what passes through it.
struct Hashing<R> {
    inner: R,
    hasher: blake3::Hasher,
    count: u64,
}

impl<R> Hashing<R> {
    fn new(inner: R) -> Hashing<R> {
        Hashing {
            inner,
            hasher: blake3::Hasher::new(),
            count: 0,
        }
    }

    fn hex(&self) -> String {
        self.hasher.finalize().to_hex().to_string()
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
}

type Archive = tar::Archive<zstd::Decoder<'static, io::BufReader<File>>>;

fn open_archive(path: &Path) -> Result<Archive, Error> {
    let f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(Error::PackMissing {
                path: path.to_path_buf(),
            })
        }
        Err(e) => return Err(io_err("opening", path, e)),
    };
    if f.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(Error::NotAPack {
            path: path.to_path_buf(),
            why: "it is a directory".into(),
        });
    }
    let dec = zstd::Decoder::new(f).map_err(|e| io_err("reading", path, e))?;
    Ok(tar::Archive::new(dec))
}

/// Reads the index of the pack at `path` (its first member), checking that
/// it is one this runtime reads.
pub fn read_index(path: &Path) -> Result<Index, Error> {
    let mut archive = open_archive(path)?;
    let not_a_pack = |why: String| Error::NotAPack {
        path: path.to_path_buf(),
        why,
    };
    // A zstd stream that cannot be read is a damaged pack (cut short,
    // most likely); anything else is not a pack at all.
    let mut magic = [0u8; 4];
    let is_zstd = File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == ZSTD_MAGIC;
    if !is_zstd {
        return Err(not_a_pack("not a zstd-compressed archive".into()));
    }
    let damaged = |e: io::Error| Error::PackDamaged {
        path: path.to_path_buf(),
        why: format!("it cannot be read: cut short or corrupt ({e})"),
    };
    let mut members = archive.entries().map_err(damaged)?;
    let first = match members.next() {
        Some(Ok(m)) => m,
        Some(Err(e)) => return Err(damaged(e)),
        None => return Err(not_a_pack("an empty archive".into())),
    };
    index_of(path, first)
}

/// The first bytes of a zstd frame.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

fn index_of<R: Read>(path: &Path, mut first: tar::Entry<'_, R>) -> Result<Index, Error> {
    let not_a_pack = |why: String| Error::NotAPack {
        path: path.to_path_buf(),
        why,
    };
    let name = first
        .path()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    if name != INDEX_FILE {
        return Err(not_a_pack(format!(
            "its first member is '{name}', not {INDEX_FILE} (made by `ck-jit pack`)"
        )));
    }
    if first.size() > MAX_INDEX {
        return Err(not_a_pack(format!("{INDEX_FILE} is too large")));
    }
    let mut text = Vec::new();
    first
        .read_to_end(&mut text)
        .map_err(|e| Error::PackDamaged {
            path: path.to_path_buf(),
            why: format!("{INDEX_FILE} cannot be read ({e})"),
        })?;
    let index: Index = serde_json::from_slice(&text)
        .map_err(|e| not_a_pack(format!("{INDEX_FILE} cannot be read ({e})")))?;
    if index.kind != KIND {
        return Err(not_a_pack(format!(
            "{INDEX_FILE} is of kind '{}', not {KIND}",
            index.kind
        )));
    }
    if index.format > PACK_FORMAT {
        return Err(Error::PackRefused {
            path: path.to_path_buf(),
            why: format!(
                "it is of pack format {}, and this ck-jit reads format {PACK_FORMAT}; \
                 unpack it with a newer ck-jit",
                index.format
            ),
        });
    }
    check_paths(path, &index)?;
    Ok(index)
}

/// Every path an index names is one a cache derives from the entry's
/// blob and keys, or a header set's: nothing can be written outside the
/// staging directory, whatever the pack says.
fn check_paths(path: &Path, index: &Index) -> Result<(), Error> {
    let hex32 = |s: &str| s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit());
    let bad = |why: String| Error::NotAPack {
        path: path.to_path_buf(),
        why,
    };
    let mut listed: BTreeSet<&str> = BTreeSet::new();
    for f in &index.files {
        listed.insert(&f.path);
    }
    for e in &index.entries {
        if !hex32(&e.prekey) || !hex32(&e.key) || !(e.depset.is_empty() || hex32(&e.depset)) {
            return Err(bad(format!(
                "entry of blob '{}' has malformed keys",
                e.blob
            )));
        }
        for p in [
            Some(e.object_path()),
            Some(e.record_path()),
            e.depset_path(),
        ]
        .into_iter()
        .flatten()
        {
            if !listed.contains(p.as_str()) {
                return Err(bad(format!("{INDEX_FILE} does not list {p}")));
            }
        }
    }
    let derived: BTreeSet<String> = index
        .entries
        .iter()
        .flat_map(|e| {
            [
                Some(e.object_path()),
                Some(e.record_path()),
                e.depset_path(),
            ]
        })
        .flatten()
        .collect();
    for f in &index.files {
        if !derived.contains(&f.path) {
            return Err(bad(format!(
                "{INDEX_FILE} lists {}, which no entry names",
                f.path
            )));
        }
    }
    Ok(())
}

/// How well a device runs an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fit {
    /// Code of a target of the device's family: it runs, but an entry for
    /// the device itself is preferred.
    Family,
    /// Host code, or code for the device's own architecture.
    Exact,
}

/// An entry installed (or found already there) by [`unpack`].
#[derive(Debug, Clone, Serialize)]
pub struct Installed {
    /// The blob.
    pub blob: String,
    /// Its key.
    pub key: String,
    /// The pack it came from.
    pub pack: PathBuf,
    /// How it fits the device.
    pub fit: Fit,
    /// Whether the cache had it already.
    pub present: bool,
}

/// An entry not installed, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// The blob.
    pub blob: String,
    /// The pack.
    pub pack: PathBuf,
    /// Why.
    pub why: String,
}

/// What [`unpack`] did.
#[derive(Debug, Clone, Serialize)]
pub struct Unpacked {
    /// The cache installed into.
    pub cache: PathBuf,
    /// The architecture the entries were judged for (`None`: no device
    /// found, no GPU code in the packs).
    pub arch: Option<String>,
    /// Entries installed or already there.
    pub installed: Vec<Installed>,
    /// Entries left out.
    pub skipped: Vec<Skipped>,
    /// Notes (a compiler not found here: its entries serve offline only).
    pub notes: Vec<String>,
}

/// The device entries are judged for, per platform: `--arch`, else
/// `CK_JIT_ARCH`, else detected.
struct Ours<'a> {
    explicit: Option<&'a DeviceArch>,
    config: &'a Config,
    devices: PathBuf,
    found: HashMap<Platform, Option<(DeviceArch, String)>>,
}

impl Ours<'_> {
    fn device(&mut self, platform: Platform) -> Option<(DeviceArch, String)> {
        if let Some(a) = self.explicit.filter(|a| a.platform() == platform) {
            return Some((a.clone(), "--arch".into()));
        }
        let (config, devices) = (self.config, &self.devices);
        self.found
            .entry(platform)
            .or_insert_with(|| {
                arch::device_for(&config.arch, platform, |p| {
                    crate::gpu::device::detect(p, Some(devices)).map(|(d, _)| d)
                })
                .map(|d| (d.arch, d.found_by))
            })
            .clone()
    }
}

fn platform_of(names: &[String]) -> Option<Platform> {
    names.iter().find_map(|n| arch::tag_platform(n))
}

/// How `device` runs an entry compiled for `targets`; `None`: it cannot
/// (or it cannot be told).
fn fit(targets: &[String], device: &DeviceArch) -> Option<Fit> {
    let name = device.to_string();
    if targets
        .iter()
        .any(|t| t.split(':').next().unwrap_or(t) == name)
    {
        return Some(Fit::Exact);
    }
    targets
        .iter()
        .any(|t| arch::tag_runs_on(t, device) == Some(true))
        .then_some(Fit::Family)
}

/// Installs the entries of `packs` into `cache` (see the module's
/// documentation for what is checked and refused). `explicit` is the
/// architecture to judge them for (`--arch`), else the runtime's
/// (`CK_JIT_ARCH`, else the device detected). Nothing is installed unless
/// every pack is accepted and every one of its files matches its index.
pub fn unpack(
    packs: &[PathBuf],
    cache: &Cache,
    explicit: Option<&DeviceArch>,
    config: &Config,
) -> Result<Unpacked, Error> {
    let mut ours = Ours {
        explicit,
        config,
        devices: cache.root().join("devices"),
        found: HashMap::new(),
    };
    let env = crate::config::key_env(&config.key_env);
    let compilers_dir = cache.root().join("compilers");
    let mut notes = Vec::new();
    let mut skipped = Vec::new();
    let mut judged_for: Option<String> = None;
    // (pack, entry, fit) of every entry that may be installed.
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut indexes = Vec::new();
    // Packs for another architecture: refused, unless other packs given
    // with them fit (then they are only passed over).
    let mut foreign: Vec<Error> = Vec::new();
    for (pi, path) in packs.iter().enumerate() {
        let index = read_index(path)?;
        check_compatible(path, &index, config, &env, &compilers_dir, &mut notes)?;
        let refused = judge(
            (pi, path),
            &index,
            &mut ours,
            &mut judged_for,
            &mut candidates,
            &mut skipped,
        )?;
        foreign.extend(refused);
        indexes.push(index);
    }

    if !foreign.is_empty() {
        if foreign.len() == packs.len() {
            return Err(foreign.swap_remove(0));
        }
        for f in foreign {
            notes.push(f.to_string());
        }
    }

    let wanted = best_fits(packs, &candidates, &mut skipped);
    // Every file of every pack read and checked before anything is
    // installed; the files of wanted entries kept in the staging directory.
    let staging = cache.work_dir("unpack")?;
    stage_wanted(packs, &indexes, &wanted, staging.path())?;
    let ready = checked_records(packs, &wanted, staging.path())?;
    let installed = install(cache, packs, ready)?;
    drop(staging);
    Ok(Unpacked {
        cache: cache.root().to_path_buf(),
        arch: judged_for,
        installed,
        skipped,
        notes,
    })
}

/// An entry of a pack that may be installed: the pack's position among
/// those given, the entry, and how it fits the device.
type Candidate = (usize, PackEntry, Fit);

/// An entry whose record (and header set) is read and checked, ready to
/// publish: its pack, its entry, its fit, its record and its staged object.
type Ready<'a> = (usize, &'a PackEntry, Fit, Record, PathBuf);

/// Refuses the pack at `path` when it was built for another host, another
/// cache format, or by another identity of a compiler found here; a
/// compiler not found here is a note.
fn check_compatible(
    path: &Path,
    index: &Index,
    config: &Config,
    env: &str,
    compilers_dir: &Path,
    notes: &mut Vec<String>,
) -> Result<(), Error> {
    let refuse = |why: String| Error::PackRefused {
        path: path.to_path_buf(),
        why,
    };
    if index.host != std::env::consts::ARCH {
        return Err(refuse(format!(
            "it was built for {} machines, this one is {}",
            index.host,
            std::env::consts::ARCH
        )));
    }
    if index.cache_format != CACHE_FORMAT {
        return Err(refuse(format!(
            "its entries are of cache format {}, this runtime's are of format {CACHE_FORMAT}",
            index.cache_format
        )));
    }
    for c in &index.compilers {
        match compile::identify(
            &c.program,
            "(pack)",
            &config.compiler_check,
            Some(compilers_dir),
        ) {
            Ok(id) => {
                let here = describe(&id, env, &c.program);
                if here.identity != c.identity {
                    let what = if here.version == c.version {
                        " (the same first line of --version: the rest of that output, the \
                         contents of its files, or the compiler variables such as CPATH or \
                         HIP_PATH differ)"
                    } else {
                        ""
                    };
                    let at = |p: &str| {
                        if p == c.program {
                            String::new()
                        } else {
                            format!(" ({p})")
                        }
                    };
                    return Err(refuse(format!(
                        "it was built by compiler {}{}, whose --version says \"{}\" \
                         (identity {}); here {}{} says \"{}\" (identity {}){what}. Entries \
                         another compiler built are never found by this one's lookups: \
                         pack them with this compiler",
                        c.program,
                        at(&c.path),
                        c.version,
                        c.identity,
                        c.program,
                        at(&here.path),
                        here.version,
                        here.identity
                    )));
                }
            }
            Err(_) => notes.push(format!(
                "compiler {} ({}, {}) is not found here: the entries it built are loaded \
                 only offline (CK_JIT_OFFLINE=1), for blobs whose compiler is missing",
                c.program, c.path, c.version
            )),
        }
    }
    Ok(())
}

/// Judges the entries of pack `pi` at `path` for the device: those that
/// run on it become candidates, the others are skipped. Refuses the pack
/// when it is for an architecture no device here is like; returns the
/// refusal to note (`Some`) when it is for another device and none of its
/// kernels runs on this one.
fn judge(
    (pi, path): (usize, &Path),
    index: &Index,
    ours: &mut Ours<'_>,
    judged_for: &mut Option<String>,
    candidates: &mut Vec<Candidate>,
    skipped: &mut Vec<Skipped>,
) -> Result<Option<Error>, Error> {
    let refuse = |why: String| Error::PackRefused {
        path: path.to_path_buf(),
        why,
    };
    // The pack's own architecture against the device's.
    let mut pack_other: Option<(String, String, String)> = None;
    if let Some(a) = &index.arch {
        let platform = DeviceArch::parse(a).map(|d| d.platform());
        match platform.and_then(|p| ours.device(p)) {
            None => {
                return Err(refuse(format!(
                    "it was built for {a}, and no {a}-like device was found here: pass \
                     --arch (or set CK_JIT_ARCH) to the architecture it is for"
                )))
            }
            Some((d, by)) => {
                *judged_for = Some(d.to_string());
                if d.to_string() != *a {
                    pack_other = Some((a.clone(), d.to_string(), by));
                }
            }
        }
    }
    let mut runs_here = 0;
    for e in &index.entries {
        let f = if e.arch.is_empty() {
            Some(Fit::Exact)
        } else {
            match platform_of(&e.arch).and_then(|p| ours.device(p)) {
                Some((d, _)) => {
                    judged_for.get_or_insert_with(|| d.to_string());
                    fit(&e.arch, &d)
                }
                None => None,
            }
        };
        match f {
            Some(f) => {
                if !e.arch.is_empty() {
                    runs_here += 1;
                }
                candidates.push((pi, e.clone(), f));
            }
            None => skipped.push(Skipped {
                blob: e.blob.clone(),
                pack: path.to_path_buf(),
                why: format!(
                    "compiled for {}, which {}",
                    e.arch.join(", "),
                    match platform_of(&e.arch).and_then(|p| ours.device(p)) {
                        Some((d, by)) => format!("this device ({d}, {by}) cannot run"),
                        None => "no device found here runs (pass --arch)".into(),
                    }
                ),
            }),
        }
    }
    if let Some((theirs, mine, by)) = pack_other {
        if runs_here == 0 {
            return Ok(Some(refuse(format!(
                "it was built for {theirs}, this device is {mine} (found by {by}), and none \
                 of its kernels runs on {mine}"
            ))));
        }
    }
    Ok(None)
}

/// Per blob, the best fit of every pack; of equal fits, each key once.
/// The entries passed over for a better fit are skipped.
fn best_fits(
    packs: &[PathBuf],
    candidates: &[Candidate],
    skipped: &mut Vec<Skipped>,
) -> Vec<Candidate> {
    let mut best: HashMap<&str, Fit> = HashMap::new();
    for (_, e, f) in candidates {
        let b = best.entry(e.blob.as_str()).or_insert(*f);
        *b = (*b).max(*f);
    }
    let mut keys = BTreeSet::new();
    let mut wanted: Vec<Candidate> = Vec::new();
    for (pi, e, f) in candidates {
        if best[e.blob.as_str()] != *f {
            skipped.push(Skipped {
                blob: e.blob.clone(),
                pack: packs[*pi].clone(),
                why: "another pack has an entry built for this device itself".into(),
            });
        } else if keys.insert((e.prekey.clone(), e.key.clone())) {
            wanted.push((*pi, e.clone(), *f));
        }
    }
    wanted
}

/// Reads and checks every file of every pack, keeping the files of the
/// `wanted` entries under `staging` (a directory per pack).
fn stage_wanted(
    packs: &[PathBuf],
    indexes: &[Index],
    wanted: &[Candidate],
    staging: &Path,
) -> Result<(), Error> {
    let mut keep: Vec<BTreeSet<String>> = vec![BTreeSet::new(); packs.len()];
    for (pi, e, _) in wanted {
        keep[*pi].insert(e.object_path());
        keep[*pi].insert(e.record_path());
        if let Some(d) = e.depset_path() {
            keep[*pi].insert(d);
        }
    }
    for (pi, path) in packs.iter().enumerate() {
        stage(path, &indexes[pi], &keep[pi], &staging.join(pi.to_string()))?;
    }
    Ok(())
}

/// The staged record of each `wanted` entry, checked to say what the
/// index says, with its header set read back into it.
fn checked_records<'a>(
    packs: &[PathBuf],
    wanted: &'a [Candidate],
    staging: &Path,
) -> Result<Vec<Ready<'a>>, Error> {
    let mut ready = Vec::new();
    for (pi, e, f) in wanted {
        let dir = staging.join(pi.to_string());
        let damaged = |why: String| Error::PackDamaged {
            path: packs[*pi].clone(),
            why,
        };
        let text = fs::read(dir.join(e.record_path()))
            .map_err(|err| io_err("reading", &dir.join(e.record_path()), err))?;
        let mut record: Record = serde_json::from_slice(&text).map_err(|err| {
            damaged(format!(
                "the record of blob '{}' cannot be read ({err})",
                e.blob
            ))
        })?;
        if record.format != CACHE_FORMAT
            || record.blob != e.blob
            || record.inputs != e.inputs
            || record.prekey != e.prekey
            || record.key != e.key
            || record.size != e.size
            || record.checksum != e.checksum
            || record.depset != e.depset
        {
            return Err(damaged(format!(
                "the record of blob '{}' does not describe the entry its index lists",
                e.blob
            )));
        }
        if let Some(dp) = e.depset_path() {
            let bytes =
                fs::read(dir.join(&dp)).map_err(|err| io_err("reading", &dir.join(&dp), err))?;
            let deps: Vec<Dep> = serde_json::from_slice(&bytes)
                .map_err(|err| damaged(format!("the header set {dp} cannot be read ({err})")))?;
            record.deps = Arc::new(deps);
        }
        ready.push((*pi, e, *f, record, dir.join(e.object_path())));
    }
    Ok(ready)
}

/// Installs each `ready` entry as a compile publishes one, unless the
/// cache has it already.
fn install(
    cache: &Cache,
    packs: &[PathBuf],
    ready: Vec<Ready<'_>>,
) -> Result<Vec<Installed>, Error> {
    let mut installed = Vec::new();
    for (pi, e, f, record, object) in ready {
        let present = cache.entries_of(&e.blob).into_iter().any(|have| {
            have.record.key == e.key
                && have.record.checksum == e.checksum
                && fs::metadata(&have.object).is_ok_and(|m| m.len() == e.size)
        });
        if !present {
            let bytes = fs::read(&object).map_err(|err| io_err("reading", &object, err))?;
            cache.publish(&object, record, bytes)?;
        }
        installed.push(Installed {
            blob: e.blob.clone(),
            key: e.key.clone(),
            pack: packs[pi].clone(),
            fit: f,
            present,
        });
    }
    Ok(installed)
}

/// Reads every member of the pack at `path`, checking each against
/// `index`, and writes those in `keep` under `dir`. Any mismatch, a member
/// the index does not list, one it lists that is not there, or an archive
/// cut short, is [`Error::PackDamaged`].
fn stage(path: &Path, index: &Index, keep: &BTreeSet<String>, dir: &Path) -> Result<(), Error> {
    let damaged = |why: String| Error::PackDamaged {
        path: path.to_path_buf(),
        why,
    };
    let listed: HashMap<&str, &PackFile> =
        index.files.iter().map(|f| (f.path.as_str(), f)).collect();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut archive = open_archive(path)?;
    let members = archive
        .entries()
        .map_err(|e| damaged(format!("cannot be read ({e})")))?;
    let mut first = true;
    for m in members {
        let mut m = m.map_err(|e| damaged(format!("cut short or corrupt ({e})")))?;
        let name = m
            .path()
            .map(|p| p.display().to_string())
            .map_err(|e| damaged(format!("a member's name cannot be read ({e})")))?;
        if first {
            first = false;
            if name == INDEX_FILE {
                continue;
            }
        }
        let Some(f) = listed.get(name.as_str()) else {
            return Err(damaged(format!(
                "it holds {name}, which its index does not list"
            )));
        };
        if m.header().entry_type() != tar::EntryType::Regular {
            return Err(damaged(format!("{name} is not a plain file")));
        }
        if !seen.insert(name.clone()) {
            return Err(damaged(format!("it holds {name} twice")));
        }
        let mut sink: Box<dyn Write> = if keep.contains(&name) {
            let to = dir.join(&name);
            if let Some(parent) = to.parent() {
                fs::create_dir_all(parent).map_err(|e| io_err("creating", parent, e))?;
            }
            Box::new(File::create(&to).map_err(|e| io_err("creating", &to, e))?)
        } else {
            Box::new(io::sink())
        };
        let mut reader = Hashing::new((&mut m).take(f.size + 1));
        io::copy(&mut reader, &mut sink)
            .map_err(|e| damaged(format!("{name} cannot be read: cut short or corrupt ({e})")))?;
        if reader.count != f.size {
            return Err(damaged(format!(
                "{name} is {} bytes, its index says {}",
                reader.count, f.size
            )));
        }
        if reader.hex() != f.checksum {
            return Err(damaged(format!(
                "{name} does not match its checksum (BLAKE3 {}, index {})",
                reader.hex(),
                f.checksum
            )));
        }
    }
    if let Some(absent) = index.files.iter().find(|f| !seen.contains(&f.path)) {
        return Err(damaged(format!(
            "{} is missing (the archive is cut short?)",
            absent.path
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(a: &str) -> DeviceArch {
        DeviceArch::parse(a).unwrap()
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn an_entry_fits_its_own_architecture_then_its_family_never_another() {
        assert_eq!(fit(&names(&["gfx942"]), &dev("gfx942")), Some(Fit::Exact));
        assert_eq!(
            fit(&names(&["gfx90a:xnack-"]), &dev("gfx90a")),
            Some(Fit::Exact)
        );
        assert_eq!(fit(&names(&["gfx9"]), &dev("gfx950")), Some(Fit::Family));
        assert_eq!(fit(&names(&["gfx942"]), &dev("gfx950")), None);
        assert_eq!(fit(&names(&["gfx9"]), &dev("gfx1100")), None);
        assert_eq!(fit(&names(&["sm_90"]), &dev("sm_90")), Some(Fit::Exact));
        assert_eq!(fit(&names(&["sm_80"]), &dev("sm_86")), Some(Fit::Family));
        assert_eq!(fit(&names(&["sm_90a"]), &dev("sm_100")), None);
        assert_eq!(fit(&names(&["gfx942"]), &dev("sm_90")), None);
        assert!(Fit::Exact > Fit::Family);
    }

    #[test]
    fn paths_come_from_the_keys_so_a_pack_cannot_write_elsewhere() {
        let e = PackEntry {
            blob: "../../etc/x".into(),
            arch: vec![],
            compiler: "cc".into(),
            inputs: "i".into(),
            prekey: "0".repeat(32),
            key: "1".repeat(32),
            size: 1,
            checksum: "c".into(),
            depset: String::new(),
        };
        let p = e.object_path();
        let parts: Vec<_> = Path::new(&p).components().collect();
        assert_eq!(parts.len(), 4, "{p}");
        assert!(
            parts
                .iter()
                .all(|c| matches!(c, std::path::Component::Normal(_))),
            "{p}"
        );
        let file = |p: String| PackFile {
            path: p,
            size: 1,
            checksum: "c".into(),
        };
        let mut index = Index {
            kind: KIND.into(),
            format: PACK_FORMAT,
            cache_format: CACHE_FORMAT,
            created: 0,
            host: std::env::consts::ARCH.into(),
            arch: None,
            compilers: vec![],
            entries: vec![e.clone()],
            files: vec![file(e.object_path()), file(e.record_path())],
        };
        check_paths(Path::new("p"), &index).unwrap();
        index.files.push(file("../outside".into()));
        assert!(check_paths(Path::new("p"), &index).is_err());
        index.files.pop();
        index.entries[0].key = "../x".into();
        assert!(check_paths(Path::new("p"), &index).is_err());
    }
}
