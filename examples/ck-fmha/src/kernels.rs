//! The seven kernel families: one `#[lazy_kernel(family = ...)]`
//! declaration per blob kind, each the C signature every blob of the kind
//! exports, over the manifest group the CK preset made of that kind.
//!
//! A family is a module (`fwd::select`, `fwd::call`, `fwd::by_name`,
//! `fwd::candidates`, `fwd::blobs`, `fwd::prepare`): selecting a blob
//! compares metadata and compiles nothing; the first call of a blob
//! compiles and loads it, later calls cost one acquire load. Each blob's
//! entry is a C++ template specialisation, found by the mangled-name
//! prefix the preset recorded for its kind (`_Z9fmha_fwd_I` for `fwd`).
//!
//! | family | C++ entry | returns |
//! |---|---|---|
//! | [`fwd`] | `fmha_fwd_<T, Arch>` | kernel time (ms) |
//! | [`fwd_splitkv`] | `fmha_fwd_splitkv_oneshot_<T, Arch>` | nothing |
//! | [`fwd_splitkv_combine`] | `fmha_fwd_splitkv_combine_oneshot_<T, Arch>` | nothing |
//! | [`fwd_appendkv`] | `fmha_fwd_appendkv_<T, Arch>` | kernel time |
//! | [`bwd_dot_do_o`] | `fmha_bwd_dot_do_o_<T, Arch>` | kernel time |
//! | [`bwd_dq_dk_dv`] | `fmha_bwd_dq_dk_dv_<T, Arch>` | kernel time |
//! | [`bwd_convert_dq`] | `fmha_bwd_convert_dq_<T, Arch>` | kernel time |
//!
//! With CK 2025-11 for `gfx942` the build records 3,932 `fwd`, 1,008
//! `fwd_splitkv`, 138 `fwd_splitkv_combine`, 99 `fwd_appendkv`, 60
//! `bwd_dot_do_o`, 6,720 `bwd_dq_dk_dv` and 120 `bwd_convert_dq` blobs
//! (12,077; `tests/rules.rs` checks the counts).
//!
//! Calls are `unsafe`: the argument struct's pointers must be valid for
//! what the kernel reads and writes.

use ck_jit_macros::lazy_kernel;

use crate::args::{
    FmhaBwdArgs, FmhaFwdAppendkvArgs, FmhaFwdArgs, FmhaFwdSplitkvArgs, StreamConfig,
};

/// Forward attention: `float fmha_fwd_<trait>(const stream_config&,
/// fmha_fwd_args)`.
#[lazy_kernel(family = "fwd")]
pub unsafe extern "C" fn fwd(s: *const StreamConfig, a: FmhaFwdArgs) -> f32;

/// The split-KV pass: `void fmha_fwd_splitkv_oneshot_<trait>(const
/// stream_config&, fmha_fwd_splitkv_args)`.
#[lazy_kernel(family = "fwd_splitkv")]
pub unsafe extern "C" fn fwd_splitkv(s: *const StreamConfig, a: FmhaFwdSplitkvArgs);

/// The split-KV combine pass: `void
/// fmha_fwd_splitkv_combine_oneshot_<trait>(const stream_config&,
/// fmha_fwd_splitkv_args)`.
#[lazy_kernel(family = "fwd_splitkv_combine")]
pub unsafe extern "C" fn fwd_splitkv_combine(s: *const StreamConfig, a: FmhaFwdSplitkvArgs);

/// KV-cache append: `float fmha_fwd_appendkv_<trait>(const stream_config&,
/// fmha_fwd_appendkv_args)`.
#[lazy_kernel(family = "fwd_appendkv")]
pub unsafe extern "C" fn fwd_appendkv(s: *const StreamConfig, a: FmhaFwdAppendkvArgs) -> f32;

/// Backward, first kernel: `float fmha_bwd_dot_do_o_<trait>(const
/// stream_config&, fmha_bwd_args)`.
#[lazy_kernel(family = "bwd_dot_do_o")]
pub unsafe extern "C" fn bwd_dot_do_o(s: *const StreamConfig, a: FmhaBwdArgs) -> f32;

/// Backward, main kernel: `float fmha_bwd_dq_dk_dv_<trait>(const
/// stream_config&, fmha_bwd_args)`.
#[lazy_kernel(family = "bwd_dq_dk_dv")]
pub unsafe extern "C" fn bwd_dq_dk_dv(s: *const StreamConfig, a: FmhaBwdArgs) -> f32;

/// Backward, last kernel: `float fmha_bwd_convert_dq_<trait>(const
/// stream_config&, fmha_bwd_args)`.
#[lazy_kernel(family = "bwd_convert_dq")]
pub unsafe extern "C" fn bwd_convert_dq(s: *const StreamConfig, a: FmhaBwdArgs) -> f32;
