//! The kernels this program declares, listed before `main` runs, so that
//! what is asked for by blob name ([`Runtime::warmup`], written here)
//! resolves the entry points the declarations name
//! (`#[lazy_kernel(symbol = "...")]`), not only the manifest's, and so
//! that [`runtime`](crate::runtime) finds the manifest the program's
//! kernels use.
//!
//! Each `#[lazy_kernel]` and [`embed_manifest!`](crate::embed_manifest)
//! places, through [`declare!`](crate::__declare), a static
//! [`Declaration`] and a constructor (an entry of the object's
//! initialiser array) that pushes it onto a lock-free list: no allocation,
//! no lock, nothing that needs the standard library to be set up. A shared
//! object loaded later adds its own declarations when it is loaded. On a
//! platform without such constructors the list stays empty and warm-up
//! falls back to the manifest's symbols.

use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use crate::error::Error;
use crate::family::FamilySlots;
use crate::runtime::embed::Embedded;
use crate::runtime::slot::Slot;
use crate::runtime::Runtime;

/// Something a program declares: a kernel's slot, a family's table or an
/// embedded manifest.
pub trait Declared: Sync {
    /// Fills this declaration's entry points of `blob` (resolving the
    /// symbols it names) when it resolves `blob` through `rt`; `None` when
    /// it declares no kernel of `blob` there.
    fn warm(&'static self, rt: &Runtime, blob: &str) -> Option<Result<(), Error>>;

    /// The runtime of the manifest this declaration's kernels use, when it
    /// is one embedded manifest (not for a kernel declared from a manifest
    /// file, which resolves through the fallback manifest or that file).
    fn runtime(&'static self) -> Option<Result<&'static Runtime, Error>>;
}

impl Declared for Slot {
    fn warm(&'static self, rt: &Runtime, blob: &str) -> Option<Result<(), Error>> {
        (self.blob() == blob && self.resolves_through(rt)).then(|| self.try_get().map(|_| ()))
    }

    fn runtime(&'static self) -> Option<Result<&'static Runtime, Error>> {
        self.source().map(|s| s.runtime())
    }
}

impl<F: 'static> Declared for FamilySlots<F> {
    fn warm(&'static self, rt: &Runtime, blob: &str) -> Option<Result<(), Error>> {
        FamilySlots::warm(self, rt, blob)
    }

    fn runtime(&'static self) -> Option<Result<&'static Runtime, Error>> {
        Some(FamilySlots::runtime(self))
    }
}

impl Declared for Embedded {
    fn warm(&'static self, _: &Runtime, _: &str) -> Option<Result<(), Error>> {
        None
    }

    fn runtime(&'static self) -> Option<Result<&'static Runtime, Error>> {
        Some(Embedded::runtime(self))
    }
}

/// One declaration in the program's list (what [`declare!`](crate::__declare)
/// places beside a kernel).
pub struct Declaration {
    declared: &'static dyn Declared,
    next: AtomicPtr<Declaration>,
    listed: AtomicBool,
}

impl std::fmt::Debug for Declaration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Declaration")
            .field("listed", &self.listed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// The most recently listed declaration; each points at the one before.
static HEAD: AtomicPtr<Declaration> = AtomicPtr::new(ptr::null_mut());

impl Declaration {
    /// A declaration of `declared`, not listed yet.
    pub const fn new(declared: &'static dyn Declared) -> Declaration {
        Declaration {
            declared,
            next: AtomicPtr::new(ptr::null_mut()),
            listed: AtomicBool::new(false),
        }
    }

    /// Adds this declaration to the program's list (once; a second call
    /// does nothing).
    pub fn list(&'static self) {
        if self.listed.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = ptr::from_ref(self).cast_mut();
        let mut head = HEAD.load(Ordering::Acquire);
        loop {
            self.next.store(head, Ordering::Relaxed);
            match HEAD.compare_exchange_weak(head, me, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(now) => head = now,
            }
        }
    }
}

/// Everything the program has declared so far, most recent first.
pub(crate) fn all() -> impl Iterator<Item = &'static dyn Declared> {
    let mut at = HEAD.load(Ordering::Acquire);
    std::iter::from_fn(move || {
        // SAFETY: the list holds only `&'static Declaration`s (see `list`),
        // never freed; `next` is written before the node is published.
        let d: &'static Declaration = unsafe { at.as_ref() }?;
        at = d.next.load(Ordering::Acquire);
        Some(d.declared)
    })
}

/// Warming blobs up by name: the declarations of each blob say which
/// entry points to resolve, so this part of [`Runtime`] is written here,
/// above it, and the runtime reads none of the program's declarations.
impl Runtime {
    /// Compiles and loads `blobs` in parallel (at most `CK_JIT_JOBS`
    /// compiles at once, no more than the memory available holds at their
    /// groups' estimates, and under `make -jN` or in a cargo build script no
    /// more than the jobserver's free slots), returning each blob's result
    /// in input order.
    ///
    /// A blob is ready when its entry points are found: those that the
    /// program's `#[lazy_kernel]` declarations of it name (its own
    /// `symbol`/`symbol_prefix`, its family's), whose slots are then filled
    /// so that their first call costs one load, or the manifest's symbol
    /// when no declaration of it resolves through this runtime. A blob
    /// declared by two kernels with two symbols has both resolved.
    pub fn warmup(&self, blobs: &[&str]) -> Vec<(String, Result<(), Error>)> {
        self.in_parallel(blobs, |b| self.warm(b))
    }

    /// Compiles and loads `blob` and resolves its entry points, as
    /// [`Runtime::warmup`] describes.
    fn warm(&self, blob: &str) -> Result<(), Error> {
        let mut declared = false;
        for d in all() {
            if let Some(filled) = d.warm(self, blob) {
                declared = true;
                filled?;
            }
        }
        if declared {
            return Ok(());
        }
        self.resolve(blob, None).map(|_| ())
    }
}

/// Lists a [`Declaration`] of `$declared` (a `&'static` slot, family table
/// or embedded manifest) in the program's list when the program (or the
/// shared object holding it) starts. Used by the code `#[lazy_kernel]` and
/// [`embed_manifest!`](crate::embed_manifest) generate; not a stable API.
#[doc(hidden)]
#[macro_export]
macro_rules! __declare {
    ($declared:expr) => {
        const _: () = {
            static DECLARATION: $crate::__private::Declaration =
                $crate::__private::Declaration::new($declared);
            extern "C" fn list() {
                DECLARATION.list();
            }
            #[used]
            #[cfg_attr(
                any(
                    target_os = "linux",
                    target_os = "android",
                    target_os = "freebsd",
                    target_os = "netbsd",
                    target_os = "openbsd",
                    target_os = "dragonfly",
                    target_os = "illumos",
                    target_os = "solaris",
                    target_os = "fuchsia",
                    target_os = "haiku",
                ),
                unsafe(link_section = ".init_array")
            )]
            #[cfg_attr(
                target_vendor = "apple",
                unsafe(link_section = "__DATA,__mod_init_func")
            )]
            static LIST: extern "C" fn() = list;
        };
    };
}

/// The runtime of the manifest this program's kernels use: the one
/// [`embed_manifest!`](crate::embed_manifest) embeds, which its
/// `#[lazy_kernel]` declarations resolve through. Warming blobs up on it
/// ([`Runtime::warmup`], [`Runtime::prepare_together`]) loads them where
/// the kernels' first calls find them, and a blob a declaration gives its
/// own symbol (`#[lazy_kernel(blob = "dot_f32_v2", symbol = "dot_f32")]`)
/// resolves that symbol. Inside the crate that embeds the manifest,
/// `ck_jit_runtime()` (defined by `embed_manifest!`) returns the same.
///
/// ```no_run
/// fn main() -> Result<(), ck_jit_rt::Error> {
///     let rt = ck_jit_rt::runtime()?;
///     // Compile and load before serving; every result names its blob.
///     for (blob, result) in rt.warmup(&["vadd_f32", "dot_f32_v2"]) {
///         if let Err(e) = result {
///             eprintln!("ck-jit: {blob} is not ready: {e}");
///         }
///     }
///     ck_jit_rt::freeze(); // from now on a miss is an error, not a compile
///     Ok(())
/// }
/// ```
///
/// # Errors
///
/// [`Error::ProgramManifest`] when the program embeds no manifest, or
/// several (two crates, each with its `embed_manifest!()`: each crate's
/// `ck_jit_runtime()` gives its own); the error of a manifest that cannot
/// be opened.
pub fn runtime() -> Result<&'static Runtime, Error> {
    let mut found: Vec<&'static Runtime> = Vec::new();
    for d in all() {
        let Some(rt) = d.runtime() else { continue };
        let rt = rt?;
        if !found.iter().any(|f| ptr::eq(*f, rt)) {
            found.push(rt);
        }
    }
    match found.as_slice() {
        [rt] => Ok(rt),
        several => Err(Error::ProgramManifest {
            manifests: several
                .iter()
                // Listed most recent first: name them in the order listed
                // at start-up.
                .rev()
                .map(|rt| rt.store().name().to_string())
                .collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_that_embeds_no_manifest_has_no_runtime() {
        // This test binary declares nothing.
        let e = runtime().unwrap_err();
        assert!(
            matches!(&e, Error::ProgramManifest { manifests } if manifests.is_empty()),
            "{e}"
        );
        assert!(e.to_string().contains("embed_manifest!()"), "{e}");
    }
}
