//! How the exported names of CK's blobs start, and which files a generator
//! or a build compiles. Nothing here knows a CK version: names come from
//! the templates the version declares.

/// Source file extensions: what a generator or a build compiles.
pub(crate) const SOURCE_EXTENSIONS: &[&str] = &["cpp", "cc", "cxx", "c", "cu", "hip"];

/// `_Z<len><name>I`: how the mangled name of any specialisation of the
/// global function template `name` starts.
///
/// ```
/// assert_eq!(ck_jit_ck::mangled_template_prefix("fmha_fwd_"), "_Z9fmha_fwd_I");
/// ```
pub fn mangled_template_prefix(name: &str) -> String {
    format!("_Z{}{name}I", name.len())
}
