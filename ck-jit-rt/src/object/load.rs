//! Loads a verified object with `dlopen(RTLD_NOW | RTLD_LOCAL)` and
//! resolves entry points in it.
//!
//! A loaded library is never closed, not even when its [`Loaded`] (or the
//! runtime holding it) is dropped: the pointers taken from it are stored
//! in `'static` slots and handed to callers, so the library must live as
//! long as the process (and a `dlclose` per kernel at exit is time spent
//! for nothing).

use std::mem::ManuallyDrop;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use ck_jit_manifest::SymbolSpec;
use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};

use crate::error::Error;
use crate::object::bytes::ObjectBytes;
use crate::object::symbol::{self, DynSym};
use crate::path_bytes::PathBytes;

/// A loaded object's dynamic symbols: read with the object, or, for an
/// object whose bytes were never read (vouched for by its identity), read
/// on the first lookup that needs them (a prefix, or the candidates of a
/// symbol not found) from its file, mapped when large; an exact name goes
/// to `dlsym` alone.
#[derive(Debug)]
enum Symbols {
    Read(Vec<DynSym>),
    Later {
        file: ObjectBytes,
        read: OnceLock<Result<Vec<DynSym>, String>>,
    },
}

/// A loaded blob object.
#[derive(Debug)]
pub struct Loaded {
    blob: String,
    path: Arc<Path>,
    lib: ManuallyDrop<Library>,
    /// The object's dynamic symbols.
    symbols: Symbols,
    /// The key of the inputs the object was built from, when the runtime
    /// loaded it from its cache.
    prekey: Option<String>,
}

impl Loaded {
    /// Loads `path` (whose bytes, already verified, are `bytes`).
    pub fn open(blob: &str, path: &Path, bytes: &[u8]) -> Result<Loaded, Error> {
        Loaded::open_through(blob, path, bytes, None)
    }

    /// Loads `path` (whose bytes, already verified, are `bytes`), through
    /// `file` when given: the open file those bytes were checked in, loaded
    /// as `/proc/self/fd/N`, so a file swapped under the path after the
    /// check is not what gets loaded (a shared cache's other writers). That
    /// costs one descriptor per object, kept open for the process as the
    /// object is. The loader then names the object by that path (what
    /// `dladdr` reports); `/proc/self/maps` still shows the cache file.
    /// Without `/proc`, by path.
    pub fn open_through(
        blob: &str,
        path: &Path,
        bytes: &[u8],
        file: Option<&std::fs::File>,
    ) -> Result<Loaded, Error> {
        symbol::check_header(bytes, Some(symbol::HOST_MACHINE)).map_err(|e| Error::BadObject {
            blob: blob.to_string(),
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
        let symbols = symbol::dynamic_symbols(bytes).map_err(|e| Error::BadObject {
            blob: blob.to_string(),
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
        Loaded::dlopen(blob, path, Symbols::Read(symbols), file)
    }

    /// Loads a verified object: as [`Loaded::open_through`] when its bytes
    /// were read (hashed, or read for another reason), else without
    /// reading them: an object vouched for by its identity had its ELF
    /// header checked when it was published, the loader maps it, and its
    /// symbol table is read only if a lookup needs it.
    pub fn open_verified(
        blob: &str,
        path: &Path,
        bytes: &ObjectBytes,
        file: Option<&std::fs::File>,
    ) -> Result<Loaded, Error> {
        match bytes.unread_again() {
            Some(file_bytes) => {
                let symbols = Symbols::Later {
                    file: file_bytes,
                    read: OnceLock::new(),
                };
                Loaded::dlopen(blob, path, symbols, file)
            }
            None => Loaded::open_through(blob, path, bytes, file),
        }
    }

    fn dlopen(
        blob: &str,
        path: &Path,
        symbols: Symbols,
        file: Option<&std::fs::File>,
    ) -> Result<Loaded, Error> {
        // The descriptor stays open for the process, as the library does:
        // the loader remembers objects by the name they were opened by, and
        // a closed descriptor's number, reused for another object, would
        // name this one again.
        let via_fd = file.and_then(|f| {
            use std::os::fd::{AsRawFd, IntoRawFd};
            let p = PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()));
            if !p.exists() {
                return None;
            }
            let kept = f.try_clone().ok()?.into_raw_fd();
            Some(PathBuf::from(format!("/proc/self/fd/{kept}")))
        });
        let open_path = via_fd.as_deref().unwrap_or(path);
        // Handed over with its NUL, so the loader's name is not copied.
        let mut c_path = PathBytes::of(open_path.as_os_str().as_bytes());
        let c_path = std::ffi::OsStr::from_bytes(c_path.with_nul());
        // SAFETY: loading runs the object's initialisers. The object is one
        // this process's manifest asked to be compiled from the manifest's
        // source with the manifest's command, verified against the checksum
        // recorded when it was published into a cache only this user can
        // write (or an explicitly shared one).
        let lib = unsafe { Library::open(Some(c_path), RTLD_NOW | RTLD_LOCAL) }.map_err(|e| {
            Error::DlOpen {
                blob: blob.to_string(),
                path: path.to_path_buf(),
                desc: e.to_string(),
            }
        })?;
        // The path the unread bytes keep, when it is this one: shared.
        let path = match &symbols {
            Symbols::Later { file, .. } => file.unread_path().filter(|p| ***p == *path).cloned(),
            Symbols::Read(_) => None,
        }
        .unwrap_or_else(|| Arc::from(path));
        Ok(Loaded {
            blob: blob.to_string(),
            path,
            lib: ManuallyDrop::new(lib),
            symbols,
            prekey: None,
        })
    }

    /// This object, known to be built from the inputs of `prekey`.
    pub(crate) fn built_from(mut self, prekey: String) -> Loaded {
        self.prekey = Some(prekey);
        self
    }

    /// The key of the inputs the object was built from, if known.
    pub(crate) fn prekey(&self) -> Option<&str> {
        self.prekey.as_deref()
    }

    /// The object's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The object's dynamic symbols, read from its file the first time
    /// they are needed if they were not read with it.
    fn symbols(&self) -> Result<&[DynSym], Error> {
        match &self.symbols {
            Symbols::Read(v) => Ok(v),
            Symbols::Later { file, read } => read
                .get_or_init(|| symbol::dynamic_symbols(file).map_err(|e| e.to_string()))
                .as_deref()
                .map_err(|why| Error::BadObject {
                    blob: self.blob.clone(),
                    path: self.path.to_path_buf(),
                    why: why.clone(),
                }),
        }
    }

    /// Resolves an entry point; the address stays valid for the process.
    pub fn resolve(&self, spec: &SymbolSpec) -> Result<*const (), Error> {
        let name = match spec {
            SymbolSpec::Exact(n) => Some(std::borrow::Cow::Borrowed(n.as_str())),
            SymbolSpec::Prefix(p) => match &self.symbols {
                // Not read yet: the one name looked for in the file's table.
                Symbols::Later { file, read } if read.get().is_none() => {
                    match symbol::find_prefix_elf64le(file, p) {
                        Some(found) => found.map(|s| s.to_string().into()),
                        None => {
                            symbol::pick_prefix(self.symbols()?, p).map(|s| s.name.clone().into())
                        }
                    }
                }
                _ => symbol::pick_prefix(self.symbols()?, p).map(|s| s.name.clone().into()),
            },
        };
        let not_found = || Error::SymbolNotFound {
            blob: self.blob.clone(),
            path: self.path.to_path_buf(),
            spec: spec.clone(),
            candidates: self
                .symbols()
                .map(|s| symbol::candidate_names(s, 8))
                .unwrap_or_default(),
        };
        let name = name.ok_or_else(not_found)?;
        if name.as_bytes().contains(&0) {
            return Err(not_found());
        }
        // The name and its NUL, on the stack when short.
        let mut c = PathBytes::of(name.as_bytes());
        // SAFETY: the address is returned as an untyped pointer; the caller
        // (the generated dispatcher) casts it to the signature its user
        // declared. The library is kept alive for the process.
        let sym = unsafe { self.lib.get::<*const ()>(c.with_nul()) };
        match sym {
            Ok(s) => {
                let p: *const () = *s;
                if p.is_null() {
                    Err(not_found())
                } else {
                    Ok(p)
                }
            }
            Err(_) => Err(not_found()),
        }
    }
}
