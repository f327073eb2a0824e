//! A CK version's vocabulary, and each blob described in it: which entry a
//! blob specialises (its kind), which architecture it is for, and its
//! traits keyed by the traits template's own parameter names.
//!
//! The vocabulary is read from the version itself: the template
//! declarations of the FMHA example's headers (`fmha_fwd.hpp`,
//! `fmha_bwd.hpp`, ...) and the generator's symbol tables
//! (`codegen/cpp_symbol_map.py`). Values the generator has a short name for
//! (`ck_tile::BlockAttentionBiasEnum::NO_BIAS` is `no` in `BIAS_MAP`) are
//! recorded under that name; others as C++ spells them, `true`/`false` and
//! numbers included.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::Path;

use super::decl::{self, Specialisation, TemplateDecl, TemplateParam};
use super::error::{io_err, Error};

/// Short metadata names for traits users query, each the first of its
/// candidate parameters that a traits template declares. Any other
/// parameter is still recorded under its own name.
const ALIASES: &[(&str, &[&str])] = &[
    ("hdim", &["HDim"]),
    ("dtype", &["DataType"]),
    ("mode", &["kIsGroupMode"]),
    ("mask", &["FmhaMask"]),
    ("bias", &["BiasEnum"]),
    ("lse", &["kStoreLse"]),
    ("dropout", &["kHasDropout", "FmhaDropout"]),
    ("logits", &["kHasLogitsSoftCap"]),
    ("sink", &["kHasSink"]),
    // One short name per parameter: a neutral value held on one name must
    // not contradict a query that names the other.
    ("qscale", &["QScaleEnum"]),
    ("squant", &["kDoFp8StaticQuant"]),
    ("skip", &["kSkipMinSeqlenQ"]),
    ("trload", &["kUseTrLoad"]),
    ("pipeline", &["FmhaPipelineEnum"]),
    ("vlayout", &["kIsVLayoutRowMajor"]),
    ("rope", &["RotaryEnum"]),
    ("pagedkv", &["kIsPagedKV"]),
    ("deterministic", &["kIsDeterministic"]),
    ("spad", &["kPadS"]),
    ("skpad", &["kPadSK", "kPadSk"]),
    ("dpad", &["kPadD"]),
    ("dvpad", &["kPadDv"]),
    ("dbias", &["kHasBiasGrad"]),
];

/// The key of the V head dimension a kernel is built for (see
/// `Vocabulary::traits`).
pub(crate) const HDIM_V: &str = "hdim_v";

/// Parameters whose `true`/`false` the generator names in a table:
/// (parameter, table).
const BOOL_TABLES: &[(&str, &str)] = &[
    ("kIsGroupMode", "MODE_MAP"),
    ("kIsVLayoutRowMajor", "LAYOUT_MAP"),
];

/// What one CK version declares.
#[derive(Debug, Clone, Default)]
pub struct Vocabulary {
    templates: HashMap<String, TemplateDecl>,
    /// C++ spelling -> the generator's short name.
    names: HashMap<String, String>,
    tables: BTreeMap<String, Vec<(String, String)>>,
}

/// A blob as its declarations describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobDecl {
    /// The entry template: the specialisation named like the kind
    /// (`fmha_fwd_`), else the first the blob defines
    /// (`fmha_fwd_splitkv_oneshot_`).
    pub entry: String,
    /// Every specialised template, the entry first.
    pub templates: Vec<String>,
    /// The kind: what every specialised name starts with, without `fmha_`
    /// and the trailing `_` (`fwd`, `fwd_splitkv`, `bwd_dq_dk_dv`,
    /// `batch_prefill`).
    pub kind: String,
    /// The architecture family the code is for (`gfx9` from
    /// `ck_tile::gfx9_t`), when the entry takes one.
    pub arch: Option<String>,
    /// The traits template the entry is specialised for
    /// (`fmha_fwd_traits_`).
    pub traits: Option<String>,
    /// Traits by parameter name, plus the short aliases and `kind`/`arch`.
    pub meta: BTreeMap<String, String>,
}

impl Vocabulary {
    /// An empty vocabulary (values recorded as C++ spells them).
    pub fn new() -> Vocabulary {
        Vocabulary::default()
    }

    /// Reads the template declarations of every header in `example_dir`
    /// (CK's `example/ck_tile/01_fmha`) and the generator's symbol tables
    /// (`codegen/cpp_symbol_map.py`, when present).
    pub fn read(example_dir: &Path) -> Result<Vocabulary, Error> {
        let mut v = Vocabulary::new();
        let entries = fs::read_dir(example_dir).map_err(io_err(example_dir))?;
        let mut headers: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "hpp"))
            .collect();
        headers.sort();
        for h in headers {
            let text = fs::read_to_string(&h).map_err(io_err(&h))?;
            v.add_header(&text).map_err(|e| e.in_file(&h))?;
        }
        let map = example_dir.join("codegen").join("cpp_symbol_map.py");
        if let Ok(text) = fs::read_to_string(&map) {
            v.add_symbol_tables(&text);
        }
        Ok(v)
    }

    /// Adds the template declarations of one header.
    pub fn add_header(&mut self, text: &str) -> Result<(), Error> {
        for d in decl::template_declarations(text)? {
            self.templates.entry(d.name.clone()).or_insert(d);
        }
        Ok(())
    }

    /// Adds the generator's symbol tables (Python source).
    pub fn add_symbol_tables(&mut self, python: &str) {
        for (name, pairs) in decl::symbol_tables(python) {
            for (key, value) in &pairs {
                // Tables of C++ spellings only: `true`/`false` tables are
                // per parameter (BOOL_TABLES), expressions are checks.
                let spelled = value.replace(' ', "");
                if spelled.contains("::") || spelled.starts_with(|c: char| c.is_ascii_uppercase()) {
                    let short = key.strip_prefix("s_").unwrap_or(key);
                    self.names
                        .entry(spelled)
                        .or_insert_with(|| short.to_string());
                }
            }
            self.tables.insert(name, pairs);
        }
    }

    /// The declaration of template `name`, if a header declares it.
    pub fn template(&self, name: &str) -> Option<&TemplateDecl> {
        self.templates.get(name)
    }

    /// Describes a blob from what its source declares: its
    /// specialisations, and its tile shapes as `block_tile`, `warp_tile0`,
    /// ... (the `ck_tile::sequence` aliases, without `fmha_` and the index).
    pub fn describe_source(&self, src: &decl::BlobSource) -> Result<BlobDecl, String> {
        let mut d = self.describe(&src.specialisations)?;
        for (alias, dims) in &src.sequences {
            let key = alias.strip_prefix("fmha_").unwrap_or(alias);
            let key = key
                .trim_end_matches(|c: char| c.is_ascii_digit())
                .trim_end_matches('_');
            if !key.is_empty() {
                d.meta
                    .entry(key.to_string())
                    .or_insert_with(|| dims.clone());
            }
        }
        Ok(d)
    }

    /// Describes a blob from its specialisations.
    pub fn describe(&self, specs: &[Specialisation]) -> Result<BlobDecl, String> {
        // The kind is what every specialised name starts with
        // (`fmha_fwd_splitkv_` for `fmha_fwd_splitkv_oneshot_` and
        // `fmha_fwd_splitkv_get_name_`); the entry is the specialisation of
        // that very name, else the first one the file defines.
        let first = specs
            .first()
            .ok_or("it defines no explicit specialisation")?;
        let mut common = first.template.as_str();
        for s in specs {
            let n = common
                .bytes()
                .zip(s.template.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            common = &common[..n];
        }
        let common = match common.rfind('_') {
            Some(at) => &common[..=at],
            None => "",
        };
        if common.len() <= "fmha_".len() {
            let names: Vec<&str> = specs.iter().map(|s| s.template.as_str()).collect();
            return Err(format!("its specialisations {names:?} share no entry name"));
        }
        let first = specs.iter().find(|s| s.template == common).unwrap_or(first);
        let entry = first.template.as_str();
        let mut templates = vec![entry.to_string()];
        for s in specs {
            if !templates.contains(&s.template) {
                templates.push(s.template.clone());
            }
        }
        let kind = common
            .strip_prefix("fmha_")
            .unwrap_or(common)
            .trim_end_matches('_')
            .to_string();
        let mut meta = BTreeMap::new();
        meta.insert("kind".to_string(), kind.clone());
        let mut arch = None;
        let mut traits = None;
        let entry_params = self.template(entry).map(|d| d.params.as_slice());
        for (i, arg) in first.args.iter().enumerate() {
            let param = entry_params.and_then(|p| p.get(i));
            if let Some((name, args)) = decl::split_instantiation(arg) {
                if let Some(t) = self.template(&name).filter(|t| t.is_class) {
                    self.traits(t, &args, &mut meta)?;
                    traits.get_or_insert(name);
                    continue;
                }
            }
            let key = param.map_or_else(|| format!("arg{i}"), |p| p.key().to_string());
            if key == "Arch" || (param.is_none() && arg.starts_with("ck_tile::gfx")) {
                let a = arg.strip_prefix("ck_tile::").unwrap_or(arg);
                let a = a.strip_suffix("_t").unwrap_or(a).to_string();
                meta.insert("arch".to_string(), a.clone());
                arch = Some(a);
                continue;
            }
            meta.insert(key, self.readable(arg));
        }
        Ok(BlobDecl {
            entry: entry.to_string(),
            templates,
            kind,
            arch,
            traits,
            meta,
        })
    }

    /// Records a traits instantiation: each argument under its parameter's
    /// name (defaults filling the rest), then the aliases.
    fn traits(
        &self,
        t: &TemplateDecl,
        args: &[String],
        meta: &mut BTreeMap<String, String>,
    ) -> Result<(), String> {
        if args.len() > t.params.len() {
            return Err(format!(
                "{} takes {} template arguments, the blob passes {}",
                t.name,
                t.params.len(),
                args.len()
            ));
        }
        let mut values: Vec<(&TemplateParam, String)> = Vec::new();
        for (i, p) in t.params.iter().enumerate() {
            let raw = match (args.get(i), &p.default) {
                (Some(a), _) => a.clone(),
                (None, Some(d)) => d.clone(),
                (None, None) => {
                    return Err(format!(
                        "{} needs parameter {} and the blob passes only {} arguments",
                        t.name,
                        p.name,
                        args.len()
                    ))
                }
            };
            values.push((p, raw));
        }
        for (p, raw) in &values {
            meta.insert(p.key().to_string(), self.readable_for(p.key(), raw));
        }
        for (alias, candidates) in ALIASES {
            if let Some(v) = candidates.iter().find_map(|c| meta.get(*c)) {
                meta.insert((*alias).to_string(), v.clone());
            }
        }
        // CK's dispatchers check `t.hdim_v` as well as `t.hdim_q`, but no
        // traits template declares it: an attention tile's kN1 spans the
        // whole V head (CK 2025's forward pairs (192, 128) have bn1 =
        // hdim_v, its paged-KV and batch-prefill dispatchers bound hdim_v
        // by bn1 itself); other kernels (bwd, appendkv, the splitkv
        // combine, whose kN1 is a step) take hdim_v = hdim.
        let tile_v = meta.contains_key("kK0BlockLength").then(|| meta.get("kN1"));
        if let Some(v) = tile_v.flatten().or_else(|| meta.get("hdim")) {
            meta.insert(HDIM_V.to_string(), v.clone());
        }
        Ok(())
    }

    fn readable_for(&self, param: &str, raw: &str) -> String {
        if let Some((_, table)) = BOOL_TABLES.iter().find(|(p, _)| *p == param) {
            if let Some((k, _)) = self
                .tables
                .get(*table)
                .and_then(|t| t.iter().find(|(_, v)| v == raw))
            {
                return k.clone();
            }
        }
        self.readable(raw)
    }

    /// The generator's short name for a C++ value, else the value.
    fn readable(&self, raw: &str) -> String {
        match self.names.get(raw) {
            Some(short) => short.clone(),
            None => raw.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        "template <ck_tile::index_t HDim_, typename DataType_, bool kIsGroupMode_,\n\
        typename FmhaMask_, ck_tile::BlockAttentionBiasEnum BiasEnum_, bool kStoreLse_,\n\
        bool kHasLogitsSoftCap_, bool kSkipMinSeqlenQ_ = false>\n\
        struct fmha_fwd_traits_ {};\n\
        template <typename Traits_, typename Arch = void>\n\
        float fmha_fwd_(const ck_tile::stream_config&, fmha_fwd_args);\n";
    const TABLES: &str = "FWD_DTYPE_MAP = {\"fp16\": \"FmhaFwdFp16\", \"bf16\": \"FmhaFwdBf16\"}\n\
        _MASK_SIMPLIFIED_MAP = {\n \"s_no\": \"ck_tile::SimplifiedGenericAttentionMask<false>\",\n \
        \"s_mask\": \"ck_tile::SimplifiedGenericAttentionMask<true>\",\n}\n\
        BIAS_MAP = {\"no\": \"ck_tile::BlockAttentionBiasEnum::NO_BIAS\"}\n\
        MODE_MAP = {\"batch\": \"false\", \"group\": \"true\"}\n";
    const BLOB: &str = "using fmha_mask_0 = ck_tile::SimplifiedGenericAttentionMask<true>;\n\
        using trait_0 = fmha_fwd_traits_<128, FmhaFwdBf16, false, fmha_mask_0,\n\
            ck_tile::BlockAttentionBiasEnum::NO_BIAS, true, false>;\n\
        template<> float fmha_fwd_<trait_0, ck_tile::gfx9_t>(const ck_tile::stream_config& s, fmha_fwd_args a) { return 0; }\n\
        template<> std::string fmha_fwd_get_name_<trait_0, ck_tile::gfx9_t>() { return {}; }\n";

    fn vocab() -> Vocabulary {
        let mut v = Vocabulary::new();
        v.add_header(HEADER).unwrap();
        v.add_symbol_tables(TABLES);
        v
    }

    #[test]
    fn a_blob_is_described_by_its_declarations() {
        let d = vocab()
            .describe(&decl::specialisations(BLOB).unwrap())
            .unwrap();
        assert_eq!(d.entry, "fmha_fwd_");
        assert_eq!(d.templates, ["fmha_fwd_", "fmha_fwd_get_name_"]);
        assert_eq!(d.kind, "fwd");
        assert_eq!(d.arch.as_deref(), Some("gfx9"));
        let m = &d.meta;
        assert_eq!(m["HDim"], "128");
        assert_eq!(m["hdim"], "128");
        assert_eq!(m["dtype"], "bf16");
        assert_eq!(m["mode"], "batch");
        assert_eq!(m["mask"], "mask");
        assert_eq!(m["bias"], "no");
        assert_eq!(m["lse"], "true");
        assert_eq!(m["logits"], "false");
        // A parameter the blob leaves to its default.
        assert_eq!(m["kSkipMinSeqlenQ"], "false");
        assert_eq!(m["skip"], "false");
        assert_eq!(m["arch"], "gfx9");
    }

    #[test]
    fn without_tables_values_are_cpp_and_unknown_parameters_keep_their_names() {
        let mut v = Vocabulary::new();
        v.add_header(HEADER).unwrap();
        let d = v.describe(&decl::specialisations(BLOB).unwrap()).unwrap();
        assert_eq!(d.meta["dtype"], "FmhaFwdBf16");
        assert_eq!(d.meta["mode"], "false");
        assert_eq!(
            d.meta["BiasEnum"],
            "ck_tile::BlockAttentionBiasEnum::NO_BIAS"
        );
    }

    #[test]
    fn too_many_arguments_or_no_entry_are_errors() {
        let v = vocab();
        let blob = "template<> float fmha_fwd_<fmha_fwd_traits_<1,2,3,4,5,6,7,8,9>>(int) {}";
        let e = v
            .describe(&decl::specialisations(blob).unwrap())
            .unwrap_err();
        assert!(e.contains("takes 8 template arguments"), "{e}");
        let blob = "template<> float fmha_f_<int>(int) {}\ntemplate<> float gmha_g_<int>(int) {}";
        assert!(v.describe(&decl::specialisations(blob).unwrap()).is_err());
        assert!(v.describe(&[]).is_err());
    }
}
