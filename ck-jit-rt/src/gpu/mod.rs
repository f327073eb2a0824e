//! The GPU targets of a compile: which architectures a recorded argv names
//! and how to narrow it to one device ([`arch`]), and which device this
//! process uses ([`device`], detected at most once per platform).
//!
//! Owns: architecture names in argv, the narrowing rules, device
//! detection and its memo in the cache root.
//!
//! May use: [`config`](crate::config) (`CK_JIT_ARCH` and the device
//! variables), [`error`](crate::error), and [`object`](crate::object)'s
//! text-file helper. Nothing above it: the runtime asks it, never the
//! reverse.

pub mod arch;
pub(crate) mod device;
