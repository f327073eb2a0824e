//! Finds a blob's entry point in a compiled object: by exact name, or by
//! scanning the object's `.dynsym` for the first defined function whose name
//! starts with a prefix (a CK specialisation's Itanium-mangled name is not
//! known in advance).
//!
//! The scanner reads untrusted bytes: every offset is bounds-checked, it
//! never panics and never allocates more than the input's size.

use std::fmt;

/// The machine the running process is built for, as an ELF `e_machine`.
pub const HOST_MACHINE: u16 = if cfg!(target_arch = "x86_64") {
    62
} else if cfg!(target_arch = "aarch64") {
    183
} else if cfg!(target_arch = "x86") {
    3
} else if cfg!(target_arch = "arm") {
    40
} else if cfg!(target_arch = "riscv64") {
    243
} else if cfg!(target_arch = "powerpc64") {
    21
} else {
    0
};

/// Why bytes are not a usable ELF shared object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElfError {
    /// Not ELF at all.
    NotElf,
    /// Cut short or an offset outside the file.
    Truncated(&'static str),
    /// Built for another machine.
    WrongMachine {
        /// `e_machine` of the file.
        found: u16,
        /// `e_machine` of this process.
        expected: u16,
    },
    /// Not a shared object (`ET_DYN`).
    NotShared(u16),
}

impl fmt::Display for ElfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElfError::NotElf => write!(f, "not an ELF file"),
            ElfError::Truncated(what) => write!(f, "truncated ELF file ({what} out of bounds)"),
            ElfError::WrongMachine { found, expected } => write!(
                f,
                "built for another architecture (ELF machine {found}, this process is {expected})"
            ),
            ElfError::NotShared(t) => write!(f, "not a shared object (ELF type {t})"),
        }
    }
}

/// A defined symbol from `.dynsym`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynSym {
    /// Its name.
    pub name: String,
    /// Whether it is a function (`STT_FUNC` or `STT_GNU_IFUNC`).
    pub is_function: bool,
}

struct Reader<'a> {
    b: &'a [u8],
    le: bool,
    is64: bool,
}

impl Reader<'_> {
    fn bytes<const N: usize>(&self, at: usize, what: &'static str) -> Result<[u8; N], ElfError> {
        let end = at.checked_add(N).ok_or(ElfError::Truncated(what))?;
        let s = self.b.get(at..end).ok_or(ElfError::Truncated(what))?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    fn u16(&self, at: usize, what: &'static str) -> Result<u16, ElfError> {
        let a = self.bytes::<2>(at, what)?;
        Ok(if self.le {
            u16::from_le_bytes(a)
        } else {
            u16::from_be_bytes(a)
        })
    }
    fn u32(&self, at: usize, what: &'static str) -> Result<u32, ElfError> {
        let a = self.bytes::<4>(at, what)?;
        Ok(if self.le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        })
    }
    fn u64(&self, at: usize, what: &'static str) -> Result<u64, ElfError> {
        let a = self.bytes::<8>(at, what)?;
        Ok(if self.le {
            u64::from_le_bytes(a)
        } else {
            u64::from_be_bytes(a)
        })
    }
    /// An address-sized field.
    fn word(&self, at: usize, what: &'static str) -> Result<usize, ElfError> {
        let v = if self.is64 {
            self.u64(at, what)?
        } else {
            u64::from(self.u32(at, what)?)
        };
        usize::try_from(v).map_err(|_| ElfError::Truncated(what))
    }
}

/// Checks the ELF header: magic, a shared object, and (when
/// `expected_machine` is given) the architecture.
pub fn check_header(bytes: &[u8], expected_machine: Option<u16>) -> Result<(), ElfError> {
    let r = reader(bytes)?;
    let e_type = r.u16(16, "e_type")?;
    if e_type != 3 {
        return Err(ElfError::NotShared(e_type));
    }
    let machine = r.u16(18, "e_machine")?;
    if let Some(expected) = expected_machine {
        if expected != 0 && machine != expected {
            return Err(ElfError::WrongMachine {
                found: machine,
                expected,
            });
        }
    }
    Ok(())
}

fn reader(bytes: &[u8]) -> Result<Reader<'_>, ElfError> {
    if bytes.len() < 16 || &bytes[..4] != b"\x7fELF" {
        return Err(ElfError::NotElf);
    }
    let is64 = match bytes[4] {
        1 => false,
        2 => true,
        _ => return Err(ElfError::NotElf),
    };
    let le = match bytes[5] {
        1 => true,
        2 => false,
        _ => return Err(ElfError::NotElf),
    };
    Ok(Reader { b: bytes, le, is64 })
}

/// Lists the defined symbols of the `.dynsym` table, in table order.
pub fn dynamic_symbols(bytes: &[u8]) -> Result<Vec<DynSym>, ElfError> {
    let r = reader(bytes)?;
    let (shoff, shentsize, shnum) = if r.is64 {
        (
            r.word(0x28, "e_shoff")?,
            r.u16(0x3a, "e_shentsize")?,
            r.u16(0x3c, "e_shnum")?,
        )
    } else {
        (
            r.word(0x20, "e_shoff")?,
            r.u16(0x2e, "e_shentsize")?,
            r.u16(0x30, "e_shnum")?,
        )
    };
    let shentsize = usize::from(shentsize);
    let min_sh = if r.is64 { 64 } else { 40 };
    if shnum == 0 || shoff == 0 {
        return Ok(Vec::new());
    }
    if shentsize < min_sh {
        return Err(ElfError::Truncated("section header size"));
    }
    // Section header fields: (type, offset, size, link, entsize).
    let section = |i: usize| -> Result<(u32, usize, usize, usize, usize), ElfError> {
        let base = shoff
            .checked_add(
                i.checked_mul(shentsize)
                    .ok_or(ElfError::Truncated("section"))?,
            )
            .ok_or(ElfError::Truncated("section"))?;
        match base.checked_add(shentsize) {
            Some(end) if end <= bytes.len() => {}
            _ => return Err(ElfError::Truncated("section header")),
        }
        if r.is64 {
            Ok((
                r.u32(base + 4, "sh_type")?,
                r.word(base + 0x18, "sh_offset")?,
                r.word(base + 0x20, "sh_size")?,
                r.u32(base + 0x28, "sh_link")? as usize,
                r.word(base + 0x38, "sh_entsize")?,
            ))
        } else {
            Ok((
                r.u32(base + 4, "sh_type")?,
                r.word(base + 0x10, "sh_offset")?,
                r.word(base + 0x14, "sh_size")?,
                r.u32(base + 0x18, "sh_link")? as usize,
                r.word(base + 0x24, "sh_entsize")?,
            ))
        }
    };
    const SHT_DYNSYM: u32 = 11;
    let mut out = Vec::new();
    for i in 0..usize::from(shnum) {
        let (ty, off, size, link, entsize) = section(i)?;
        if ty != SHT_DYNSYM {
            continue;
        }
        if link >= usize::from(shnum) {
            return Err(ElfError::Truncated("dynsym string table link"));
        }
        let (_, str_off, str_size, _, _) = section(link)?;
        let strtab = bytes
            .get(
                str_off
                    ..str_off
                        .checked_add(str_size)
                        .ok_or(ElfError::Truncated("strtab"))?,
            )
            .ok_or(ElfError::Truncated("strtab"))?;
        let min_sym = if r.is64 { 24 } else { 16 };
        if entsize < min_sym {
            return Err(ElfError::Truncated("symbol size"));
        }
        let end = off.checked_add(size).ok_or(ElfError::Truncated("dynsym"))?;
        if end > bytes.len() {
            return Err(ElfError::Truncated("dynsym"));
        }
        let count = size / entsize;
        for s in 1..count {
            let at = off + s * entsize;
            let (name_off, info, shndx) = if r.is64 {
                (
                    r.u32(at, "st_name")?,
                    bytes[at + 4],
                    r.u16(at + 6, "st_shndx")?,
                )
            } else {
                (
                    r.u32(at, "st_name")?,
                    bytes[at + 12],
                    r.u16(at + 14, "st_shndx")?,
                )
            };
            if shndx == 0 {
                continue; // undefined: imported, not ours
            }
            let Some(tail) = strtab.get(name_off as usize..) else {
                continue;
            };
            let len = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
            let Ok(name) = std::str::from_utf8(&tail[..len]) else {
                continue;
            };
            if name.is_empty() {
                continue;
            }
            let kind = info & 0xf;
            out.push(DynSym {
                name: name.to_string(),
                is_function: kind == 2 || kind == 10,
            });
        }
    }
    Ok(out)
}

/// The first defined function in `.dynsym` whose name starts with `prefix`.
pub fn find_prefix(bytes: &[u8], prefix: &str) -> Result<Option<String>, ElfError> {
    Ok(dynamic_symbols(bytes)?
        .into_iter()
        .find(|s| s.is_function && s.name.starts_with(prefix))
        .map(|s| s.name))
}

/// The names of exported functions, for "symbol not found" messages.
pub fn function_names(bytes: &[u8], limit: usize) -> Vec<String> {
    dynamic_symbols(bytes)
        .unwrap_or_default()
        .into_iter()
        .filter(|s| s.is_function)
        .map(|s| s.name)
        .filter(|n| !n.starts_with('_') || n.starts_with("_Z"))
        .take(limit)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert_eq!(dynamic_symbols(b""), Err(ElfError::NotElf));
        assert_eq!(dynamic_symbols(b"MZ\x90\x00"), Err(ElfError::NotElf));
        let mut hdr = vec![0u8; 64];
        hdr[..4].copy_from_slice(b"\x7fELF");
        hdr[4] = 2;
        hdr[5] = 1;
        hdr[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes());
        hdr[0x3a] = 64;
        hdr[0x3c] = 3;
        assert!(matches!(dynamic_symbols(&hdr), Err(ElfError::Truncated(_))));
    }

    #[test]
    fn own_executable_parses() {
        // The test binary is an ELF file (PIE: ET_DYN on most systems).
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(dynamic_symbols(&exe).is_ok());
    }
}
