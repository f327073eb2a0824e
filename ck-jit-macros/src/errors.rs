//! Collects every error of one attribute so the user sees all of them at
//! once. It never decides what is an error; `parse` and `valid` do.

use proc_macro2::TokenStream;

/// Errors found so far, combined into one `syn::Error`.
#[derive(Default)]
pub(crate) struct Errors {
    combined: Option<syn::Error>,
}

impl Errors {
    /// Adds an error spanned at `node`.
    pub(crate) fn spanned(&mut self, node: impl quote::ToTokens, msg: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(node, msg));
    }

    /// Adds an error (which may itself hold several).
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.combined {
            Some(all) => all.combine(error),
            None => self.combined = Some(error),
        }
    }

    /// Whether nothing was reported.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.combined.is_none()
    }

    /// The messages reported so far, in order.
    #[cfg(test)]
    pub(crate) fn messages(&self) -> Vec<String> {
        self.combined
            .iter()
            .flat_map(|e| e.into_iter().map(|e| e.to_string()))
            .collect()
    }

    /// One `compile_error!` per error; empty when there are none.
    pub(crate) fn to_compile_errors(&self) -> TokenStream {
        self.combined
            .as_ref()
            .map(syn::Error::to_compile_error)
            .unwrap_or_default()
    }
}
