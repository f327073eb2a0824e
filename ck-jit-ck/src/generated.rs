//! A file the CK generator wrote and what it is for: a blob (with what
//! its declarations say), a dispatcher or another source; and how a
//! generated source is told to be a blob. It opens no file: callers hand
//! it one file's text or declarations.

use std::path::{Path, PathBuf};

use super::decl;
use super::error::Error;
use super::vocab::{BlobDecl, Vocabulary};

/// A generated file and what it is for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GeneratedFile {
    /// Absolute path.
    pub path: PathBuf,
    /// Path relative to the generated directory, `/`-separated.
    pub rel: String,
    /// What the file is, read from its declarations.
    pub role: Role,
}

/// What a generated file is for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Role {
    /// A blob: it specialises an entry template for a traits type the
    /// headers declare.
    Blob(Box<BlobDecl>),
    /// A blob whose guard admits none of the requested targets: not
    /// recorded (see [`CkFmhaFiles::left_out`](crate::CkFmhaFiles::left_out)).
    OtherArch(Box<BlobDecl>),
    /// A dispatcher: it calls the blobs' entry templates.
    Dispatcher,
    /// Any other generated source.
    Host,
}

/// The description of the file `path` holding `text` when it is a blob:
/// it specialises a template for a traits type the headers declare.
pub(crate) fn describe_blob(
    vocab: &Vocabulary,
    text: &str,
    path: &Path,
) -> Result<Option<BlobDecl>, Error> {
    let source = decl::blob_source(text).map_err(|e| e.in_file(path))?;
    describe_source(vocab, &source, path)
}

/// The description of the file `path` whose declarations are `source`
/// when it is a blob.
pub(crate) fn describe_source(
    vocab: &Vocabulary,
    source: &decl::BlobSource,
    path: &Path,
) -> Result<Option<BlobDecl>, Error> {
    let specs = &source.specialisations;
    let is_blob = specs.iter().any(|s| {
        s.args
            .first()
            .and_then(|a| decl::split_instantiation(a))
            .is_some_and(|(t, _)| vocab.template(&t).is_some_and(|t| t.is_class))
    });
    if !is_blob {
        return Ok(None);
    }
    vocab
        .describe_source(source)
        .map(Some)
        .map_err(|why| Error::Parse {
            file: Some(path.to_path_buf()),
            line: specs.first().map_or(1, |s| s.line),
            why,
        })
}

/// What a blob's file name states that its declarations contradict: the
/// head dimension (`_d128_`), the data type token, the architecture suffix.
pub(crate) fn name_disagreement(stem: &str, d: &BlobDecl) -> Option<String> {
    let tokens: Vec<&str> = stem.split('_').collect();
    if let Some(h) = d.meta.get("hdim") {
        let stated = tokens.iter().find_map(|t| {
            let n = t.strip_prefix('d')?;
            (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(n)
        });
        if let Some(n) = stated.filter(|n| n != h) {
            return Some(format!("the name says d{n}, the declaration hdim {h}"));
        }
    }
    if let Some(dt) = d.meta.get("dtype") {
        if !tokens.contains(&dt.as_str()) {
            return Some(format!("the declared dtype {dt} is not in the name"));
        }
    }
    let suffix = tokens.last().filter(|t| t.starts_with("gfx")).copied();
    if d.arch.as_deref() != suffix {
        return Some(format!(
            "the declared architecture {:?} differs from the name's suffix {suffix:?}",
            d.arch
        ));
    }
    None
}
