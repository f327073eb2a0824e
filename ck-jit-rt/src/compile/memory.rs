//! How much memory compiles may use, and how much one compile takes.
//!
//! A CK kernel takes 0.7 GB to compile and a backward kernel over 2 GB, so
//! a core count alone lets `ck-jit build -j 16` or a 16-blob warm-up run a
//! 16 GB host or a pod's cgroup out of memory. Compiles are therefore also
//! admitted against a memory budget ([`available`], or
//! `CK_JIT_MEMORY_BUDGET`), each counted at an estimate of what one
//! compile of its group takes ([`Estimates`]): learnt from the peak
//! resident size of the group's earlier compiles and kept in the cache
//! directory (`memory.json`), so that the next process starts from what
//! the last one saw.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use once_cell::sync::Lazy;
use serde::{Deserialize, Serialize};

/// The file the estimates are kept in, in the cache root.
pub const MEMORY_FILE: &str = "memory.json";

/// What one compile of a group is taken to need before any compile of it
/// (or of another group in the same cache) has been measured: above a CK
/// forward kernel (0.7–0.75 GB) and what most C++ and HIP sources take, so
/// that a first `ck-jit build -j 16` of a library is held to about one
/// compile per GiB available. The first compile of a group to finish
/// replaces it with what was measured.
pub const DEFAULT_ESTIMATE: u64 = 1 << 30;

/// Where `cgroup2` is mounted on every distribution that has it.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// The memory compiles may take now: `MemAvailable` of `/proc/meminfo`,
/// or less when the process's cgroup (v2), or one above it, has a
/// `memory.max` with less room under it. `None` when neither can be read
/// (then compiles are bounded by cores alone).
pub fn available() -> Option<u64> {
    let host = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| mem_available(&t));
    match (host, cgroup_room()) {
        (Some(h), Some(c)) => Some(h.min(c)),
        (h, c) => h.or(c),
    }
}

/// The `MemAvailable` line of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut words = line.split_whitespace().skip(1);
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") | None => n.checked_mul(1024),
        Some(_) => None,
    }
}

/// The cgroup v2 directory of this process (`0::/path` of
/// `/proc/self/cgroup`, under [`CGROUP_ROOT`]); looked up once, as a
/// process does not move between cgroups while it compiles.
fn cgroup_dir() -> Option<&'static Path> {
    static DIR: Lazy<Option<PathBuf>> = Lazy::new(|| {
        let text = fs::read_to_string("/proc/self/cgroup").ok()?;
        cgroup_path(&text).map(|p| Path::new(CGROUP_ROOT).join(p))
    });
    DIR.as_deref()
}

/// The path of the unified (v2) hierarchy in a `/proc/<pid>/cgroup` text,
/// relative to the mount.
fn cgroup_path(text: &str) -> Option<String> {
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    Some(path.trim().trim_start_matches('/').to_string())
}

/// The least room under a `memory.max` from the process's cgroup up to
/// the root of the mount (`memory.max - memory.current` of each that has
/// a limit): a pod's limit is often set on a parent of the container's
/// cgroup.
fn cgroup_room() -> Option<u64> {
    let root = Path::new(CGROUP_ROOT);
    let mut dir = cgroup_dir()?;
    let mut least: Option<u64> = None;
    loop {
        if let Some(room) = room_in(dir) {
            least = Some(least.map_or(room, |l| l.min(room)));
        }
        if dir == root {
            break;
        }
        match dir.parent() {
            Some(p) if p.starts_with(root) => dir = p,
            _ => break,
        }
    }
    least
}

/// `memory.max - memory.current` of one cgroup directory; `None` when it
/// has no limit (`max`) or the files cannot be read.
fn room_in(dir: &Path) -> Option<u64> {
    let max = fs::read_to_string(dir.join("memory.max")).ok()?;
    let max: u64 = max.trim().parse().ok()?;
    let current: u64 = fs::read_to_string(dir.join("memory.current"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(max.saturating_sub(current))
}

pub(crate) use crate::error::human;

/// What is known of one group's compiles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Learnt {
    /// The memory one compile of the group is taken to need, in bytes.
    pub estimate: u64,
    /// The peak resident size of the last compile measured, in bytes.
    pub last_peak: u64,
    /// How many compiles were measured.
    pub compiles: u64,
}

/// The estimates of one cache, by group (`<manifest>/<group>`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Estimates {
    /// Each group's.
    pub groups: BTreeMap<String, Learnt>,
}

/// Where an estimate came from (said in messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Measured compiles of the group.
    Learnt,
    /// None of the group yet: the largest learnt for another group of the
    /// same cache (a library's groups are alike).
    OtherGroup,
    /// Nothing measured in this cache: [`DEFAULT_ESTIMATE`].
    Default,
}

/// The key a group's estimate is kept under: groups of two manifests that
/// share a cache directory may have the same name.
pub fn group_key(manifest: &str, group: &str) -> String {
    format!("{manifest}/{group}")
}

/// Serialises learning within the process (each is a read, a change and a
/// rename of the same file).
static WRITING: Mutex<()> = Mutex::new(());

impl Estimates {
    /// The estimates kept in the cache at `root`; none when the file is
    /// missing or cannot be read (said in the debug log: it only costs a
    /// relearning).
    pub fn load(root: &Path) -> Estimates {
        let path = root.join(MEMORY_FILE);
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Estimates::default(),
            Err(e) => {
                log::debug!("ck-jit: ignoring {}: {e}", path.display());
                return Estimates::default();
            }
        };
        match serde_json::from_str(&text) {
            Ok(e) => e,
            Err(e) => {
                log::debug!("ck-jit: ignoring {}: {e}", path.display());
                Estimates::default()
            }
        }
    }

    /// The estimate for `key`, and where it came from (`CK_JIT_JOB_MEMORY`
    /// is the caller's to apply).
    pub fn estimate(&self, key: &str) -> (u64, Source) {
        if let Some(l) = self.groups.get(key).filter(|l| l.estimate > 0) {
            return (l.estimate, Source::Learnt);
        }
        match self.groups.values().map(|l| l.estimate).max() {
            Some(e) if e > 0 => (e, Source::OtherGroup),
            _ => (DEFAULT_ESTIMATE, Source::Default),
        }
    }

    /// Takes in one measured compile of `key` that peaked at `peak` bytes;
    /// `killed`: it was killed before it finished, so `peak` is only a
    /// lower bound (the estimate may rise to it, never fall).
    fn note(&mut self, key: &str, peak: u64, killed: bool) {
        let l = self.groups.entry(key.to_string()).or_default();
        l.estimate = if l.compiles == 0 && l.estimate == 0 {
            peak
        } else if killed {
            l.estimate.max(peak)
        } else {
            next_estimate(l.estimate, peak)
        };
        l.last_peak = peak;
        l.compiles += 1;
    }
}

/// The estimate after a compile that peaked at `peak`, from `old`: a
/// larger peak is taken at once (an estimate too low is what gets a
/// compile killed), a smaller one only a quarter of the way (an estimate
/// too high costs only parallelism, and one small kernel should not undo
/// what a large one showed).
pub fn next_estimate(old: u64, peak: u64) -> u64 {
    if peak >= old {
        peak
    } else {
        old - (old - peak) / 4
    }
}

/// Records a measured compile of `key` in the cache at `root` (`shared`:
/// a team cache, whose files are group-writable). The file is replaced
/// whole (written aside, then renamed), so a reader never sees half of
/// it; two processes learning at the same moment may lose one of the two
/// measurements, which the next compile makes up for. A failure to write
/// is only logged: it costs the next process a relearning.
pub fn learn(root: &Path, shared: bool, key: &str, peak: u64, killed: bool) {
    let _one = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    let mut est = Estimates::load(root);
    est.note(key, peak, killed);
    if let Err(e) = write(root, shared, &est) {
        log::debug!(
            "ck-jit: cannot keep the memory estimates in {}: {e}",
            root.join(MEMORY_FILE).display()
        );
    }
}

fn write(root: &Path, shared: bool, est: &Estimates) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(est).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    // In `tmp/`, named as the cache's other temporary files (`<pid>-...`),
    // so one a crash leaves behind is swept like theirs.
    let tmp = root
        .join("tmp")
        .join(format!("{}-memory.json.tmp", std::process::id()));
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(if shared { 0o660 } else { 0o600 })
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?;
    let written = f.write_all(&bytes).and_then(|()| {
        if shared {
            use std::os::unix::fs::PermissionsExt;
            f.set_permissions(fs::Permissions::from_mode(0o660))?;
        }
        fs::rename(&tmp, root.join(MEMORY_FILE))
    });
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_is_read_in_bytes() {
        let text = "MemTotal:       16318540 kB\nMemFree:  1000 kB\nMemAvailable:   12000000 kB\n";
        assert_eq!(mem_available(text), Some(12_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots kB\n"), None);
    }

    #[test]
    fn the_unified_hierarchy_line_names_the_cgroup() {
        let hybrid = "4:memory:/x\n0::/kubepods/pod1/c2\n";
        assert_eq!(cgroup_path(hybrid).as_deref(), Some("kubepods/pod1/c2"));
        assert_eq!(cgroup_path("0::/\n").as_deref(), Some(""));
        assert_eq!(cgroup_path("4:memory:/x\n"), None);
    }

    #[test]
    fn a_limit_leaves_its_room_and_max_is_none() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("memory.max"), "1073741824\n").unwrap();
        fs::write(dir.path().join("memory.current"), "73741824\n").unwrap();
        assert_eq!(room_in(dir.path()), Some(1_000_000_000));
        fs::write(dir.path().join("memory.max"), "max\n").unwrap();
        assert_eq!(room_in(dir.path()), None);
    }

    #[test]
    fn estimates_rise_at_once_and_fall_slowly() {
        assert_eq!(next_estimate(100, 300), 300);
        assert_eq!(next_estimate(300, 100), 250);
        let mut e = Estimates::default();
        e.note("m/g", 800, false);
        assert_eq!(e.estimate("m/g"), (800, Source::Learnt));
        e.note("m/g", 400, false);
        assert_eq!(e.estimate("m/g").0, 700);
        // A killed compile's peak only raises it.
        e.note("m/g", 500, true);
        assert_eq!(e.estimate("m/g").0, 700);
        e.note("m/g", 900, true);
        assert_eq!(e.estimate("m/g").0, 900);
        assert_eq!(e.estimate("m/other"), (900, Source::OtherGroup));
        assert_eq!(
            Estimates::default().estimate("m/g"),
            (DEFAULT_ESTIMATE, Source::Default)
        );
    }

    #[test]
    fn estimates_are_kept_and_a_damaged_file_is_no_estimate() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("tmp")).unwrap();
        learn(dir.path(), false, "m/g", 5 << 20, false);
        learn(dir.path(), false, "m/g", 7 << 20, false);
        let kept = Estimates::load(dir.path());
        assert_eq!(kept.groups["m/g"].estimate, 7 << 20);
        assert_eq!(kept.groups["m/g"].compiles, 2);
        assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
        fs::write(dir.path().join(MEMORY_FILE), "{\"groups\": {\"m/g\": ").unwrap();
        assert_eq!(Estimates::load(dir.path()), Estimates::default());
        // Learning again starts over rather than failing.
        learn(dir.path(), false, "m/g", 3 << 20, false);
        assert_eq!(Estimates::load(dir.path()).groups["m/g"].estimate, 3 << 20);
    }

    #[test]
    fn this_machine_has_some_memory_available() {
        assert!(available().is_some_and(|b| b > 0));
    }
}
