//! What compiled objects need: the check that cannot be fooled by where a
//! CK version puts its code. A dispatcher's calls of blob specialisations
//! may sit in the dispatcher, in a template of a header it includes, or
//! behind `if constexpr`; whatever the compiler instantiated is an
//! undefined symbol of its object. Every such symbol that names a
//! specialisation of a blob template must be defined by a stub (or by
//! another object of the same link), else the library would load and fail
//! at a user's call.
//!
//! It reads ELF objects and `ar` archives with the `object` crate and
//! starts no program.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use object::read::archive::ArchiveFile;
use object::{Object, ObjectSymbol};

use crate::error::{io_err, Error, Missing};
use crate::generated::Role;
use crate::preset::CkFmhaFiles;
use crate::symbol::mangled_template_prefix;

impl CkFmhaFiles {
    /// The templates blobs specialise: every template a generated blob
    /// defines a specialisation of (asked-for architecture or not), and
    /// every function template the CK tree's FMHA headers declare, so that
    /// a kind whose every blob is missing still counts.
    pub fn blob_templates(&self) -> Result<BTreeSet<String>, Error> {
        let mut out = BTreeSet::new();
        for f in self.try_files()? {
            if let Role::Blob(d) | Role::OtherArch(d) = &f.role {
                out.extend(d.templates.iter().cloned());
            }
        }
        out.extend(self.index()?.detail()?.header_templates.iter().cloned());
        Ok(out)
    }

    /// Checks compiled dispatchers against the stubs they link with:
    /// every specialisation of a [blob template](Self::blob_templates)
    /// that an object of `inputs` (object files or `ar` archives: the
    /// dispatchers, the stubs of [`write_stubs`](crate::write_stubs), the
    /// rest of the link) leaves undefined must be defined by one of them.
    /// Those that are not are one error listing each with the object that
    /// needs it; `output` names what is being built, for the message.
    ///
    /// This is what holds whatever the shape of a CK version's
    /// dispatchers: a call made from a template in a header is an
    /// undefined symbol of the object like any other.
    pub fn check_objects(&self, inputs: &[PathBuf], output: &Path) -> Result<(), Error> {
        let missing = missing_specialisations(inputs, self.blob_templates()?)?;
        if missing.is_empty() {
            return Ok(());
        }
        Err(Error::UndefinedSpecialisations {
            output: output.to_path_buf(),
            missing,
        })
    }
}

/// The defined and undefined symbols of one object.
#[derive(Debug, Default)]
struct Symbols {
    defined: BTreeSet<String>,
    undefined: BTreeSet<String>,
}

/// Every specialisation of one of `templates` that an object of `inputs`
/// (object files or `ar` archives) leaves undefined and none of them
/// defines, sorted. An input that is neither is an error naming it.
pub fn missing_specialisations<S: AsRef<str>>(
    inputs: &[PathBuf],
    templates: impl IntoIterator<Item = S>,
) -> Result<Vec<Missing>, Error> {
    let prefixes: BTreeMap<String, String> = templates
        .into_iter()
        .map(|t| (mangled_template_prefix(t.as_ref()), t.as_ref().to_string()))
        .collect();
    let mut objects: Vec<(String, Symbols)> = Vec::new();
    for path in inputs {
        read_input(path, &mut objects)?;
    }
    let defined: BTreeSet<&str> = objects
        .iter()
        .flat_map(|(_, s)| s.defined.iter().map(String::as_str))
        .collect();
    let mut out = Vec::new();
    for (object, syms) in &objects {
        for u in &syms.undefined {
            if defined.contains(u.as_str()) {
                continue;
            }
            // The longest prefix names the template: `fmha_fwd_splitkv_`
            // rather than a shorter template name it starts with.
            if let Some(template) = prefixes
                .iter()
                .filter(|(p, _)| u.starts_with(p.as_str()))
                .max_by_key(|(p, _)| p.len())
                .map(|(_, t)| t.clone())
            {
                out.push(Missing {
                    object: object.clone(),
                    template,
                    symbol: u.clone(),
                });
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn read_input(path: &Path, out: &mut Vec<(String, Symbols)>) -> Result<(), Error> {
    let data = fs::read(path).map_err(io_err(path))?;
    let bad = |why: String| Error::Object {
        path: path.to_path_buf(),
        why,
    };
    if data.starts_with(b"!<arch>\n") {
        let archive = ArchiveFile::parse(&*data).map_err(|e| bad(e.to_string()))?;
        for member in archive.members() {
            let member = member.map_err(|e| bad(e.to_string()))?;
            let name = String::from_utf8_lossy(member.name()).into_owned();
            let bytes = member
                .data(&*data)
                .map_err(|e| bad(format!("{name}: {e}")))?;
            // A member starts wherever the archive put it (2-byte
            // aligned); the ELF reader wants its headers aligned.
            let aligned = Aligned::copy(bytes);
            let syms = symbols(aligned.bytes()).map_err(|e| bad(format!("{name}: {e}")))?;
            out.push((format!("{}({name})", path.display()), syms));
        }
    } else {
        let syms = symbols(&data).map_err(bad)?;
        out.push((path.display().to_string(), syms));
    }
    Ok(())
}

/// Bytes copied into 8-byte aligned storage.
struct Aligned {
    words: Vec<u64>,
    len: usize,
}

impl Aligned {
    fn copy(bytes: &[u8]) -> Aligned {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        for (word, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            *word = u64::from_ne_bytes(b);
        }
        Aligned {
            words,
            len: bytes.len(),
        }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the pointer comes from a live Vec<u64> of at least `len`
        // bytes (`len.div_ceil(8)` words), every byte of which is
        // initialised; u8 has no alignment or validity requirement, and
        // the slice borrows `self`, so the storage outlives it.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }
}

fn symbols(data: &[u8]) -> Result<Symbols, String> {
    let file = object::File::parse(data).map_err(|e| e.to_string())?;
    let mut s = Symbols::default();
    // A shared object may be stripped of `.symtab`; `.dynsym` is what the
    // loader resolves.
    for sym in file.symbols().chain(file.dynamic_symbols()) {
        let Ok(name) = sym.name() else { continue };
        if name.is_empty() {
            continue;
        }
        if sym.is_undefined() {
            s.undefined.insert(name.to_string());
        } else if sym.is_definition() || sym.is_common() {
            s.defined.insert(name.to_string());
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_that_is_no_object_is_an_error_naming_it() {
        let dir = std::env::temp_dir().join(format!("ck-jit-objects-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let p = dir.join("not-an-object.o");
        fs::write(&p, b"hello").unwrap();
        let e = missing_specialisations(std::slice::from_ref(&p), ["fmha_fwd_"]).unwrap_err();
        assert!(e.to_string().contains("not-an-object.o"), "{e}");
        let _ = fs::remove_dir_all(&dir);
    }
}
