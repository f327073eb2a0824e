//! What is allowed: checks the parsed item and arguments, resolves each
//! kernel's blob, symbol and manifest, and reports every mistake into
//! [`Errors`] so they all show at once.
//!
//! It decides and resolves; it generates nothing. A kernel with a mistake
//! is still returned so that `expand` can emit something in its place and
//! the one mistake does not cascade into errors at every call site.

use std::path::{Path as FsPath, PathBuf};
use std::rc::Rc;

use ck_jit_manifest::{check_name, closest, escape, Manifest, ManifestError};
use proc_macro2::Span;
use quote::quote;
use syn::ext::IdentExt;
use syn::{
    Abi, Attribute, FnArg, ForeignItem, GenericArgument, LitStr, Path, PathArguments, ReturnType,
    Type,
};

use crate::errors::Errors;
use crate::manifest::{self, Found, Loaded};
use crate::parse::{self, Args, Block, Input, Kernel};

/// Where the runtime finds a kernel's entry point.
#[derive(Clone)]
pub(crate) enum Symbol {
    /// As the manifest says.
    Manifest,
    /// `symbol = "..."`.
    Exact(LitStr),
    /// `symbol_prefix = "..."`.
    Prefix(LitStr),
}

/// The manifest a kernel's blob is looked up in, when not the crate's
/// default.
#[derive(Clone)]
pub(crate) enum ManifestRef {
    /// `manifest = path`: an `Embedded` static.
    Static(Path),
    /// `manifest_file = "..."`: a manifest file, checked now and found at
    /// run time through the fallback manifest or the file itself.
    File(Rc<NamedFile>),
}

/// A manifest file named by `manifest_file = "..."`.
pub(crate) struct NamedFile {
    /// The path as written.
    pub written: LitStr,
    /// The path the expansion uses: absolute, relative ones taken from the
    /// directory of the attribute's source file.
    pub path: PathBuf,
    /// Its content, read at expansion time.
    pub manifest: Loaded,
}

impl NamedFile {
    /// The path as the expansion's string literal, when it can be one and
    /// the file was read: only then does the expansion name it.
    pub(crate) fn usable_path(&self) -> Option<&str> {
        self.manifest.as_ref().as_ref().ok()?;
        self.path.to_str()
    }
}

/// One kernel, checked and resolved.
pub(crate) struct Checked<'a> {
    /// The declaration.
    pub kernel: &'a Kernel,
    /// `#[cfg]`s of the enclosing block, for every generated item.
    pub block_cfgs: Vec<&'a Attribute>,
    /// Other attributes of the enclosing block, for the generated fn.
    pub block_attrs: Vec<&'a Attribute>,
    /// `"C"` or `"C-unwind"`.
    pub abi: LitStr,
    /// The blob, spanned where it was named (the literal or the fn name).
    /// Unused for a family kernel.
    pub blob: LitStr,
    /// `family = "..."`: the kernel is the shared signature of a family of
    /// blobs, selected at run time, rather than one blob.
    pub family: Option<LitStr>,
    /// The symbol override.
    pub symbol: Symbol,
    /// `manifest = ...` or `manifest_file = "..."`; `None` for the crate's
    /// default.
    pub manifest: Option<ManifestRef>,
    /// Whether `blob` is what the user meant, so worth looking up: not when
    /// it is the fn's name standing in for a refused `blob = "..."`.
    pub blob_meant: bool,
    /// Whether the signature can be a C fn pointer type. When it cannot,
    /// `expand` emits a stub instead of the kernel.
    pub sig_ok: bool,
}

/// Checks everything and resolves every kernel. `found` is the manifest
/// available at expansion time, if any; `base` the directory relative
/// `manifest_file` paths start from.
pub(crate) fn check<'a>(
    outer: Args,
    input: &'a Input,
    found: Option<&Found>,
    base: &FsPath,
    errors: &mut Errors,
) -> Vec<Checked<'a>> {
    let kernels = match input {
        Input::Single(kernel) => vec![single(outer, kernel, base, errors)],
        Input::Block(block) => self::block(outer, block, base, errors),
    };
    if let Some(found) = found {
        check_names(&kernels, found, errors);
    }
    check_files(&kernels, errors);
    kernels
}

/// Why `family` and `blob` cannot be given together.
const FAMILY_AND_BLOB: &str = "`family` and `blob` exclude each other: a family kernel \
     selects its blob at run time; expected one of them";

/// Arguments after their own checks.
struct Resolved {
    blob: Option<LitStr>,
    family: Option<LitStr>,
    symbol: Option<Symbol>,
    manifest: Option<ManifestRef>,
}

fn resolve(args: Args, base: &FsPath, errors: &mut Errors) -> Resolved {
    if let Some(blob) = &args.blob {
        if let Err(e) = check_name(&blob.value()) {
            errors.spanned(blob, e);
        }
    }
    if let Some(family) = &args.family {
        match check_name(&family.value()) {
            Ok(()) => {}
            Err(ManifestError::BadName { name, why }) => {
                errors.spanned(family, format!("bad family name '{name}': {why}"))
            }
            Err(e) => errors.spanned(family, e),
        }
    }
    for symbol in args.symbol.iter().chain(&args.symbol_prefix) {
        let value = symbol.value();
        if value.is_empty() {
            errors.spanned(symbol, "expected a symbol name, found an empty string");
        } else if value.contains('\0') {
            errors.spanned(symbol, "a symbol name cannot contain NUL");
        }
    }
    let symbol = match (args.symbol, args.symbol_prefix) {
        (Some(exact), Some(prefix)) => {
            errors.spanned(
                &prefix,
                "`symbol` and `symbol_prefix` cannot both be given: expected one of them",
            );
            Some(Symbol::Exact(exact))
        }
        (Some(exact), None) => Some(Symbol::Exact(exact)),
        (None, Some(prefix)) => Some(Symbol::Prefix(prefix)),
        (None, None) => None,
    };
    let manifest = match (args.manifest, args.manifest_file) {
        (Some(path), Some(file)) => {
            errors.spanned(
                &file,
                "`manifest` and `manifest_file` cannot both be given: expected one of them",
            );
            Some(ManifestRef::Static(path))
        }
        (Some(path), None) => Some(ManifestRef::Static(path)),
        (None, Some(file)) => Some(named_file(file, base, errors)),
        (None, None) => None,
    };
    Resolved {
        blob: args.blob,
        family: args.family,
        symbol,
        manifest,
    }
}

/// Resolves and reads `manifest_file = "..."`; a path the expansion cannot
/// name is reported here, an unreadable file by [`check_files`].
fn named_file(written: LitStr, base: &FsPath, errors: &mut Errors) -> ManifestRef {
    let path = base.join(written.value());
    if path.to_str().is_none() {
        errors.spanned(
            &written,
            format!(
                "the manifest file path {} is not valid UTF-8: expected a path the expansion can name",
                path.display()
            ),
        );
    }
    let manifest = manifest::load(&path);
    ManifestRef::File(Rc::new(NamedFile {
        written,
        path,
        manifest,
    }))
}

fn single<'a>(
    mut args: Args,
    kernel: &'a Kernel,
    base: &FsPath,
    errors: &mut Errors,
) -> Checked<'a> {
    parse::helper_args(&kernel.helpers, &mut args, errors);
    let args = resolve(args, base, errors);
    let abi = single_abi(kernel, errors);
    if let Some(body) = &kernel.body {
        errors.spanned(
            body,
            "a #[lazy_kernel] fn is declared, not defined: expected `;` instead of a body",
        );
    }
    let sig_ok = signature(kernel, errors);
    if let (Some(blob), Some(_)) = (&args.blob, &args.family) {
        errors.spanned(blob, FAMILY_AND_BLOB);
    }
    Checked {
        kernel,
        block_cfgs: Vec::new(),
        block_attrs: Vec::new(),
        abi,
        blob_meant: args.family.is_none(),
        blob: blob_name(args.blob, kernel, errors),
        family: args.family,
        symbol: args.symbol.unwrap_or(Symbol::Manifest),
        manifest: args.manifest,
        sig_ok,
    }
}

fn block<'a>(
    mut outer: Args,
    block: &'a Block,
    base: &FsPath,
    errors: &mut Errors,
) -> Vec<Checked<'a>> {
    parse::helper_args(&block.helpers, &mut outer, errors);
    let outer = resolve(outer, base, errors);
    let abi = abi_name(&block.abi, errors);
    block_shape(&outer, block, errors);
    let (block_cfgs, block_attrs) = block_attributes(block, errors);
    block_items(block, errors);

    let enclosing = Enclosing {
        outer: &outer,
        base,
        one_kernel: block.kernels.len() == 1,
        block_cfgs,
        block_attrs,
        abi,
    };
    let mut checked = Vec::new();
    for kernel in &block.kernels {
        checked.push(block_kernel(kernel, &enclosing, errors));
    }
    checked
}

/// What a block gives each of its fns: its arguments (resolved), where
/// paths are relative to, its attributes and ABI.
struct Enclosing<'a, 'r> {
    outer: &'r Resolved,
    base: &'r FsPath,
    one_kernel: bool,
    block_cfgs: Vec<&'a Attribute>,
    block_attrs: Vec<&'a Attribute>,
    abi: LitStr,
}

/// Checks of the block as a whole: arguments meant for one fn on a block
/// of several, no fn at all, inner attributes.
fn block_shape(outer: &Resolved, block: &Block, errors: &mut Errors) {
    if block.kernels.len() > 1 {
        if let Some(blob) = &outer.blob {
            errors.spanned(
                blob,
                format!(
                    "`blob` names one blob but this block declares {} fns: expected \
                     #[lazy_kernel(blob = \"...\")] on each fn instead",
                    block.kernels.len()
                ),
            );
        }
    }
    if block.kernels.len() > 1 {
        if let Some(family) = &outer.family {
            errors.spanned(
                family,
                format!(
                    "`family` gives every blob of a family one signature, but this block \
                     declares {} fns: expected one fn, or #[lazy_kernel(family = \"...\")] \
                     on each fn instead",
                    block.kernels.len()
                ),
            );
        }
    }
    if let (Some(blob), Some(_)) = (&outer.blob, &outer.family) {
        errors.spanned(blob, FAMILY_AND_BLOB);
    }
    if block.kernels.is_empty() && block.others.is_empty() {
        errors.push(syn::Error::new(
            block.brace.span.join(),
            "expected at least one fn declaration in a #[lazy_kernel] block",
        ));
    }
    for attr in &block.inner_attrs {
        errors.spanned(
            attr,
            "inner attributes are not supported in a #[lazy_kernel] block: expected them on the block or on a fn",
        );
    }
}

/// The block's `#[cfg]`s and its other attributes; `#[link]` is refused.
fn block_attributes<'a>(
    block: &'a Block,
    errors: &mut Errors,
) -> (Vec<&'a Attribute>, Vec<&'a Attribute>) {
    let mut block_cfgs = Vec::new();
    let mut block_attrs = Vec::new();
    for attr in &block.attrs {
        if attr.path().is_ident("link") {
            errors.spanned(
                attr,
                "`#[link]` has no effect here: a lazy kernel is loaded from its compiled blob at run time",
            );
        } else if attr.path().is_ident("cfg") {
            block_cfgs.push(attr);
        } else {
            block_attrs.push(attr);
        }
    }
    (block_cfgs, block_attrs)
}

/// Items of the block that are not fn declarations, each refused.
fn block_items(block: &Block, errors: &mut Errors) {
    for item in &block.others {
        let what = match item {
            ForeignItem::Static(_) => "a static",
            ForeignItem::Type(_) => "a type",
            ForeignItem::Macro(_) => "a macro invocation",
            _ => "an item that is not a plain fn declaration",
        };
        errors.spanned(
            item,
            format!("expected only fn declarations in a #[lazy_kernel] block, found {what}"),
        );
    }
}

/// One fn of a block, its own arguments merged with the block's.
fn block_kernel<'a>(kernel: &'a Kernel, e: &Enclosing<'a, '_>, errors: &mut Errors) -> Checked<'a> {
    let mut own = Args::default();
    parse::helper_args(&kernel.helpers, &mut own, errors);
    let own = resolve(own, e.base, errors);
    let family = match (own.family, &e.outer.family) {
        (Some(own), Some(_)) if e.one_kernel => {
            errors.spanned(&own, "duplicate argument `family`");
            Some(own)
        }
        (Some(own), _) => Some(own),
        // Several fns under one family were refused above; each still
        // gets a family module so that its uses resolve.
        (None, Some(outer)) => Some(outer.clone()),
        (None, None) => None,
    };
    // A blob and a family both on the block were reported above.
    let reported = e.outer.blob.is_some() && e.outer.family.is_some() && own.blob.is_none();
    if family.is_some() && !reported {
        if let Some(blob) = own
            .blob
            .as_ref()
            .or(e.outer.blob.as_ref().filter(|_| e.one_kernel))
        {
            errors.spanned(blob, FAMILY_AND_BLOB);
        }
    }
    let blob_meant =
        family.is_none() && (own.blob.is_some() || e.one_kernel || e.outer.blob.is_none());
    let blob = match (own.blob, &e.outer.blob) {
        (Some(own), Some(_)) if e.one_kernel => {
            errors.spanned(&own, "duplicate argument `blob`");
            Some(own)
        }
        (Some(own), _) => Some(own),
        (None, Some(outer)) if e.one_kernel => Some(outer.clone()),
        (None, _) => None,
    };
    if let Some(abi) = &kernel.sig.abi {
        errors.spanned(
            abi,
            "a fn in an extern block takes the block's ABI: expected no `extern` here",
        );
    }
    if let Some(body) = &kernel.body {
        errors.spanned(
            body,
            "a #[lazy_kernel] fn is declared, not defined: expected `;` instead of a body",
        );
    }
    let sig_ok = signature(kernel, errors);
    Checked {
        kernel,
        block_cfgs: e.block_cfgs.clone(),
        block_attrs: e.block_attrs.clone(),
        abi: e.abi.clone(),
        blob: blob_name(blob, kernel, errors),
        family,
        symbol: own
            .symbol
            .or_else(|| e.outer.symbol.clone())
            .unwrap_or(Symbol::Manifest),
        manifest: own.manifest.or_else(|| e.outer.manifest.clone()),
        blob_meant,
        sig_ok,
    }
}

/// The blob named by `blob = "..."`, else the fn's own name.
fn blob_name(explicit: Option<LitStr>, kernel: &Kernel, errors: &mut Errors) -> LitStr {
    explicit.unwrap_or_else(|| {
        let ident = &kernel.sig.ident;
        let name = ident.unraw().to_string();
        if let Err(e) = check_name(&name) {
            errors.spanned(
                ident,
                format!("{e}; expected an ASCII fn name or blob = \"...\""),
            );
        }
        LitStr::new(&name, ident.span())
    })
}

/// The ABI of the single-fn form, which must say `unsafe extern "C"`.
fn single_abi(kernel: &Kernel, errors: &mut Errors) -> LitStr {
    let sig = &kernel.sig;
    let fn_token = &sig.fn_token;
    match (&sig.unsafety, &sig.abi) {
        (Some(_), Some(abi)) => abi_name(abi, errors),
        (None, Some(abi)) => {
            errors.spanned(
                quote!(#abi #fn_token),
                "expected `unsafe extern \"C\" fn`: calling a kernel is unsafe, so its declaration says `unsafe`",
            );
            abi_name(abi, errors)
        }
        (Some(unsafety), None) => {
            errors.spanned(
                quote!(#unsafety #fn_token),
                "expected `unsafe extern \"C\" fn`: a kernel has a C signature",
            );
            LitStr::new("C", fn_token.span)
        }
        (None, None) => {
            errors.spanned(
                fn_token,
                "expected `unsafe extern \"C\" fn`: a kernel is an unsafe C function",
            );
            LitStr::new("C", fn_token.span)
        }
    }
}

/// `"C"` or `"C-unwind"`; a bare `extern` is `"C"`.
fn abi_name(abi: &Abi, errors: &mut Errors) -> LitStr {
    match &abi.name {
        None => LitStr::new("C", abi.extern_token.span),
        Some(name) if matches!(name.value().as_str(), "C" | "C-unwind") => name.clone(),
        Some(name) => {
            errors.spanned(
                name,
                format!(
                    "unsupported ABI \"{}\": expected extern \"C\" or extern \"C-unwind\"",
                    escape(&name.value())
                ),
            );
            LitStr::new("C", name.span())
        }
    }
}

/// Checks what a C fn pointer type can express; false when the signature
/// cannot become one.
fn signature(kernel: &Kernel, errors: &mut Errors) -> bool {
    let sig = &kernel.sig;
    let mut ok = true;
    if let Some(constness) = &sig.constness {
        errors.spanned(constness, "a kernel cannot be `const`: expected a plain fn");
    }
    if let Some(asyncness) = &sig.asyncness {
        errors.spanned(asyncness, "a kernel cannot be `async`: expected a plain fn");
    }
    let generics = &sig.generics;
    if !generics.params.is_empty() || generics.where_clause.is_some() {
        let where_clause = &generics.where_clause;
        errors.spanned(
            quote!(#generics #where_clause),
            "a kernel cannot be generic: expected one C signature without `<...>` or `where`",
        );
        ok = false;
    }
    for arg in &sig.inputs {
        match arg {
            FnArg::Receiver(receiver) => {
                errors.spanned(
                    receiver,
                    "a kernel cannot take `self`: expected C parameters",
                );
                ok = false;
            }
            FnArg::Typed(typed) => {
                for attr in &typed.attrs {
                    errors.spanned(attr, "attributes on kernel parameters are not supported");
                    ok = false;
                }
                ok &= concrete(&typed.ty, errors);
            }
        }
    }
    if let Some(variadic) = &sig.variadic {
        errors.spanned(
            variadic,
            "a kernel cannot be variadic: expected a fixed list of C parameters, not `...`",
        );
        ok = false;
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        ok &= concrete(ty, errors);
    }
    for attr in &kernel.attrs {
        if attr.path().is_ident("link_name") || attr.path().is_ident("link_ordinal") {
            errors.spanned(
                attr,
                "this attribute has no effect on a lazy kernel: expected #[lazy_kernel(symbol = \"...\")]",
            );
        }
    }
    ok
}

/// Reports every `impl Trait` in `ty`; false when there is one.
fn concrete(ty: &Type, errors: &mut Errors) -> bool {
    let mut found = Vec::new();
    impl_traits(ty, &mut found);
    for ty in &found {
        errors.spanned(
            ty,
            "a kernel signature cannot use `impl Trait`: expected a concrete C type",
        );
    }
    found.is_empty()
}

fn impl_traits<'a>(ty: &'a Type, found: &mut Vec<&'a Type>) {
    match ty {
        Type::ImplTrait(_) => found.push(ty),
        Type::Array(t) => impl_traits(&t.elem, found),
        Type::Group(t) => impl_traits(&t.elem, found),
        Type::Paren(t) => impl_traits(&t.elem, found),
        Type::Ptr(t) => impl_traits(&t.elem, found),
        Type::Reference(t) => impl_traits(&t.elem, found),
        Type::Slice(t) => impl_traits(&t.elem, found),
        Type::Tuple(t) => t.elems.iter().for_each(|t| impl_traits(t, found)),
        Type::Path(t) => {
            for segment in &t.path.segments {
                if let PathArguments::AngleBracketed(args) = &segment.arguments {
                    for arg in &args.args {
                        if let GenericArgument::Type(t) = arg {
                            impl_traits(t, found);
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

/// Looks every kernel's blob, and every family, up in the manifest
/// available at expansion time.
fn check_names(kernels: &[Checked], found: &Found, errors: &mut Errors) {
    // A kernel with its own manifest file is checked against that file.
    let applies = |k: &&Checked| match &k.manifest {
        None => true,
        Some(ManifestRef::Static(_)) => found.explicit,
        Some(ManifestRef::File(_)) => false,
    };
    let blobs: Vec<&Checked> = kernels
        .iter()
        .filter(|k| k.blob_meant && k.family.is_none())
        .filter(applies)
        .collect();
    let families: Vec<&Checked> = kernels
        .iter()
        .filter(|k| k.family.is_some())
        .filter(applies)
        .collect();
    if blobs.is_empty() && families.is_empty() {
        return;
    }
    let manifest = match found.manifest.as_ref() {
        Ok(manifest) => manifest,
        Err(e) => {
            errors.push(syn::Error::new(
                Span::call_site(),
                format!(
                    "cannot use the ck-jit manifest {}: {e}",
                    found.path.display()
                ),
            ));
            return;
        }
    };
    check_families(&families, manifest, found, errors);
    for kernel in blobs {
        let name = kernel.blob.value();
        // A name that cannot be a blob name was reported already.
        if check_name(&name).is_err() || manifest.blob(&name).is_some() {
            continue;
        }
        let near = closest(manifest.blobs.iter().map(|b| b.name.as_str()), &name, 3);
        errors.spanned(
            &kernel.blob,
            format!(
                "blob '{}' is not in the manifest ({}); {FILE_ROUTE}{}",
                escape(&name),
                found.path.display(),
                did_you_mean(&near)
            ),
        );
    }
}

/// How to declare a blob that the crate's manifest does not record, for
/// the message of a miss.
const FILE_ROUTE: &str = "if only the fallback manifest (CK_JIT_MANIFEST) records it, \
     declare it with #[lazy_kernel(manifest_file = \"path/to/that/ck_jit_manifest.json\")]";

/// Checks kernels declared with `manifest_file = "..."`: each file read
/// and parsed (reported once per literal), each blob in its file, and no
/// family, whose table only an embedded manifest provides.
fn check_files(kernels: &[Checked], errors: &mut Errors) {
    let mut reported: Vec<String> = Vec::new();
    let mut once = |lit: &LitStr| {
        let site = format!("{:?}", lit.span());
        let first = !reported.contains(&site);
        if first {
            reported.push(site);
        }
        first
    };
    for kernel in kernels {
        let Some(ManifestRef::File(file)) = &kernel.manifest else {
            continue;
        };
        if kernel.family.is_some() {
            if once(&file.written) {
                errors.spanned(
                    &file.written,
                    "`manifest_file` cannot be used with `family`: a family's table is read \
                     from an embedded manifest; expected manifest = path",
                );
            }
            continue;
        }
        let manifest = match file.manifest.as_ref() {
            Ok(manifest) => manifest,
            Err(e) => {
                if once(&file.written) {
                    errors.spanned(
                        &file.written,
                        format!(
                            "cannot use the manifest file {} ({}): {e}",
                            file.written.value(),
                            file.path.display()
                        ),
                    );
                }
                continue;
            }
        };
        let name = kernel.blob.value();
        // A name that cannot be a blob name was reported already.
        if !kernel.blob_meant || check_name(&name).is_err() || manifest.blob(&name).is_some() {
            continue;
        }
        let near = closest(manifest.blobs.iter().map(|b| b.name.as_str()), &name, 3);
        errors.spanned(
            &kernel.blob,
            format!(
                "blob '{}' is not in the manifest file {} named by manifest_file{}",
                escape(&name),
                file.written.value(),
                did_you_mean(&near)
            ),
        );
    }
}

/// Reports each family that no group of the manifest belongs to (a group
/// belongs to its `family`, else to the family of its own name), once per
/// literal.
fn check_families(kernels: &[&Checked], manifest: &Manifest, found: &Found, errors: &mut Errors) {
    let mut names: Vec<&str> = manifest.groups.iter().map(|g| g.family()).collect();
    names.sort_unstable();
    names.dedup();
    let mut reported: Vec<(String, String)> = Vec::new();
    for kernel in kernels {
        let Some(family) = &kernel.family else {
            continue;
        };
        let name = family.value();
        // A name that cannot be a group name was reported already.
        if check_name(&name).is_err() || names.contains(&name.as_str()) {
            continue;
        }
        let site = (name.clone(), format!("{:?}", family.span()));
        if reported.contains(&site) {
            continue;
        }
        reported.push(site);
        let near = closest(names.iter().copied(), &name, 3);
        let hint = if !near.is_empty() {
            did_you_mean(&near)
        } else if names.is_empty() {
            "; it has no blob groups".to_string()
        } else {
            let quoted: Vec<String> = names.iter().take(10).map(|n| format!("'{n}'")).collect();
            let more = names.len().saturating_sub(10);
            format!(
                "; its families are {}{}",
                quoted.join(", "),
                if more > 0 {
                    format!(", ... ({more} more)")
                } else {
                    String::new()
                }
            )
        };
        errors.spanned(
            family,
            format!(
                "family '{}' is not in the manifest ({}): no blob group has that name{hint}",
                escape(&name),
                found.path.display()
            ),
        );
    }
}

/// `; did you mean 'a', 'b' or 'c'?`, or nothing without candidates.
fn did_you_mean(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => format!("; did you mean {one}?"),
        [init @ .., last] => format!("; did you mean {} or {last}?", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ck_jit_manifest::{Blob, Group, Manifest, SymbolSpec};
    use proc_macro2::TokenStream;
    use std::path::PathBuf;
    use std::rc::Rc;

    fn run(args: TokenStream, item: TokenStream, found: Option<&Found>) -> Vec<String> {
        run_in(args, item, found, FsPath::new("/src"))
    }

    /// As `run`, with relative `manifest_file` paths taken from `base`.
    fn run_in(
        args: TokenStream,
        item: TokenStream,
        found: Option<&Found>,
        base: &FsPath,
    ) -> Vec<String> {
        let mut errors = Errors::default();
        let outer = parse::args(args, &mut errors);
        let input = parse::input(item).expect("parses");
        check(outer, &input, found, base, &mut errors);
        errors.messages()
    }

    /// The directory of the `manifest_file` fixtures.
    fn fixtures() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
    }

    fn errors_of(item: TokenStream) -> Vec<String> {
        run(TokenStream::new(), item, None)
    }

    fn found(explicit: bool) -> Found {
        let mut manifest = Manifest::new("t", "/r");
        for group in ["vec", "fwd", "fwd_splitkv"] {
            manifest.groups.push(Group {
                name: group.into(),
                compiler: "c++".into(),
                args: vec!["{src}".into(), "-o".into(), "{out}".into()],
                cwd: None,
                symbol: SymbolSpec::Exact("{name}".into()),
                depfile: true,
                family: None,
                neutral: Default::default(),
            });
        }
        for (name, group) in [
            ("vadd_f32", 0),
            ("vadd_f64", 0),
            ("vmul_f32", 0),
            ("fmha_fwd_d128", 1),
            ("fmha_fwd_splitkv_d128", 2),
        ] {
            manifest.blobs.push(Blob {
                name: name.into(),
                source: format!("{name}.cpp"),
                group,
                symbol: None,
                meta: Default::default(),
            });
        }
        manifest.finish().unwrap();
        Found {
            path: PathBuf::from("/m/ck_jit_manifest.json"),
            explicit,
            manifest: Rc::new(Ok(manifest)),
        }
    }

    #[test]
    fn a_correct_single_fn_has_no_errors_and_defaults_to_its_name() {
        let mut errors = Errors::default();
        let input = parse::input(quote!(
            pub unsafe extern "C" fn vadd_f32(n: usize);
        ))
        .unwrap();
        let checked = check(
            Args::default(),
            &input,
            Some(&found(false)),
            FsPath::new("/src"),
            &mut errors,
        );
        assert!(errors.is_empty(), "{:?}", errors.messages());
        assert_eq!(checked[0].blob.value(), "vadd_f32");
        assert_eq!(checked[0].abi.value(), "C");
        assert!(checked[0].sig_ok && matches!(checked[0].symbol, Symbol::Manifest));
    }

    #[test]
    fn generics_are_refused() {
        assert_eq!(
            errors_of(quote!(
                unsafe extern "C" fn k<T>(x: T);
            )),
            ["a kernel cannot be generic: expected one C signature without `<...>` or `where`"]
        );
        assert_eq!(
            errors_of(quote!(
                extern "C" {
                    fn k(x: u8)
                    where
                        u8: Copy;
                }
            ))
            .len(),
            1
        );
    }

    #[test]
    fn variadics_are_refused() {
        assert_eq!(
            errors_of(quote!(
                extern "C" {
                    fn k(x: u8, ...);
                }
            )),
            ["a kernel cannot be variadic: expected a fixed list of C parameters, not `...`"]
        );
    }

    #[test]
    fn a_body_is_refused() {
        assert_eq!(
            errors_of(quote!(
                unsafe extern "C" fn k() {}
            )),
            ["a #[lazy_kernel] fn is declared, not defined: expected `;` instead of a body"]
        );
    }

    #[test]
    fn abis_other_than_c_are_refused() {
        for abi in ["Rust", "system", "stdcall"] {
            let abi = LitStr::new(abi, Span::call_site());
            assert_eq!(
                errors_of(quote!(extern #abi { fn k(); })),
                [format!(
                    "unsupported ABI \"{}\": expected extern \"C\" or extern \"C-unwind\"",
                    abi.value()
                )]
            );
        }
        assert!(errors_of(quote!(
            unsafe extern "C-unwind" fn k();
        ))
        .is_empty());
        assert!(errors_of(quote!(
            extern "C" {
                fn k();
            }
        ))
        .is_empty());
    }

    #[test]
    fn self_receivers_are_refused() {
        assert_eq!(
            errors_of(quote!(
                unsafe extern "C" fn k(&self);
            )),
            ["a kernel cannot take `self`: expected C parameters"]
        );
    }

    #[test]
    fn the_single_form_must_say_unsafe_extern_c() {
        let missing_unsafe = errors_of(quote!(
            extern "C" fn k();
        ));
        assert_eq!(
            missing_unsafe,
            ["expected `unsafe extern \"C\" fn`: calling a kernel is unsafe, so its declaration says `unsafe`"]
        );
        let missing_extern = errors_of(quote!(
            unsafe fn k();
        ));
        assert_eq!(
            missing_extern,
            ["expected `unsafe extern \"C\" fn`: a kernel has a C signature"]
        );
        assert_eq!(
            errors_of(quote!(
                fn k();
            ))
            .len(),
            1
        );
    }

    #[test]
    fn symbol_and_symbol_prefix_are_exclusive() {
        assert_eq!(
            run(
                quote!(symbol = "a", symbol_prefix = "b"),
                quote!(
                    unsafe extern "C" fn k();
                ),
                None
            ),
            ["`symbol` and `symbol_prefix` cannot both be given: expected one of them"]
        );
    }

    #[test]
    fn empty_or_nul_symbols_are_refused() {
        let errors = run(
            quote!(symbol_prefix = ""),
            quote!(
                unsafe extern "C" fn k();
            ),
            None,
        );
        assert_eq!(errors, ["expected a symbol name, found an empty string"]);
        let errors = run(
            quote!(symbol = "a\0b"),
            quote!(
                unsafe extern "C" fn k();
            ),
            None,
        );
        assert_eq!(errors, ["a symbol name cannot contain NUL"]);
    }

    #[test]
    fn blob_on_a_block_of_several_fns_is_refused_without_guessing_names() {
        assert_eq!(
            run(
                quote!(blob = "vadd_f32"),
                quote!(
                    extern "C" {
                        fn a();
                        #[lazy_kernel(blob = "c")]
                        fn b();
                    }
                ),
                Some(&found(false))
            ),
            [
                "`blob` names one blob but this block declares 2 fns: expected \
                 #[lazy_kernel(blob = \"...\")] on each fn instead"
                    .to_string(),
                format!("blob 'c' is not in the manifest (/m/ck_jit_manifest.json); {FILE_ROUTE}"),
            ]
        );
        assert!(run(
            quote!(blob = "x"),
            quote!(
                extern "C" {
                    fn a();
                }
            ),
            None
        )
        .is_empty());
    }

    #[test]
    fn non_fn_items_in_a_block_are_refused() {
        let errors = errors_of(quote!(
            extern "C" {
                fn a();
                static S: u8;
                type T;
            }
        ));
        assert_eq!(
            errors,
            [
                "expected only fn declarations in a #[lazy_kernel] block, found a static",
                "expected only fn declarations in a #[lazy_kernel] block, found a type",
            ]
        );
    }

    #[test]
    fn bad_blob_names_are_refused() {
        let errors = run(
            quote!(blob = "../x"),
            quote!(
                unsafe extern "C" fn k();
            ),
            None,
        );
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("bad blob name '../x'"), "{errors:?}");
        let errors = errors_of(quote!(
            unsafe extern "C" fn café();
        ));
        assert!(errors[0].starts_with("bad blob name 'café'"), "{errors:?}");
    }

    #[test]
    fn a_raw_fn_name_is_the_blob_name_without_r_hash() {
        let mut errors = Errors::default();
        let input = parse::input(quote!(
            unsafe extern "C" fn r#type();
        ))
        .unwrap();
        let checked = check(
            Args::default(),
            &input,
            None,
            FsPath::new("/src"),
            &mut errors,
        );
        assert_eq!(checked[0].blob.value(), "type");
    }

    #[test]
    fn unknown_blobs_name_the_manifest_and_suggest_close_names() {
        let errors = run(
            TokenStream::new(),
            quote!(
                unsafe extern "C" fn vad_f32();
            ),
            Some(&found(false)),
        );
        assert_eq!(
            errors,
            [format!(
                "blob 'vad_f32' is not in the manifest (/m/ck_jit_manifest.json); \
                 {FILE_ROUTE}; did you mean 'vadd_f32'?"
            )]
        );
        let errors = run(
            TokenStream::new(),
            quote!(
                extern "C" {
                    fn vadd_f16();
                    fn conv2d();
                }
            ),
            Some(&found(false)),
        );
        assert_eq!(
            errors,
            [
                format!(
                    "blob 'vadd_f16' is not in the manifest (/m/ck_jit_manifest.json); \
                     {FILE_ROUTE}; did you mean 'vadd_f32' or 'vadd_f64'?"
                ),
                format!(
                    "blob 'conv2d' is not in the manifest (/m/ck_jit_manifest.json); {FILE_ROUTE}"
                ),
            ]
        );
    }

    #[test]
    fn the_out_dir_manifest_is_not_checked_against_a_custom_manifest() {
        let item = quote!(
            unsafe extern "C" fn not_there();
        );
        let args = quote!(manifest = other::M);
        assert!(run(args.clone(), item.clone(), Some(&found(false))).is_empty());
        assert_eq!(run(args, item, Some(&found(true))).len(), 1);
    }

    #[test]
    fn a_broken_manifest_is_one_error_naming_its_path() {
        let broken = Found {
            path: PathBuf::from("/m/x.json"),
            explicit: true,
            manifest: Rc::new(Err("malformed manifest: eof".into())),
        };
        let errors = run(
            TokenStream::new(),
            quote!(
                extern "C" {
                    fn a();
                    fn b();
                }
            ),
            Some(&broken),
        );
        assert_eq!(
            errors,
            ["cannot use the ck-jit manifest /m/x.json: malformed manifest: eof"]
        );
    }

    #[test]
    fn per_fn_helpers_override_the_block_and_blob_is_not_given_twice() {
        let mut errors = Errors::default();
        let outer = parse::args(quote!(symbol = "entry", manifest = crate::M), &mut errors);
        let input = parse::input(quote!(
            extern "C" {
                fn a();
                #[lazy_kernel(blob = "vmul_f32", symbol_prefix = "vmul")]
                fn b();
            }
        ))
        .unwrap();
        let checked = check(outer, &input, None, FsPath::new("/src"), &mut errors);
        assert!(errors.is_empty(), "{:?}", errors.messages());
        assert!(matches!(&checked[0].symbol, Symbol::Exact(s) if s.value() == "entry"));
        assert!(matches!(&checked[1].symbol, Symbol::Prefix(s) if s.value() == "vmul"));
        assert_eq!(checked[1].blob.value(), "vmul_f32");
        assert!(checked.iter().all(|k| k.manifest.is_some()));
        let errors = run(
            quote!(blob = "x"),
            quote!(
                extern "C" {
                    #[lazy_kernel(blob = "y")]
                    fn a();
                }
            ),
            None,
        );
        assert_eq!(errors, ["duplicate argument `blob`"]);
    }

    #[test]
    fn every_mistake_is_reported_at_once() {
        let errors = run(
            quote!(blob = "x", bogus = 1),
            quote!(
                extern "system" {
                    fn a<T>(x: T);
                    fn b(&self, ...);
                    static S: u8;
                }
            ),
            None,
        );
        assert_eq!(errors.len(), 7, "{errors:#?}");
    }

    #[test]
    fn link_attributes_and_impl_trait_are_refused() {
        assert_eq!(
            errors_of(quote!(
                #[link(name = "k")]
                extern "C" {
                    #[link_name = "x"]
                    fn a();
                }
            ))
            .len(),
            2
        );
        assert_eq!(
            errors_of(quote!(
                unsafe extern "C" fn k(x: *const impl Copy) -> impl Copy;
            )),
            [
                "a kernel signature cannot use `impl Trait`: expected a concrete C type",
                "a kernel signature cannot use `impl Trait`: expected a concrete C type",
            ]
        );
    }

    #[test]
    fn a_family_is_a_single_fn_or_a_one_fn_block_and_names_no_blob() {
        let mut errors = Errors::default();
        let outer = parse::args(quote!(family = "fwd"), &mut errors);
        let input = parse::input(quote!(
            pub unsafe extern "C" fn fwd(x: i32) -> i32;
        ))
        .unwrap();
        let checked = check(
            outer,
            &input,
            Some(&found(false)),
            FsPath::new("/src"),
            &mut errors,
        );
        assert!(errors.is_empty(), "{:?}", errors.messages());
        assert_eq!(checked[0].family.as_ref().unwrap().value(), "fwd");
        assert!(!checked[0].blob_meant, "a family's fn name is not a blob");
        assert!(run(
            quote!(family = "fwd"),
            quote!(
                extern "C" {
                    fn attention(x: i32) -> i32;
                }
            ),
            Some(&found(true))
        )
        .is_empty());
    }

    #[test]
    fn family_with_several_fns_is_refused_once() {
        let errors = run(
            quote!(family = "fwd"),
            quote!(
                extern "C" {
                    fn a();
                    fn b();
                    fn c();
                }
            ),
            Some(&found(false)),
        );
        assert_eq!(
            errors,
            [
                "`family` gives every blob of a family one signature, but this block declares \
              3 fns: expected one fn, or #[lazy_kernel(family = \"...\")] on each fn instead"
            ]
        );
    }

    #[test]
    fn family_per_fn_in_a_block_mixes_with_plain_kernels() {
        let mut errors = Errors::default();
        let input = parse::input(quote!(
            extern "C" {
                fn vadd_f32();
                #[lazy_kernel(family = "fwd_splitkv")]
                fn splitkv();
            }
        ))
        .unwrap();
        let checked = check(
            Args::default(),
            &input,
            Some(&found(true)),
            FsPath::new("/src"),
            &mut errors,
        );
        assert!(errors.is_empty(), "{:?}", errors.messages());
        assert!(checked[0].family.is_none() && checked[0].blob_meant);
        assert_eq!(checked[1].family.as_ref().unwrap().value(), "fwd_splitkv");
    }

    #[test]
    fn family_and_blob_exclude_each_other_wherever_given() {
        let both = "`family` and `blob` exclude each other: a family kernel selects its blob \
                    at run time; expected one of them";
        let single = quote!(
            unsafe extern "C" fn k();
        );
        assert_eq!(
            run(quote!(family = "fwd", blob = "vadd_f32"), single, None),
            [both]
        );
        let block = quote!(
            extern "C" {
                #[lazy_kernel(blob = "vadd_f32")]
                fn k();
            }
        );
        assert_eq!(run(quote!(family = "fwd"), block, None), [both]);
        let block = quote!(
            extern "C" {
                #[lazy_kernel(family = "fwd")]
                fn k();
            }
        );
        assert_eq!(run(quote!(blob = "vadd_f32"), block, None), [both]);
        let block = quote!(
            extern "C" {
                #[lazy_kernel(family = "fwd")]
                fn k();
            }
        );
        assert_eq!(
            run(quote!(family = "bwd"), block, None),
            ["duplicate argument `family`"]
        );
    }

    #[test]
    fn unknown_families_name_the_manifest_and_suggest_groups() {
        let errors = run(
            quote!(family = "fwdd"),
            quote!(
                unsafe extern "C" fn k();
            ),
            Some(&found(false)),
        );
        assert_eq!(
            errors,
            [
                "family 'fwdd' is not in the manifest (/m/ck_jit_manifest.json): no blob group \
              has that name; did you mean 'fwd'?"
            ]
        );
        let errors = run(
            quote!(family = "convolution"),
            quote!(
                extern "C" {
                    fn a();
                    fn b();
                }
            ),
            Some(&found(false)),
        );
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert_eq!(
            errors[1],
            "family 'convolution' is not in the manifest (/m/ck_jit_manifest.json): no blob \
             group has that name; its families are 'fwd', 'fwd_splitkv', 'vec'"
        );
    }

    #[test]
    fn a_family_with_its_own_manifest_is_checked_only_against_an_explicit_one() {
        let item = quote!(
            unsafe extern "C" fn k();
        );
        let args = quote!(family = "nope", manifest = other::M);
        assert!(run(args.clone(), item.clone(), Some(&found(false))).is_empty());
        assert_eq!(run(args, item, Some(&found(true))).len(), 1);
    }

    #[test]
    fn bad_family_names_are_refused() {
        let errors = run(
            quote!(family = "a b"),
            quote!(
                unsafe extern "C" fn k();
            ),
            Some(&found(true)),
        );
        assert_eq!(
            errors,
            ["bad family name 'a b': only ASCII letters, digits, '_', '-' and '.' are allowed"]
        );
    }

    #[test]
    fn a_broken_manifest_is_one_error_for_blobs_and_families_together() {
        let broken = Found {
            path: PathBuf::from("/m/x.json"),
            explicit: true,
            manifest: Rc::new(Err("malformed manifest: eof".into())),
        };
        let errors = run(
            TokenStream::new(),
            quote!(
                extern "C" {
                    fn a();
                    #[lazy_kernel(family = "fwd")]
                    fn b();
                }
            ),
            Some(&broken),
        );
        assert_eq!(errors.len(), 1, "{errors:#?}");
    }

    #[test]
    fn a_never_returning_kernel_is_accepted() {
        assert!(errors_of(quote!(
            unsafe extern "C" fn abort_all() -> !;
        ))
        .is_empty());
    }

    #[test]
    fn a_manifest_file_kernel_is_checked_against_its_file_only() {
        let item = quote!(
            extern "C" {
                fn fb_scale();
                fn fb_scal();
                fn vadd_f32();
            }
        );
        let args = quote!(manifest_file = "fallback/ck_jit_manifest.json");
        // The explicit manifest records vadd_f32 but not fb_scale: it is not
        // asked about a kernel with its own file.
        assert_eq!(
            run_in(args, item, Some(&found(true)), &fixtures()),
            [
                "blob 'fb_scal' is not in the manifest file fallback/ck_jit_manifest.json \
                 named by manifest_file; did you mean 'fb_scale'?",
                "blob 'vadd_f32' is not in the manifest file fallback/ck_jit_manifest.json \
                 named by manifest_file",
            ]
        );
    }

    #[test]
    fn a_manifest_file_resolves_from_the_base_and_overrides_per_fn() {
        let mut errors = Errors::default();
        let outer = parse::args(quote!(manifest = crate::M), &mut errors);
        let input = parse::input(quote!(
            extern "C" {
                #[lazy_kernel(manifest_file = "fallback/ck_jit_manifest.json")]
                fn fb_offset();
                fn vadd_f32();
            }
        ))
        .unwrap();
        let checked = check(outer, &input, None, &fixtures(), &mut errors);
        assert!(errors.is_empty(), "{:?}", errors.messages());
        let Some(ManifestRef::File(file)) = &checked[0].manifest else {
            panic!("not a manifest file")
        };
        assert_eq!(file.path, fixtures().join("fallback/ck_jit_manifest.json"));
        assert!(file.usable_path().is_some_and(|p| p.starts_with('/')));
        assert!(matches!(checked[1].manifest, Some(ManifestRef::Static(_))));
    }

    #[test]
    fn manifest_file_excludes_manifest_and_family() {
        let single = quote!(
            unsafe extern "C" fn fb_scale();
        );
        assert_eq!(
            run_in(
                quote!(
                    manifest = crate::M,
                    manifest_file = "fallback/ck_jit_manifest.json"
                ),
                single.clone(),
                None,
                &fixtures()
            ),
            ["`manifest` and `manifest_file` cannot both be given: expected one of them"]
        );
        assert_eq!(
            run_in(
                quote!(
                    family = "host",
                    manifest_file = "fallback/ck_jit_manifest.json"
                ),
                single,
                None,
                &fixtures()
            ),
            [
                "`manifest_file` cannot be used with `family`: a family's table is read from an \
              embedded manifest; expected manifest = path"
            ]
        );
    }

    #[test]
    fn an_unreadable_manifest_file_is_one_error_naming_both_paths() {
        let errors = run_in(
            quote!(manifest_file = "missing.json"),
            quote!(
                extern "C" {
                    fn a();
                    fn b();
                }
            ),
            None,
            FsPath::new("/nowhere"),
        );
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0]
                .starts_with("cannot use the manifest file missing.json (/nowhere/missing.json): "),
            "{errors:?}"
        );
    }
}
