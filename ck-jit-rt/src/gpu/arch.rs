//! GPU architectures in compile commands: the targets an argv names
//! (hipcc/clang `--offload-arch=`, `--cuda-gpu-arch=`; nvcc `-gencode`,
//! `--generate-code`, `-arch`/`--gpu-architecture`, `-code`/`--gpu-code`),
//! which of them a device runs, and the argv narrowed to the targets of
//! one device ([`for_device`]), so that the first call compiles for the
//! device in use and not for every architecture recorded at build time.
//!
//! It never guesses: an argv whose targets it cannot read in full (an
//! unknown target name, targets of two platforms, an AMD generic target
//! with no exact match) is compiled as recorded, and it never narrows to a
//! target the device cannot run — that is [`Error::ForeignDevice`].

use crate::error::Error;

// The message text lives with the messages, which must not depend on
// this module.
pub use crate::error::ARCH_FORMS;

use crate::config::arch_name::{cc_and_suffix, is_gfx_name};
pub use crate::config::arch_name::{ArchChoice, DeviceArch, Platform};

/// A device and how it was found (for messages: `CK_JIT_ARCH`, `KFD
/// topology node 2`, `NVML device 0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// Its architecture.
    pub arch: DeviceArch,
    /// Where the answer came from.
    pub found_by: String,
}

/// A compile argv narrowed to one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Narrowed {
    /// The argument template with only the device's targets.
    pub args: Vec<String>,
    /// The device it is for.
    pub device: Device,
}

/// One target an argv compiles for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// An AMD target: its base name (`gfx90a`) and whether it is a
    /// generic one (`gfx9-4-generic`); features (`:xnack-`) stay in the
    /// text only.
    Gfx { base: String, generic: bool },
    /// NVIDIA machine code (`sm_90`, `sm_90a`, `sm_100f`).
    Sass { cc: u32, suffix: Option<char> },
    /// NVIDIA PTX the driver compiles at load time (`compute_90`).
    Ptx { cc: u32, suffix: Option<char> },
    /// nvcc's `all`, `all-major`, `native`: decided by nvcc.
    Any,
}

impl Target {
    fn parse(text: &str) -> Option<Target> {
        let t = text.trim();
        if is_gfx_name(t) {
            let base = t.split(':').next().unwrap_or(t).to_ascii_lowercase();
            return Some(Target::Gfx {
                generic: base.ends_with("-generic"),
                base,
            });
        }
        if let Some(rest) = t.strip_prefix("sm_") {
            let (cc, suffix) = cc_and_suffix(rest)?;
            return Some(Target::Sass { cc, suffix });
        }
        if let Some(rest) = t.strip_prefix("compute_") {
            let (cc, suffix) = cc_and_suffix(rest)?;
            return Some(Target::Ptx { cc, suffix });
        }
        matches!(t, "all" | "all-major" | "native").then_some(Target::Any)
    }

    fn platform(&self) -> Option<Platform> {
        match self {
            Target::Gfx { .. } => Some(Platform::Amd),
            Target::Sass { .. } | Target::Ptx { .. } => Some(Platform::Nvidia),
            Target::Any => None,
        }
    }

    /// The architecture this target is for, as a name (`sm_90a` and
    /// `compute_90a` are one; `sm_90` another).
    fn arch_name(&self) -> String {
        match self {
            Target::Gfx { base, .. } => base.clone(),
            Target::Sass { cc, suffix } | Target::Ptx { cc, suffix } => {
                format!("{cc}{}", suffix.map(String::from).unwrap_or_default())
            }
            Target::Any => "any".into(),
        }
    }

    /// How well `device` runs this target, higher is better; `None`: not
    /// at all. Machine code for the device itself (any suffix) ranks
    /// first, then machine code of an earlier minor revision of the same
    /// major (binary compatible unless arch-specific, `a`), then PTX the
    /// driver can compile for it (the newest first).
    fn rank(&self, device: &DeviceArch) -> Option<(u8, u32)> {
        match (self, device) {
            (Target::Gfx { base, generic }, DeviceArch::Amd(d)) => {
                (!generic && base == d).then_some((3, 0))
            }
            (Target::Sass { cc, suffix }, DeviceArch::Nvidia(d)) => {
                if cc == d {
                    Some((3, *cc))
                } else if cc / 10 == d / 10 && cc < d && *suffix != Some('a') {
                    Some((2, *cc))
                } else {
                    None
                }
            }
            (Target::Ptx { cc, suffix }, DeviceArch::Nvidia(d)) => {
                let runs = match suffix {
                    Some('a') => cc == d,
                    Some(_) => cc / 10 == d / 10 && cc <= d,
                    None => cc <= d,
                };
                runs.then_some((1, *cc))
            }
            _ => None,
        }
    }
}

/// What kind of flag a site is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `--offload-arch`, `--cuda-gpu-arch`, `--amdgpu-target`: a list
    /// (`;`- or `,`-separated, or the flag repeated).
    Offload,
    /// `-gencode`/`--generate-code`: `arch=<virtual>,code=<list>`.
    Gencode,
    /// `-arch`/`--gpu-architecture`: one value.
    Arch,
    /// `-code`/`--gpu-code`: a list.
    Code,
}

/// One flag of the argv that names targets.
#[derive(Debug, Clone)]
struct Site {
    kind: Kind,
    /// Index of its first argv entry, and how many it spans (1 or 2).
    at: usize,
    len: usize,
    /// The flag as written, without `=` and value.
    flag: String,
    /// Written as `flag=value` (else as two entries).
    joined: bool,
    /// The virtual architecture of a `-gencode` pair.
    virtual_arch: String,
    /// The values: a list's entries, a pair's `code` entries, or the one
    /// value of `-arch`.
    values: Vec<(String, Target)>,
}

impl Site {
    fn render(&self, values: &[String]) -> Vec<String> {
        let value = match self.kind {
            Kind::Gencode => {
                let code = match values {
                    [one] => one.clone(),
                    many => format!("[{}]", many.join(",")),
                };
                format!("arch={},code={code}", self.virtual_arch)
            }
            _ => values.join(","),
        };
        if self.joined {
            vec![format!("{}={value}", self.flag)]
        } else {
            vec![self.flag.clone(), value]
        }
    }
}

const FLAGS: [(&str, Kind); 9] = [
    ("--offload-arch", Kind::Offload),
    ("--cuda-gpu-arch", Kind::Offload),
    ("--amdgpu-target", Kind::Offload),
    ("-gencode", Kind::Gencode),
    ("--generate-code", Kind::Gencode),
    ("-arch", Kind::Arch),
    ("--gpu-architecture", Kind::Arch),
    ("-code", Kind::Code),
    ("--gpu-code", Kind::Code),
];

/// The sites of an argv; `None` when a value cannot be read (an unknown
/// target, a malformed `-gencode`), so the argv is left as recorded.
fn sites(args: &[String]) -> Option<Vec<Site>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let found = FLAGS.iter().find_map(|(flag, kind)| {
            if a == flag {
                Some((*flag, *kind, false))
            } else {
                a.strip_prefix(flag)
                    .filter(|rest| rest.starts_with('='))
                    .map(|_| (*flag, *kind, true))
            }
        });
        let Some((flag, kind, joined)) = found else {
            i += 1;
            continue;
        };
        let (value, len) = if joined {
            (a[flag.len() + 1..].to_string(), 1)
        } else {
            (args.get(i + 1)?.clone(), 2)
        };
        let (virtual_arch, texts) = match kind {
            Kind::Gencode => gencode(&value)?,
            Kind::Offload => (String::new(), split_list(&value, &[';', ','])),
            Kind::Arch | Kind::Code => (String::new(), split_list(&value, &[','])),
        };
        let mut values = Vec::with_capacity(texts.len());
        for t in texts {
            let target = Target::parse(&t)?;
            values.push((t, target));
        }
        if values.is_empty() {
            return None;
        }
        out.push(Site {
            kind,
            at: i,
            len,
            flag: flag.to_string(),
            joined,
            virtual_arch,
            values,
        });
        i += len;
    }
    Some(out)
}

fn split_list(value: &str, seps: &[char]) -> Vec<String> {
    value
        .split(seps)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// `arch=compute_90,code=sm_90`, `arch=compute_90,code=[sm_90,compute_90]`,
/// `arch=compute_90,code="sm_90,compute_90"` (the quotes a shell would
/// have removed, kept by a recorded argv): the virtual architecture and the
/// code list.
fn gencode(value: &str) -> Option<(String, Vec<String>)> {
    let cleaned: String = value
        .chars()
        .filter(|c| !matches!(c, '[' | ']' | '"' | '\''))
        .collect();
    let (mut arch, mut code) = (None, Vec::new());
    let mut in_code = false;
    for part in cleaned.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some(v) = part.strip_prefix("arch=") {
            arch = Some(v.to_string());
            in_code = false;
        } else if let Some(v) = part.strip_prefix("code=") {
            code.push(v.to_string());
            in_code = true;
        } else if in_code && !part.contains('=') {
            code.push(part.to_string());
        } else {
            return None;
        }
    }
    let arch = arch?;
    // A pair without `code=` compiles PTX of its virtual architecture.
    if code.is_empty() {
        code.push(arch.clone());
    }
    Some((arch, code))
}

/// The targets a site compiles for (an `-arch` beside `-code` is only the
/// virtual architecture: the `-code` values are the targets).
fn site_targets(site: &Site, has_code: bool) -> Vec<Target> {
    match site.kind {
        Kind::Arch if has_code => Vec::new(),
        Kind::Arch => site
            .values
            .iter()
            .flat_map(|(_, t)| match t {
                // `-arch=sm_90` is `-arch=compute_90 -code=sm_90,compute_90`.
                Target::Sass { cc, suffix } => vec![
                    t.clone(),
                    Target::Ptx {
                        cc: *cc,
                        suffix: *suffix,
                    },
                ],
                _ => vec![t.clone()],
            })
            .collect(),
        _ => site.values.iter().map(|(_, t)| t.clone()).collect(),
    }
}

/// The names of the architectures an argv targets, as messages list them.
fn recorded_names(sites: &[Site], has_code: bool) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for s in sites {
        if s.kind == Kind::Arch && has_code {
            continue;
        }
        for (text, _) in &s.values {
            let base = text.split(':').next().unwrap_or(text).to_string();
            if !names.contains(&base) {
                names.push(base);
            }
        }
    }
    names
}

/// The names of the GPU architectures an argv compiles for (`gfx942`,
/// `sm_90`, `compute_90`), as recorded; empty when it names none or
/// cannot be read in full.
pub fn target_names(args: &[String]) -> Vec<String> {
    match sites(args) {
        Some(sites) => {
            let has_code = sites.iter().any(|s| s.kind == Kind::Code);
            recorded_names(&sites, has_code)
        }
        None => Vec::new(),
    }
}

/// The platform of an architecture a blob declares (`gfx9`, `gfx950`,
/// `sm_90`), when it names one.
pub fn tag_platform(tag: &str) -> Option<Platform> {
    Target::parse(tag)?.platform()
}

/// Whether a blob that declares the architecture `tag` runs on `device`;
/// `None` when the tag names nothing the runtime can judge (a generic
/// target, a word, another platform's name).
///
/// An AMD tag of a major version only (`gfx9`, `gfx12`: at most two
/// characters after `gfx`, all digits) is a family, as clang's
/// `__gfx9__` is: it runs on every target of that major (`gfx9` on
/// `gfx90a`, `gfx942` and `gfx950`, not on `gfx1100`). Any other AMD tag
/// is one target and runs on that target only. An NVIDIA tag runs where
/// its machine code or PTX does (see `Target::rank`).
pub fn tag_runs_on(tag: &str, device: &DeviceArch) -> Option<bool> {
    let target = Target::parse(tag)?;
    if target.platform() != Some(device.platform()) {
        return None;
    }
    match (&target, device) {
        (Target::Gfx { generic: true, .. }, _) => None,
        (Target::Gfx { base, .. }, DeviceArch::Amd(d)) => {
            // The tag's features (`:xnack-`) say nothing about the family.
            let id = &base[3..];
            if id.len() <= 2 && id.bytes().all(|b| b.is_ascii_digit()) {
                Some(gfx_major(d) == Some(id))
            } else {
                Some(base == d)
            }
        }
        _ => Some(target.rank(device).is_some()),
    }
}

/// The major version of an AMD target: all but the last two characters
/// after `gfx` (minor and stepping), `9` of `gfx942` and `gfx90a`, `11` of
/// `gfx1100`.
fn gfx_major(name: &str) -> Option<&str> {
    let id = name.get(3..)?;
    let major = id.get(..id.len().checked_sub(2)?)?;
    (!major.is_empty() && major.bytes().all(|b| b.is_ascii_digit())).then_some(major)
}

/// Whether an argv recorded for its targets makes code that runs on
/// `device`: `Some(false)` only when every target it names is of the
/// device's platform, readable, not generic, and none runs on the device
/// (what compiling it for the device would refuse, or, for one target,
/// compile for another); `None` when it names no target of that platform
/// or cannot be read in full.
pub fn recorded_runs_on(args: &[String], device: &DeviceArch) -> Option<bool> {
    let sites = sites(args)?;
    let has_code = sites.iter().any(|s| s.kind == Kind::Code);
    let targets: Vec<Target> = sites
        .iter()
        .flat_map(|s| site_targets(s, has_code))
        .collect();
    if targets.is_empty()
        || targets
            .iter()
            .any(|t| t.platform() != Some(device.platform()))
        || targets
            .iter()
            .any(|t| matches!(t, Target::Gfx { generic: true, .. }))
    {
        return None;
    }
    Some(targets.iter().any(|t| t.rank(device).is_some()))
}

/// The platform of the targets an argv records, when it names targets of
/// exactly one.
pub fn recorded_platform(args: &[String]) -> Option<Platform> {
    let sites = sites(args)?;
    let has_code = sites.iter().any(|s| s.kind == Kind::Code);
    let mut platforms = sites
        .iter()
        .flat_map(|s| site_targets(s, has_code))
        .filter_map(|t| t.platform());
    let first = platforms.next()?;
    platforms.all(|p| p == first).then_some(first)
}

/// The device `CK_JIT_ARCH` names for `platform`, else the detected one
/// (`detect`), else none: also none for `all` (every recorded target is
/// wanted) and for a value that names no architecture (compiles report
/// that).
pub fn device_for(
    choice: &ArchChoice,
    platform: Platform,
    detect: impl FnOnce(Platform) -> Option<Device>,
) -> Option<Device> {
    match choice {
        ArchChoice::All | ArchChoice::Invalid(_) => None,
        ArchChoice::Detect | ArchChoice::Fixed(_) => match choice.fixed(platform) {
            Some(arch) => Some(Device {
                arch: arch.clone(),
                found_by: "CK_JIT_ARCH".into(),
            }),
            None => detect(platform),
        },
    }
}

/// The argument template of `blob` for the device compiles are for:
///
/// - an argv naming no GPU target, or one `CK_JIT_ARCH=all` leaves alone,
///   or one whose targets cannot be read in full: `Ok(None)` (compile as
///   recorded);
/// - an argv recorded for one architecture: `Ok(None)` — no detection, the
///   key unchanged — except that a device named by `CK_JIT_ARCH` that
///   cannot run it is an error;
/// - an argv recorded for several (or nvcc's `all`, `all-major`,
///   `native`): the device is `CK_JIT_ARCH`'s, else `detect(platform)`'s;
///   no device found: `Ok(None)`; a device none of the targets runs:
///   [`Error::ForeignDevice`]; else the argv with only the targets the
///   device runs best (see `Target::rank`), nvcc's `all`/`native` replaced
///   by the device's `sm_XY`.
///
/// A malformed `CK_JIT_ARCH` is [`Error::ArchVariable`] for any blob with
/// GPU targets.
pub fn for_device(
    blob: &str,
    args: &[String],
    choice: &ArchChoice,
    detect: impl FnOnce(Platform) -> Option<Device>,
) -> Result<Option<Narrowed>, Error> {
    let Some(sites) = sites(args) else {
        return Ok(None);
    };
    if sites.is_empty() {
        return Ok(None);
    }
    let has_code = sites.iter().any(|s| s.kind == Kind::Code);
    let targets: Vec<Target> = sites
        .iter()
        .flat_map(|s| site_targets(s, has_code))
        .collect();
    let platforms: Vec<Platform> = targets.iter().filter_map(Target::platform).collect();
    let any = targets.contains(&Target::Any);
    let platform = match platforms.first() {
        Some(p) if platforms.iter().all(|q| q == p) => *p,
        Some(_) => return Ok(None), // two platforms in one command
        None if any && sites.iter().all(|s| s.kind != Kind::Offload) => Platform::Nvidia,
        None => return Ok(None),
    };
    let mut arch_names: Vec<String> = targets.iter().map(Target::arch_name).collect();
    arch_names.sort();
    arch_names.dedup();
    let several = any || arch_names.len() > 1;
    let Some(device) = chosen_device(blob, choice, platform, several, detect)? else {
        return Ok(None);
    };
    let foreign = || Error::ForeignDevice {
        blob: blob.to_string(),
        device: device.arch.to_string(),
        found_by: device.found_by.clone(),
        recorded: recorded_names(&sites, has_code),
    };
    let generic = targets
        .iter()
        .any(|t| matches!(t, Target::Gfx { generic: true, .. }));
    let best = targets.iter().filter_map(|t| t.rank(&device.arch)).max();
    if !several {
        return match best {
            Some(_) => Ok(None),
            None if generic || any => Ok(None),
            None => Err(foreign()),
        };
    }
    if any {
        // nvcc's `all`/`native` with other targets beside it: nvcc decides.
        if targets.len() != 1 {
            return Ok(None);
        }
        let DeviceArch::Nvidia(cc) = device.arch else {
            return Ok(None);
        };
        let mut out = args.to_vec();
        let site = &sites[0];
        let replaced = site.render(&[format!("sm_{cc}")]);
        out.splice(site.at..site.at + site.len, replaced);
        return Ok(Some(Narrowed { args: out, device }));
    }
    let Some(best) = best else {
        // A generic target may well run on the device: nvcc/clang decide.
        return if generic { Ok(None) } else { Err(foreign()) };
    };
    let kept = kept_values(&sites, has_code, &device.arch, best);
    let out = without_dropped(args, &sites, &kept, has_code);
    Ok(Some(Narrowed { args: out, device }))
}

/// The device `for_device` narrows to: the one `CK_JIT_ARCH` names for
/// `platform`, else the one `detect` finds when the command names
/// `several` targets; `None` when the argv stays as recorded.
fn chosen_device(
    blob: &str,
    choice: &ArchChoice,
    platform: Platform,
    several: bool,
    detect: impl FnOnce(Platform) -> Option<Device>,
) -> Result<Option<Device>, Error> {
    Ok(match choice {
        ArchChoice::Invalid(value) => {
            return Err(Error::ArchVariable {
                blob: blob.to_string(),
                value: value.clone(),
            })
        }
        ArchChoice::All => None,
        ArchChoice::Detect | ArchChoice::Fixed(_) => match choice.fixed(platform) {
            Some(arch) => Some(Device {
                arch: arch.clone(),
                found_by: "CK_JIT_ARCH".into(),
            }),
            None if several => detect(platform),
            None => None,
        },
    })
}

/// Which values of each site stay (`None`: the site goes): the targets
/// ranked `best` on `device`, and in a site that keeps one, the PTX beside
/// it the device can also run.
fn kept_values(
    sites: &[Site],
    has_code: bool,
    device: &DeviceArch,
    best: (u8, u32),
) -> Vec<Option<Vec<String>>> {
    sites
        .iter()
        .map(|s| {
            if s.kind == Kind::Arch {
                let keep = has_code
                    || site_targets(s, false)
                        .iter()
                        .any(|t| t.rank(device) == Some(best));
                return keep.then(|| s.values.iter().map(|(v, _)| v.clone()).collect());
            }
            let is_best = |t: &Target| t.rank(device) == Some(best);
            if !s.values.iter().any(|(_, t)| is_best(t)) {
                return None;
            }
            Some(
                s.values
                    .iter()
                    .filter(|(_, t)| {
                        is_best(t) || matches!(t, Target::Ptx { .. }) && t.rank(device).is_some()
                    })
                    .map(|(v, _)| v.clone())
                    .collect(),
            )
        })
        .collect()
}

/// `args` with each site replaced by its `kept` values (or taken out).
fn without_dropped(
    args: &[String],
    sites: &[Site],
    kept: &[Option<Vec<String>>],
    has_code: bool,
) -> Vec<String> {
    // An `-arch` that only named the virtual architecture of `-code` lists
    // goes when every `-code` went.
    let code_left = sites
        .iter()
        .zip(kept)
        .any(|(s, k)| s.kind == Kind::Code && k.is_some());
    let mut out = Vec::with_capacity(args.len());
    let mut i = 0;
    for (site, keep) in sites.iter().zip(kept) {
        out.extend_from_slice(&args[i..site.at]);
        i = site.at + site.len;
        let keep = match keep {
            Some(_) if site.kind == Kind::Arch && has_code && !code_left => None,
            k => k.as_ref(),
        };
        let Some(values) = keep else { continue };
        let unchanged = values.len() == site.values.len();
        if unchanged {
            out.extend_from_slice(&args[site.at..site.at + site.len]);
        } else if site.kind == Kind::Offload {
            // One flag per target: every driver that takes the list form
            // also takes the flag repeated.
            for v in values {
                out.extend(site.render(std::slice::from_ref(v)));
            }
        } else {
            out.extend(site.render(values));
        }
    }
    out.extend_from_slice(&args[i..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn fixed(a: &str) -> ArchChoice {
        ArchChoice::parse(Some(a))
    }

    /// The narrowed argv for the device `arch` (named by `CK_JIT_ARCH`).
    fn narrow(args: &str, arch: &str) -> Option<String> {
        for_device("b", &argv(args), &fixed(arch), |_| None)
            .unwrap()
            .map(|n| n.args.join(" "))
    }

    fn no_detection(_: Platform) -> Option<Device> {
        panic!("detection must not run here")
    }

    #[test]
    fn hipcc_offload_arch_list_keeps_the_device_target() {
        assert_eq!(
            narrow("-O3 --offload-arch=gfx942;gfx950 {src} -o {out}", "gfx942").unwrap(),
            "-O3 --offload-arch=gfx942 {src} -o {out}"
        );
        assert_eq!(
            narrow("--offload-arch=gfx90a,gfx942 {src}", "gfx90a").unwrap(),
            "--offload-arch=gfx90a {src}"
        );
    }

    #[test]
    fn repeated_offload_arch_flags_keep_only_the_matching_one() {
        assert_eq!(
            narrow(
                "--offload-arch=gfx90a -O2 --offload-arch=gfx942 --offload-arch=gfx950 x.hip",
                "gfx942"
            )
            .unwrap(),
            "-O2 --offload-arch=gfx942 x.hip"
        );
        assert_eq!(
            narrow(
                "--offload-arch gfx90a --offload-arch gfx942 x.hip",
                "gfx942"
            )
            .unwrap(),
            "--offload-arch gfx942 x.hip"
        );
    }

    #[test]
    fn feature_suffixes_match_on_the_base_name_and_stay() {
        assert_eq!(
            narrow("--offload-arch=gfx942:xnack-;gfx90a:xnack+ x.hip", "gfx942").unwrap(),
            "--offload-arch=gfx942:xnack- x.hip"
        );
        // Both feature variants of the device's target stay.
        assert_eq!(
            narrow(
                "--offload-arch=gfx90a:xnack- --offload-arch=gfx90a:xnack+ --offload-arch=gfx942 x",
                "gfx90a"
            )
            .unwrap(),
            "--offload-arch=gfx90a:xnack- --offload-arch=gfx90a:xnack+ x"
        );
    }

    #[test]
    fn clang_cuda_gpu_arch_keeps_the_device_target() {
        assert_eq!(
            narrow(
                "-x cuda --cuda-gpu-arch=sm_80 --cuda-gpu-arch=sm_90 k.cu",
                "sm_90"
            )
            .unwrap(),
            "-x cuda --cuda-gpu-arch=sm_90 k.cu"
        );
        assert_eq!(
            narrow("--offload-arch=sm_80,sm_90 k.cu", "sm_80").unwrap(),
            "--offload-arch=sm_80 k.cu"
        );
    }

    #[test]
    fn nvcc_gencode_pairs_keep_the_device_sass() {
        let three = "-O3 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
                     -gencode arch=compute_100,code=sm_100 k.cu";
        assert_eq!(
            narrow(three, "sm_90").unwrap(),
            "-O3 -gencode arch=compute_90,code=sm_90 k.cu"
        );
        assert_eq!(
            narrow(three, "sm_100").unwrap(),
            "-O3 -gencode arch=compute_100,code=sm_100 k.cu"
        );
        // Joined and long spellings, with the PTX of the kept pair.
        assert_eq!(
            narrow(
                "-gencode=arch=compute_80,code=[sm_80,compute_80] \
                 --generate-code=arch=compute_90,code=[sm_90,compute_90] k.cu",
                "sm_90"
            )
            .unwrap(),
            "--generate-code=arch=compute_90,code=[sm_90,compute_90] k.cu"
        );
        assert_eq!(
            narrow(
                "--generate-code arch=compute_80,code=\"sm_80,compute_80\" \
                 --generate-code arch=compute_90,code=\"sm_90,compute_90\" k.cu",
                "sm_80"
            )
            .unwrap(),
            "--generate-code arch=compute_80,code=\"sm_80,compute_80\" k.cu"
        );
    }

    #[test]
    fn nvcc_without_the_device_sass_keeps_the_newest_ptx_it_can_run() {
        let args = "-gencode arch=compute_80,code=[sm_80,compute_80] \
                    -gencode arch=compute_90,code=[sm_90,compute_90] \
                    -gencode arch=compute_100,code=sm_100 k.cu";
        // 12.0: no sm_12x code; compute_90 is the newest PTX it can run
        // (compute_100 has no PTX here, only sm_100 code).
        assert_eq!(
            narrow(args, "sm_120").unwrap(),
            "-gencode arch=compute_90,code=compute_90 k.cu"
        );
        // 8.9 runs sm_80 code (same major, earlier minor) natively.
        assert_eq!(
            narrow(args, "sm_89").unwrap(),
            "-gencode arch=compute_80,code=[sm_80,compute_80] k.cu"
        );
    }

    #[test]
    fn arch_specific_targets_match_exactly() {
        let args = "-gencode arch=compute_90a,code=sm_90a -gencode arch=compute_80,code=sm_80 \
                    -gencode arch=compute_90,code=sm_90 k.cu";
        // A 9.0 device runs both sm_90 and sm_90a code.
        assert_eq!(
            narrow(args, "sm_90").unwrap(),
            "-gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90,code=sm_90 k.cu"
        );
        assert_eq!(narrow(args, "sm_90a"), narrow(args, "sm_90"));
        // sm_90a code never runs on a later device.
        let only_a =
            "-gencode arch=compute_90a,code=sm_90a -gencode arch=compute_80,code=sm_80 k.cu";
        let e = for_device("b", &argv(only_a), &fixed("sm_100"), |_| None).unwrap_err();
        assert!(matches!(e, Error::ForeignDevice { .. }), "{e}");
    }

    #[test]
    fn nvcc_arch_with_a_code_list_narrows_the_list() {
        assert_eq!(
            narrow("-arch=compute_80 -code=sm_80,sm_90 k.cu", "sm_90").unwrap(),
            "-arch=compute_80 -code=sm_90 k.cu"
        );
        assert_eq!(
            narrow(
                "--gpu-architecture compute_80 --gpu-code sm_80,sm_86,compute_80 k.cu",
                "sm_86"
            )
            .unwrap(),
            "--gpu-architecture compute_80 --gpu-code sm_86,compute_80 k.cu"
        );
    }

    #[test]
    fn nvcc_all_and_native_become_the_device() {
        assert_eq!(
            narrow("-O3 -arch=all k.cu", "sm_90").unwrap(),
            "-O3 -arch=sm_90 k.cu"
        );
        assert_eq!(
            narrow("-arch native k.cu", "sm_100").unwrap(),
            "-arch sm_100 k.cu"
        );
        assert_eq!(
            narrow("--gpu-architecture=all-major k.cu", "sm_89").unwrap(),
            "--gpu-architecture=sm_89 k.cu"
        );
        // No device found: nvcc decides, as recorded.
        let r = for_device("b", &argv("-arch=all k.cu"), &ArchChoice::Detect, |_| None);
        assert_eq!(r.unwrap(), None);
    }

    #[test]
    fn one_recorded_architecture_needs_no_detection_and_stays() {
        for args in [
            "-arch=sm_90 k.cu",
            "-gencode arch=compute_90,code=[sm_90,compute_90] k.cu",
            "--offload-arch=gfx942 k.hip",
            "-O2 k.c",
        ] {
            let r = for_device("b", &argv(args), &ArchChoice::Detect, no_detection);
            assert_eq!(r.unwrap(), None, "{args}");
        }
        // CK_JIT_ARCH is checked against it, at no cost: PTX for 8.0 runs on 9.0 ...
        assert_eq!(narrow("-arch=sm_80 k.cu", "sm_90"), None);
        // ... gfx90a code does not run on a gfx942.
        let e = for_device(
            "b",
            &argv("--offload-arch=gfx90a k"),
            &fixed("gfx942"),
            |_| None,
        )
        .unwrap_err();
        assert!(matches!(e, Error::ForeignDevice { .. }), "{e}");
    }

    #[test]
    fn several_architectures_detect_once_for_their_platform() {
        let mut asked = Vec::new();
        let n = for_device(
            "b",
            &argv("--offload-arch=gfx90a;gfx942 k"),
            &ArchChoice::Detect,
            |p| {
                asked.push(p);
                Some(Device {
                    arch: DeviceArch::Amd("gfx90a".into()),
                    found_by: "test".into(),
                })
            },
        )
        .unwrap()
        .unwrap();
        assert_eq!(asked, [Platform::Amd]);
        assert_eq!(n.args, argv("--offload-arch=gfx90a k"));
        assert_eq!(n.device.found_by, "test");
        // A CK_JIT_ARCH for the other platform leaves this one to detection.
        let r = for_device(
            "b",
            &argv("--offload-arch=gfx90a;gfx942 k"),
            &fixed("sm_90"),
            |_| None,
        );
        assert_eq!(r.unwrap(), None);
    }

    #[test]
    fn all_and_no_device_compile_what_was_recorded() {
        let args = argv("--offload-arch=gfx90a;gfx942 k");
        assert_eq!(
            for_device("b", &args, &ArchChoice::All, no_detection).unwrap(),
            None
        );
        assert_eq!(
            for_device("b", &args, &ArchChoice::Detect, |_| None).unwrap(),
            None
        );
    }

    #[test]
    fn a_foreign_device_is_an_error_naming_both() {
        let e = for_device(
            "fmha_x",
            &argv("--offload-arch=gfx942:xnack-;gfx90a k"),
            &ArchChoice::Detect,
            |_| {
                Some(Device {
                    arch: DeviceArch::Amd("gfx1100".into()),
                    found_by: "KFD topology node 1".into(),
                })
            },
        )
        .unwrap_err();
        let text = e.to_string();
        for part in ["fmha_x", "gfx1100", "KFD topology node 1", "gfx942, gfx90a"] {
            assert!(text.contains(part), "{text}");
        }
        let e = for_device(
            "k",
            &argv("-gencode arch=compute_90,code=sm_90 -gencode arch=compute_100,code=sm_100 k"),
            &fixed("sm_80"),
            |_| None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("sm_80"), "{e}");
        assert!(e.to_string().contains("sm_90, sm_100"), "{e}");
    }

    #[test]
    fn unreadable_or_mixed_targets_compile_as_recorded() {
        for args in [
            "--offload-arch=gfx942;bogus k",
            "--offload-arch=gfx942 --offload-arch=sm_90 k",
            "-gencode arch=compute_90 -gencode k",
            // A generic target may be the device's: the compiler decides.
            "--offload-arch=gfx9-4-generic;gfx90a k",
        ] {
            let r = for_device("b", &argv(args), &fixed("gfx942,sm_90"), |_| None);
            assert_eq!(r.unwrap(), None, "{args}");
        }
    }

    #[test]
    fn the_variable_accepts_the_documented_forms_only() {
        assert_eq!(ArchChoice::parse(None), ArchChoice::Detect);
        assert_eq!(ArchChoice::parse(Some(" ")), ArchChoice::Detect);
        assert_eq!(ArchChoice::parse(Some("ALL")), ArchChoice::All);
        assert_eq!(
            ArchChoice::parse(Some("gfx942")),
            ArchChoice::Fixed(vec![DeviceArch::Amd("gfx942".into())])
        );
        assert_eq!(
            ArchChoice::parse(Some("sm_90a,gfx90a")),
            ArchChoice::Fixed(vec![
                DeviceArch::Nvidia(90),
                DeviceArch::Amd("gfx90a".into())
            ])
        );
        for bad in [
            "942",
            "sm90",
            "sm_9",
            "gfx942,gfx90a",
            "compute_90",
            "gfx",
            "hopper",
        ] {
            assert_eq!(
                ArchChoice::parse(Some(bad)),
                ArchChoice::Invalid(bad.into()),
                "{bad}"
            );
        }
        let e = for_device("k", &argv("-arch=sm_90 k.cu"), &fixed("hopper"), |_| None).unwrap_err();
        assert!(matches!(e, Error::ArchVariable { .. }), "{e}");
        assert!(e.to_string().contains("gfx<id>"), "{e}");
        assert!(e.to_string().contains("'hopper'"), "{e}");
        // A blob without GPU targets never reads it.
        let r = for_device("k", &argv("-O2 k.c"), &fixed("hopper"), |_| None);
        assert_eq!(r.unwrap(), None);
    }

    fn amd(name: &str) -> DeviceArch {
        DeviceArch::Amd(name.into())
    }

    #[test]
    fn a_major_only_tag_is_a_family_that_runs_on_every_target_of_that_major() {
        for device in ["gfx942", "gfx950", "gfx90a", "gfx908"] {
            assert_eq!(tag_runs_on("gfx9", &amd(device)), Some(true), "{device}");
        }
        assert_eq!(tag_runs_on("gfx9", &amd("gfx1100")), Some(false));
        assert_eq!(tag_runs_on("gfx12", &amd("gfx1201")), Some(true));
        assert_eq!(tag_runs_on("gfx11", &amd("gfx1201")), Some(false));
        // `gfx1` is major 1, which `gfx1100` (major 11) is not.
        assert_eq!(tag_runs_on("gfx1", &amd("gfx1100")), Some(false));
    }

    #[test]
    fn a_full_target_tag_runs_on_that_target_only() {
        assert_eq!(tag_runs_on("gfx950", &amd("gfx950")), Some(true));
        assert_eq!(tag_runs_on("gfx950", &amd("gfx942")), Some(false));
        assert_eq!(tag_runs_on("gfx90a", &amd("gfx90a")), Some(true));
        assert_eq!(tag_runs_on("gfx942:xnack-", &amd("gfx942")), Some(true));
    }

    #[test]
    fn tags_the_runtime_cannot_judge_are_unknown_not_refused() {
        assert_eq!(tag_runs_on("gfx9-4-generic", &amd("gfx942")), None);
        assert_eq!(tag_runs_on("any", &amd("gfx942")), None);
        assert_eq!(tag_runs_on("sm_90", &amd("gfx942")), None);
        assert_eq!(tag_runs_on("gfx9", &DeviceArch::Nvidia(90)), None);
        assert_eq!(tag_runs_on("sm_80", &DeviceArch::Nvidia(86)), Some(true));
        assert_eq!(tag_runs_on("sm_90a", &DeviceArch::Nvidia(100)), Some(false));
        assert_eq!(tag_platform("gfx9"), Some(Platform::Amd));
        assert_eq!(tag_platform("sm_90"), Some(Platform::Nvidia));
        assert_eq!(tag_platform("x86"), None);
    }

    #[test]
    fn recorded_targets_run_on_a_device_only_when_one_of_them_does() {
        let runs = |args: &str, d: &str| recorded_runs_on(&argv(args), &amd(d));
        assert_eq!(runs("--offload-arch=gfx942 x.hip", "gfx942"), Some(true));
        assert_eq!(runs("--offload-arch=gfx950 x.hip", "gfx942"), Some(false));
        assert_eq!(
            runs("--offload-arch=gfx942;gfx950 x.hip", "gfx950"),
            Some(true)
        );
        assert_eq!(runs("-O2 x.c", "gfx942"), None, "no target: host code");
        assert_eq!(runs("--offload-arch=gfx9-4-generic x.hip", "gfx942"), None);
        assert_eq!(runs("--offload-arch=gfx9zz x.hip", "gfx942"), Some(false));
    }

    #[test]
    fn the_device_for_selection_is_the_named_one_else_the_detected_one() {
        let found = |p: Platform| {
            Some(Device {
                arch: match p {
                    Platform::Amd => amd("gfx90a"),
                    Platform::Nvidia => DeviceArch::Nvidia(90),
                },
                found_by: "test".into(),
            })
        };
        let d = device_for(&fixed("gfx942"), Platform::Amd, no_detection).unwrap();
        assert_eq!(
            (d.arch, d.found_by.as_str()),
            (amd("gfx942"), "CK_JIT_ARCH")
        );
        let d = device_for(&fixed("sm_90"), Platform::Amd, found).unwrap();
        assert_eq!(d.arch, amd("gfx90a"), "a platform not named is detected");
        assert!(device_for(&ArchChoice::All, Platform::Amd, no_detection).is_none());
        assert!(device_for(&fixed("gfx"), Platform::Amd, no_detection).is_none());
        assert!(device_for(&ArchChoice::Detect, Platform::Amd, |_| None).is_none());
    }
}
