//! [`BlobGroup`]: a set of blob files that compile the same way, and how
//! its settings become one [`manifest::Group`] (the argument template).
//!
//! Setters only record; every check happens when the build runs, so a
//! mistake is reported as an [`Error`](crate::Error) naming the group rather
//! than a panic in the middle of a setter chain.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use glob::{MatchOptions, Pattern};
use regex_lite::Regex;

use crate::error::Error;
use crate::manifest::{self, escape, SymbolSpec};

/// Blob files that share compile settings: one family of kernels.
///
/// Each file becomes one blob named after its file stem (`kernels/vadd_f32.cpp`
/// is blob `vadd_f32`). All paths are relative to the build's root.
///
/// By default a blob compiles as
/// `c++ FLAGS... -IINCLUDES... -DDEFINES... -fPIC -shared {src} -o {out}`,
/// its entry point is the exported symbol named like the blob, and the
/// compiler is asked for a depfile (`-MD -MF`) to track headers.
/// `-fvisibility=hidden` (and `=internal`) are always dropped from the flags:
/// they would hide the entry point.
///
/// # Example
///
/// ```
/// use ck_jit_build::{BlobGroup, Build};
/// # let root = std::env::temp_dir().join(format!("ck-jit-build-doc-group-{}", std::process::id()));
/// # std::fs::create_dir_all(root.join("kernels"))?;
/// # std::fs::write(root.join("kernels/vec_add_f32.cpp"), "")?;
/// # std::fs::write(root.join("kernels/vec_mul_f64.cpp"), "")?;
/// # // What cargo provides a build script.
/// # std::env::set_current_dir(&root)?;
/// # std::env::set_var("CARGO_MANIFEST_DIR", &root);
/// # std::env::set_var("OUT_DIR", root.join("out"));
///
/// Build::new()
///     .group(
///         BlobGroup::new("vec")
///             .glob("kernels/vec_*.cpp")
///             .flags(["-O2", "-std=c++17"])
///             .include("include")
///             .meta_pattern(r"(?P<op>[a-z]+)_(?P<dtype>f32|f64)"),
///     )
///     .write();
/// # let m = ck_jit_build::Manifest::from_json(&std::fs::read_to_string(root.join("out/ck_jit_manifest.json"))?)?;
/// # assert_eq!((m.blobs[0].name.as_str(), m.blobs[1].meta["dtype"].as_str()), ("vec_add_f32", "f64"));
/// # std::fs::remove_dir_all(&root)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobGroup {
    pub(crate) name: String,
    pub(crate) globs: Vec<String>,
    pub(crate) files: Vec<PathBuf>,
    pub(crate) excludes: Vec<String>,
    pub(crate) allow_empty: bool,
    compiler: String,
    flags: Vec<String>,
    includes: Vec<PathBuf>,
    defines: Vec<(String, Option<String>)>,
    shared: Option<bool>,
    args_template: Option<Vec<String>>,
    cwd: Option<PathBuf>,
    symbol: SymbolSpec,
    depfile: bool,
    pub(crate) meta_pattern: Option<String>,
    pub(crate) require_meta_match: bool,
    pub(crate) meta: BTreeMap<String, String>,
    pub(crate) meta_with: Option<MetaFn>,
    family: Option<String>,
    neutral: BTreeMap<String, String>,
}

/// A blob file as [`BlobGroup::meta_with`] sees it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct BlobFile<'a> {
    /// The blob's name (its file stem).
    pub name: &'a str,
    /// Its path relative to the root, with `/` separators.
    pub path: &'a str,
}

/// What [`BlobGroup::meta_with`] was given.
type MetaFunction =
    dyn Fn(&BlobFile<'_>) -> Result<Vec<(String, String)>, String> + Send + Sync + 'static;

/// A metadata function, compared by identity (two groups are equal when
/// they hold the same one).
#[derive(Clone)]
pub(crate) struct MetaFn(pub(crate) Arc<MetaFunction>);

impl fmt::Debug for MetaFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MetaFn(..)")
    }
}

impl PartialEq for MetaFn {
    fn eq(&self, other: &MetaFn) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for MetaFn {}

impl BlobGroup {
    /// A group named `name` (e.g. `fwd`, `vec`), with no files yet.
    ///
    /// The name must be a safe file name component (ASCII letters, digits,
    /// `_`, `-`, `.`); it is checked when the build runs.
    ///
    /// # Example
    ///
    /// ```
    /// let mut group = ck_jit_build::BlobGroup::new("fwd");
    /// group.glob("fwd/*.cpp");
    /// ```
    pub fn new(name: &str) -> BlobGroup {
        BlobGroup {
            name: name.to_string(),
            globs: Vec::new(),
            files: Vec::new(),
            excludes: Vec::new(),
            allow_empty: false,
            compiler: "c++".to_string(),
            flags: Vec::new(),
            includes: Vec::new(),
            defines: Vec::new(),
            shared: None,
            args_template: None,
            cwd: None,
            symbol: SymbolSpec::Exact("{name}".to_string()),
            depfile: true,
            meta_pattern: None,
            require_meta_match: false,
            meta: BTreeMap::new(),
            meta_with: None,
            family: None,
            neutral: BTreeMap::new(),
        }
    }

    /// Adds the files matching `pattern`, relative to the root.
    ///
    /// `*`, `?` and `[...]` match within one path component, `**` matches
    /// any number of directories (`dir/**` is every file under `dir`).
    /// Wildcards skip hidden names (starting with `.`), and `**` does not
    /// follow directory symlinks or enter a cargo target directory. May be
    /// called several times; a file matched twice is one blob.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("fwd")
    ///     .glob("fwd/fmha_fwd_*.cpp")
    ///     .glob("extra/**/*.cpp");
    /// ```
    pub fn glob(&mut self, pattern: &str) -> &mut BlobGroup {
        self.globs.push(pattern.to_string());
        self
    }

    /// Adds one file, relative to the root (or absolute, inside the root).
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("misc").file("kernels/saxpy.cu");
    /// ```
    pub fn file<P: AsRef<Path>>(&mut self, path: P) -> &mut BlobGroup {
        self.files.push(path.as_ref().to_path_buf());
        self
    }

    /// Adds several files, as [`file`](BlobGroup::file) does.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("misc").files(["k/a.cpp", "k/b.cpp"]);
    /// ```
    pub fn files<P: AsRef<Path>>(&mut self, paths: impl IntoIterator<Item = P>) -> &mut BlobGroup {
        self.files
            .extend(paths.into_iter().map(|p| p.as_ref().to_path_buf()));
        self
    }

    /// Leaves out the files matching `pattern`, whether a glob or
    /// [`file`](BlobGroup::file) found them.
    ///
    /// A pattern with a `/` is matched against the whole root-relative path
    /// (`**/` allowed); one without is matched against the file name in any
    /// directory. Excluded files are not checked at all, so this is also how
    /// to skip a file whose name cannot be a blob name.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("fwd")
    ///     .glob("fwd/*.cpp")
    ///     .exclude("*_api.cpp");
    /// ```
    pub fn exclude(&mut self, pattern: &str) -> &mut BlobGroup {
        self.excludes.push(pattern.to_string());
        self
    }

    /// Allows the group to find no files. By default an empty group is an
    /// error, because it nearly always means a wrong glob.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("optional")
    ///     .glob("generated/*.cpp")
    ///     .allow_empty(true);
    /// ```
    pub fn allow_empty(&mut self, allow: bool) -> &mut BlobGroup {
        self.allow_empty = allow;
        self
    }

    /// The compiler: a program name looked up in `PATH` at run time, or a
    /// path. Default `c++`.
    ///
    /// Blobs are not host build artifacts, so `CXX` and friends are not
    /// consulted; at run time `CK_JIT_LAUNCHER` can put a wrapper in front.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("hip").compiler("hipcc");
    /// ```
    pub fn compiler(&mut self, program: &str) -> &mut BlobGroup {
        self.compiler = program.to_string();
        self
    }

    /// Adds a compiler flag, kept in order (after those added before).
    ///
    /// A flag may use the placeholders `{root}`, `{name}`, `{src}` and
    /// `{out}`. `-fvisibility=hidden` and `-fvisibility=internal` are
    /// dropped.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("vec").flag("-O3").flag("-std=c++17");
    /// ```
    pub fn flag(&mut self, flag: &str) -> &mut BlobGroup {
        self.flags.push(flag.to_string());
        self
    }

    /// Adds several compiler flags, as [`flag`](BlobGroup::flag) does.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("vec").flags(["-O3", "-std=c++17"]);
    /// ```
    pub fn flags<S: AsRef<str>>(&mut self, flags: impl IntoIterator<Item = S>) -> &mut BlobGroup {
        self.flags
            .extend(flags.into_iter().map(|f| f.as_ref().to_string()));
        self
    }

    /// Adds an include directory. A relative one is relative to the root and
    /// becomes `-I{root}/dir`, so it follows the tree when `CK_JIT_ROOT`
    /// relocates it; an absolute one stays as it is.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("fwd")
    ///     .include("include")
    ///     .include("/opt/rocm/include");
    /// ```
    pub fn include<P: AsRef<Path>>(&mut self, dir: P) -> &mut BlobGroup {
        self.includes.push(dir.as_ref().to_path_buf());
        self
    }

    /// Defines a preprocessor macro: `-DNAME` for `None`, `-DNAME=VALUE`
    /// otherwise.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("vec")
    ///     .define("USE_FAST", Some("1"))
    ///     .define("NDEBUG", None);
    /// ```
    pub fn define<'a, V: Into<Option<&'a str>>>(&mut self, name: &str, value: V) -> &mut BlobGroup {
        self.defines
            .push((name.to_string(), value.into().map(str::to_string)));
        self
    }

    /// Whether to add `-fPIC -shared` (default true). Turn it off for a
    /// compiler that spells these differently and pass its own flags.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("cuda")
    ///     .compiler("nvcc")
    ///     .shared(false)
    ///     .flags(["-Xcompiler", "-fPIC", "-shared"]);
    /// ```
    pub fn shared(&mut self, shared: bool) -> &mut BlobGroup {
        self.shared = Some(shared);
        self
    }

    /// Replaces the whole argument template (everything after the compiler).
    ///
    /// It must contain `{out}`, and normally `{src}`; see the
    /// [`manifest`](crate::manifest) docs for the placeholders. It cannot be
    /// combined with [`flag`](BlobGroup::flag), [`include`](BlobGroup::include),
    /// [`define`](BlobGroup::define) or [`shared`](BlobGroup::shared), which
    /// build the default template. Hiding visibility flags are dropped here
    /// too.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("cuda").compiler("nvcc").args_template([
    ///     "-O3", "-Xcompiler", "-fPIC", "-shared", "{src}", "-o", "{out}",
    /// ]);
    /// ```
    pub fn args_template<S: AsRef<str>>(
        &mut self,
        args: impl IntoIterator<Item = S>,
    ) -> &mut BlobGroup {
        self.args_template = Some(args.into_iter().map(|a| a.as_ref().to_string()).collect());
        self
    }

    /// The compiler's working directory: relative to the root (`{root}/dir`)
    /// or absolute. Default: the root.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("fwd").cwd("build");
    /// ```
    pub fn cwd<P: AsRef<Path>>(&mut self, dir: P) -> &mut BlobGroup {
        self.cwd = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The entry point is the exported symbol with exactly this name;
    /// `{name}` stands for the blob name. This is the default, with
    /// `"{name}"`.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("vec").symbol_exact("{name}_entry");
    /// ```
    pub fn symbol_exact(&mut self, symbol: &str) -> &mut BlobGroup {
        self.symbol = SymbolSpec::Exact(symbol.to_string());
        self
    }

    /// The entry point is the first defined function symbol starting with
    /// this prefix, for entry points whose (mangled) name is not known in
    /// advance; `{name}` stands for the blob name.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("fwd").symbol_prefix("_Z8fmha_fwd_");
    /// ```
    pub fn symbol_prefix(&mut self, prefix: &str) -> &mut BlobGroup {
        self.symbol = SymbolSpec::Prefix(prefix.to_string());
        self
    }

    /// Whether the compiler understands `-MD -MF <file>`, so the runtime can
    /// track the headers a blob includes (default true).
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("odd").compiler("my-cc").depfile(false);
    /// ```
    pub fn depfile(&mut self, depfile: bool) -> &mut BlobGroup {
        self.depfile = depfile;
        self
    }

    /// A regex searched in each file stem (not anchored: use `^...$` to
    /// match it whole); each named capture that matched becomes metadata
    /// `name -> text`, to select a variant by attributes. A stem that does
    /// not match gets no metadata from it, silently, unless
    /// [`require_meta_match`](BlobGroup::require_meta_match) is set.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("fwd")
    ///     .glob("fwd/*.cpp")
    ///     .meta_pattern(r"^fmha_fwd_d(?P<hdim>\d+)_(?P<dtype>fp16|bf16)_");
    /// ```
    pub fn meta_pattern(&mut self, regex: &str) -> &mut BlobGroup {
        self.meta_pattern = Some(regex.to_string());
        self
    }

    /// Makes a file whose stem does not match the
    /// [`meta_pattern`](BlobGroup::meta_pattern) an error naming the file
    /// (default false).
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("fwd")
    ///     .meta_pattern(r"^fmha_fwd_d(?P<hdim>\d+)_")
    ///     .require_meta_match(true);
    /// ```
    pub fn require_meta_match(&mut self, require: bool) -> &mut BlobGroup {
        self.require_meta_match = require;
        self
    }

    /// Sets metadata `key -> value` on every blob of the group. A capture of
    /// the [`meta_pattern`](BlobGroup::meta_pattern) with the same key wins,
    /// being specific to the file.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("fwd").meta("direction", "fwd");
    /// ```
    pub fn meta(&mut self, key: &str, value: &str) -> &mut BlobGroup {
        self.meta.insert(key.to_string(), value.to_string());
        self
    }

    /// Computes metadata of each blob from its name and path, for what a
    /// [`meta_pattern`](BlobGroup::meta_pattern) cannot say (a count, a
    /// place in a chain, a lookup in a table). Its entries win over the
    /// pattern's captures and [`meta`](BlobGroup::meta). An `Err` stops the
    /// build with an error naming the file and the message.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("fused")
    ///     .glob("kernels/*.cpp")
    ///     // `gemm_bias_relu_f32`: three operations.
    ///     .meta_with(|blob| {
    ///         let ops = blob.name.split('_').count() - 1;
    ///         Ok(vec![("ops".to_string(), ops.to_string())])
    ///     });
    /// ```
    pub fn meta_with<F>(&mut self, f: F) -> &mut BlobGroup
    where
        F: Fn(&BlobFile<'_>) -> Result<Vec<(String, String)>, String> + Send + Sync + 'static,
    {
        self.meta_with = Some(MetaFn(Arc::new(f)));
        self
    }

    /// Puts the group's blobs in the kernel family `name` (default: the
    /// group's own name), so that several groups, each with its own
    /// compile command, make one family that `#[lazy_kernel(family =
    /// "...")]` selects among.
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("conv_f32").family("conv");
    /// ck_jit_build::BlobGroup::new("conv_f16").family("conv").flag("-mf16c");
    /// ```
    pub fn family(&mut self, name: &str) -> &mut BlobGroup {
        self.family = Some(name.to_string());
        self
    }

    /// The value a family query that does not mention `key` holds it to
    /// (the neutral variant of a trait the blobs vary in: `bias = "none"`
    /// unless a caller asks for a bias).
    ///
    /// # Example
    ///
    /// ```
    /// ck_jit_build::BlobGroup::new("attn").neutral("bias", "none");
    /// ```
    pub fn neutral(&mut self, key: &str, value: &str) -> &mut BlobGroup {
        self.neutral.insert(key.to_string(), value.to_string());
        self
    }

    /// Compiles the meta pattern, if any.
    pub(crate) fn compiled_meta_pattern(&self) -> Result<Option<Regex>, Error> {
        let Some(pattern) = &self.meta_pattern else {
            return Ok(None);
        };
        let bad = |why: String| Error::MetaPattern {
            group: self.name.clone(),
            pattern: escape(pattern),
            why,
        };
        let re = Regex::new(pattern).map_err(|e| bad(e.to_string()))?;
        if re.capture_names().flatten().next().is_none() {
            return Err(bad(
                "has no named capture such as (?P<dtype>...), so it sets no metadata".into(),
            ));
        }
        Ok(Some(re))
    }

    /// Compiles the exclude patterns.
    pub(crate) fn compiled_excludes(&self) -> Result<Vec<Exclude>, Error> {
        self.excludes
            .iter()
            .map(|p| {
                Pattern::new(p)
                    .map(|pattern| Exclude {
                        whole_path: p.contains('/'),
                        pattern,
                    })
                    .map_err(|e| Error::Glob {
                        group: self.name.clone(),
                        pattern: escape(p),
                        why: e.msg.to_string(),
                    })
            })
            .collect()
    }

    /// The manifest group this describes: compiler, argument template,
    /// cwd, symbol. What [`Build`](crate::Build) records; a crate that
    /// assembles its own manifest ([`crate::assemble::Assembler`]) adds it
    /// with [`Assembler::group`](crate::assemble::Assembler::group).
    ///
    /// ```
    /// let g = ck_jit_build::BlobGroup::new("k").compiler("cc").render().unwrap();
    /// assert_eq!(g.compiler, "cc");
    /// ```
    pub fn render(&self) -> Result<manifest::Group, Error> {
        let bad = |why: String| Error::GroupSpec {
            group: escape(&self.name),
            why,
        };
        if let Err(e) = manifest::check_name(&self.name) {
            return Err(bad(format!("bad group name: {e}")));
        }
        if self.compiler.is_empty() {
            return Err(bad("empty compiler".into()));
        }
        let keep = |f: &&String| !manifest::STRIPPED_FLAGS.contains(&f.as_str());
        let args: Vec<String> = match &self.args_template {
            Some(template) => {
                if !self.flags.is_empty()
                    || !self.includes.is_empty()
                    || !self.defines.is_empty()
                    || self.shared.is_some()
                {
                    return Err(bad(
                        "args_template replaces flags, include, define and shared; \
                         put those arguments in the template instead"
                            .into(),
                    ));
                }
                template.iter().filter(keep).cloned().collect()
            }
            None => {
                let mut args: Vec<String> = self.flags.iter().filter(keep).cloned().collect();
                for dir in &self.includes {
                    let dir = root_relative(dir).map_err(|why| bad(format!("include: {why}")))?;
                    args.push(format!("-I{dir}"));
                }
                for (name, value) in &self.defines {
                    check_define(name)
                        .map_err(|why| bad(format!("define '{}': {why}", escape(name))))?;
                    args.push(match value {
                        Some(v) => format!("-D{name}={v}"),
                        None => format!("-D{name}"),
                    });
                }
                if self.shared.unwrap_or(true) {
                    args.push("-fPIC".into());
                    args.push("-shared".into());
                }
                args.extend(["{src}".to_string(), "-o".into(), "{out}".into()]);
                args
            }
        };
        if !args.iter().any(|a| a.contains("{out}")) {
            return Err(bad("the argument template never mentions {out}".into()));
        }
        let cwd = match &self.cwd {
            Some(dir) => Some(root_relative(dir).map_err(|why| bad(format!("cwd: {why}")))?),
            None => None,
        };
        let symbol_text = match &self.symbol {
            SymbolSpec::Exact(s) | SymbolSpec::Prefix(s) => s,
        };
        if symbol_text.is_empty() || symbol_text.contains(['\0', '\n', '\r']) {
            return Err(bad(
                "empty symbol, or a symbol with NUL or a line break".into()
            ));
        }
        if let Some(family) = &self.family {
            if let Err(e) = manifest::check_name(family) {
                return Err(bad(format!("bad family name: {e}")));
            }
        }
        if let Some(key) = self.neutral.keys().find(|k| k.is_empty()) {
            return Err(bad(format!("neutral value with an empty key ('{key}')")));
        }
        Ok(manifest::Group {
            name: self.name.clone(),
            compiler: self.compiler.clone(),
            args,
            cwd,
            symbol: self.symbol.clone(),
            depfile: self.depfile,
            family: self.family.clone(),
            neutral: self.neutral.clone(),
        })
    }
}

/// A compiled exclude pattern.
pub(crate) struct Exclude {
    pattern: Pattern,
    whole_path: bool,
}

impl Exclude {
    /// Whether the root-relative `rel` is excluded.
    pub(crate) fn matches(&self, rel: &str) -> bool {
        let opts = MatchOptions {
            case_sensitive: true,
            require_literal_separator: true,
            require_literal_leading_dot: false,
        };
        if self.whole_path {
            self.pattern.matches_with(rel, opts)
        } else {
            let file_name = rel.rsplit('/').next().unwrap_or(rel);
            self.pattern.matches_with(file_name, opts)
        }
    }
}

/// `dir` as a template: absolute stays, relative becomes `{root}/dir`.
fn root_relative(dir: &Path) -> Result<String, String> {
    if dir.is_absolute() {
        return dir
            .to_str()
            .map(str::to_string)
            .ok_or_else(|| format!("{dir:?} is not valid UTF-8"));
    }
    let mut out = String::from("{root}");
    for c in dir.components() {
        match c {
            Component::CurDir => {}
            Component::Normal(part) => {
                let part = part
                    .to_str()
                    .ok_or_else(|| format!("{dir:?} is not valid UTF-8"))?;
                out.push('/');
                out.push_str(part);
            }
            // `..` is allowed (headers next to the tree); the path is a
            // compiler argument, not something this crate opens.
            Component::ParentDir => out.push_str("/.."),
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "'{}' is neither relative nor absolute",
                    escape(&dir.to_string_lossy())
                ))
            }
        }
    }
    Ok(out)
}

/// A macro name that stays one `-D` argument meaning what it says.
fn check_define(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("empty name");
    }
    if name.starts_with('-') {
        return Err("starts with '-'");
    }
    if name.contains('=') {
        return Err("the name contains '='; pass the value separately");
    }
    if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("the name contains whitespace or a control character");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(g: &BlobGroup) -> Vec<String> {
        g.render().unwrap().args
    }

    #[test]
    fn default_template_orders_flags_includes_defines_then_shared() {
        let mut g = BlobGroup::new("vec");
        g.flags(["-O2", "-fvisibility=hidden", "-std=c++17"])
            .include("include")
            .include("./third_party/ck/")
            .include("/opt/rocm/include")
            .define("USE_FAST", Some("1"))
            .define("NDEBUG", None);
        assert_eq!(
            args(&g),
            [
                "-O2",
                "-std=c++17",
                "-I{root}/include",
                "-I{root}/third_party/ck",
                "-I/opt/rocm/include",
                "-DUSE_FAST=1",
                "-DNDEBUG",
                "-fPIC",
                "-shared",
                "{src}",
                "-o",
                "{out}"
            ]
        );
        let m = g.render().unwrap();
        assert_eq!(m.compiler, "c++");
        assert_eq!(m.symbol, SymbolSpec::Exact("{name}".into()));
        assert!(m.depfile);
        assert_eq!(m.cwd, None);
    }

    #[test]
    fn shared_off_and_cwd_and_symbol_prefix() {
        let mut g = BlobGroup::new("cu");
        g.shared(false)
            .cwd("build")
            .symbol_prefix("_Z3foo")
            .depfile(false)
            .compiler("nvcc");
        let m = g.render().unwrap();
        assert_eq!(m.args, ["{src}", "-o", "{out}"]);
        assert_eq!(m.cwd.as_deref(), Some("{root}/build"));
        assert_eq!(m.symbol, SymbolSpec::Prefix("_Z3foo".into()));
        assert!(!m.depfile);
        assert_eq!(m.compiler, "nvcc");
        g.cwd(".");
        assert_eq!(g.render().unwrap().cwd.as_deref(), Some("{root}"));
    }

    #[test]
    fn template_replaces_defaults_needs_out_and_loses_hidden_visibility() {
        let mut g = BlobGroup::new("t");
        g.args_template(["-fvisibility=hidden", "{src}", "-o", "{out}"]);
        assert_eq!(args(&g), ["{src}", "-o", "{out}"]);
        g.args_template(["{src}"]);
        let e = g.render().unwrap_err().to_string();
        assert!(e.contains("{out}"), "{e}");
        g.args_template(["{src}", "-o", "{out}"]).flag("-O2");
        let e = g.render().unwrap_err().to_string();
        assert!(e.contains("args_template replaces"), "{e}");
    }

    #[test]
    fn bad_names_defines_and_compilers_are_errors() {
        for bad in ["", "a b", "../g", "-g"] {
            assert!(BlobGroup::new(bad).render().is_err(), "{bad:?}");
        }
        for bad in ["", "-U", "A=1", "A B", "A\nB"] {
            let mut g = BlobGroup::new("g");
            g.define(bad, None);
            assert!(g.render().is_err(), "{bad:?}");
        }
        assert!(BlobGroup::new("g").compiler("").render().is_err());
        assert!(BlobGroup::new("g").symbol_exact("").render().is_err());
    }

    #[test]
    fn excludes_match_whole_path_or_file_name() {
        let mut g = BlobGroup::new("g");
        g.exclude("*_api.cpp").exclude("fwd/**/skip_*.cpp");
        let ex = g.compiled_excludes().unwrap();
        let hit = |rel: &str| ex.iter().any(|e| e.matches(rel));
        assert!(hit("fwd/fmha_fwd_api.cpp"));
        assert!(hit("fmha_bwd_api.cpp"));
        assert!(hit("fwd/a/b/skip_x.cpp"));
        assert!(hit("fwd/skip_x.cpp"));
        assert!(!hit("bwd/skip_x.cpp"));
        assert!(!hit("fwd/fmha_fwd_d64.cpp"));
    }

    #[test]
    fn meta_pattern_must_compile_and_name_a_capture() {
        let mut g = BlobGroup::new("g");
        g.meta_pattern("(unclosed");
        assert!(matches!(
            g.compiled_meta_pattern(),
            Err(Error::MetaPattern { .. })
        ));
        g.meta_pattern("[a-z]+_f32");
        let e = g.compiled_meta_pattern().unwrap_err().to_string();
        assert!(e.contains("no named capture"), "{e}");
        g.meta_pattern("(?P<dtype>f32|f64)$");
        assert!(g.compiled_meta_pattern().unwrap().is_some());
    }
}
