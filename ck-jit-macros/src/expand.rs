//! Generation: runs the pipeline (`parse`, `valid`) and turns each checked
//! kernel into an `unsafe fn` wrapper and a companion module of the same
//! name, or into a stub where the signature was refused.
//!
//! Generated code names everything by absolute path (`::core`,
//! `::ck_jit_rt::__private`) so the user's own names cannot capture it, and
//! it decides nothing: every check lives in `valid`.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{
    Attribute, FnArg, GenericArgument, LitStr, Path, PathArguments, PathSegment, ReturnType, Token,
    Type,
};

use crate::errors::Errors;
use crate::valid::{Checked, ManifestRef, Symbol};
use crate::{manifest, parse, valid};

/// `#[lazy_kernel(args)] item`, expanded; `source_file` is the file the
/// attribute is written in, when it has one on disk.
pub(crate) fn lazy_kernel(
    args: TokenStream,
    item: TokenStream,
    source_file: Option<std::path::PathBuf>,
) -> TokenStream {
    let mut errors = Errors::default();
    let outer = parse::args(args, &mut errors);
    let input = match parse::input(item.clone()) {
        Ok(input) => input,
        Err(e) => {
            errors.push(e);
            let errors = errors.to_compile_errors();
            // Not something this attribute understands: keep it as written
            // so its uses still resolve and the mistake is reported once.
            return quote!(#errors #item);
        }
    };
    let found = manifest::find();
    let base = manifest::base_dir(source_file);
    let kernels = valid::check(outer, &input, found.as_ref(), &base, &mut errors);
    let mut out = errors.to_compile_errors();
    for checked in &kernels {
        // A family's table needs an embedded manifest; `valid` refused a
        // manifest file with one.
        let family_ok = !matches!(checked.manifest, Some(ManifestRef::File(_)));
        out.extend(match (&checked.family, checked.sig_ok) {
            (None, true) => kernel(checked),
            (None, false) => stub(checked),
            (Some(family), true) if family_ok => family_kernel(checked, family),
            (Some(family), _) => family_stub(checked, family),
        });
    }
    out
}

/// What the wrapper fn and the companion module of a kernel are made of.
struct Parts<'a> {
    /// Parameter types as written (for items outside the module).
    tys: Vec<&'a Type>,
    /// `__arg0`, `__arg1`, ...
    args: Vec<Ident>,
    /// Parameter types as the companion module names them.
    mod_tys: Vec<Type>,
    /// The return type as the companion module names it.
    mod_output: ReturnType,
    /// The `Embedded` manifest static, as the companion module names it
    /// (the crate's default for a kernel of a manifest file, which has no
    /// family and so does not use it).
    manifest: TokenStream,
    /// The expression of the kernel's `Slot` (from the module's `BLOB`).
    slot: TokenStream,
    /// Items that make cargo rebuild the crate when the kernel's manifest
    /// file changes; empty for an embedded manifest.
    tracking: TokenStream,
    /// The `SymbolOverride` expression.
    symbol: TokenStream,
}

fn parts<'a>(k: &'a Checked) -> Parts<'a> {
    let sig = &k.kernel.sig;
    let span = sig.ident.span();
    let tys: Vec<&Type> = param_types(k).collect();
    let args: Vec<Ident> = (0..tys.len())
        .map(|i| Ident::new(&format!("__arg{i}"), span))
        .collect();
    // The module sees the caller's names through `use super::*`; only paths
    // that start at `self` or `super`, or that the module shadows, need one
    // more step up.
    let mod_tys: Vec<Type> = tys
        .iter()
        .map(|ty| {
            let mut ty = (*ty).clone();
            rebase_type(&mut ty);
            ty
        })
        .collect();
    let mut mod_output = match &sig.output {
        ReturnType::Type(_, ty) if matches!(**ty, Type::ImplTrait(_)) => ReturnType::Default,
        output => output.clone(),
    };
    if let ReturnType::Type(_, ty) = &mut mod_output {
        rebase_type(ty);
    }
    let manifest = match &k.manifest {
        Some(ManifestRef::Static(path)) => {
            let mut path = path.clone();
            rebase_path(&mut path);
            quote!(#path)
        }
        Some(ManifestRef::File(_)) | None => quote_spanned!(span=> crate::__CK_JIT_MANIFEST),
    };
    let symbol = match &k.symbol {
        Symbol::Manifest => quote_spanned!(span=> ::ck_jit_rt::__private::SymbolOverride::Manifest),
        Symbol::Exact(s) => {
            quote_spanned!(span=> ::ck_jit_rt::__private::SymbolOverride::Exact(#s))
        }
        Symbol::Prefix(s) => {
            quote_spanned!(span=> ::ck_jit_rt::__private::SymbolOverride::Prefix(#s))
        }
    };
    let (slot, tracking) = match &k.manifest {
        Some(ManifestRef::File(file)) => {
            // An unreadable file was reported; an empty path keeps the
            // expansion free of a second error about it.
            let path = file.usable_path().unwrap_or_default();
            let tracking = (!path.is_empty()).then(|| {
                // Read by the compiler, so its dep-info lists the file and
                // cargo rebuilds the crate when it changes; never used.
                quote_spanned!(span=> const _: &[u8] = ::core::include_bytes!(#path);)
            });
            (
                quote_spanned!(span=>
                    ::ck_jit_rt::__private::Slot::in_manifest_file(#path, BLOB, #symbol)
                ),
                quote!(#tracking),
            )
        }
        _ => (
            quote_spanned!(span=> ::ck_jit_rt::__private::Slot::new(&#manifest, BLOB, #symbol)),
            TokenStream::new(),
        ),
    };
    Parts {
        tys,
        args,
        mod_tys,
        mod_output,
        manifest,
        symbol,
        slot,
        tracking,
    }
}

/// The wrapper fn and its companion module.
fn kernel(k: &Checked) -> TokenStream {
    let sig = &k.kernel.sig;
    let name = &sig.ident;
    let vis = &k.kernel.vis;
    let span = name.span();
    let fn_attrs = fn_attrs(k);
    let mod_attrs = mod_attrs(k);
    let separator = has_docs(k).then(|| quote!(#[doc = ""]));
    let fn_doc = fn_doc(k);
    let mod_doc = format!(
        "Companion of the kernel fn `{name}`: its blob name, C signature and fallible access."
    );
    let Parts {
        tys,
        args,
        mod_tys,
        mod_output,
        slot,
        tracking,
        ..
    } = parts(k);
    let output = &sig.output;
    let abi = &k.abi;
    let blob = &k.blob;

    quote_spanned! {span=>
        #(#fn_attrs)*
        #separator
        #[doc = #fn_doc]
        #[inline]
        #[track_caller]
        #vis unsafe fn #name(#(#args: #tys),*) #output {
            let __p = #name::__SLOT.get();
            // SAFETY: the slot holds the address of the blob's entry point,
            // declared with this signature by the #[lazy_kernel] item.
            let __f: #name::Fn = unsafe { ::core::mem::transmute::<*const (), #name::Fn>(__p) };
            // SAFETY: the caller upholds the kernel's contract (this fn is unsafe).
            unsafe { __f(#(#args),*) }
        }

        #(#mod_attrs)*
        #separator
        #[doc = #mod_doc]
        #[allow(non_snake_case, dead_code)]
        #vis mod #name {
            #[allow(unused_imports, clippy::wildcard_imports)]
            use super::*;

            /// The blob this kernel is compiled from.
            pub const BLOB: &str = #blob;

            /// The kernel's C signature.
            pub type Fn = unsafe extern #abi fn(#(#mod_tys),*) #mod_output;

            /// Where the loaded entry point is cached.
            #[doc(hidden)]
            pub static __SLOT: ::ck_jit_rt::__private::Slot = #slot;

            // Listed for the program at start-up, so that warming the blob
            // up by name resolves this kernel's symbol and fills its slot.
            ::ck_jit_rt::__declare!(&__SLOT);

            #tracking

            /// Compiles (unless a cached build is found) and loads the
            /// kernel, returning its entry point or the runtime's error.
            ///
            /// Calling the pointer is `unsafe`, with the same contract as
            /// calling the kernel fn.
            ///
            /// # Errors
            ///
            /// If the blob cannot be compiled or loaded, or its entry point
            /// is not found.
            pub fn try_get() -> ::core::result::Result<Fn, ::ck_jit_rt::Error> {
                let __p = __SLOT.try_get()?;
                // SAFETY: as in the kernel fn, the slot holds the entry point
                // declared with this signature.
                ::core::result::Result::Ok(unsafe { ::core::mem::transmute::<*const (), Fn>(__p) })
            }

            /// Compiles (unless a cached build is found) and loads the
            /// kernel ahead of its first call.
            ///
            /// # Errors
            ///
            /// As [`try_get`].
            pub fn prepare() -> ::core::result::Result<(), ::ck_jit_rt::Error> {
                try_get().map(|_| ())
            }
        }
    }
}

/// The module of a family kernel: its signature, the family's dispatch
/// table, selection and the call through a chosen blob.
fn family_kernel(k: &Checked, family: &LitStr) -> TokenStream {
    let name = &k.kernel.sig.ident;
    let vis = &k.kernel.vis;
    let span = name.span();
    let mod_attrs = mod_attrs(k);
    let call_attrs: Vec<&Attribute> = fn_attrs(k)
        .filter(|a| !a.path().is_ident("cfg") && !a.path().is_ident("doc"))
        .collect();
    let inline = (!call_attrs.iter().any(|a| a.path().is_ident("inline")))
        .then(|| quote_spanned!(span=> #[inline]));
    let separator = has_docs(k).then(|| quote!(#[doc = ""]));
    let mod_doc = family_doc(k, family);
    let Parts {
        args,
        mod_tys,
        mod_output,
        manifest,
        symbol,
        ..
    } = parts(k);
    let abi = &k.abi;
    let lookup = family_lookup(span);
    let calls = family_calls(span, &call_attrs, inline, &args, &mod_tys, &mod_output);

    quote_spanned! {span=>
        #(#mod_attrs)*
        #separator
        #[doc = #mod_doc]
        #[allow(non_snake_case, dead_code)]
        #vis mod #name {
            #[allow(unused_imports, clippy::wildcard_imports)]
            use super::*;

            /// The family: the manifest group whose blobs share this signature.
            pub const FAMILY: &str = #family;

            /// The C signature every blob of the family exports.
            pub type Fn = unsafe extern #abi fn(#(#mod_tys),*) #mod_output;

            /// Marks this family's handles, so that a kernel of another
            /// family has another type.
            pub enum Family {}

            /// A chosen blob of this family, from [`select`] or [`by_name`]:
            /// `Copy`, and a call through it costs one acquire load.
            pub type Kernel = ::ck_jit_rt::Kernel<Family>;

            /// One slot per blob of the family, built from the manifest on
            /// first use.
            #[doc(hidden)]
            pub static __FAMILY: ::ck_jit_rt::__private::FamilySlots<Family> =
                ::ck_jit_rt::__private::FamilySlots::new(&#manifest, FAMILY, #symbol);

            // Listed for the program at start-up, so that warming a member
            // up by name resolves the family's symbol and fills its slot.
            ::ck_jit_rt::__declare!(&__FAMILY);

            #lookup

            #calls
        }
    }
}

/// The family module's lookups: its blobs, selection by query and by name.
fn family_lookup(span: Span) -> TokenStream {
    quote_spanned! {span=>
    /// Every blob of the family with its metadata (what its kernel
    /// supports), in name order; a blob's position is its index.
    ///
    /// # Errors
    ///
    /// If the manifest cannot be parsed.
    pub fn blobs(
    ) -> ::core::result::Result<::ck_jit_rt::Members<Family>, ::ck_jit_rt::Error> {
        __FAMILY.members()
    }

    /// The blob that best supports what `query` needs (see
    /// `ck_jit_rt::family` for the preference order). Select once
    /// per configuration and keep the [`Kernel`].
    ///
    /// # Errors
    ///
    /// When no blob matches, an error saying, for each constraint,
    /// how many blobs it let through and which values it saw.
    pub fn select(query: &::ck_jit_rt::Query) -> ::core::result::Result<Kernel, ::ck_jit_rt::Error> {
        __FAMILY.select(query)
    }

    /// Every blob that meets `query`, best first.
    ///
    /// # Errors
    ///
    /// If the manifest cannot be parsed.
    pub fn candidates(query: &::ck_jit_rt::Query) -> ::core::result::Result<::std::vec::Vec<Kernel>, ::ck_jit_rt::Error> {
        __FAMILY.candidates(query)
    }

    /// The blob named `blob`, which must belong to this family.
    ///
    /// # Errors
    ///
    /// If it does not, naming its own family or close names.
    pub fn by_name(blob: &str) -> ::core::result::Result<Kernel, ::ck_jit_rt::Error> {
        __FAMILY.by_name(blob)
    }
    }
}

/// The family module's call through a chosen blob, its `try_get` and
/// `prepare`.
fn family_calls(
    span: Span,
    call_attrs: &[&Attribute],
    inline: Option<TokenStream>,
    args: &[Ident],
    mod_tys: &[Type],
    mod_output: &ReturnType,
) -> TokenStream {
    quote_spanned! {span=>
    #(#call_attrs)*
    /// Calls the chosen blob. Its first call compiles the blob
    /// (unless a cached build is found) and loads it; later calls
    /// cost one acquire load and an indirect call.
    ///
    /// # Panics
    ///
    /// If the blob cannot be compiled or loaded, or its entry point
    /// is not found; the message is the runtime's error.
    /// [`prepare`] and [`try_get`] report that as a `Result`.
    ///
    /// # Safety
    ///
    /// This calls foreign code through the declared signature: it
    /// must match the blob's entry point, and the arguments must
    /// meet the kernel's own requirements.
    #inline
    #[track_caller]
    pub unsafe fn call(kernel: Kernel, #(#args: #mod_tys),*) #mod_output {
        let __p = kernel.get();
        // SAFETY: the slot holds the address of a family blob's
        // entry point, declared with this signature.
        let __f: Fn = unsafe { ::core::mem::transmute::<*const (), Fn>(__p) };
        // SAFETY: the caller upholds the kernel's contract (this fn is unsafe).
        unsafe { __f(#(#args),*) }
    }

    /// Compiles (unless a cached build is found) and loads the
    /// chosen blob, returning its entry point or the runtime's
    /// error. Calling the pointer has the contract of [`call`].
    ///
    /// # Errors
    ///
    /// If the blob cannot be compiled or loaded, or its entry point
    /// is not found.
    pub fn try_get(kernel: Kernel) -> ::core::result::Result<Fn, ::ck_jit_rt::Error> {
        let __p = kernel.try_get()?;
        // SAFETY: as in `call`.
        ::core::result::Result::Ok(unsafe { ::core::mem::transmute::<*const (), Fn>(__p) })
    }

    /// Compiles (unless a cached build is found) and loads the
    /// chosen blob ahead of its first call.
    ///
    /// # Errors
    ///
    /// As [`try_get`].
    pub fn prepare(kernel: Kernel) -> ::core::result::Result<(), ::ck_jit_rt::Error> {
        try_get(kernel).map(|_| ())
    }
    }
}

/// The family module's names with roughly their shapes, for a family
/// kernel whose signature was refused.
fn family_stub(k: &Checked, family: &LitStr) -> TokenStream {
    let sig = &k.kernel.sig;
    let name = &sig.ident;
    let vis = &k.kernel.vis;
    let span = name.span();
    let mod_attrs = mod_attrs(k);
    let generics = &sig.generics;
    let where_clause = &sig.generics.where_clause;
    let Parts {
        mod_tys,
        mod_output,
        ..
    } = parts(k);
    quote_spanned! {span=>
        #(#mod_attrs)*
        #[allow(non_snake_case, dead_code, missing_docs)]
        #vis mod #name {
            #[allow(unused_imports, clippy::wildcard_imports)]
            use super::*;
            pub const FAMILY: &str = #family;
            pub enum Family {}
            pub type Kernel = ::ck_jit_rt::Kernel<Family>;
            pub fn blobs(
            ) -> ::core::result::Result<::ck_jit_rt::Members<Family>, ::ck_jit_rt::Error> {
                ::core::unreachable!()
            }
            pub fn select(_: &::ck_jit_rt::Query) -> ::core::result::Result<Kernel, ::ck_jit_rt::Error> {
                ::core::unreachable!()
            }
            pub fn candidates(_: &::ck_jit_rt::Query) -> ::core::result::Result<::std::vec::Vec<Kernel>, ::ck_jit_rt::Error> {
                ::core::unreachable!()
            }
            pub fn by_name(_: &str) -> ::core::result::Result<Kernel, ::ck_jit_rt::Error> {
                ::core::unreachable!()
            }
            pub unsafe fn call #generics (_: Kernel, #(_: #mod_tys),*) #mod_output #where_clause {
                ::core::unreachable!()
            }
            pub fn try_get(_: Kernel) -> ::core::result::Result<*const (), ::ck_jit_rt::Error> {
                ::core::unreachable!()
            }
            pub fn prepare(_: Kernel) -> ::core::result::Result<(), ::ck_jit_rt::Error> {
                ::core::unreachable!()
            }
        }
    }
}

/// Something with the kernel's names and roughly its shape, for a kernel
/// whose signature was refused: uses of it then resolve, so the refusal is
/// the only error.
fn stub(k: &Checked) -> TokenStream {
    let sig = &k.kernel.sig;
    let name = &sig.ident;
    let vis = &k.kernel.vis;
    let span = name.span();
    let fn_attrs = fn_attrs(k);
    let mod_attrs = mod_attrs(k);
    let generics = &sig.generics;
    let where_clause = &sig.generics.where_clause;
    let tys = param_types(k);
    let output = match &sig.output {
        ReturnType::Type(_, ty) if matches!(**ty, Type::ImplTrait(_)) => ReturnType::Default,
        output => output.clone(),
    };
    let blob = &k.blob;
    quote_spanned! {span=>
        #(#fn_attrs)*
        #vis unsafe fn #name #generics (#(_: #tys),*) #output #where_clause {
            ::core::unreachable!()
        }

        #(#mod_attrs)*
        #[allow(non_snake_case, dead_code)]
        #vis mod #name {
            pub const BLOB: &str = #blob;
            pub fn try_get() -> ::core::result::Result<*const (), ::ck_jit_rt::Error> {
                ::core::unreachable!()
            }
            pub fn prepare() -> ::core::result::Result<(), ::ck_jit_rt::Error> {
                ::core::unreachable!()
            }
        }
    }
}

fn param_types<'a>(k: &'a Checked) -> impl Iterator<Item = &'a Type> {
    k.kernel.sig.inputs.iter().filter_map(|arg| match arg {
        FnArg::Typed(typed) => Some(&*typed.ty),
        FnArg::Receiver(_) => None,
    })
}

/// Attributes of the generated fn: the block's, then the fn's own, less
/// the linker attributes `valid` refused.
fn fn_attrs<'a>(k: &'a Checked) -> impl Iterator<Item = &'a Attribute> {
    k.block_cfgs
        .iter()
        .chain(&k.block_attrs)
        .copied()
        .chain(&k.kernel.attrs)
        .filter(|a| !a.path().is_ident("link_name") && !a.path().is_ident("link_ordinal"))
}

/// Attributes of the companion module: the `#[cfg]`s, so it exists exactly
/// when the fn does, and the fn's docs.
fn mod_attrs<'a>(k: &'a Checked) -> impl Iterator<Item = &'a Attribute> {
    k.block_cfgs.iter().copied().chain(
        k.kernel
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("cfg") || a.path().is_ident("doc")),
    )
}

fn has_docs(k: &Checked) -> bool {
    k.kernel.attrs.iter().any(|a| a.path().is_ident("doc"))
}

fn fn_doc(k: &Checked) -> String {
    let name = k.kernel.sig.ident.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name);
    let blob = k.blob.value();
    format!(
        "Lazily compiled kernel from blob `{blob}`.

The first call compiles the blob (unless a cached build is found) and loads \
it; later calls cost one acquire load and an indirect call. `{name}::prepare()` \
does that work ahead of time, and `{name}::try_get()` returns the entry point \
or the error instead of panicking.

# Panics

If the blob cannot be compiled or loaded, or its entry point is not found; \
the message is the runtime's error.

# Safety

This calls foreign code through the declared signature: it must match the \
blob's entry point, and the arguments must meet the kernel's own \
requirements."
    )
}

fn family_doc(k: &Checked, family: &LitStr) -> String {
    let name = k.kernel.sig.ident.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name);
    let family = family.value();
    format!(
        "Kernel family `{family}`: every blob of the manifest group `{family}` exports \
this signature, and which one runs is chosen at run time by attributes.

A query states what an operation needs; each blob's metadata states what its \
kernel supports. `{name}::select(&query)` picks the best blob once and returns a \
`Copy` [`Kernel`]({name}::Kernel); `{name}::call(kernel, ...)` then costs one \
acquire load and an indirect call. `{name}::by_name(\"...\")` picks a blob by \
name, `{name}::blobs()` lists them with their metadata.

```text
let kernel = {name}::select(&ck_jit_rt::Query::new().eq(\"dtype\", \"bf16\").ge(\"hdim\", 128))?;
{name}::prepare(kernel)?; // optional: compile and load now
unsafe {{ {name}::call(kernel, /* args */) }};
```"
    )
}

/// Makes a type written in the caller's module mean the same inside the
/// generated module.
fn rebase_type(ty: &mut Type) {
    match ty {
        Type::Array(t) => rebase_type(&mut t.elem),
        Type::Group(t) => rebase_type(&mut t.elem),
        Type::Paren(t) => rebase_type(&mut t.elem),
        Type::Ptr(t) => rebase_type(&mut t.elem),
        Type::Reference(t) => rebase_type(&mut t.elem),
        Type::Slice(t) => rebase_type(&mut t.elem),
        Type::Tuple(t) => t.elems.iter_mut().for_each(rebase_type),
        Type::BareFn(t) => {
            for arg in &mut t.inputs {
                rebase_type(&mut arg.ty);
            }
            if let ReturnType::Type(_, ty) = &mut t.output {
                rebase_type(ty);
            }
        }
        Type::Path(t) => {
            if let Some(qself) = &mut t.qself {
                rebase_type(&mut qself.ty);
            }
            rebase_path(&mut t.path);
        }
        _ => {}
    }
}

/// Type names a companion module defines itself; a caller's type of the
/// same name would be shadowed there, so it is named through `super::`.
const GENERATED_TYPES: [&str; 3] = ["Fn", "Kernel", "Family"];

/// Makes a path written in the caller's module mean the same inside the
/// generated module: `self::x` becomes `super::x`, `super::x` becomes
/// `super::super::x`, and a name the module defines itself
/// ([`GENERATED_TYPES`]) is prefixed with `super::`. Absolute paths stay;
/// other relative paths resolve through the module's `use super::*`, which
/// also keeps extern crate names working.
fn rebase_path(path: &mut Path) {
    for segment in &mut path.segments {
        match &mut segment.arguments {
            PathArguments::AngleBracketed(args) => {
                for arg in &mut args.args {
                    match arg {
                        GenericArgument::Type(ty) => rebase_type(ty),
                        GenericArgument::AssocType(assoc) => rebase_type(&mut assoc.ty),
                        _ => {}
                    }
                }
            }
            PathArguments::Parenthesized(args) => {
                args.inputs.iter_mut().for_each(rebase_type);
                if let ReturnType::Type(_, ty) = &mut args.output {
                    rebase_type(ty);
                }
            }
            PathArguments::None => {}
        }
    }
    if path.leading_colon.is_some() {
        return;
    }
    let Some(first) = path.segments.first_mut() else {
        return;
    };
    if first.ident == "self" {
        first.ident = Ident::new("super", first.ident.span());
    } else if first.ident == "super" || GENERATED_TYPES.iter().any(|n| first.ident == n) {
        let up: Token![super] = Token![super](first.ident.span());
        path.segments.insert(0, PathSegment::from(up));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn expand(args: TokenStream, item: TokenStream) -> String {
        lazy_kernel(args, item, None).to_string()
    }

    /// The expansion parsed back as items, to look at them by structure.
    fn items(args: TokenStream, item: TokenStream) -> Vec<syn::Item> {
        syn::parse2::<syn::File>(lazy_kernel(args, item, None))
            .expect("expansion parses")
            .items
    }

    fn flat(tokens: impl quote::ToTokens) -> String {
        tokens.to_token_stream().to_string()
    }

    #[test]
    fn a_single_fn_becomes_a_wrapper_and_a_companion_module() {
        let items = items(
            quote!(),
            quote! {
                /// Adds.
                pub unsafe extern "C" fn vadd_f32(a: *const f32, _: *mut f32, n: usize) -> i32;
            },
        );
        let [syn::Item::Fn(f), syn::Item::Mod(m)] = items.as_slice() else {
            panic!("expected a fn and a mod, got {}", flat(quote!(#(#items)*)));
        };
        assert_eq!(f.sig.ident, "vadd_f32");
        assert!(f.sig.unsafety.is_some());
        assert_eq!(
            flat(&f.sig),
            "unsafe fn vadd_f32 (__arg0 : * const f32 , __arg1 : * mut f32 , __arg2 : usize) -> i32"
        );
        assert_eq!(flat(&f.vis), "pub");
        let attrs = &f.attrs;
        assert!(flat(quote!(#(#attrs)*)).contains("Adds."), "user docs kept");
        assert!(flat(&f.block).contains("vadd_f32 :: __SLOT . get ()"));
        assert!(flat(&f.block).contains("__f (__arg0 , __arg1 , __arg2)"));

        assert_eq!(m.ident, "vadd_f32");
        let body = flat(m);
        assert!(
            body.contains("pub const BLOB : & str = \"vadd_f32\""),
            "{body}"
        );
        assert!(
            body.contains(
                "pub type Fn = unsafe extern \"C\" fn (* const f32 , * mut f32 , usize) -> i32"
            ),
            "{body}"
        );
        assert!(body.contains(
            "pub static __SLOT : :: ck_jit_rt :: __private :: Slot = :: ck_jit_rt :: __private :: Slot :: new (& crate :: __CK_JIT_MANIFEST , BLOB , :: ck_jit_rt :: __private :: SymbolOverride :: Manifest)"
        ), "{body}");
        assert!(
            body.contains(":: ck_jit_rt :: __declare ! (& __SLOT)"),
            "listed for warm-up by name: {body}"
        );
        assert!(body.contains("pub fn try_get ()"));
        assert!(body.contains("pub fn prepare ()"));
    }

    #[test]
    fn each_fn_of_a_block_gets_its_own_pair_with_its_overrides() {
        let items = items(
            quote!(manifest = kernels::MANIFEST),
            quote! {
                extern "C-unwind" {
                    #[cfg(feature = "f32")]
                    pub(crate) fn add(a: *const f32);
                    #[lazy_kernel(blob = "vmul_f32", symbol_prefix = "vmul")]
                    fn mul();
                    #[lazy_kernel(symbol = "entry")]
                    fn sub() -> !;
                }
            },
        );
        assert_eq!(items.len(), 6);
        let all = flat(quote!(#(#items)*));
        assert!(
            !all.contains("lazy_kernel"),
            "helper attributes stripped: {all}"
        );
        assert!(all.contains("unsafe extern \"C-unwind\" fn (* const f32)"));
        assert!(all.contains("SymbolOverride :: Prefix (\"vmul\")"));
        assert!(all.contains("SymbolOverride :: Exact (\"entry\")"));
        assert!(all.contains("BLOB : & str = \"vmul_f32\""));
        assert!(all.contains("Slot :: new (& kernels :: MANIFEST ,"));
        assert!(all.contains("fn () -> !"));
        let (syn::Item::Fn(add), syn::Item::Mod(add_mod)) = (&items[0], &items[1]) else {
            panic!("{all}");
        };
        assert_eq!(flat(&add.vis), "pub (crate)");
        assert_eq!(flat(&add_mod.vis), "pub (crate)");
        for attrs in [&add.attrs, &add_mod.attrs] {
            assert!(
                flat(quote!(#(#attrs)*)).contains("cfg (feature = \"f32\")"),
                "cfg on both"
            );
        }
    }

    #[test]
    fn paths_are_rebased_for_the_companion_module() {
        let cases: [(Path, &str); 5] = [
            (parse_quote!(crate::M), "crate :: M"),
            (parse_quote!(::other::M), ":: other :: M"),
            (parse_quote!(self::M), "super :: M"),
            (parse_quote!(super::m::M), "super :: super :: m :: M"),
            (parse_quote!(m::M), "m :: M"),
        ];
        for (mut path, want) in cases {
            rebase_path(&mut path);
            assert_eq!(flat(&path), want);
        }
        let mut ty: Type =
            parse_quote!(*const Option<(super::A, [self::B; 2], extern "C" fn(&super::C))>);
        rebase_type(&mut ty);
        assert_eq!(
            flat(&ty),
            "* const Option < (super :: super :: A , [super :: B ; 2] , extern \"C\" fn (& super :: super :: C)) >"
        );
    }

    #[test]
    fn the_signature_keeps_its_types_outside_and_rebases_them_inside() {
        let all = expand(
            quote!(manifest = self::M),
            quote!(
                pub unsafe extern "C" fn k(p: *const super::P) -> self::R;
            ),
        );
        assert!(
            all.contains("(__arg0 : * const super :: P) -> self :: R"),
            "{all}"
        );
        assert!(
            all.contains("fn (* const super :: super :: P) -> super :: R"),
            "{all}"
        );
        assert!(all.contains("Slot :: new (& super :: M ,"), "{all}");
    }

    #[test]
    fn a_family_becomes_one_module_with_a_table_selection_and_call() {
        let items = items(
            quote!(family = "fwd", symbol_prefix = "_Z9fmha_fwd"),
            quote! {
                /// Attention forward.
                #[deprecated]
                pub unsafe extern "C" fn fwd(args: *const Args, stream: *mut u8) -> f32;
            },
        );
        let [syn::Item::Mod(m)] = items.as_slice() else {
            panic!("expected one mod, got {}", flat(quote!(#(#items)*)));
        };
        assert_eq!(m.ident, "fwd");
        let attrs = &m.attrs;
        let attrs = flat(quote!(#(#attrs)*));
        assert!(attrs.contains("Attention forward."), "user docs kept");
        assert!(
            !attrs.contains("deprecated"),
            "other attributes go on `call`"
        );
        let body = flat(m);
        for want in [
            "pub const FAMILY : & str = \"fwd\"",
            "pub type Fn = unsafe extern \"C\" fn (* const Args , * mut u8) -> f32",
            "pub enum Family { }",
            "pub type Kernel = :: ck_jit_rt :: Kernel < Family >",
            "pub static __FAMILY : :: ck_jit_rt :: __private :: FamilySlots < Family > = \
             :: ck_jit_rt :: __private :: FamilySlots :: new (& crate :: __CK_JIT_MANIFEST , \
             FAMILY , :: ck_jit_rt :: __private :: SymbolOverride :: Prefix (\"_Z9fmha_fwd\"))",
            ":: ck_jit_rt :: __declare ! (& __FAMILY)",
            "pub fn blobs ()",
            "pub fn select (query : & :: ck_jit_rt :: Query)",
            "pub fn candidates (query : & :: ck_jit_rt :: Query)",
            "pub fn by_name (blob : & str)",
            "# [deprecated]",
            "pub unsafe fn call (kernel : Kernel , __arg0 : * const Args , __arg1 : * mut u8) -> f32",
            "let __p = kernel . get () ;",
            "__f (__arg0 , __arg1)",
            "pub fn try_get (kernel : Kernel)",
            "pub fn prepare (kernel : Kernel)",
        ] {
            assert!(body.contains(want), "missing `{want}` in {body}");
        }
        assert!(!body.contains("__SLOT"), "no single-blob slot: {body}");
    }

    #[test]
    fn caller_types_named_like_generated_items_are_reached_through_super() {
        let body = expand(
            quote!(family = "fwd"),
            quote!(
                pub unsafe extern "C" fn fwd(k: *const Kernel, f: Family, g: Fn) -> self::Fn;
            ),
        );
        assert!(
            body.contains(
                "fn (* const super :: Kernel , super :: Family , super :: Fn) -> super :: Fn"
            ),
            "{body}"
        );
        let mut ty: Type = parse_quote!(Option<Kernel<u8>>);
        rebase_type(&mut ty);
        assert_eq!(flat(&ty), "Option < super :: Kernel < u8 > >");
    }

    #[test]
    fn a_family_with_a_refused_signature_gives_the_error_and_a_stub() {
        let tokens = lazy_kernel(
            quote!(family = "fwd"),
            quote!(
                unsafe extern "C" fn fwd<T>(x: T);
            ),
            None,
        );
        let out = tokens.to_string();
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
        assert!(
            out.contains("pub unsafe fn call < T > (_ : Kernel , _ : T)"),
            "{out}"
        );
        assert!(!out.contains("__FAMILY"));
        assert!(syn::parse2::<syn::File>(tokens).is_ok());
    }

    #[test]
    fn a_mistake_gives_the_error_and_still_the_kernel() {
        let out = expand(
            quote!(bogus = 1),
            quote!(
                unsafe extern "C" fn k(x: u8);
            ),
        );
        assert!(out.contains("compile_error"));
        assert!(out.contains("unknown argument `bogus`"));
        assert!(
            out.contains("pub static __SLOT"),
            "full expansion kept: {out}"
        );
    }

    #[test]
    fn a_refused_signature_gives_the_error_and_a_stub() {
        let items_and_error = lazy_kernel(
            quote!(),
            quote!(
                unsafe extern "C" fn k<T>(x: T, ...);
            ),
            None,
        );
        let out = items_and_error.to_string();
        assert_eq!(out.matches("compile_error").count(), 2, "{out}");
        assert!(out.contains("unsafe fn k < T > (_ : T)"), "{out}");
        assert!(out.contains(":: core :: unreachable ! ()"));
        assert!(!out.contains("__SLOT"));
        assert!(syn::parse2::<syn::File>(items_and_error).is_ok());
    }

    #[test]
    fn an_item_of_another_kind_is_kept_as_written_beside_the_error() {
        let out = expand(
            quote!(),
            quote!(
                struct S;
            ),
        );
        assert!(out.contains("compile_error"));
        assert!(out.ends_with("struct S ;"), "{out}");
    }

    #[test]
    fn a_manifest_file_kernel_has_a_file_slot_and_tracks_the_file() {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let out = lazy_kernel(
            quote!(manifest_file = "fallback/ck_jit_manifest.json"),
            quote!(
                pub unsafe extern "C" fn fb_scale(x: i32) -> i32;
            ),
            Some(fixtures.join("kernels.rs")),
        )
        .to_string();
        let path = fixtures.join("fallback/ck_jit_manifest.json");
        let path = format!("{:?}", path.to_str().unwrap());
        assert!(!out.contains("compile_error"), "{out}");
        assert!(
            out.contains(&format!(
                ":: ck_jit_rt :: __private :: Slot :: in_manifest_file ({path} , BLOB , \
                 :: ck_jit_rt :: __private :: SymbolOverride :: Manifest)"
            )),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "const _ : & [u8] = :: core :: include_bytes ! ({path}) ;"
            )),
            "{out}"
        );
        assert!(!out.contains("__CK_JIT_MANIFEST"), "{out}");
    }

    #[test]
    fn an_unreadable_manifest_file_is_not_included_again() {
        let out = lazy_kernel(
            quote!(manifest_file = "missing.json"),
            quote!(
                pub unsafe extern "C" fn k(x: i32) -> i32;
            ),
            Some("/nowhere/kernels.rs".into()),
        )
        .to_string();
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
        assert!(!out.contains("include_bytes"), "{out}");
        assert!(out.contains("pub static __SLOT"), "{out}");
    }
}
