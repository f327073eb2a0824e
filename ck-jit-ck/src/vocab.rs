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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::Path;

use super::decl::{self, Specialisation, TemplateDecl, TemplateParam};
use super::error::{io_err, Error};
use super::guard::Skeleton;

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
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// Its conditional directives around its specialisations
    /// (`decl::BlobSource::skeleton`): which
    /// targets' compiles keep its kernels, whatever [`arch`](Self::arch)
    /// is named. `None` when it has no directive (every compile keeps
    /// them) or was described from specialisations alone.
    pub skeleton: Option<Skeleton>,
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

    /// The function templates the headers declare (the entries blobs
    /// specialise among them), sorted.
    pub fn function_templates(&self) -> Vec<&str> {
        let mut t: Vec<&str> = self
            .templates
            .values()
            .filter(|d| !d.is_class)
            .map(|d| d.name.as_str())
            .collect();
        t.sort_unstable();
        t
    }

    /// The function templates the headers define whose bodies call one of
    /// `blob_templates`, directly or through another such template: what
    /// a dispatcher may call instead of a blob (newer CK's
    /// `fmha_bwd_<dot_do_o, dq_dk_dv, convert_dq, Arch>` in
    /// `fmha_bwd.hpp`). Sorted.
    pub fn launchers(&self, blob_templates: &BTreeSet<String>) -> Vec<String> {
        let mut called: BTreeSet<String> = blob_templates.clone();
        let mut out = Vec::new();
        loop {
            let before = out.len();
            for d in self.templates.values() {
                let Some(body) = &d.definition else { continue };
                if called.contains(&d.name) {
                    continue;
                }
                if called.iter().any(|t| calls_template(body, t)) {
                    called.insert(d.name.clone());
                    out.push(d.name.clone());
                }
            }
            if out.len() == before {
                break;
            }
        }
        out.sort();
        out
    }

    /// The function templates the headers define whose bodies call
    /// another function template they declare, sorted: before the blobs
    /// are known, what a dispatcher may call instead of a blob. They hold
    /// the [`launchers`](Self::launchers) of any declared templates not
    /// among them (a launcher calls a blob's template or another
    /// launcher, both declared).
    pub fn declared_launchers(&self) -> Vec<String> {
        let declared = self.function_templates();
        let mut out: Vec<String> = self
            .templates
            .values()
            .filter(|d| !d.is_class)
            .filter(|d| {
                d.definition.as_ref().is_some_and(|body| {
                    declared
                        .iter()
                        .any(|t| *t != d.name && calls_template(body, t))
                })
            })
            .map(|d| d.name.clone())
            .collect();
        out.sort();
        out
    }

    /// The definitions of [`launchers`](Self::launchers), as the headers
    /// write them: what a reading of a dispatcher appends to follow its
    /// calls into the headers it includes.
    pub fn launcher_definitions(&self, blob_templates: &BTreeSet<String>) -> String {
        self.definitions(&self.launchers(blob_templates))
    }

    /// The definitions of the templates `names`, as the headers write
    /// them, each on lines of its own.
    pub fn definitions(&self, names: &[String]) -> String {
        let mut text = String::new();
        for name in names {
            if let Some(d) = self
                .templates
                .get(name)
                .and_then(|d| d.definition.as_ref())
            {
                text.push('\n');
                text.push_str(d);
                text.push('\n');
            }
        }
        text
    }

    /// The declaration of template `name`, if a header declares it.
    pub fn template(&self, name: &str) -> Option<&TemplateDecl> {
        self.templates.get(name)
    }

    /// Describes a blob from what its source declares: its
    /// specialisations, its guard, and its tile shapes as `block_tile`, `warp_tile0`,
    /// ... (the `ck_tile::sequence` aliases, without `fmha_` and the index).
    pub fn describe_source(&self, src: &decl::BlobSource) -> Result<BlobDecl, String> {
        let mut d = self.describe(&src.specialisations)?;
        d.skeleton = (!src.skeleton.is_trivial()).then(|| src.skeleton.clone());
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
            skeleton: None,
        })
    }

    /// Records a traits instantiation: each argument under its parameter's
    /// name (defaults filling the rest), then the aliases. An argument list
    /// that cannot be the declared one is an error naming both counts.
    fn traits(
        &self,
        t: &TemplateDecl,
        args: &[String],
        meta: &mut BTreeMap<String, String>,
    ) -> Result<(), String> {
        // Arguments are read by position. If the header and the generator
        // disagree on the parameter list, every later value would be
        // recorded one place off; a default can even make C++ accept the
        // shorter list. Too many arguments, a missing one without default,
        // or an argument of the wrong sort (a value for a type parameter,
        // a type for a value parameter) all show such a shift.
        let counts = || {
            format!(
                "{} declares {} template parameters, the blob passes {} arguments",
                t.name,
                t.params.len(),
                args.len()
            )
        };
        if args.len() > t.params.len() {
            return Err(format!(
                "{}: its header and its generator disagree",
                counts()
            ));
        }
        for (i, (p, a)) in t.params.iter().zip(args).enumerate() {
            let sort = match (p.is_type, argument_sort(a)) {
                (true, Some(Sort::Value)) => "a type, given the value",
                (false, Some(Sort::Type)) => "a value, given the type",
                _ => continue,
            };
            return Err(format!(
                "{}: parameter {} ({}) is {sort} `{a}`, so the values are shifted: \
                 its header and its generator disagree",
                counts(),
                i + 1,
                p.name
            ));
        }
        if let Some(p) = t.params[args.len()..].iter().find(|p| p.default.is_none()) {
            return Err(format!(
                "{}, and parameter {} has no default: its header and its generator disagree",
                counts(),
                p.name
            ));
        }
        let mut values: Vec<(&TemplateParam, String)> = Vec::new();
        for (i, p) in t.params.iter().enumerate() {
            // Checked above: a missing argument has a default.
            let raw = match (args.get(i), &p.default) {
                (Some(a), _) => a.clone(),
                (None, Some(d)) => d.clone(),
                (None, None) => continue,
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

/// Whether `text` names `template<` as a whole identifier (`fmha_fwd_<`,
/// not `my_fmha_fwd_<`).
pub(crate) fn calls_template(text: &str, template: &str) -> bool {
    let pat = format!("{template}<");
    let mut from = 0;
    while let Some(at) = text[from..].find(&pat) {
        let at = from + at;
        let before = text[..at].bytes().next_back();
        if !before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return true;
        }
        from = at + pat.len();
    }
    false
}

/// What a template argument is, where its text says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sort {
    Type,
    Value,
}

/// `Value` for literals (`128`, `-1`, `true`), `Type` for instantiations
/// (`ck_tile::SimplifiedGenericAttentionMask<true>`) and built-in types;
/// `None` for a name that could be either (an enumerator or a type alias).
fn argument_sort(arg: &str) -> Option<Sort> {
    let a = arg.trim();
    let number = a.strip_prefix('-').unwrap_or(a);
    if a == "true" || a == "false" || number.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
        return Some(Sort::Value);
    }
    const BUILTIN: &[&str] = &[
        "void", "bool", "char", "int", "float", "double", "unsigned", "long", "short",
    ];
    if a.ends_with('>') || BUILTIN.contains(&a) {
        return Some(Sort::Type);
    }
    None
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
            ck_tile::BlockAttentionBiasEnum::NO_BIAS, true, false, false>;\n\
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
        assert_eq!(m["kSkipMinSeqlenQ"], "false");
        assert_eq!(m["skip"], "false");
        assert_eq!(m["arch"], "gfx9");
    }

    #[test]
    fn header_templates_that_call_blob_templates_are_launchers_through_each_other() {
        let mut v = Vocabulary::new();
        v.add_header(
            "template <typename A, typename Arch>\n\
             float inner_(const S& s, X a) { return fmha_k_oneshot_<A, Arch>(s, a); }\n\
             template <typename A, typename Arch>\n\
             float outer_(const S& s, X a) { return inner_<A, Arch>(s, a); }\n\
             template <typename A>\n\
             float unrelated_(X a) { return my_fmha_k_oneshot_<A>(a); }\n\
             template <typename A, typename Arch>\n\
             float declared_only_(X a);\n",
        )
        .unwrap();
        let blob: BTreeSet<String> = ["fmha_k_oneshot_".to_string()].into();
        assert_eq!(v.launchers(&blob), ["inner_", "outer_"]);
        let defs = v.launcher_definitions(&blob);
        assert!(
            defs.contains("template <typename A, typename Arch>\nfloat inner_("),
            "{defs}"
        );
        assert!(
            !defs.contains("unrelated_") && !defs.contains("declared_only_"),
            "{defs}"
        );
        assert!(calls_template("x = fmha_k_<A>(s);", "fmha_k_"));
        assert!(!calls_template("x = my_fmha_k_<A>(s);", "fmha_k_"));
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
    fn a_traits_argument_count_other_than_declared_or_no_entry_are_errors() {
        let v = vocab();
        let blob = "template<> float fmha_fwd_<fmha_fwd_traits_<1,2,3,4,5,6,7,8,9>>(int) {}";
        let e = v
            .describe(&decl::specialisations(blob).unwrap())
            .unwrap_err();
        assert!(
            e.contains("fmha_fwd_traits_ declares 8 template parameters, the blob passes 9"),
            "{e}"
        );
        // One fewer where the rest has a default is what CK's own
        // generators write (2025-11's batch_prefill)...
        let blob = BLOB.replace("true, false, false>", "true, false>");
        let d = v.describe(&decl::specialisations(&blob).unwrap()).unwrap();
        assert_eq!(d.meta["kSkipMinSeqlenQ"], "false");
        // ...but one missing in the middle shifts a value into a parameter
        // of another sort.
        let blob = BLOB.replace("<128, FmhaFwdBf16, false,", "<128, false,");
        let e = v
            .describe(&decl::specialisations(&blob).unwrap())
            .unwrap_err();
        assert!(
            e.contains("fmha_fwd_traits_ declares 8 template parameters, the blob passes 7")
                && e.contains("parameter 2 (DataType_) is a type, given the value `false`"),
            "{e}"
        );
        let blob = "template<> float fmha_f_<int>(int) {}\ntemplate<> float gmha_g_<int>(int) {}";
        assert!(v.describe(&decl::specialisations(blob).unwrap()).is_err());
        assert!(v.describe(&[]).is_err());
    }
}
