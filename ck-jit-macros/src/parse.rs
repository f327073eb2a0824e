//! Syntax: turns the attribute's arguments and the annotated item into this
//! crate's own types, keeping the syn nodes so later errors point at the
//! user's tokens.
//!
//! This module only recognises shapes; what is allowed is `valid`'s job. It
//! must never panic on user input, and it reports argument mistakes into
//! [`Errors`] so they show together with everything else.

use proc_macro2::TokenStream;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{
    braced, token, Abi, Attribute, Expr, ExprLit, ExprPath, ForeignItem, Ident, Lit, LitStr, Meta,
    Path, Signature, Token, Visibility,
};

use crate::errors::Errors;

/// What an argument list may hold, for messages.
pub(crate) const EXPECTED_ARGS: &str = "expected blob = \"...\", family = \"...\", \
     symbol = \"...\", symbol_prefix = \"...\", manifest = path or manifest_file = \"...\"";

/// What the attribute may be put on, for messages.
pub(crate) const EXPECTED_ITEM: &str = "expected `extern \"C\" { fn name(...); }` or \
     `unsafe extern \"C\" fn name(...);` after #[lazy_kernel]";

/// The arguments of one `#[lazy_kernel(...)]`, or of several merged.
#[derive(Default)]
pub(crate) struct Args {
    /// `blob = "..."`.
    pub blob: Option<LitStr>,
    /// `family = "..."`.
    pub family: Option<LitStr>,
    /// `symbol = "..."`.
    pub symbol: Option<LitStr>,
    /// `symbol_prefix = "..."`.
    pub symbol_prefix: Option<LitStr>,
    /// `manifest = path`.
    pub manifest: Option<Path>,
    /// `manifest_file = "..."`.
    pub manifest_file: Option<LitStr>,
}

/// The annotated item.
pub(crate) enum Input {
    /// `extern "C" { fn a(..); fn b(..); }`.
    Block(Block),
    /// `unsafe extern "C" fn a(..);`.
    Single(Box<Kernel>),
}

/// An `extern "ABI" { ... }` block.
pub(crate) struct Block {
    /// Outer attributes of the block, helpers removed.
    pub attrs: Vec<Attribute>,
    /// `#[lazy_kernel(...)]` helpers written on the block itself.
    pub helpers: Vec<Attribute>,
    /// `#![...]` inside the braces.
    pub inner_attrs: Vec<Attribute>,
    /// `extern` with its optional ABI string.
    pub abi: Abi,
    /// The braces, for errors about the whole body.
    pub brace: token::Brace,
    /// The fn declarations, in order.
    pub kernels: Vec<Kernel>,
    /// Everything else found in the block (statics, types, macros).
    pub others: Vec<ForeignItem>,
}

/// One fn declaration: a kernel.
pub(crate) struct Kernel {
    /// Attributes, helpers removed.
    pub attrs: Vec<Attribute>,
    /// `#[lazy_kernel(...)]` helpers written on the fn.
    pub helpers: Vec<Attribute>,
    /// Visibility of the fn.
    pub vis: Visibility,
    /// The signature as written.
    pub sig: Signature,
    /// A body, which a declaration must not have.
    pub body: Option<syn::Block>,
}

/// Parses the attribute's own arguments, reporting mistakes into `errors`
/// and keeping whatever was understood.
pub(crate) fn args(tokens: TokenStream, errors: &mut Errors) -> Args {
    let mut args = Args::default();
    add_args(tokens, &mut args, errors);
    args
}

/// Merges the arguments of `#[lazy_kernel(...)]` helper attributes into
/// `args`; an argument given twice is reported.
pub(crate) fn helper_args(helpers: &[Attribute], args: &mut Args, errors: &mut Errors) {
    for attr in helpers {
        match &attr.meta {
            Meta::Path(_) => {}
            Meta::List(list) => add_args(list.tokens.clone(), args, errors),
            Meta::NameValue(nv) => errors.spanned(nv, format!("{EXPECTED_ARGS} in parentheses")),
        }
    }
}

fn add_args(tokens: TokenStream, args: &mut Args, errors: &mut Errors) {
    match Punctuated::<RawArg, Token![,]>::parse_terminated.parse2(tokens) {
        Ok(raw) => {
            for arg in raw {
                args.add(arg, errors);
            }
        }
        Err(e) => errors.push(e),
    }
}

/// `key = value` before its key is known to mean anything.
struct RawArg {
    key: Ident,
    value: Option<Expr>,
}

impl Parse for RawArg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if !input.peek(Ident::peek_any) {
            return Err(input.error(EXPECTED_ARGS));
        }
        let key = input.call(Ident::parse_any)?;
        if !input.peek(Token![=]) {
            if input.is_empty() || input.peek(Token![,]) {
                return Ok(RawArg { key, value: None });
            }
            return Err(input.error(expected_form(&key)));
        }
        input.parse::<Token![=]>()?;
        let value = input.parse()?;
        Ok(RawArg {
            key,
            value: Some(value),
        })
    }
}

/// What `key` should look like, or the whole list for an unknown key.
fn expected_form(key: &Ident) -> String {
    match key.to_string().as_str() {
        k @ ("blob" | "family" | "symbol" | "symbol_prefix" | "manifest_file") => {
            format!("expected {k} = \"...\"")
        }
        "manifest" => "expected manifest = path".to_string(),
        other => format!("unknown argument `{other}`: {EXPECTED_ARGS}"),
    }
}

impl Args {
    fn add(&mut self, arg: RawArg, errors: &mut Errors) {
        let key = arg.key.to_string();
        let Some(value) = arg.value else {
            errors.spanned(&arg.key, expected_form(&arg.key));
            return;
        };
        let slot_taken = match key.as_str() {
            "blob" => set(&mut self.blob, string(&arg.key, value, errors)),
            "family" => set(&mut self.family, string(&arg.key, value, errors)),
            "symbol" => set(&mut self.symbol, string(&arg.key, value, errors)),
            "symbol_prefix" => set(&mut self.symbol_prefix, string(&arg.key, value, errors)),
            "manifest" => set(&mut self.manifest, path(value, errors)),
            "manifest_file" => set(&mut self.manifest_file, string(&arg.key, value, errors)),
            _ => {
                errors.spanned(&arg.key, expected_form(&arg.key));
                false
            }
        };
        if slot_taken {
            errors.spanned(&arg.key, format!("duplicate argument `{key}`"));
        }
    }
}

/// Stores `value` unless the slot is already set; true when it was (a
/// duplicate).
fn set<T>(slot: &mut Option<T>, value: Option<T>) -> bool {
    if slot.is_some() {
        return true;
    }
    *slot = value;
    false
}

fn string(key: &Ident, value: Expr, errors: &mut Errors) -> Option<LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s),
        other => {
            errors.spanned(other, format!("expected a string literal: {key} = \"...\""));
            None
        }
    }
}

fn path(value: Expr, errors: &mut Errors) -> Option<Path> {
    match value {
        Expr::Path(ExprPath {
            qself: None, path, ..
        }) => Some(path),
        other => {
            errors.spanned(
                other,
                "expected a path to the manifest static: manifest = crate::PATH",
            );
            None
        }
    }
}

/// Parses the annotated item.
pub(crate) fn input(tokens: TokenStream) -> syn::Result<Input> {
    syn::parse2(tokens)
}

impl Parse for Input {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        if peek_block(input) {
            return block(attrs, input).map(Input::Block);
        }
        if !peek_kernel(input) {
            return Err(input.error(EXPECTED_ITEM));
        }
        kernel(attrs, input).map(|k| Input::Single(Box::new(k)))
    }
}

/// `unsafe? extern "ABI"? {`
fn peek_block(input: ParseStream) -> bool {
    let ahead = input.fork();
    let _ = ahead.parse::<Option<Token![unsafe]>>();
    ahead.peek(Token![extern])
        && (ahead.peek2(token::Brace) || (ahead.peek2(LitStr) && ahead.peek3(token::Brace)))
}

/// Attributes, visibility and a whole signature.
fn peek_kernel(input: ParseStream) -> bool {
    let ahead = input.fork();
    ahead.call(Attribute::parse_outer).is_ok()
        && ahead.parse::<Visibility>().is_ok()
        && ahead.parse::<Signature>().is_ok()
}

fn block(attrs: Vec<Attribute>, input: ParseStream) -> syn::Result<Block> {
    let (helpers, attrs) = split_helpers(attrs);
    // `unsafe extern` is how newer editions spell the same block.
    input.parse::<Option<Token![unsafe]>>()?;
    let abi: Abi = input.parse()?;
    let content;
    let brace = braced!(content in input);
    let inner_attrs = content.call(Attribute::parse_inner)?;
    let mut kernels = Vec::new();
    let mut others = Vec::new();
    while !content.is_empty() {
        if peek_kernel(&content) {
            let attrs = content.call(Attribute::parse_outer)?;
            kernels.push(kernel(attrs, &content)?);
        } else {
            others.push(content.parse()?);
        }
    }
    Ok(Block {
        attrs,
        helpers,
        inner_attrs,
        abi,
        brace,
        kernels,
        others,
    })
}

/// The rest of a fn after its outer attributes: `vis sig ;` or `vis sig {..}`.
fn kernel(attrs: Vec<Attribute>, input: ParseStream) -> syn::Result<Kernel> {
    let (helpers, attrs) = split_helpers(attrs);
    let vis = input.parse()?;
    let sig = input.parse()?;
    let body = if input.peek(token::Brace) {
        Some(input.parse()?)
    } else {
        input.parse::<Token![;]>()?;
        None
    };
    Ok(Kernel {
        attrs,
        helpers,
        vis,
        sig,
        body,
    })
}

/// Whether `attr` is `#[lazy_kernel...]` under any path.
pub(crate) fn is_helper(attr: &Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "lazy_kernel")
}

fn split_helpers(attrs: Vec<Attribute>) -> (Vec<Attribute>, Vec<Attribute>) {
    attrs.into_iter().partition(is_helper)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn parse_args(tokens: TokenStream) -> (Args, Vec<String>) {
        let mut errors = Errors::default();
        let args = args(tokens, &mut errors);
        (args, errors.messages())
    }

    #[test]
    fn empty_arguments_are_all_defaults() {
        let (args, errors) = parse_args(quote!());
        assert!(errors.is_empty());
        assert!(args.blob.is_none() && args.symbol.is_none());
        assert!(args.symbol_prefix.is_none() && args.manifest.is_none());
    }

    #[test]
    fn every_argument_is_read() {
        let (args, errors) = parse_args(quote!(blob = "b", symbol = "s", manifest = crate::M));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(args.blob.unwrap().value(), "b");
        assert_eq!(args.symbol.unwrap().value(), "s");
        let manifest = args.manifest.unwrap();
        assert_eq!(quote!(#manifest).to_string(), "crate :: M");
        let (args, _) = parse_args(quote!(symbol_prefix = "p",));
        assert_eq!(args.symbol_prefix.unwrap().value(), "p");
        let (args, errors) = parse_args(quote!(manifest_file = "vendor/m.json"));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(args.manifest_file.unwrap().value(), "vendor/m.json");
        let (_, errors) = parse_args(quote!(manifest_file = crate::M, manifest_file));
        assert_eq!(
            errors,
            [
                "expected a string literal: manifest_file = \"...\"",
                "expected manifest_file = \"...\"",
            ]
        );
        let (args, errors) = parse_args(quote!(family = "fwd"));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(args.family.unwrap().value(), "fwd");
        let (_, errors) = parse_args(quote!(family = fwd, family));
        assert_eq!(
            errors,
            [
                "expected a string literal: family = \"...\"",
                "expected family = \"...\"",
            ]
        );
    }

    #[test]
    fn unknown_duplicate_and_mistyped_arguments_are_all_reported() {
        let (args, errors) = parse_args(quote!(
            blub = "x",
            blob = "a",
            blob = "b",
            symbol = 3,
            manifest = "M",
            symbol_prefix
        ));
        assert_eq!(
            errors,
            [
                format!("unknown argument `blub`: {EXPECTED_ARGS}"),
                "duplicate argument `blob`".to_string(),
                "expected a string literal: symbol = \"...\"".to_string(),
                "expected a path to the manifest static: manifest = crate::PATH".to_string(),
                "expected symbol_prefix = \"...\"".to_string(),
            ]
        );
        assert_eq!(args.blob.unwrap().value(), "a", "the first of two is kept");
    }

    #[test]
    fn malformed_argument_lists_are_errors() {
        let (_, errors) = parse_args(quote!("vadd"));
        assert_eq!(errors, [EXPECTED_ARGS]);
        let (_, errors) = parse_args(quote!(blob("vadd")));
        assert_eq!(errors, ["expected blob = \"...\""]);
        let (_, errors) = parse_args(quote!(blob = "a" symbol = "b"));
        assert_eq!(errors, ["expected `,`"]);
    }

    #[test]
    fn helper_attributes_merge_and_report_duplicates() {
        let attrs: Vec<Attribute> = vec![
            syn::parse_quote!(#[lazy_kernel(blob = "a")]),
            syn::parse_quote!(#[ck_jit::lazy_kernel(symbol = "s", blob = "b")]),
            syn::parse_quote!(#[lazy_kernel]),
        ];
        assert!(attrs.iter().all(is_helper));
        let mut args = Args::default();
        let mut errors = Errors::default();
        helper_args(&attrs, &mut args, &mut errors);
        assert_eq!(errors.messages(), ["duplicate argument `blob`"]);
        assert_eq!(args.symbol.unwrap().value(), "s");
    }

    #[test]
    fn an_extern_block_splits_fns_from_other_items() {
        let input = input(quote! {
            /// docs
            #[lazy_kernel(manifest = crate::M)]
            extern "C" {
                #![allow(dead_code)]
                #[lazy_kernel(blob = "x")]
                fn a(x: u8) -> u8;
                pub fn b(_: *const f32);
                static S: u8;
                fn c() {}
            }
        })
        .unwrap();
        let Input::Block(block) = input else {
            panic!("not a block")
        };
        assert_eq!(block.attrs.len(), 1);
        assert_eq!(block.helpers.len(), 1);
        assert_eq!(block.inner_attrs.len(), 1);
        let names: Vec<_> = block
            .kernels
            .iter()
            .map(|k| k.sig.ident.to_string())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(block.kernels[0].helpers.len(), 1);
        assert!(block.kernels[0].attrs.is_empty());
        assert!(block.kernels[2].body.is_some());
        assert_eq!(block.others.len(), 1);
    }

    #[test]
    fn unsafe_extern_blocks_and_bare_extern_blocks_parse() {
        for tokens in [
            quote!(
                unsafe extern "C" {
                    fn a();
                }
            ),
            quote!(
                extern "C" {
                    fn a();
                }
            ),
        ] {
            assert!(matches!(input(tokens), Ok(Input::Block(_))));
        }
    }

    #[test]
    fn a_single_bodiless_fn_parses() {
        let input = input(quote! {
            /// Adds.
            pub unsafe extern "C" fn vadd(a: *const f32, n: usize) -> i32;
        })
        .unwrap();
        let Input::Single(k) = input else {
            panic!("not a single fn")
        };
        assert_eq!(k.sig.ident, "vadd");
        assert!(k.sig.unsafety.is_some() && k.sig.abi.is_some() && k.body.is_none());
        assert_eq!(k.attrs.len(), 1);
    }

    #[test]
    fn other_items_are_refused_with_what_is_expected() {
        for tokens in [
            quote!(
                struct S;
            ),
            quote!(
                mod m {}
            ),
            quote!(),
        ] {
            let Err(err) = input(tokens) else {
                panic!("accepted")
            };
            assert!(err.to_string().ends_with(EXPECTED_ITEM), "{err}");
        }
    }
}
