//! The once-filled entry-point slot behind every `#[lazy_kernel]` function
//! and every family member: a static atomic pointer, filled by the cold
//! path the first time it is called.
//!
//! The warm path ([`Slot::get`]) is one `Acquire` load, a null check and the
//! caller's indirect call; everything else (manifest parse, hashing, locks,
//! the compiler) sits behind a `#[cold]` call that runs until the slot is
//! filled. Nothing may be added to that path: no lock, no allocation.

use std::sync::atomic::{AtomicPtr, Ordering};

use ck_jit_manifest::SymbolSpec;

use crate::error::Error;
use crate::runtime::embed::Embedded;
use crate::runtime::manifest_file;
use crate::runtime::Runtime;

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

impl SymbolOverride {
    /// The spec to resolve with (`None`: the manifest's own).
    fn spec(self) -> Option<SymbolSpec> {
        match self {
            SymbolOverride::Manifest => None,
            SymbolOverride::Exact(s) => Some(SymbolSpec::Exact(s.to_string())),
            SymbolOverride::Prefix(s) => Some(SymbolSpec::Prefix(s.to_string())),
        }
    }
}

/// Where a slot finds its runtime: an embedded manifest (parsed on first
/// use) or a runtime built by hand.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Source {
    Embedded(&'static Embedded),
    Runtime(&'static Runtime),
}

impl Source {
    pub(crate) fn runtime(self) -> Result<&'static Runtime, Error> {
        match self {
            Source::Embedded(e) => e.runtime(),
            Source::Runtime(r) => Ok(r),
        }
    }
}

/// Where a [`Slot`] finds its runtime: a [`Source`], or a manifest file
/// named at build time, whose runtime depends on the blob (the fallback
/// manifest, when it records the blob, else the file).
#[derive(Debug, Clone, Copy)]
enum SlotSource {
    Source(Source),
    ManifestFile(&'static str),
}

/// A once-filled pointer to a blob's entry point.
#[derive(Debug)]
pub struct Slot {
    ptr: AtomicPtr<()>,
    source: SlotSource,
    blob: &'static str,
    symbol: SymbolOverride,
}

impl Slot {
    /// An empty slot for `blob` of an embedded `manifest` (what
    /// `#[lazy_kernel]` generates).
    pub const fn new(
        manifest: &'static Embedded,
        blob: &'static str,
        symbol: SymbolOverride,
    ) -> Slot {
        Slot::from_source(Source::Embedded(manifest), blob, symbol)
    }

    /// An empty slot for `blob` of the manifest file at `path` (what
    /// `#[lazy_kernel(manifest_file = "...")]` generates, with the path
    /// the build checked the blob against): resolved through the fallback
    /// manifest (`CK_JIT_MANIFEST`) when it records the blob, else through
    /// that file, read at the first call.
    pub const fn in_manifest_file(
        path: &'static str,
        blob: &'static str,
        symbol: SymbolOverride,
    ) -> Slot {
        Slot {
            ptr: AtomicPtr::new(std::ptr::null_mut()),
            source: SlotSource::ManifestFile(path),
            blob,
            symbol,
        }
    }

    /// An empty slot for `blob` of whichever runtime `source` names.
    pub(crate) const fn from_source(
        source: Source,
        blob: &'static str,
        symbol: SymbolOverride,
    ) -> Slot {
        Slot {
            ptr: AtomicPtr::new(std::ptr::null_mut()),
            source: SlotSource::Source(source),
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
    /// message after `ck-jit: ` (use [`Slot::try_get`] for a `Result`), at
    /// the caller's location (`#[track_caller]`, as the functions that call
    /// it).
    #[inline(always)]
    #[track_caller]
    pub fn get(&self) -> *const () {
        let p = self.ptr.load(Ordering::Acquire);
        if !p.is_null() {
            return p;
        }
        self.cold()
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn cold(&self) -> *const () {
        match self.try_get() {
            Ok(p) => p,
            // The panic is what a person sees: name the library, as the
            // error's own message does not.
            Err(e) => panic!("ck-jit: {e}"),
        }
    }

    /// The entry point, or the error that prevented it.
    ///
    /// Threads racing here all resolve through the runtime, which loads a
    /// blob once; they store the same address, so the last store wins
    /// harmlessly.
    pub fn try_get(&self) -> Result<*const (), Error> {
        let p = self.ptr.load(Ordering::Acquire);
        if !p.is_null() {
            return Ok(p);
        }
        let rt = match self.source {
            SlotSource::Source(source) => source.runtime()?,
            SlotSource::ManifestFile(path) => manifest_file::runtime_for(path, self.blob)?,
        };
        let p = rt.resolve(self.blob, self.symbol.spec().as_ref())?;
        self.ptr.store(p as *mut (), Ordering::Release);
        Ok(p)
    }

    /// Where the slot finds its runtime, unless that depends on the blob
    /// (a kernel declared from a manifest file).
    pub(crate) fn source(&self) -> Option<Source> {
        match self.source {
            SlotSource::Source(source) => Some(source),
            SlotSource::ManifestFile(_) => None,
        }
    }

    /// Whether filling the slot loads its blob through `rt`: `rt` is the
    /// slot's runtime, or the one that runtime hands the blob to (the
    /// fallback manifest, for a blob only it records).
    pub(crate) fn resolves_through(&self, rt: &Runtime) -> bool {
        let own = match self.source {
            SlotSource::Source(source) => source.runtime(),
            SlotSource::ManifestFile(path) => manifest_file::runtime_for(path, self.blob),
        };
        let Ok(own) = own else { return false };
        std::ptr::eq(own, rt) || own.owner(self.blob).is_ok_and(|o| std::ptr::eq(o, rt))
    }

    /// Whether the slot is filled (the kernel is loaded).
    pub fn is_ready(&self) -> bool {
        !self.ptr.load(Ordering::Acquire).is_null()
    }
}
