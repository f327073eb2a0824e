//! [`Launchers`]: a C header of launcher declarations becomes a
//! `#[lazy_kernel] extern "C" { ... }` block with bindgen's types, so each
//! kernel signature is written once, in C, and the Rust side follows it.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use proc_macro2::Span;
use syn::punctuated::Punctuated;
use syn::{
    Abi, Attribute, Expr, ForeignItem, ForeignItemFn, Item, ItemForeignMod, Lit, LitStr, Meta,
    Token,
};

use super::clang;
use super::generated::{announce_inputs, generate_printing, generate_to, render, Bindings};
use crate::cargo::CargoOutput;
use crate::error::shown;
use crate::{Error, NotAKernel};

/// Turns the functions a C header declares into `#[lazy_kernel]` Rust
/// declarations, with bindgen's types for their parameters and the
/// header's structs, enums and typedefs beside them.
///
/// From `kernels/launchers.h`:
///
/// ```c
/// #include <stddef.h>
/// typedef struct { float scale; int bias; } affine_params;
/// /** out[i] = a[i] + b[i] */
/// void vadd_f32(const float* a, const float* b, float* out, size_t n);
/// int affine_i32(const affine_params* p, int* x, size_t n);
/// ```
///
/// the generated file holds (formatted, in the header's order):
///
/// ```text
/// pub struct affine_params { pub scale: f32, pub bias: ::std::os::raw::c_int }
/// #[::ck_jit_macros::lazy_kernel]
/// extern "C" {
///     /// out[i] = a[i] + b[i]
///     #[lazy_kernel(symbol = "vadd_f32")]
///     pub fn vadd_f32(a: *const f32, b: *const f32, out: *mut f32, n: usize);
///     #[lazy_kernel(symbol = "affine_i32")]
///     pub fn affine_i32(p: *const affine_params, x: *mut ::std::os::raw::c_int, n: usize)
///         -> ::std::os::raw::c_int;
/// }
/// ```
///
/// so each function becomes a kernel compiled on its first call from the
/// blob of the same name (or the one [`blob`](Launchers::blob) names) and
/// entered through the function's own symbol, and a change of the C
/// signature changes the Rust one with it.
///
/// What is taken: every function declared in the header itself (not in the
/// headers it includes), optionally narrowed with
/// [`function`](Launchers::function); every type, enum, macro constant
/// and typedef the header defines; and every type those use, wherever it is
/// defined. A `.h` header is parsed as C; pass `.clang_arg("-xc++")` for
/// C++, where a function not declared `extern "C"` keeps its mangled
/// name as the kernel's `symbol`. C enums become constants
/// (`pub const color_RED: color = 0;`, bindgen's default): a C launcher may
/// be handed any integer. A variadic function or a variable cannot be a
/// lazy kernel and is an error naming it.
///
/// The crate that includes the file depends on `ck-jit-macros` and
/// `ck-jit-rt`, embeds its manifest (`ck_jit_rt::embed_manifest!()`, or
/// names another with [`manifest`](Launchers::manifest)), and wraps the
/// file in a module that allows C's names:
///
/// ```ignore
/// ck_jit_rt::embed_manifest!();
///
/// pub mod kernels {
///     #![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]
///     include!(concat!(env!("OUT_DIR"), "/launchers.rs"));
/// }
/// ```
///
/// # Example
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use ck_jit_build::bindings::Launchers;
///
/// # let dir = std::env::temp_dir().join(format!("ck-jit-build-doc-launchers-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let header = dir.join("launchers.h");
/// # std::fs::write(&header, "#include <stddef.h>\n\
/// #     typedef struct { float scale; int bias; } affine_params;\n\
/// #     /** out[i] = a[i] + b[i] */\n\
/// #     void vadd_f32(const float* a, const float* b, float* out, size_t n);\n\
/// #     int affine_i32(const affine_params* p, int* x, size_t n);\n")?;
/// # // Runs where libclang can be loaded; CK_JIT_REQUIRE_BINDGEN=1 makes
/// # // its absence a failure.
/// # if ck_jit_build::bindings::libclang().is_err()
/// #     && std::env::var_os("CK_JIT_REQUIRE_BINDGEN").is_none()
/// # {
/// #     return Ok(());
/// # }
/// // In build.rs: `.write("launchers.rs")` writes $OUT_DIR/launchers.rs.
/// let bindings = Launchers::new()
///     .header(&header) // "kernels/launchers.h"
///     .blob("affine_i32", "affine_v2") // else the blob is named like the function
///     .cargo_metadata(false)
///     .try_generate()?;
/// assert_eq!(bindings.kernels(), ["vadd_f32", "affine_i32"]);
/// let src = bindings.source();
/// assert!(src.contains("#[::ck_jit_macros::lazy_kernel]\nextern \"C\" {"));
/// assert!(src.contains("pub fn vadd_f32(a: *const f32, b: *const f32, out: *mut f32, n: usize);"));
/// assert!(src.contains("#[lazy_kernel(blob = \"affine_v2\", symbol = \"affine_i32\")]"));
/// assert!(src.contains("pub struct affine_params"));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Launchers {
    header: Option<PathBuf>,
    clang_args: Vec<String>,
    resource_dir: Option<PathBuf>,
    functions: Vec<String>,
    blobs: BTreeMap<String, String>,
    families: BTreeMap<String, String>,
    manifest: Option<String>,
    cargo_metadata: bool,
}

impl Default for Launchers {
    fn default() -> Launchers {
        Launchers::new()
    }
}

impl Launchers {
    /// A generator with no header yet and `cargo:` lines on.
    pub fn new() -> Launchers {
        Launchers {
            header: None,
            clang_args: Vec::new(),
            resource_dir: None,
            functions: Vec::new(),
            blobs: BTreeMap::new(),
            families: BTreeMap::new(),
            manifest: None,
            cargo_metadata: true,
        }
    }

    /// The header declaring the launchers (required).
    ///
    /// ```no_run
    /// ck_jit_build::bindings::Launchers::new().header("kernels/launchers.h");
    /// ```
    pub fn header<P: AsRef<Path>>(&mut self, path: P) -> &mut Launchers {
        self.header = Some(path.as_ref().to_path_buf());
        self
    }

    /// One more argument for clang (`-xc++`, `-std=c11`, ...).
    ///
    /// ```no_run
    /// ck_jit_build::bindings::Launchers::new().clang_arg("-xc++").clang_arg("-std=c++17");
    /// ```
    pub fn clang_arg(&mut self, arg: &str) -> &mut Launchers {
        self.clang_args.push(arg.to_string());
        self
    }

    /// An include directory for the header's own includes (`-I`).
    ///
    /// ```no_run
    /// ck_jit_build::bindings::Launchers::new().include("kernels/include");
    /// ```
    pub fn include<P: AsRef<Path>>(&mut self, dir: P) -> &mut Launchers {
        self.clang_args
            .push(format!("-I{}", dir.as_ref().display()));
        self
    }

    /// A preprocessor definition (`-DNAME` or `-DNAME=VALUE`).
    ///
    /// ```no_run
    /// ck_jit_build::bindings::Launchers::new().define("WITH_BF16", Some("1"));
    /// ```
    pub fn define(&mut self, name: &str, value: Option<&str>) -> &mut Launchers {
        self.clang_args.push(match value {
            Some(v) => format!("-D{name}={v}"),
            None => format!("-D{name}"),
        });
        self
    }

    /// clang's resource directory (its `stddef.h`), passed as
    /// `-resource-dir`. Default: the one beside libclang, else the one a
    /// `clang` on `PATH` reports.
    ///
    /// ```no_run
    /// ck_jit_build::bindings::Launchers::new().resource_dir("/usr/lib/llvm-18/lib/clang/18");
    /// ```
    pub fn resource_dir<P: AsRef<Path>>(&mut self, dir: P) -> &mut Launchers {
        self.resource_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Takes only the header's functions whose whole name matches
    /// `pattern` (a regular expression; several calls add patterns).
    /// Default: all of them.
    ///
    /// ```no_run
    /// ck_jit_build::bindings::Launchers::new().function("vadd_.*").function("dot_f32");
    /// ```
    pub fn function(&mut self, pattern: &str) -> &mut Launchers {
        self.functions.push(pattern.to_string());
        self
    }

    /// Compiles `function` from the blob `blob` (default: the blob named
    /// like the function).
    ///
    /// ```no_run
    /// ck_jit_build::bindings::Launchers::new().blob("dot_f32", "dot_f32_v2");
    /// ```
    pub fn blob(&mut self, function: &str, blob: &str) -> &mut Launchers {
        self.blobs.insert(function.to_string(), blob.to_string());
        self
    }

    /// Declares `function` as the signature of the blob family (manifest
    /// group) `family`: the generated module then has `select`, `call`,
    /// ... instead of a fn (see `ck-jit-macros`).
    ///
    /// ```no_run
    /// ck_jit_build::bindings::Launchers::new().family("fmha_fwd", "fwd");
    /// ```
    pub fn family(&mut self, function: &str, family: &str) -> &mut Launchers {
        self.families
            .insert(function.to_string(), family.to_string());
        self
    }

    /// The embedded manifest the kernels use, as a Rust path (default
    /// `crate::__CK_JIT_MANIFEST`, which `ck_jit_rt::embed_manifest!()`
    /// defines).
    ///
    /// ```no_run
    /// ck_jit_build::bindings::Launchers::new().manifest("crate::kernels::MANIFEST");
    /// ```
    pub fn manifest(&mut self, path: &str) -> &mut Launchers {
        self.manifest = Some(path.to_string());
        self
    }

    /// Whether to print `cargo:rerun-if-changed` for every file clang read
    /// and `cargo:rerun-if-env-changed` for the variables consulted
    /// (default true; turn off outside build scripts).
    ///
    /// ```no_run
    /// ck_jit_build::bindings::Launchers::new().cargo_metadata(false);
    /// ```
    pub fn cargo_metadata(&mut self, print: bool) -> &mut Launchers {
        self.cargo_metadata = print;
        self
    }

    /// Generates the Rust source.
    ///
    /// # Errors
    ///
    /// [`Error::Libclang`] without a loadable libclang, [`Error::BindingsInput`]
    /// for a missing header or a bad setting, [`Error::Clang`] when clang
    /// cannot parse it, [`Error::NotAKernel`] for a declaration that
    /// cannot be a lazy kernel, [`Error::NoFunctions`].
    pub fn try_generate(&self) -> Result<Bindings, Error> {
        generate_printing(self.cargo_metadata, |cargo| self.generate_with(cargo))
    }

    /// [`try_generate`](Launchers::try_generate), then writes the source to
    /// `file` (under `OUT_DIR` when relative) unless it is unchanged.
    ///
    /// # Errors
    ///
    /// As [`try_generate`](Launchers::try_generate), and [`Error::Env`]
    /// without `OUT_DIR` for a relative file, [`Error::WriteBindings`].
    pub fn try_write<P: AsRef<Path>>(&self, file: P) -> Result<Bindings, Error> {
        generate_to(file.as_ref(), || self.try_generate())
    }

    /// [`try_generate`](Launchers::try_generate), panicking on error.
    ///
    /// # Panics
    ///
    /// With the error's message, which fails the build script.
    pub fn generate(&self) -> Bindings {
        crate::assemble::or_panic("ck-jit-build", self.try_generate())
    }

    /// [`try_write`](Launchers::try_write), panicking on error.
    ///
    /// # Panics
    ///
    /// With the error's message, which fails the build script.
    pub fn write<P: AsRef<Path>>(&self, file: P) -> Bindings {
        crate::assemble::or_panic("ck-jit-build", self.try_write(file))
    }

    fn generate_with(&self, cargo: &mut CargoOutput<'_>) -> Result<Bindings, Error> {
        let given = self.header.as_deref().ok_or_else(|| Error::BindingsInput {
            path: PathBuf::new(),
            why: "is not a header: none was given (Launchers::header)".into(),
        })?;
        let header = fs::canonicalize(given)
            .ok()
            .filter(|p| p.is_file())
            .ok_or_else(|| Error::BindingsInput {
                path: given.to_path_buf(),
                why: "does not exist or is not a file".into(),
            })?;
        let options = self.options(given)?;
        let lib = clang::load(cargo)?;
        let mut args = Vec::new();
        if let Some(rd) = clang::resource_dir(self.resource_dir.as_deref(), &lib, cargo) {
            args.push("-resource-dir".to_string());
            args.push(rd.display().to_string());
        }
        args.extend(self.clang_args.iter().cloned());
        let header_str = header.to_str().ok_or_else(|| Error::BindingsInput {
            path: header.clone(),
            why: "is not valid UTF-8".into(),
        })?;
        let builder = clang::builder(&args)
            .header(header_str)
            .allowlist_file(regex_lite::escape(header_str))
            .merge_extern_blocks(true);
        let parsed = clang::generate(builder, &format!("'{}'", shown(&header)), &lib, cargo)?;
        let (items, kernels) = kernel_block(parsed.file, &header, &options)?;
        let text = format!(
            "// Kernels declared by '{}', generated by ck-jit-build with bindgen:\n\
             // each function is a #[lazy_kernel], compiled on its first call. Do not edit.\n\n",
            shown(&header)
        );
        let source = render(&text, items);
        let mut inputs = parsed.files;
        if !inputs.contains(&header) {
            inputs.insert(0, header);
        }
        if self.cargo_metadata {
            announce_inputs(&inputs, cargo);
        }
        Ok(Bindings {
            source,
            kernels,
            inputs,
        })
    }

    /// The settings checked and in the form [`kernel_block`] takes.
    fn options(&self, header: &Path) -> Result<BlockOptions, Error> {
        let bad = |why: String| Error::BindingsInput {
            path: header.to_path_buf(),
            why,
        };
        let mut functions = Vec::new();
        for p in &self.functions {
            let re = regex_lite::Regex::new(&format!("^(?:{p})$"))
                .map_err(|e| bad(format!("cannot be filtered with function(\"{p}\"): {e}")))?;
            functions.push(re);
        }
        let manifest = match &self.manifest {
            Some(m) => Some(syn::parse_str::<syn::Path>(m).map_err(|e| {
                bad(format!(
                    "cannot use manifest(\"{m}\"): not a Rust path: {e}"
                ))
            })?),
            None => None,
        };
        if let Some(f) = self.blobs.keys().find(|f| self.families.contains_key(*f)) {
            return Err(bad(format!(
                "gives function '{f}' both a blob and a family; a family chooses its blob at run time"
            )));
        }
        Ok(BlockOptions {
            functions,
            blobs: self.blobs.clone(),
            families: self.families.clone(),
            manifest,
        })
    }
}

/// What [`kernel_block`] needs of the settings.
#[derive(Debug, Default)]
struct BlockOptions {
    functions: Vec<regex_lite::Regex>,
    blobs: BTreeMap<String, String>,
    families: BTreeMap<String, String>,
    manifest: Option<syn::Path>,
}

/// bindgen's items with its `extern` blocks replaced by one
/// `#[lazy_kernel]` block of the functions taken, after the other items;
/// and the kernels' names.
fn kernel_block(
    file: syn::File,
    header: &Path,
    options: &BlockOptions,
) -> Result<(Vec<Item>, Vec<String>), Error> {
    let unsupported = |name: &str, why: NotAKernel| Error::NotAKernel {
        header: header.to_path_buf(),
        name: name.to_string(),
        why,
    };
    let mut items = Vec::new();
    let mut fns: Vec<ForeignItemFn> = Vec::new();
    for item in file.items {
        let Item::ForeignMod(block) = item else {
            items.push(item);
            continue;
        };
        for f in block.items {
            match f {
                ForeignItem::Fn(f) => {
                    let name = f.sig.ident.to_string();
                    let taken = options.functions.is_empty()
                        || options.functions.iter().any(|re| re.is_match(&name));
                    if !taken {
                        continue;
                    }
                    if f.sig.variadic.is_some() {
                        return Err(unsupported(&name, NotAKernel::Variadic));
                    }
                    fns.push(f);
                }
                ForeignItem::Static(s) => {
                    return Err(unsupported(&s.ident.to_string(), NotAKernel::Variable))
                }
                other => {
                    return Err(unsupported(
                        &quote::ToTokens::to_token_stream(&other).to_string(),
                        NotAKernel::NotAFunction,
                    ))
                }
            }
        }
    }
    let names: Vec<String> = fns.iter().map(|f| f.sig.ident.to_string()).collect();
    for (what, map) in [("blob", &options.blobs), ("family", &options.families)] {
        if let Some(f) = map.keys().find(|f| !names.contains(*f)) {
            return Err(Error::BindingsInput {
                path: header.to_path_buf(),
                why: format!("does not declare '{f}', which {what}() names"),
            });
        }
    }
    if fns.is_empty() {
        return Err(Error::NoFunctions {
            header: header.to_path_buf(),
        });
    }
    let kernels = fns
        .into_iter()
        .map(|f| kernel(f, options))
        .collect::<Vec<_>>();
    let mut attr: Attribute = syn::parse_quote!(#[::ck_jit_macros::lazy_kernel]);
    if let Some(m) = &options.manifest {
        attr = syn::parse_quote!(#[::ck_jit_macros::lazy_kernel(manifest = #m)]);
    }
    items.push(Item::ForeignMod(ItemForeignMod {
        attrs: vec![attr],
        unsafety: None,
        abi: Abi {
            extern_token: Token![extern](Span::call_site()),
            name: Some(LitStr::new("C", Span::call_site())),
        },
        brace_token: Default::default(),
        items: kernels,
    }));
    Ok((items, names))
}

/// One declaration of the block: public, with the blob or family asked
/// for and, outside a family, the function's own symbol: its C name, or
/// the mangled name bindgen gives as `link_name`. (A family's blobs may
/// each export their own; its manifest group says how to find them.)
fn kernel(mut f: ForeignItemFn, options: &BlockOptions) -> ForeignItem {
    let name = f.sig.ident.to_string();
    let mut args: Punctuated<Meta, Token![,]> = Punctuated::new();
    if let Some(blob) = options.blobs.get(&name) {
        args.push(syn::parse_quote!(blob = #blob));
    }
    let family = options.families.get(&name);
    if let Some(family) = family {
        args.push(syn::parse_quote!(family = #family));
    }
    let mut symbol = name.clone();
    let mut attrs = Vec::new();
    for a in f.attrs.drain(..) {
        match link_name(&a) {
            // bindgen marks a mangled name with a leading \u{1}.
            Some(mangled) => symbol = mangled.trim_start_matches('\u{1}').to_string(),
            None => attrs.push(a),
        }
    }
    if family.is_none() {
        args.push(syn::parse_quote!(symbol = #symbol));
    }
    attrs.push(syn::parse_quote!(#[lazy_kernel(#args)]));
    f.attrs = attrs;
    f.vis = syn::parse_quote!(pub);
    ForeignItem::Fn(f)
}

/// The value of `#[link_name = "..."]`.
fn link_name(attr: &Attribute) -> Option<String> {
    let Meta::NameValue(nv) = &attr.meta else {
        return None;
    };
    if !nv.path.is_ident("link_name") {
        return None;
    }
    match &nv.value {
        Expr::Lit(l) => match &l.lit {
            Lit::Str(s) => Some(s.value()),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(src: &str, options: &BlockOptions) -> Result<(String, Vec<String>), Error> {
        let file = syn::parse_file(src).unwrap();
        let (items, names) = kernel_block(file, Path::new("k.h"), options)?;
        Ok((render("", items), names))
    }

    const BINDGEN: &str = r#"
        #[repr(C)] pub struct params { pub n: usize }
        pub const color_RED: color = 0;
        pub type color = ::std::os::raw::c_uint;
        unsafe extern "C" {
            #[doc = " Adds."]
            pub fn vadd(a: *const f32, n: usize);
            #[link_name = "\u{1}_Z3dotPKfm"]
            pub fn dot(a: *const f32, n: usize) -> f32;
            pub fn scale(p: *const params, c: color) -> ::std::os::raw::c_int;
        }
    "#;

    #[test]
    fn functions_become_one_lazy_kernel_block_after_the_types() {
        let mut o = BlockOptions::default();
        o.blobs.insert("vadd".into(), "vadd_v2".into());
        let (src, names) = block(BINDGEN, &o).unwrap();
        assert_eq!(names, ["vadd", "dot", "scale"]);
        let block_at = src
            .find("#[::ck_jit_macros::lazy_kernel]\nextern \"C\" {")
            .unwrap();
        assert!(src.find("pub struct params").unwrap() < block_at, "{src}");
        assert!(
            src.contains(
                "    /// Adds.\n    #[lazy_kernel(blob = \"vadd_v2\", symbol = \"vadd\")]\n    pub fn vadd("
            ),
            "{src}"
        );
        assert!(
            src.contains("#[lazy_kernel(symbol = \"_Z3dotPKfm\")]\n    pub fn dot("),
            "{src}"
        );
        assert!(
            src.contains("#[lazy_kernel(symbol = \"scale\")]\n    pub fn scale("),
            "{src}"
        );
        assert!(!src.contains("link_name"), "{src}");
        assert!(!src.contains("unsafe extern"), "{src}");
    }

    #[test]
    fn filters_families_and_the_manifest_path_are_applied() {
        let o = BlockOptions {
            functions: vec![regex_lite::Regex::new("^(?:v.*|scale)$").unwrap()],
            families: BTreeMap::from([("scale".to_string(), "scales".to_string())]),
            manifest: Some(syn::parse_str("crate::k::M").unwrap()),
            ..Default::default()
        };
        let (src, names) = block(BINDGEN, &o).unwrap();
        assert_eq!(names, ["vadd", "scale"]);
        assert!(
            src.contains("#[::ck_jit_macros::lazy_kernel(manifest = crate::k::M)]"),
            "{src}"
        );
        assert!(
            src.contains("#[lazy_kernel(family = \"scales\")]\n    pub fn scale("),
            "{src}"
        );
    }

    #[test]
    fn what_cannot_be_a_kernel_is_an_error_naming_it() {
        let o = BlockOptions::default();
        let e = block(r#"extern "C" { pub fn log(fmt: *const u8, ...); }"#, &o).unwrap_err();
        assert!(
            e.to_string()
                .contains("'log' cannot be a lazy kernel: it is variadic"),
            "{e}"
        );
        let e = block(r#"extern "C" { pub static mut counter: i32; }"#, &o).unwrap_err();
        assert!(e.to_string().contains("'counter'"), "{e}");
        let e = block("pub struct only_types { pub x: i32 }", &o).unwrap_err();
        assert!(matches!(e, Error::NoFunctions { .. }), "{e}");
        let mut o = BlockOptions::default();
        o.blobs.insert("missing".into(), "b".into());
        let e = block(BINDGEN, &o).unwrap_err();
        assert!(
            e.to_string()
                .contains("does not declare 'missing', which blob() names"),
            "{e}"
        );
    }

    #[test]
    fn bad_settings_are_refused_before_parsing() {
        let mut l = Launchers::new();
        l.function("(");
        assert!(l.options(Path::new("k.h")).is_err());
        let mut l = Launchers::new();
        l.manifest("not a path");
        assert!(l.options(Path::new("k.h")).is_err());
        let mut l = Launchers::new();
        l.blob("f", "b").family("f", "fam");
        let e = l.options(Path::new("k.h")).unwrap_err();
        assert!(e.to_string().contains("both a blob and a family"), "{e}");
        let e = Launchers::new()
            .cargo_metadata(false)
            .try_generate()
            .unwrap_err();
        assert!(e.to_string().contains("none was given"), "{e}");
    }
}
