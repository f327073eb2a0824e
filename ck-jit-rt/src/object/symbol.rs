//! Finds a blob's entry point in a compiled object: by exact name, or by
//! the first entry-point candidate in the object's `.dynsym` whose name
//! starts with a prefix (a CK specialisation's Itanium-mangled name is not
//! known in advance).
//!
//! The ELF is read with the `object` crate, read-only; the bytes are
//! untrusted, so every failure is an [`ElfError`], never a panic. Only the
//! first `.dynsym` table is read (an object has at most one), so the work
//! is linear in that table's size whatever the section headers claim.
//!
//! There is one notion of "entry-point candidate" ([`DynSym::is_function`]:
//! a defined `FUNC` or `GNU_IFUNC` symbol with global or weak binding), and
//! one prefix search over it ([`pick_prefix`]) shared by the loader, the
//! tests and the fuzz targets: a vtable, typeinfo object or any other data
//! symbol is never chosen, however its mangled name starts.

use std::fmt;

use object::elf;
use object::read::elf::{FileHeader, Sym};
use object::Endianness;

/// The machine the running process is built for, as an ELF `e_machine`.
pub const HOST_MACHINE: u16 = if cfg!(target_arch = "x86_64") {
    elf::EM_X86_64
} else if cfg!(target_arch = "aarch64") {
    elf::EM_AARCH64
} else if cfg!(target_arch = "x86") {
    elf::EM_386
} else if cfg!(target_arch = "arm") {
    elf::EM_ARM
} else if cfg!(target_arch = "riscv64") {
    elf::EM_RISCV
} else if cfg!(target_arch = "powerpc64") {
    elf::EM_PPC64
} else {
    0
};

/// Why bytes are not a usable ELF shared object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElfError {
    /// Not ELF at all.
    NotElf,
    /// Cut short, or a header or table that does not fit the file (the
    /// ELF reader's own description of what did not fit).
    Truncated(String),
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
            ElfError::Truncated(what) => {
                write!(f, "truncated or malformed ELF file ({what})")
            }
            ElfError::WrongMachine { found, expected } => write!(
                f,
                "built for another architecture (ELF machine {found}, this process is {expected})"
            ),
            ElfError::NotShared(t) => write!(f, "not a shared object (ELF type {t})"),
        }
    }
}

impl From<object::read::Error> for ElfError {
    fn from(e: object::read::Error) -> ElfError {
        ElfError::Truncated(e.to_string())
    }
}

/// A defined symbol from `.dynsym`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynSym {
    /// Its name.
    pub name: String,
    /// Whether it can be an entry point: a `FUNC` or `GNU_IFUNC` symbol
    /// with global or weak binding. Data symbols (vtables `_ZTV`, typeinfo
    /// `_ZTI`/`_ZTS`, variables) are listed with `false`.
    pub is_function: bool,
}

/// The ELF class of `bytes`, after the magic: `Some(true)` for 64-bit.
fn class(bytes: &[u8]) -> Result<bool, ElfError> {
    if bytes.len() < 16 || !bytes.starts_with(&elf::ELFMAG) {
        return Err(ElfError::NotElf);
    }
    // e_ident[EI_CLASS]
    match bytes[4] {
        elf::ELFCLASS32 => Ok(false),
        elf::ELFCLASS64 => Ok(true),
        _ => Err(ElfError::NotElf),
    }
}

/// Checks the ELF header: magic, a shared object, and (when
/// `expected_machine` is given and not 0) the architecture.
pub fn check_header(bytes: &[u8], expected_machine: Option<u16>) -> Result<(), ElfError> {
    if class(bytes)? {
        check::<elf::FileHeader64<Endianness>>(bytes, expected_machine)
    } else {
        check::<elf::FileHeader32<Endianness>>(bytes, expected_machine)
    }
}

fn check<Elf: FileHeader<Endian = Endianness>>(
    bytes: &[u8],
    expected_machine: Option<u16>,
) -> Result<(), ElfError> {
    let header = Elf::parse(bytes)?;
    let endian = header.endian()?;
    let e_type = header.e_type(endian);
    if e_type != elf::ET_DYN {
        return Err(ElfError::NotShared(e_type));
    }
    let machine = header.e_machine(endian);
    match expected_machine {
        Some(expected) if expected != 0 && machine != expected => Err(ElfError::WrongMachine {
            found: machine,
            expected,
        }),
        _ => Ok(()),
    }
}

/// Lists the defined symbols of the `.dynsym` table, in table order
/// (undefined ones are imports, not the object's own). Names that are
/// empty or not UTF-8 are skipped: no manifest can ask for them.
pub fn dynamic_symbols(bytes: &[u8]) -> Result<Vec<DynSym>, ElfError> {
    if class(bytes)? {
        symbols::<elf::FileHeader64<Endianness>>(bytes)
    } else {
        symbols::<elf::FileHeader32<Endianness>>(bytes)
    }
}

fn symbols<Elf: FileHeader<Endian = Endianness>>(bytes: &[u8]) -> Result<Vec<DynSym>, ElfError> {
    let header = Elf::parse(bytes)?;
    let endian = header.endian()?;
    let sections = header.sections(endian, bytes)?;
    // The first SHT_DYNSYM section only: headers naming the same table
    // again would otherwise multiply the work and the names returned.
    let table = sections.symbols(endian, bytes, elf::SHT_DYNSYM)?;
    let mut out = Vec::new();
    for sym in table.iter() {
        if sym.is_undefined(endian) {
            continue;
        }
        let Ok(name) = table.symbol_name(endian, sym) else {
            continue;
        };
        let Ok(name) = std::str::from_utf8(name) else {
            continue;
        };
        if name.is_empty() {
            continue;
        }
        let is_function = is_entry_kind(sym.st_type(), sym.st_bind());
        out.push(DynSym {
            name: name.to_string(),
            is_function,
        });
    }
    Ok(out)
}

/// Whether a symbol of this type and binding can be an entry point
/// ([`DynSym::is_function`]): a function or indirect function, global or
/// weak.
fn is_entry_kind(kind: u8, bind: u8) -> bool {
    matches!(kind, elf::STT_FUNC | elf::STT_GNU_IFUNC)
        && matches!(bind, elf::STB_GLOBAL | elf::STB_WEAK)
}

/// The entry point a prefix selects among `symbols`: the first
/// entry-point candidate ([`DynSym::is_function`]) whose name starts with
/// `prefix`. The one prefix rule of the crate.
pub fn pick_prefix<'a>(symbols: &'a [DynSym], prefix: &str) -> Option<&'a DynSym> {
    symbols
        .iter()
        .find(|s| s.is_function && s.name.starts_with(prefix))
}

/// Entry-point candidates worth showing in a "symbol not found" message:
/// C names and mangled C++ functions, not the runtime's `_init`-style
/// internals.
pub fn candidate_names(symbols: &[DynSym], limit: usize) -> Vec<String> {
    symbols
        .iter()
        .filter(|s| s.is_function && (!s.name.starts_with('_') || s.name.starts_with("_Z")))
        .take(limit)
        .map(|s| s.name.clone())
        .collect()
}

/// The first entry-point candidate in `.dynsym` whose name starts with
/// `prefix` (see [`pick_prefix`]).
pub fn find_prefix(bytes: &[u8], prefix: &str) -> Result<Option<String>, ElfError> {
    Ok(pick_prefix(&dynamic_symbols(bytes)?, prefix).map(|s| s.name.clone()))
}

/// [`find_prefix`] for a 64-bit little-endian object, read in place:
/// the same table walked in the same order with the same rule, no name
/// copied but the one found. A lazy call's first resolve reads one
/// object's table this way. `None` when the object is of another class
/// or order, or its tables are not where its headers say (then
/// [`find_prefix`] reads it, and reports what is wrong).
pub fn find_prefix_elf64le<'a>(bytes: &'a [u8], prefix: &str) -> Option<Option<&'a str>> {
    let u16_at = |at: usize| -> Option<u16> {
        Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
    };
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    let u64_at = |at: usize| -> Option<usize> {
        usize::try_from(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?)).ok()
    };
    // e_ident: magic, ELFCLASS64, ELFDATA2LSB.
    if bytes.len() < 64 || !bytes.starts_with(&elf::ELFMAG) || bytes[4] != elf::ELFCLASS64 {
        return None;
    }
    if bytes[5] != elf::ELFDATA2LSB {
        return None;
    }
    let (shoff, shentsize, shnum) = (
        u64_at(0x28)?,
        usize::from(u16_at(0x3a)?),
        usize::from(u16_at(0x3c)?),
    );
    // The whole table of section headers is there, as the full reading
    // requires.
    if shentsize < 64 || shoff.checked_add(shnum.checked_mul(shentsize)?)? > bytes.len() {
        return None;
    }
    let section = |i: usize| -> Option<(u32, usize, usize, usize, usize)> {
        let at = shoff.checked_add(i.checked_mul(shentsize)?)?;
        // sh_type, sh_offset, sh_size, sh_link, sh_entsize
        Some((
            u32_at(at + 4)?,
            u64_at(at + 0x18)?,
            u64_at(at + 0x20)?,
            u32_at(at + 0x28)? as usize,
            u64_at(at + 0x38)?,
        ))
    };
    let Some(dynsym) = (0..shnum).find_map(|i| section(i).filter(|s| s.0 == elf::SHT_DYNSYM))
    else {
        // No table: no symbol, as `find_prefix` says.
        return Some(None);
    };
    let (_, off, size, link, entsize) = dynsym;
    let (_, str_off, str_size, _, _) = section(link)?;
    let strings = bytes.get(str_off..str_off.checked_add(str_size)?)?;
    let table = bytes.get(off..off.checked_add(size)?)?;
    if entsize != 24 || size % 24 != 0 {
        return None;
    }
    for sym in table.chunks_exact(24) {
        let name = u32::from_le_bytes(sym[0..4].try_into().ok()?) as usize;
        let info = sym[4];
        let shndx = u16::from_le_bytes(sym[6..8].try_into().ok()?);
        let (kind, bind) = (info & 0xf, info >> 4);
        if shndx == elf::SHN_UNDEF || !is_entry_kind(kind, bind) {
            continue;
        }
        let rest = strings.get(name..)?;
        if !rest.starts_with(prefix.as_bytes()) {
            continue;
        }
        let end = rest.iter().position(|&b| b == 0)?;
        match std::str::from_utf8(&rest[..end]) {
            Ok(n) if !n.is_empty() => return Some(Some(n)),
            _ => continue,
        }
    }
    Some(None)
}

/// The names of exported functions, for "symbol not found" messages (see
/// [`candidate_names`]); empty when the bytes cannot be read.
pub fn function_names(bytes: &[u8], limit: usize) -> Vec<String> {
    candidate_names(&dynamic_symbols(bytes).unwrap_or_default(), limit)
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
        hdr[6] = 1;
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
        b[6] = 1; // EV_CURRENT
        b[16] = 3;
        b[18] = 62;
        b[0x28..0x30].copy_from_slice(&(shdrs_at as u64).to_le_bytes());
        b[0x3a] = 64;
        b[0x3c..0x3e].copy_from_slice(&(shnum as u16).to_le_bytes());
        b[0x3e] = 1; // e_shstrndx: the string table doubles as section names
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

    /// The in-place reading of a real object (the C compiler's) finds
    /// what the full reading finds, for every prefix tried: data symbols,
    /// undefined references and local functions are passed over, weak
    /// functions are not, table order decides.
    #[test]
    fn the_in_place_prefix_reading_finds_what_the_full_reading_finds() {
        let dir = std::env::temp_dir().join(format!("ck-jit-sym-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("s.c");
        std::fs::write(
            &src,
            "int kern_data = 1;\n\
             extern int kern_undef(int);\n\
             static int kern_local(int x) { return x + kern_data; }\n\
             __attribute__((weak)) int kern_weak(int x) { return kern_local(x); }\n\
             int kern_a1(int x) { return kern_undef(x) + 1; }\n\
             int kern_a2(int x) { return x + 2; }\n\
             int other(int x) { return x; }\n",
        )
        .unwrap();
        let so = dir.join("s.so");
        let st = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(&so)
            .arg(&src)
            .status()
            .expect("a C compiler (cc)");
        assert!(st.success());
        let bytes = std::fs::read(&so).unwrap();
        for prefix in [
            "kern_", "kern_a", "kern_a2", "kern_d", "kern_u", "kern_l", "kern_w", "o", "",
            "nothing",
        ] {
            let full = find_prefix(&bytes, prefix).unwrap();
            let fast = find_prefix_elf64le(&bytes, prefix).expect("a 64-bit little-endian object");
            assert_eq!(fast.map(str::to_string), full, "prefix {prefix:?}");
        }
        assert_eq!(find_prefix_elf64le(&bytes, "kern_d"), Some(None));
        assert_eq!(
            find_prefix_elf64le(&bytes, "kern_w"),
            Some(Some("kern_weak"))
        );
        // Cut anywhere, it never panics, and where both read the cut
        // object they agree.
        for cut in (0..bytes.len()).step_by(97) {
            let fast = find_prefix_elf64le(&bytes[..cut], "kern_a");
            if let (Some(found), Ok(full)) = (fast, find_prefix(&bytes[..cut], "kern_a")) {
                assert_eq!(found.map(str::to_string), full, "cut at {cut}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
