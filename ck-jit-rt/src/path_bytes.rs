//! Paths and names built on the stack.
//!
//! A cache hit joins a few short parts into a path for one system call,
//! or a symbol name for one `dlsym`, and throws it away. A heap
//! allocation for each costs more than the joining, so [`PathBytes`]
//! keeps short ones (the usual ones, under [`STACK`] bytes) on the stack
//! and goes to the heap only for longer ones. It reads nothing else of
//! the crate.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Bytes kept on the stack before [`PathBytes`] moves to the heap.
pub(crate) const STACK: usize = 384;

/// A path (or name) built from parts, on the stack while it is short.
pub(crate) struct PathBytes {
    stack: [u8; STACK],
    len: usize,
    heap: Vec<u8>,
}

impl PathBytes {
    /// An empty path.
    pub(crate) fn new() -> PathBytes {
        PathBytes {
            stack: [0; STACK],
            len: 0,
            heap: Vec::new(),
        }
    }

    /// `bytes` as one path.
    pub(crate) fn of(bytes: &[u8]) -> PathBytes {
        let mut p = PathBytes::new();
        p.push(bytes);
        p
    }

    /// Adds `bytes` at the end, as they are.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if self.heap.is_empty() && end <= STACK {
            self.stack[self.len..end].copy_from_slice(bytes);
        } else {
            if self.heap.is_empty() {
                self.heap.reserve(end.max(2 * STACK));
                self.heap.extend_from_slice(&self.stack[..self.len]);
            }
            // Past a NUL `with_nul` left.
            self.heap.truncate(self.len);
            self.heap.extend_from_slice(bytes);
        }
        self.len = end;
    }

    /// Adds `/` unless the path is empty or ends in one, then `name`.
    pub(crate) fn push_name(&mut self, name: &[u8]) {
        if !self.bytes().is_empty() && !self.bytes().ends_with(b"/") {
            self.push(b"/");
        }
        self.push(name);
    }

    /// The bytes so far.
    pub(crate) fn bytes(&self) -> &[u8] {
        if self.heap.is_empty() {
            &self.stack[..self.len]
        } else {
            &self.heap[..self.len]
        }
    }

    /// The bytes so far as a path.
    pub(crate) fn path(&self) -> &Path {
        Path::new(OsStr::from_bytes(self.bytes()))
    }

    /// The bytes so far followed by a NUL, as a C function reads them
    /// (`libloading` takes such a name without copying it). The NUL is
    /// not part of [`bytes`](Self::bytes) afterwards.
    pub(crate) fn with_nul(&mut self) -> &[u8] {
        let len = self.len;
        self.push(&[0]);
        self.len = len;
        if self.heap.is_empty() {
            &self.stack[..=len]
        } else {
            &self.heap[..=len]
        }
    }

    /// The path, allocated.
    pub(crate) fn to_path_buf(&self) -> PathBuf {
        self.path().to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_its_parts_joined_on_the_stack_or_on_the_heap() {
        for len in [0, 1, STACK - 1, STACK, STACK + 1, 3 * STACK] {
            let name = "n".repeat(len);
            let mut p = PathBytes::of(b"/base/");
            p.push_name(name.as_bytes());
            p.push(b".so");
            let want = Path::new("/base").join(&name);
            let want = format!("{}.so", want.display());
            assert_eq!(p.bytes(), want.as_bytes(), "{len}");
            assert_eq!(p.to_path_buf(), PathBuf::from(&want));
            let mut nul = want.clone().into_bytes();
            nul.push(0);
            assert_eq!(p.with_nul(), &nul[..], "{len}");
            assert_eq!(p.bytes(), want.as_bytes(), "the NUL is not kept: {len}");
            p.push(b"x");
            assert_eq!(p.bytes(), format!("{want}x").as_bytes(), "{len}");
        }
        let mut p = PathBytes::new();
        p.push_name(b"a");
        p.push_name(b"b");
        assert_eq!(p.path(), Path::new("a/b"));
    }
}
