//! Finds a blob's entry point in a compiled object: by exact name, or by
//! scanning the object's `.dynsym` for the first defined function whose name
//! starts with a prefix (a CK specialisation's Itanium-mangled name is not
//! known in advance).
//!
//! The scanner reads untrusted bytes: every offset is bounds-checked and it
//! never panics. It reads the first `.dynsym` table only (an object has at
//! most one), so its work is linear in that table's size whatever the
//! section headers claim.

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

/// Lists the defined symbols of the `.dynsym` table, in table order. Only
/// the first `SHT_DYNSYM` section counts: section headers naming the same
/// table again would otherwise multiply the work and the names returned.
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
        break;
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

    /// A 64-bit little-endian shared object with a null section, a string
    /// table, and `tables` section headers of type `SHT_DYNSYM` that all
    /// name the same table of `nsyms` entries (defined functions `f`).
    fn dynsym_named_repeatedly(tables: usize, nsyms: usize) -> Vec<u8> {
        let strtab_at = 64usize;
        let symtab_at = strtab_at + 8;
        let shdrs_at = symtab_at + 24 * nsyms;
        let shnum = 2 + tables;
        let mut b = vec![0u8; shdrs_at + 64 * shnum];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[16] = 3;
        b[18] = 62;
        b[0x28..0x30].copy_from_slice(&(shdrs_at as u64).to_le_bytes());
        b[0x3a] = 64;
        b[0x3c..0x3e].copy_from_slice(&(shnum as u16).to_le_bytes());
        b[strtab_at..strtab_at + 2].copy_from_slice(b"\0f");
        for s in 1..nsyms {
            let at = symtab_at + 24 * s;
            b[at..at + 4].copy_from_slice(&1u32.to_le_bytes());
            b[at + 4] = 0x12; // STB_GLOBAL, STT_FUNC
            b[at + 6] = 1; // defined in section 1
        }
        let header = |b: &mut Vec<u8>, i: usize, ty: u32, off: usize, size: usize, link: u32| {
            let h = shdrs_at + 64 * i;
            b[h + 4..h + 8].copy_from_slice(&ty.to_le_bytes());
            b[h + 0x18..h + 0x20].copy_from_slice(&(off as u64).to_le_bytes());
            b[h + 0x20..h + 0x28].copy_from_slice(&(size as u64).to_le_bytes());
            b[h + 0x28..h + 0x2c].copy_from_slice(&link.to_le_bytes());
            b[h + 0x38..h + 0x40].copy_from_slice(&24u64.to_le_bytes());
        };
        header(&mut b, 1, 3, strtab_at, 8, 0);
        for i in 0..tables {
            header(&mut b, 2 + i, 11, symtab_at, 24 * nsyms, 1);
        }
        b
    }

    #[test]
    fn a_dynsym_table_named_by_many_headers_is_read_once() {
        let one = dynamic_symbols(&dynsym_named_repeatedly(1, 100)).unwrap();
        assert_eq!(one.len(), 99);
        assert!(one.iter().all(|s| s.name == "f" && s.is_function));
        // 1,000 headers naming it again: still 99 symbols, not 99,000.
        let many = dynamic_symbols(&dynsym_named_repeatedly(1000, 100)).unwrap();
        assert_eq!(many, one);
        assert_eq!(
            find_prefix(&dynsym_named_repeatedly(1000, 100), "f"),
            Ok(Some("f".into()))
        );
    }

    #[test]
    fn own_executable_parses() {
        // The test binary is an ELF file (PIE: ET_DYN on most systems).
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(dynamic_symbols(&exe).is_ok());
    }
}
