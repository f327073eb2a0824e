//! The dispatcher slot behind every `#[lazy_kernel]` function: a static
//! atomic pointer filled once.
//!
//! The warm path is one `Acquire` load and a null check; everything else
//! (manifest parse, hashing, locks, the compiler) sits behind a `#[cold]`
//! call that runs until the slot is filled.

use std::sync::atomic::{AtomicPtr, Ordering};

use ck_jit_manifest::SymbolSpec;

use crate::embed::Embedded;
use crate::error::Error;

/// A symbol override given to `#[lazy_kernel]`.
#[derive(Debug, Clone, Copy)]
pub enum SymbolOverride {
    /// Use the manifest's symbol spec.
    Manifest,
    /// This exact symbol.
    Exact(&'static str),
    /// The first function symbol with this prefix.
    Prefix(&'static str),
}

/// A once-filled pointer to a blob's entry point.
#[derive(Debug)]
pub struct Slot {
    ptr: AtomicPtr<()>,
    manifest: &'static Embedded,
    blob: &'static str,
    symbol: SymbolOverride,
}

impl Slot {
    /// An empty slot for `blob` of `manifest`.
    pub const fn new(
        manifest: &'static Embedded,
        blob: &'static str,
        symbol: SymbolOverride,
    ) -> Slot {
        Slot {
            ptr: AtomicPtr::new(std::ptr::null_mut()),
            manifest,
            blob,
            symbol,
        }
    }

    /// The blob name.
    pub fn blob(&self) -> &'static str {
        self.blob
    }

    /// The entry point; compiles and loads on first use.
    ///
    /// # Panics
    ///
    /// If the blob cannot be compiled, loaded or resolved, with the error's
    /// message (use [`Slot::try_get`] for a `Result`).
    #[inline(always)]
    pub fn get(&'static self) -> *const () {
        let p = self.ptr.load(Ordering::Acquire);
        if !p.is_null() {
            return p;
        }
        self.cold()
    }

    #[cold]
    #[inline(never)]
    fn cold(&'static self) -> *const () {
        match self.try_get() {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        }
    }

    /// The entry point, or the error that prevented it.
    pub fn try_get(&'static self) -> Result<*const (), Error> {
        let p = self.ptr.load(Ordering::Acquire);
        if !p.is_null() {
            return Ok(p);
        }
        let rt = self.manifest.runtime()?;
        let spec = match self.symbol {
            SymbolOverride::Manifest => None,
            SymbolOverride::Exact(s) => Some(SymbolSpec::Exact(s.to_string())),
            SymbolOverride::Prefix(s) => Some(SymbolSpec::Prefix(s.to_string())),
        };
        let p = rt.resolve(self.blob, spec.as_ref())?;
        self.ptr.store(p as *mut (), Ordering::Release);
        Ok(p)
    }

    /// Whether the slot is filled (the kernel is loaded).
    pub fn is_ready(&self) -> bool {
        !self.ptr.load(Ordering::Acquire).is_null()
    }
}
