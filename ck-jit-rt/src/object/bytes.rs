//! A file's bytes, read or mapped read-only: a cache entry's object
//! ([`ObjectBytes`], verified by its checksum or its identity), and the
//! cache's header sets ([`Bytes`]). A mapping is private, read-only and
//! unmapped once, on drop; the cache never rewrites a file in place, so a
//! mapping stays backed.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

/// An object's bytes, verified: by their checksum, or (in a private cache)
/// by the object's identity, in which case a large object is mapped
/// read-only rather than read.
pub struct ObjectBytes {
    bytes: Bytes,
    hashed: bool,
    /// The file these bytes were read from and checked, open: what a
    /// shared cache's loads go through, so nothing can swap the file
    /// between the check and the `dlopen`.
    file: Option<File>,
}

/// Objects up to this size are read when their identity is trusted;
/// larger ones are mapped (CK objects are megabytes; a map costs a few
/// system calls and page faults, a read of a small file one copy).
pub(crate) const MAP_ABOVE: u64 = 256 << 10;

pub(crate) enum Bytes {
    Owned(Vec<u8>),
    Mapped(*const u8, usize),
    /// Vouched for by identity and not read yet: read (or mapped) from
    /// `path` on first use. A hit that only loads the object never reads
    /// it; the loader maps it.
    Unread {
        /// Shared with the handles [`ObjectBytes::unread_again`] makes and
        /// the [`Loaded`](crate::Loaded) object they are kept by.
        path: Arc<Path>,
        len: u64,
        read: std::sync::OnceLock<Box<Bytes>>,
    },
}

// SAFETY: a mapping is read-only, private to this value, and unmapped only
// on drop.
unsafe impl Send for ObjectBytes {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for ObjectBytes {}

impl ObjectBytes {
    /// Bytes held in memory whose checksum was computed.
    pub fn hashed(bytes: Vec<u8>) -> ObjectBytes {
        ObjectBytes {
            bytes: Bytes::Owned(bytes),
            hashed: true,
            file: None,
        }
    }

    /// These bytes, with the open file they were checked in.
    pub(crate) fn with_file(mut self, file: File) -> ObjectBytes {
        self.file = Some(file);
        self
    }

    /// The open file the bytes were checked in, when there is one.
    pub fn file(&self) -> Option<&File> {
        self.file.as_ref()
    }

    /// The bytes of `f` (`len` long), not hashed: read when small, mapped
    /// when large; `None` if that fails.
    pub(crate) fn unhashed(f: &mut File, len: u64) -> Option<ObjectBytes> {
        let bytes = if len <= MAP_ABOVE {
            Bytes::Owned(read_len(f, len).ok()?)
        } else {
            map(f, len as usize)?
        };
        Some(ObjectBytes {
            bytes,
            hashed: false,
            file: None,
        })
    }

    /// An object vouched for by its identity alone, read from `path` only
    /// if its bytes are asked for.
    pub(crate) fn unread(path: &Path, len: u64) -> ObjectBytes {
        ObjectBytes::unread_at(Arc::from(path), len)
    }

    /// [`ObjectBytes::unread`], the path shared.
    pub(crate) fn unread_at(path: Arc<Path>, len: u64) -> ObjectBytes {
        ObjectBytes {
            bytes: Bytes::Unread {
                path,
                len,
                read: std::sync::OnceLock::new(),
            },
            hashed: false,
            file: None,
        }
    }

    /// Whether the object's whole checksum was checked (else its identity
    /// was enough).
    pub fn was_hashed(&self) -> bool {
        self.hashed
    }

    /// For bytes not read yet, another handle on the same file that reads
    /// (or, large, maps) it when asked: what a loaded object keeps to read
    /// its symbol table later without holding these.
    pub(crate) fn unread_again(&self) -> Option<ObjectBytes> {
        match &self.bytes {
            Bytes::Unread { path, len, read } if read.get().is_none() => Some(ObjectBytes {
                bytes: Bytes::Unread {
                    path: path.clone(),
                    len: *len,
                    read: std::sync::OnceLock::new(),
                },
                hashed: false,
                file: None,
            }),
            _ => None,
        }
    }

    /// The path of bytes not read yet, shared.
    pub(crate) fn unread_path(&self) -> Option<&Arc<Path>> {
        match &self.bytes {
            Bytes::Unread { path, .. } => Some(path),
            _ => None,
        }
    }
}

impl Bytes {
    /// Whether the bytes are in memory (read, mapped, or read since on
    /// demand); `false` for an object vouched for by its identity whose
    /// bytes nothing has asked for.
    fn is_read(&self) -> bool {
        match self {
            Bytes::Unread { read, .. } => read.get().is_some(),
            _ => true,
        }
    }

    /// How many bytes there are, without reading bytes not read yet.
    fn len(&self) -> u64 {
        match self {
            Bytes::Owned(v) => v.len() as u64,
            Bytes::Mapped(_, len) => *len as u64,
            Bytes::Unread { len, .. } => *len,
        }
    }

    /// Whether the bytes are (or, once read, were) mapped, not copied.
    pub(crate) fn is_mapped(&self) -> bool {
        match self {
            Bytes::Mapped(..) => true,
            Bytes::Unread { read, .. } => read.get().is_some_and(|b| b.is_mapped()),
            Bytes::Owned(_) => false,
        }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            // SAFETY: a live mapping of exactly `len` readable bytes.
            Bytes::Mapped(p, len) => unsafe { std::slice::from_raw_parts(*p, *len) },
            Bytes::Unread { path, len, read } => read
                .get_or_init(|| {
                    // Read now: a file that cannot be read (removed since
                    // its identity was checked) gives no bytes, which the
                    // ELF checks of whoever asked then refuse.
                    let bytes = OpenOptions::new()
                        .read(true)
                        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                        .open(path)
                        .ok()
                        .and_then(|mut f| {
                            if *len <= LOOK_MAP_ABOVE {
                                read_len(&mut f, *len).ok().map(Bytes::Owned)
                            } else {
                                map(&f, *len as usize)
                            }
                        });
                    Box::new(bytes.unwrap_or(Bytes::Owned(Vec::new())))
                })
                .as_slice(),
        }
    }
}

/// Maps `len` (> 0) bytes of `f` read-only; `None` if the system refuses.
pub(crate) fn map(f: &File, len: usize) -> Option<Bytes> {
    // Unmapped once, on drop. Objects in the cache are never truncated or
    // rewritten (they are replaced by rename), so the mapping stays backed.
    crate::object::mapped::map_read_only(f, len).map(|p| Bytes::Mapped(p, len))
}

impl std::ops::Deref for ObjectBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes.as_slice()
    }
}

impl Drop for Bytes {
    fn drop(&mut self) {
        if let Bytes::Mapped(p, len) = *self {
            // SAFETY: the mapping made in `map`, unmapped once.
            unsafe {
                libc::munmap(p as *mut libc::c_void, len);
            }
        }
    }
}

impl fmt::Debug for ObjectBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectBytes")
            .field("len", &self.bytes.len())
            .field("hashed", &self.hashed)
            .field("read", &self.bytes.is_read())
            .field("mapped", &self.bytes.is_mapped())
            .finish()
    }
}

/// Files of the cache larger than this are mapped, not read, when they
/// are only looked at: header sets, an object whose symbol table a lookup
/// reads (the table is a few of its pages).
pub(crate) const LOOK_MAP_ABOVE: u64 = 32 << 10;

/// Reads the first `len` bytes of `f` with no other system call than
/// `read` (`File::read_to_end` also stats and seeks); fewer if it ends
/// sooner.
pub(crate) fn read_len(f: &mut File, len: u64) -> io::Result<Vec<u8>> {
    let mut v = Vec::with_capacity(len as usize);
    f.take(len).read_to_end(&mut v)?;
    Ok(v)
}
