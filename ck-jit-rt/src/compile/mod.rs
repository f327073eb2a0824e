//! Running compilers: finding a program, identifying it by content,
//! building each step's argv from a group's template (launchers included),
//! running the steps under a time limit, and admitting as many compiles at
//! once as cores, the jobserver and memory allow.
//!
//! Owns: compiler identity and its memo files, compile jobs and their
//! slots, the memory budget and each group's learnt estimate
//! ([`memory`]).
//!
//! May use: [`config`](crate::config), [`error`](crate::error) and
//! [`object`](crate::object)'s ELF checks (an output that is no object of
//! this machine is refused here) and text-file helper. It knows nothing of the cache: the
//! cache keys what this module reports.

mod compiler;
pub(crate) mod memory;

pub use compiler::*;
