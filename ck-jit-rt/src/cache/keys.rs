//! The keys of a cache entry. A compile's inputs (cache format, blob
//! name, source bytes, normalised arguments, program, working directory,
//! whether headers are recorded, launcher) hash to an [`InputsKey`]; that
//! and the compiler's identity and environment hash to a [`Prekey`] (the
//! directory an entry lives in, and its compile lock); the prekey and every
//! header the compile read, with its contents' hash, hash to the final
//! [`Key`] (the object's file stem).

use std::fmt;

use ck_jit_manifest::Group;

use super::headers::{short_hash, Dep};
use crate::compile::{self, CompilerId};

/// Version of the cache layout and key derivation; part of every key.
/// Format 2 stores header lists apart (`deps/<digest>.json`) and records
/// the object's identity.
pub const CACHE_FORMAT: u32 = 2;

/// The key of what is known about a compile before running it, without
/// the compiler's identity: the cache format, blob name, source bytes, the
/// normalised argument template, program name, working directory, whether
/// headers are recorded, and the launcher. Lets a deployment without the
/// compiler still find entries built from the same inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputsKey(blake3::Hash);

/// The key of a compile's inputs with the compiler's identity: the
/// directory its entries live in and the name of its compile lock.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Prekey(pub(super) String);

/// The final key of an entry: its [`Prekey`] and every header the compile
/// read, with its contents' hash. The object's file stem.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key(String);

impl InputsKey {
    /// Hashes a blob's inputs. `source` is the BLAKE3 of the source bytes;
    /// the template's arguments go in normalised
    /// ([`compile::normalise_args`]) with `{name}` expanded, and other
    /// placeholders kept, so relocating the tree keeps the key.
    pub(crate) fn new(
        blob: &str,
        source: &blake3::Hash,
        group: &Group,
        launcher: &[String],
    ) -> InputsKey {
        // Gathered, then hashed once: many small updates cost more than
        // the hashing (the same bytes, so the same key).
        let mut h: Vec<u8> = Vec::with_capacity(256);
        h.extend_from_slice(b"ck-jit inputs\0");
        h.extend_from_slice(&CACHE_FORMAT.to_le_bytes());
        h.extend_from_slice(blob.as_bytes());
        h.extend_from_slice(b"\0");
        h.extend_from_slice(source.as_bytes());
        gather_command(&mut h, group, launcher, Some(blob));
        InputsKey(blake3::hash(&h))
    }

    /// The key of these inputs compiled by `compiler` (its `--version`
    /// output and its files' contents, never its path or file times) in
    /// an environment whose compiler variables are `env` (see `KEY_ENV`).
    pub fn prekey(&self, compiler: &CompilerId, env: &str) -> Prekey {
        // Gathered, then hashed once, as [`InputsKey::new`] does (the same
        // bytes, so the same key).
        let len = 64 + compiler.version.len() + compiler.files.len() + env.len();
        let mut h: Vec<u8> = Vec::with_capacity(len);
        h.extend_from_slice(self.0.as_bytes());
        gather_compiler(&mut h, compiler, env);
        Prekey(short_hash(&blake3::hash(&h)))
    }
}

/// What [`InputsKey`] holds of a compile besides the blob's name and
/// source: the normalised arguments (`{name}` expanded as `name`, or kept
/// when it is `None`), the program, the working directory, whether
/// headers are recorded, the launcher.
fn gather_command(h: &mut Vec<u8>, group: &Group, launcher: &[String], name: Option<&str>) {
    for a in compile::normalised(&group.args) {
        h.extend_from_slice(b"\0a");
        let Some(name) = name.filter(|_| a.as_bytes().contains(&b'{')) else {
            // No placeholder (most words): the same bytes, without
            // setting up a substring search.
            h.extend_from_slice(a.as_bytes());
            continue;
        };
        // `{name}` expanded as the bytes are gathered.
        for (i, part) in a.split("{name}").enumerate() {
            if i > 0 {
                h.extend_from_slice(name.as_bytes());
            }
            h.extend_from_slice(part.as_bytes());
        }
    }
    h.extend_from_slice(b"\0program\0");
    h.extend_from_slice(group.compiler.as_bytes());
    h.extend_from_slice(b"\0cwd\0");
    h.extend_from_slice(group.cwd.as_deref().unwrap_or("{root}").as_bytes());
    h.push(u8::from(group.depfile));
    for l in launcher {
        h.extend_from_slice(b"\0launcher\0");
        h.extend_from_slice(l.as_bytes());
    }
}

/// What [`Prekey`] adds to the inputs: the compiler's identity (its
/// `--version` output and its files' contents, never its path or file
/// times) and the environment's compiler variables.
fn gather_compiler(h: &mut Vec<u8>, compiler: &CompilerId, env: &str) {
    // Keys made when the identity held the compiler's path and file times
    // never equal these.
    const TAGS: [&[u8]; 3] = [b"\0compiler by content\0", b"\0files\0", b"\0env\0"];
    let parts = [
        compiler.version.as_bytes(),
        compiler.files.as_bytes(),
        env.as_bytes(),
    ];
    for (tag, part) in TAGS.iter().zip(parts) {
        h.extend_from_slice(tag);
        h.extend_from_slice(part);
    }
}

/// Everything a blob's [`Prekey`] is made of but its name and its source:
/// the group's command as the manifest writes it (placeholders kept), the
/// launcher, the compiler's identity and the environment's compiler
/// variables. Two compiles of one blob from one source whose contexts are
/// equal have one prekey, so the memo of hits keys a prekey by this, the
/// blob's name and its source's identity. Made from the same parts
/// [`InputsKey::new`] and [`InputsKey::prekey`] gather.
pub(crate) fn hit_context(
    group: &Group,
    launcher: &[String],
    compiler: &CompilerId,
    env: &str,
) -> blake3::Hash {
    let mut h: Vec<u8> = Vec::with_capacity(512);
    h.extend_from_slice(b"ck-jit hit context\0");
    h.extend_from_slice(&CACHE_FORMAT.to_le_bytes());
    gather_command(&mut h, group, launcher, None);
    gather_compiler(&mut h, compiler, env);
    blake3::hash(&h)
}

impl fmt::Display for InputsKey {
    /// The form stored in [`Record::inputs`](super::Record::inputs).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&short_hash(&self.0))
    }
}

impl Prekey {
    /// The hex form (a directory name in the cache).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The final key of a compile of this prekey that read `deps`.
    pub fn key(&self, deps: &[Dep]) -> Key {
        let mut h = blake3::Hasher::new();
        h.update(self.0.as_bytes());
        for d in deps {
            h.update(b"\0");
            h.update(d.path.as_bytes());
            h.update(b"\0");
            h.update(d.hash.as_bytes());
        }
        Key(short_hash(&h.finalize()))
    }
}

impl fmt::Display for Prekey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Key {
    /// The hex form (the object's file stem).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prekey_is_the_hash_of_the_bytes_it_always_hashed() {
        let id = CompilerId {
            path: "/usr/bin/cc".into(),
            real: "/usr/bin/gcc-14".into(),
            version: "cc (Debian 14.2.0-19) 14.2.0\nCopyright".into(),
            files: "ab".repeat(40),
            prefix: Vec::new(),
            stat: String::new(),
        };
        let inputs = InputsKey(blake3::hash(b"inputs"));
        for env in ["", "CC=x\0CFLAGS=-O3"] {
            // The bytes, update by update, as every cache so far was keyed.
            let mut h = blake3::Hasher::new();
            h.update(inputs.0.as_bytes());
            h.update(b"\0compiler by content\0");
            h.update(id.version.as_bytes());
            h.update(b"\0files\0");
            h.update(id.files.as_bytes());
            h.update(b"\0env\0");
            h.update(env.as_bytes());
            assert_eq!(inputs.prekey(&id, env).0, short_hash(&h.finalize()));
        }
    }

    #[test]
    fn final_key_changes_with_every_header_and_its_contents() {
        let prekey = Prekey("0123".into());
        let dep = |path: &str, hash: &str| Dep {
            path: path.into(),
            hash: hash.into(),
            stat: String::new(),
        };
        let a = prekey.key(&[dep("{root}/a.h", "1")]);
        assert_ne!(a, prekey.key(&[]));
        assert_ne!(a, prekey.key(&[dep("{root}/a.h", "2")]));
        assert_ne!(a, prekey.key(&[dep("{root}/b.h", "1")]));
        // The stat shortcut is not part of the key.
        let mut touched = dep("{root}/a.h", "1");
        touched.stat = "1:2:3:4".into();
        assert_eq!(a, prekey.key(&[touched]));
        assert_eq!(a.as_str().len(), 32);
    }
}
