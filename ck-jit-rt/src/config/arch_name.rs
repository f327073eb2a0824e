//! The names of GPU architectures that `CK_JIT_ARCH` takes and device
//! detection reports (`gfx942`, `sm_90`), and the value `CK_JIT_ARCH`
//! parses into. They sit here, with the configuration, so that the
//! configuration reads no other part of the crate; [`arch`](crate::arch)
//! re-exports them and reads argv with the same name rules.

use std::fmt;

/// A GPU vendor's family of targets; a device is detected per platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    /// AMD GPUs (`gfx` targets).
    Amd,
    /// NVIDIA GPUs (`sm_`/`compute_` targets).
    Nvidia,
}

/// The architecture of a device: what it runs natively.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DeviceArch {
    /// An AMD GPU by its `gfx` name (`gfx942`).
    Amd(String),
    /// An NVIDIA GPU by its compute capability, as `10 * major + minor`
    /// (9.0 is 90, 12.0 is 120).
    Nvidia(u32),
}

impl DeviceArch {
    /// Reads `gfx942` or `sm_90` (`sm_90a` and `sm_100f` name the devices
    /// of `sm_90` and `sm_100`: a device has no suffix, targets do).
    pub fn parse(text: &str) -> Option<DeviceArch> {
        let t = text.trim();
        if is_gfx_name(t) && !t.ends_with("-generic") {
            return Some(DeviceArch::Amd(t.to_ascii_lowercase()));
        }
        let (cc, _) = cc_and_suffix(t.strip_prefix("sm_")?)?;
        Some(DeviceArch::Nvidia(cc))
    }

    /// The platform this device belongs to.
    pub fn platform(&self) -> Platform {
        match self {
            DeviceArch::Amd(_) => Platform::Amd,
            DeviceArch::Nvidia(_) => Platform::Nvidia,
        }
    }
}

impl fmt::Display for DeviceArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceArch::Amd(name) => f.write_str(name),
            DeviceArch::Nvidia(cc) => write!(f, "sm_{cc}"),
        }
    }
}

/// `CK_JIT_ARCH`: which device compiles are for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ArchChoice {
    /// Unset: the device this process uses, detected once per platform
    /// when a blob recorded for several architectures needs it.
    #[default]
    Detect,
    /// `all`: every blob compiles the targets it was recorded with.
    All,
    /// Named devices, at most one per platform; a platform not named is
    /// detected.
    Fixed(Vec<DeviceArch>),
    /// A value none of the above (the text as set).
    Invalid(String),
}

impl ArchChoice {
    /// Reads a `CK_JIT_ARCH` value (`None` or blank: detect).
    pub fn parse(value: Option<&str>) -> ArchChoice {
        let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
            return ArchChoice::Detect;
        };
        if v.eq_ignore_ascii_case("all") {
            return ArchChoice::All;
        }
        let mut archs: Vec<DeviceArch> = Vec::new();
        for part in v.split([',', ' ']).filter(|p| !p.is_empty()) {
            match DeviceArch::parse(&part.to_ascii_lowercase()) {
                Some(a) if !archs.iter().any(|b| b.platform() == a.platform()) => archs.push(a),
                _ => return ArchChoice::Invalid(v.to_string()),
            }
        }
        ArchChoice::Fixed(archs)
    }

    /// The device named for `platform`, if any.
    pub(crate) fn fixed(&self, platform: Platform) -> Option<&DeviceArch> {
        match self {
            ArchChoice::Fixed(archs) => archs.iter().find(|a| a.platform() == platform),
            _ => None,
        }
    }
}

/// A `gfx` target name, with or without features and generic suffix.
pub(crate) fn is_gfx_name(t: &str) -> bool {
    let base = t.split(':').next().unwrap_or(t);
    base.len() > 3
        && base[..3].eq_ignore_ascii_case("gfx")
        && base[3..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
        && base.as_bytes()[3].is_ascii_digit()
}

/// `90` → (90, None), `90a` → (90, Some('a')), `100f` → (100, Some('f')).
pub(crate) fn cc_and_suffix(rest: &str) -> Option<(u32, Option<char>)> {
    let digits = rest.trim_end_matches(['a', 'f']);
    let suffix = rest[digits.len()..].chars().next();
    if rest.len() - digits.len() > 1
        || digits.len() < 2
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    Some((digits.parse().ok()?, suffix))
}
