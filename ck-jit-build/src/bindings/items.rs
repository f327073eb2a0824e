//! Generated items as syn nodes: merging the output of several translation
//! units (CK's forward and backward headers cannot be parsed as one), and
//! keeping only what the wanted items reach, so that what bindgen emits
//! for the definitions of opaque standard templates does not end up in the
//! file.
//!
//! Pruning only removes an item no kept item names, so it cannot make the
//! output fail to compile.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Fields, Item, Type};

/// The name an item defines in the type or value namespace, if any.
pub(crate) fn defined_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Struct(i) => &i.ident,
        Item::Enum(i) => &i.ident,
        Item::Union(i) => &i.ident,
        Item::Type(i) => &i.ident,
        Item::Const(i) if i.ident != "_" => &i.ident,
        Item::Static(i) => &i.ident,
        Item::Fn(i) => &i.sig.ident,
        Item::Mod(i) => &i.ident,
        Item::Trait(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

/// Every identifier in `tokens`.
fn idents(tokens: TokenStream, out: &mut BTreeSet<String>) {
    for t in tokens {
        match t {
            TokenTree::Ident(i) => {
                out.insert(i.to_string());
            }
            TokenTree::Group(g) => idents(g.stream(), out),
            _ => {}
        }
    }
}

fn idents_of(item: &Item) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    idents(item.to_token_stream(), &mut out);
    out
}

/// The item an unnamed item belongs to: the type of an `impl`, or the
/// first defined name a `const _` (a layout check) mentions.
fn subject(item: &Item, names: &BTreeSet<String>) -> Option<String> {
    match item {
        Item::Impl(i) => match &*i.self_ty {
            Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        },
        _ => first_defined(item.to_token_stream(), names),
    }
}

fn first_defined(tokens: TokenStream, names: &BTreeSet<String>) -> Option<String> {
    for t in tokens {
        match t {
            TokenTree::Ident(i) if names.contains(&i.to_string()) => return Some(i.to_string()),
            TokenTree::Group(g) => {
                if let Some(n) = first_defined(g.stream(), names) {
                    return Some(n);
                }
            }
            _ => {}
        }
    }
    None
}

/// The items of several files, in order, each once: an item repeated with
/// the same tokens is dropped; a name defined twice differently is an
/// error naming it.
pub(crate) fn merge(files: Vec<syn::File>) -> Result<Vec<Item>, String> {
    let mut out = Vec::new();
    let mut by_name: BTreeMap<String, String> = BTreeMap::new();
    let mut unnamed: BTreeSet<String> = BTreeSet::new();
    for file in files {
        for item in file.items {
            let tokens = item.to_token_stream().to_string();
            match defined_name(&item) {
                Some(name) => match by_name.get(&name) {
                    Some(seen) if *seen == tokens => continue,
                    Some(_) => {
                        return Err(format!(
                            "'{name}' is defined differently by two translation units"
                        ))
                    }
                    None => {
                        by_name.insert(name, tokens);
                    }
                },
                None => {
                    if !unnamed.insert(tokens) {
                        continue;
                    }
                }
            }
            out.push(item);
        }
    }
    Ok(out)
}

/// `items` less those that no item of `roots` reaches. An unnamed item
/// (an `impl`, a layout check) goes with the item it belongs to.
pub(crate) fn prune(items: Vec<Item>, roots: &BTreeSet<String>) -> Vec<Item> {
    let names: BTreeSet<String> = items.iter().filter_map(defined_name).collect();
    // What each defined name refers to, its impls and checks included.
    let mut refs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for item in &items {
        let owner = defined_name(item).or_else(|| subject(item, &names));
        if let Some(owner) = owner {
            let used = idents_of(item);
            refs.entry(owner)
                .or_default()
                .extend(used.into_iter().filter(|n| names.contains(n)));
        }
    }
    let mut kept: BTreeSet<String> = roots
        .iter()
        .filter(|r| names.contains(*r))
        .cloned()
        .collect();
    let mut todo: Vec<String> = kept.iter().cloned().collect();
    while let Some(n) = todo.pop() {
        for r in refs.get(&n).into_iter().flatten() {
            if kept.insert(r.clone()) {
                todo.push(r.clone());
            }
        }
    }
    items
        .into_iter()
        .filter(|item| {
            let owner = defined_name(item).or_else(|| subject(item, &names));
            owner.is_some_and(|o| kept.contains(&o))
        })
        .collect()
}

/// A generated struct and its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundStruct {
    /// Its Rust name (`ck_tile_stream_config`).
    pub name: String,
    /// Its C++ name (`ck_tile::stream_config`).
    pub cpp: String,
    /// Its fields, in order.
    pub fields: Vec<BoundField>,
}

/// A field of a generated struct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundField {
    /// Its Rust name (a C++ name that is a Rust keyword gets a `_`).
    pub name: String,
    /// The C++ member it mirrors; `None` for a field bindgen made up
    /// (bitfield storage, padding).
    pub cpp: Option<String>,
}

/// Rust keywords bindgen renames by appending `_`.
const KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "Self", "static", "struct", "super", "trait", "true", "try", "type",
    "typeof", "union", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// The struct named `name` among `items`, with `cpp` as its C++ name.
pub(crate) fn bound_struct(items: &[Item], name: &str, cpp: &str) -> Option<BoundStruct> {
    let s = items.iter().find_map(|i| match i {
        Item::Struct(s) if s.ident == name => Some(s),
        _ => None,
    })?;
    let fields = match &s.fields {
        Fields::Named(f) => f
            .named
            .iter()
            .filter_map(|f| f.ident.as_ref())
            .map(|i| {
                let name = i.to_string();
                let cpp = if name.starts_with("_bitfield_") || name.starts_with("__bindgen") {
                    None
                } else {
                    match name.strip_suffix('_') {
                        Some(k) if KEYWORDS.contains(&k) => Some(k.to_string()),
                        _ => Some(name.clone()),
                    }
                };
                BoundField { name, cpp }
            })
            .collect(),
        _ => Vec::new(),
    };
    Some(BoundStruct {
        name: name.to_string(),
        cpp: cpp.to_string(),
        fields,
    })
}

/// The items as formatted Rust source, after `header` (comment lines).
pub(crate) fn render(header: &str, items: Vec<Item>) -> String {
    let file = syn::File {
        shebang: None,
        attrs: Vec::new(),
        items,
    };
    let mut out = String::from(header);
    out.push_str(&prettyplease::unparse(&file));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(src: &str) -> syn::File {
        syn::parse_file(src).unwrap()
    }

    fn names(items: &[Item]) -> Vec<String> {
        items
            .iter()
            .map(|i| defined_name(i).unwrap_or_else(|| "_".into()))
            .collect()
    }

    #[test]
    fn merging_drops_repeats_and_refuses_two_definitions_of_one_name() {
        let a = file("pub type index_t = i32; pub struct A { pub x: index_t } const _: () = { [\"Size of A\"][::std::mem::size_of::<A>() - 4usize]; };");
        let b = file("pub type index_t = i32; pub struct B { pub y: index_t } const _: () = { [\"Size of A\"][::std::mem::size_of::<A>() - 4usize]; };");
        let merged = merge(vec![a.clone(), b]).unwrap();
        assert_eq!(names(&merged), ["index_t", "A", "_", "B"]);
        let c = file("pub type index_t = i64;");
        let err = merge(vec![a, c]).unwrap_err();
        assert!(err.contains("'index_t'"), "{err}");
    }

    #[test]
    fn pruning_keeps_what_the_roots_reach_with_their_impls_and_checks() {
        let f = file(
            "pub struct std_pair { pub _address: u8 }
             impl Default for std_pair { fn default() -> Self { std_pair { _address: 0 } } }
             const _: () = { [\"Size of std_pair\"][::std::mem::size_of::<std_pair>() - 1usize]; };
             pub type index_t = i32;
             pub type std_string = Opaque<[u8; 32usize]>;
             pub struct Opaque<T>(pub T);
             impl<T: Copy, const N: usize> Default for Opaque<[T; N]> { fn default() -> Self { todo!() } }
             pub enum mask_enum { no_mask = 0 }
             pub struct args { pub n: index_t, pub s: std_string, pub m: mask_enum }
             const _: () = { [\"Size of args\"][::std::mem::size_of::<args>() - 48usize]; };
             pub struct unused { pub n: index_t }",
        );
        let roots = BTreeSet::from(["args".to_string()]);
        let kept = prune(merge(vec![f]).unwrap(), &roots);
        assert_eq!(
            names(&kept),
            [
                "index_t",
                "std_string",
                "Opaque",
                "_",
                "mask_enum",
                "args",
                "_"
            ]
        );
    }

    #[test]
    fn bound_fields_name_the_cpp_members() {
        let f = file("pub struct s { pub type_: i32, pub count_: i32, pub _bitfield_1: u8 }");
        let s = bound_struct(&f.items, "s", "ns::s").unwrap();
        let cpp: Vec<Option<&str>> = s.fields.iter().map(|f| f.cpp.as_deref()).collect();
        assert_eq!(cpp, [Some("type"), Some("count_"), None]);
        assert_eq!(s.cpp, "ns::s");
        assert!(bound_struct(&f.items, "t", "t").is_none());
    }
}
