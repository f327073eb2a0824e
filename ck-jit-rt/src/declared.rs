//! The kernels this program declares, listed before `main` runs, so that
//! what is asked for by blob name ([`Runtime::warmup`]) resolves the entry
//! points the declarations name (`#[lazy_kernel(symbol = "...")]`), not
//! only the manifest's.
//!
//! Each `#[lazy_kernel]` places, through [`declare!`](crate::__declare), a static
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
use crate::runtime::Runtime;
use crate::slot::Slot;

/// Something a program declares: a kernel's slot or a family's table.
pub trait Declared: Sync {
    /// Fills this declaration's entry points of `blob` (resolving the
    /// symbols it names) when it resolves `blob` through `rt`; `None` when
    /// it declares no kernel of `blob` there.
    fn warm(&'static self, rt: &Runtime, blob: &str) -> Option<Result<(), Error>>;
}

impl Declared for Slot {
    fn warm(&'static self, rt: &Runtime, blob: &str) -> Option<Result<(), Error>> {
        (self.blob() == blob && self.resolves_through(rt)).then(|| self.try_get().map(|_| ()))
    }
}

impl<F: 'static> Declared for FamilySlots<F> {
    fn warm(&'static self, rt: &Runtime, blob: &str) -> Option<Result<(), Error>> {
        FamilySlots::warm(self, rt, blob)
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

/// Lists a [`Declaration`] of `$declared` (a `&'static` slot or family
/// table) in the program's list when the program (or the shared object
/// holding it) starts. Used by the code `#[lazy_kernel]` generates; not a
/// stable API.
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
