//! What a file CK's FMHA code generator writes is for: a blob of one
//! [`Kind`], an API dispatcher, or a host source, decided from its file name
//! alone (the generator encodes everything in the name).
//!
//! This module never reads a file; it knows CK's naming, the entry template
//! each kind of blob specialises, and how that entry's mangled name starts.

use std::fmt;

/// The four code generator directions (`generate.py -d <direction>`), each
/// writing its blobs and one `<name>_api.cpp` dispatcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// `fwd`: forward attention (`fmha_fwd_api.cpp`).
    Fwd,
    /// `fwd_splitkv`: split-KV forward and its combine step.
    FwdSplitkv,
    /// `fwd_appendkv`: appending to the KV cache (with RoPE).
    FwdAppendkv,
    /// `bwd`: backward attention, three kernels per call.
    Bwd,
}

impl Direction {
    /// Every direction, in generator order.
    pub const ALL: [Direction; 4] = [
        Direction::Fwd,
        Direction::FwdSplitkv,
        Direction::FwdAppendkv,
        Direction::Bwd,
    ];

    /// The name `generate.py -d` takes, also the subdirectory the preset
    /// writes its output to.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Fwd => "fwd",
            Direction::FwdSplitkv => "fwd_splitkv",
            Direction::FwdAppendkv => "fwd_appendkv",
            Direction::Bwd => "bwd",
        }
    }

    /// The dispatcher file this direction writes.
    pub fn api_file(self) -> &'static str {
        match self {
            Direction::Fwd => "fmha_fwd_api.cpp",
            Direction::FwdSplitkv => "fmha_fwd_splitkv_api.cpp",
            Direction::FwdAppendkv => "fmha_fwd_appendkv_api.cpp",
            Direction::Bwd => "fmha_bwd_api.cpp",
        }
    }

    /// The blob kinds this direction writes.
    pub fn kinds(self) -> &'static [Kind] {
        match self {
            Direction::Fwd => &[Kind::Fwd],
            Direction::FwdSplitkv => &[Kind::FwdSplitkv, Kind::FwdSplitkvCombine],
            Direction::FwdAppendkv => &[Kind::FwdAppendkv],
            Direction::Bwd => &[Kind::BwdDotDoO, Kind::BwdDqDkDv, Kind::BwdConvertDq],
        }
    }

    /// The direction named `name`, if any.
    pub fn from_name(name: &str) -> Option<Direction> {
        Direction::ALL.into_iter().find(|d| d.as_str() == name)
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One kind of CK FMHA blob: the kernels sharing an entry template, and one
/// manifest group (named [`Kind::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `fmha_fwd_d*`: forward kernels.
    Fwd,
    /// `fmha_fwd_splitkv_d*`: the split-KV pass.
    FwdSplitkv,
    /// `fmha_fwd_splitkv_combine_d*`: the reduction after the split-KV pass.
    FwdSplitkvCombine,
    /// `fmha_fwd_appendkv_d*`: KV-cache append.
    FwdAppendkv,
    /// `fmha_bwd_dot_do_o_d*`: first backward kernel, `D = rowsum(dO * O)`.
    BwdDotDoO,
    /// `fmha_bwd_d*`: the main backward kernel computing dQ, dK, dV.
    BwdDqDkDv,
    /// `fmha_bwd_convert_dq_d*`: last backward kernel, dQ accumulator to
    /// output type.
    BwdConvertDq,
}

impl Kind {
    /// Every kind, in generator order.
    pub const ALL: [Kind; 7] = [
        Kind::Fwd,
        Kind::FwdSplitkv,
        Kind::FwdSplitkvCombine,
        Kind::FwdAppendkv,
        Kind::BwdDotDoO,
        Kind::BwdDqDkDv,
        Kind::BwdConvertDq,
    ];

    /// The kind's name: the manifest group name and the `kind` metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Fwd => "fwd",
            Kind::FwdSplitkv => "fwd_splitkv",
            Kind::FwdSplitkvCombine => "fwd_splitkv_combine",
            Kind::FwdAppendkv => "fwd_appendkv",
            Kind::BwdDotDoO => "bwd_dot_do_o",
            Kind::BwdDqDkDv => "bwd_dq_dk_dv",
            Kind::BwdConvertDq => "bwd_convert_dq",
        }
    }

    /// The kind named `name`, if any.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The direction that generates this kind.
    pub fn direction(self) -> Direction {
        match self {
            Kind::Fwd => Direction::Fwd,
            Kind::FwdSplitkv | Kind::FwdSplitkvCombine => Direction::FwdSplitkv,
            Kind::FwdAppendkv => Direction::FwdAppendkv,
            Kind::BwdDotDoO | Kind::BwdDqDkDv | Kind::BwdConvertDq => Direction::Bwd,
        }
    }

    /// The file name prefix, up to and including the `d` of `d<hdim>`.
    ///
    /// `fmha_bwd_d` alone is ambiguous (`fmha_bwd_dot_do_o_d...`), which is
    /// why [`classify`] tries the longer prefixes first.
    pub fn file_prefix(self) -> &'static str {
        match self {
            Kind::Fwd => "fmha_fwd_d",
            Kind::FwdSplitkv => "fmha_fwd_splitkv_d",
            Kind::FwdSplitkvCombine => "fmha_fwd_splitkv_combine_d",
            Kind::FwdAppendkv => "fmha_fwd_appendkv_d",
            Kind::BwdDotDoO => "fmha_bwd_dot_do_o_d",
            Kind::BwdDqDkDv => "fmha_bwd_d",
            Kind::BwdConvertDq => "fmha_bwd_convert_dq_d",
        }
    }

    /// The entry template every blob of this kind specialises once, and the
    /// one the manifest resolves: for each kind the launcher returning
    /// `float` (the kernel time) where the blob defines one, else the
    /// `_oneshot_` launcher.
    ///
    /// The split-KV blobs define only `fmha_fwd_splitkv_oneshot_<T>` /
    /// `fmha_fwd_splitkv_combine_oneshot_<T>` (returning `void`) and a
    /// `*_get_name_<T>`; the dispatcher times the pair together. The
    /// backward blobs define a `float` launcher, a `void` `_oneshot_` one and
    /// `*_get_name_<T>`; the `float` one is chosen.
    pub fn entry_function(self) -> &'static str {
        match self {
            Kind::Fwd => "fmha_fwd_",
            Kind::FwdSplitkv => "fmha_fwd_splitkv_oneshot_",
            Kind::FwdSplitkvCombine => "fmha_fwd_splitkv_combine_oneshot_",
            Kind::FwdAppendkv => "fmha_fwd_appendkv_",
            Kind::BwdDotDoO => "fmha_bwd_dot_do_o_",
            Kind::BwdDqDkDv => "fmha_bwd_dq_dk_dv_",
            Kind::BwdConvertDq => "fmha_bwd_convert_dq_",
        }
    }

    /// Whether [`entry_function`](Kind::entry_function) returns `float`
    /// (else `void`).
    pub fn entry_returns_float(self) -> bool {
        !matches!(self, Kind::FwdSplitkv | Kind::FwdSplitkvCombine)
    }

    /// The argument struct the entry takes after
    /// `const ck_tile::stream_config&`.
    pub fn args_type(self) -> &'static str {
        match self {
            Kind::Fwd => "fmha_fwd_args",
            Kind::FwdSplitkv | Kind::FwdSplitkvCombine => "fmha_fwd_splitkv_args",
            Kind::FwdAppendkv => "fmha_fwd_appendkv_args",
            Kind::BwdDotDoO | Kind::BwdDqDkDv | Kind::BwdConvertDq => "fmha_bwd_args",
        }
    }

    /// The traits template of the kind (the type `trait_0` names).
    pub fn traits_template(self) -> &'static str {
        match self {
            Kind::Fwd => "fmha_fwd_traits_",
            Kind::FwdSplitkv => "fmha_fwd_splitkv_traits_",
            Kind::FwdSplitkvCombine => "fmha_fwd_splitkv_combine_traits_",
            Kind::FwdAppendkv => "fmha_fwd_appendkv_traits_",
            Kind::BwdDotDoO => "fmha_bwd_dot_do_o_traits_",
            Kind::BwdDqDkDv => "fmha_bwd_dq_dk_dv_traits_",
            Kind::BwdConvertDq => "fmha_bwd_convert_dq_traits_",
        }
    }

    /// The start of the entry's Itanium-mangled name:
    /// `_Z<length><name>I`, the `I` opening the template arguments. For
    /// `fmha_fwd_` this is `_Z9fmha_fwd_I`; every specialisation of the
    /// entry template (and nothing else) starts with it.
    pub fn symbol_prefix(self) -> String {
        mangled_template_prefix(self.entry_function())
    }

    /// The kind of the file stem `stem`, from its prefix.
    pub fn of_stem(stem: &str) -> Option<Kind> {
        // Longest prefixes first: `fmha_fwd_splitkv_combine_d` before
        // `fmha_fwd_splitkv_d`, the bwd helpers before `fmha_bwd_d`.
        const ORDER: [Kind; 7] = [
            Kind::FwdSplitkvCombine,
            Kind::FwdSplitkv,
            Kind::FwdAppendkv,
            Kind::Fwd,
            Kind::BwdDotDoO,
            Kind::BwdConvertDq,
            Kind::BwdDqDkDv,
        ];
        ORDER.into_iter().find(|k| {
            stem.strip_prefix(k.file_prefix())
                .is_some_and(|rest| rest.bytes().next().is_some_and(|b| b.is_ascii_digit()))
        })
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `_Z<len><name>I`: how the mangled name of any specialisation of the
/// global function template `name` starts.
pub fn mangled_template_prefix(name: &str) -> String {
    format!("_Z{}{name}I", name.len())
}

/// What a generated file is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileClass {
    /// A kernel blob of this kind: compiled lazily.
    Blob(Kind),
    /// An API dispatcher (`*_api.cpp`): compiled into the consumer, after
    /// [`rewrite_dispatcher`](super::rewrite_dispatcher) for C++ consumers.
    Api(Direction),
    /// Any other C/C++/HIP source: host code compiled into the consumer.
    Host,
    /// Not a source file (a list, a stamp, a header).
    Other,
}

/// Source file extensions: what a generator or a build compiles.
pub(crate) const SOURCE_EXTENSIONS: &[&str] = &["cpp", "cc", "cxx", "c", "cu", "hip"];

/// Classifies a generated file by its name (the last path component).
///
/// # Example
///
/// ```
/// use ck_jit_build::ck::{classify, Direction, FileClass, Kind};
///
/// assert_eq!(classify("fmha_bwd_dot_do_o_d64_fp16_batch_o2.cpp"), FileClass::Blob(Kind::BwdDotDoO));
/// assert_eq!(classify("fmha_fwd_splitkv_api.cpp"), FileClass::Api(Direction::FwdSplitkv));
/// assert_eq!(classify("fmha_fwd.cpp"), FileClass::Host);
/// assert_eq!(classify("fwd_blob_list.txt"), FileClass::Other);
/// ```
pub fn classify(file_name: &str) -> FileClass {
    let file_name = file_name.rsplit('/').next().unwrap_or(file_name);
    let Some((stem, ext)) = file_name.rsplit_once('.') else {
        return FileClass::Other;
    };
    if !SOURCE_EXTENSIONS.contains(&ext) {
        return FileClass::Other;
    }
    if let Some(d) = Direction::ALL
        .into_iter()
        .find(|d| d.api_file().strip_suffix(".cpp") == Some(stem))
    {
        return FileClass::Api(d);
    }
    if stem.ends_with("_api") {
        // A dispatcher of a direction this crate does not know (newer CK).
        return FileClass::Host;
    }
    match Kind::of_stem(stem) {
        Some(kind) => FileClass::Blob(kind),
        None => FileClass::Host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_pick_the_longest_match() {
        let cases = [
            ("fmha_fwd_d128_bf16_batch", Kind::Fwd),
            ("fmha_fwd_splitkv_d64_fp16_batch", Kind::FwdSplitkv),
            (
                "fmha_fwd_splitkv_combine_d64_fp16_batch",
                Kind::FwdSplitkvCombine,
            ),
            ("fmha_fwd_appendkv_d32_bf16_b64", Kind::FwdAppendkv),
            ("fmha_bwd_dot_do_o_d32_bf16_batch_o2", Kind::BwdDotDoO),
            ("fmha_bwd_convert_dq_d32_bf16_b64x128", Kind::BwdConvertDq),
            ("fmha_bwd_d32_bf16_batch_b32x128", Kind::BwdDqDkDv),
        ];
        for (stem, kind) in cases {
            assert_eq!(Kind::of_stem(stem), Some(kind), "{stem}");
        }
        assert_eq!(Kind::of_stem("fmha_fwd_dropout"), None);
        assert_eq!(Kind::of_stem("fmha_bwd_d"), None);
    }

    #[test]
    fn symbol_prefixes_carry_the_name_length() {
        assert_eq!(Kind::Fwd.symbol_prefix(), "_Z9fmha_fwd_I");
        assert_eq!(Kind::BwdDqDkDv.symbol_prefix(), "_Z18fmha_bwd_dq_dk_dv_I");
        assert_eq!(
            Kind::FwdSplitkvCombine.symbol_prefix(),
            "_Z33fmha_fwd_splitkv_combine_oneshot_I"
        );
        for k in Kind::ALL {
            let p = k.symbol_prefix();
            let len: usize = p[2..p.len() - k.entry_function().len() - 1]
                .parse()
                .unwrap();
            assert_eq!(len, k.entry_function().len());
            assert_eq!(Kind::from_name(k.as_str()), Some(k));
            assert!(k.direction().kinds().contains(&k));
        }
    }

    #[test]
    fn files_are_classified_by_name() {
        assert_eq!(
            classify("fwd/fmha_fwd_api.cpp"),
            FileClass::Api(Direction::Fwd)
        );
        assert_eq!(classify("fmha_bwd_api.cpp"), FileClass::Api(Direction::Bwd));
        assert_eq!(
            classify("fmha_fwd_d64_fp16_batch.cpp"),
            FileClass::Blob(Kind::Fwd)
        );
        assert_eq!(classify("fmha_batch_prefill_api.cpp"), FileClass::Host);
        assert_eq!(classify("helper.cu"), FileClass::Host);
        assert_eq!(classify("fmha_fwd_d64.hpp"), FileClass::Other);
        assert_eq!(classify("Makefile"), FileClass::Other);
    }
}
