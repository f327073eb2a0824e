//! One module per command. Each takes the run's [`Context`] and its
//! arguments, does the work through the runtime's API, and prints its
//! result through [`Output`].
//!
//! [`Context`]: crate::context::Context
//! [`Output`]: crate::output::Output

pub mod build;
pub mod clean;
pub mod export;
pub mod gc;
pub mod list;
pub mod pack;
pub mod removal;
pub mod stat;
pub mod verify;
