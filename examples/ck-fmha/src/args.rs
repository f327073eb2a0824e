//! The argument structs CK's FMHA entry points take, as `#[repr(C)]` Rust
//! structs with CK's fields in CK's order: `ck_tile::stream_config` and
//! `fmha_fwd_args`, `fmha_fwd_splitkv_args`, `fmha_fwd_appendkv_args`,
//! `fmha_bwd_args` of `example/ck_tile/01_fmha/fmha_{fwd,bwd}.hpp`, in the
//! version whose code generator wrote the blob list (fp8 static
//! quantisation through `scale_p`/`scale_o`; the dropout seed and offset a
//! `std::variant`). `ck-standin/` declares the same structs for the blobs;
//! the `layout` test compiles a probe against those headers and checks
//! every field's offset and each struct's size against these.
//!
//! Field names are CK's (`stream_config`'s without the trailing `_`);
//! `ck_tile::index_t` is `i32`. Sizes are in elements: `seqlen_*` tokens,
//! `hdim_*` per head, `nhead_*` heads; strides too: `stride_*` between
//! rows (tokens), `nhead_stride_*` between heads, `batch_stride_*` between
//! batch entries, `split_stride_*` between splits. Defaults are zeros and
//! nulls, except one batch entry and one head, unit scales, unbounded
//! windows (-1) and one split. A blob's entry takes the stream config by
//! reference and the arguments by value, so each kernel family's signature
//! is `(s: *const StreamConfig, a: <Args>)`.
//!
//! Nothing here dereferences a pointer: these are plain data for the
//! kernels, which do.

use std::ffi::c_void;
use std::ptr;

/// Declares a `#[repr(C)]` argument struct with its fields' defaults, and
/// `FIELDS`, every field's name and offset in declaration order (what the
/// layout test compares with the C++ declaration).
macro_rules! ck_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                pub $field:ident : $ty:ty = $default:expr,
            )*
        }
    ) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Debug, Clone, Copy, PartialEq)]
        // Fields without their own docs are strides and sizes, documented
        // once in the module docs.
        #[allow(missing_docs)]
        pub struct $name {
            $(
                $(#[$fmeta])*
                pub $field: $ty,
            )*
        }

        impl Default for $name {
            fn default() -> $name {
                $name {
                    $( $field: $default, )*
                }
            }
        }

        impl $name {
            /// Every field's name and byte offset, in declaration (CK's)
            /// order.
            pub const FIELDS: &'static [(&'static str, usize)] = &[
                $( (stringify!($field), ::core::mem::offset_of!($name, $field)), )*
            ];
        }
    };
}

ck_struct! {
    /// `ck_tile::stream_config`: the HIP stream and timing settings of a
    /// launch. The default is CK's (the null stream, no timing).
    pub struct StreamConfig {
        /// `hipStream_t` (`stream_id_`).
        pub stream_id: *mut c_void = ptr::null_mut(),
        /// Whether the launch is timed (`time_kernel_`).
        pub time_kernel: bool = false,
        /// `log_level_`: above 0 each launch prints the kernel name.
        pub log_level: i32 = 0,
        /// Untimed warm-up runs when timing (`cold_niters_`).
        pub cold_niters: i32 = 3,
        /// Timed runs (`nrepeat_`).
        pub nrepeat: i32 = 10,
        /// `is_gpu_timer_`.
        pub is_gpu_timer: bool = true,
        /// `flush_cache_`.
        pub flush_cache: bool = false,
        /// `rotating_count_`.
        pub rotating_count: i32 = 1,
    }
}

/// `std::variant<std::pair<uint64_t, uint64_t>, std::pair<const void*,
/// const void*>>`: the dropout seed and offset, or pointers to them in
/// device memory.
///
/// Laid out as libstdc++ and libc++ lay the variant out on 64-bit targets:
/// 16 bytes holding the active pair, then a one-byte index (0: values,
/// 1: pointers), 24 bytes in all. The layout test checks the size and the
/// stand-in kernels read it back.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropSeedOffset {
    storage: [u64; 2],
    index: u8,
}

impl DropSeedOffset {
    /// The seed and offset themselves (variant index 0).
    pub fn values(seed: u64, offset: u64) -> DropSeedOffset {
        DropSeedOffset {
            storage: [seed, offset],
            index: 0,
        }
    }

    /// Pointers to the seed and offset in device memory (variant index 1).
    pub fn pointers(seed: *const u64, offset: *const u64) -> DropSeedOffset {
        DropSeedOffset {
            storage: [seed as usize as u64, offset as usize as u64],
            index: 1,
        }
    }

    /// The seed and offset, when they are values.
    pub fn as_values(&self) -> Option<(u64, u64)> {
        (self.index == 0).then_some((self.storage[0], self.storage[1]))
    }
}

impl Default for DropSeedOffset {
    fn default() -> DropSeedOffset {
        DropSeedOffset::values(0, 0)
    }
}

ck_struct! {
    /// `fmha_fwd_args`: one forward attention call,
    /// `O = softmax(scale_s * Q Kᵀ + bias) V`, for the `fwd` family.
    ///
    /// Tensors are device pointers with strides in elements; in group mode
    /// the `seqstart_*` arrays give each sequence's start.
    pub struct FmhaFwdArgs {
        /// Q: `[batch, nhead_q, seqlen_q, hdim_q]` by the strides below.
        pub q_ptr: *const c_void = ptr::null(),
        /// K.
        pub k_ptr: *const c_void = ptr::null(),
        /// V.
        pub v_ptr: *const c_void = ptr::null(),
        /// Elementwise bias, or ALiBi slopes.
        pub bias_ptr: *const c_void = ptr::null(),
        /// Random values kept for dropout (`s_randval`).
        pub rand_val_ptr: *mut c_void = ptr::null_mut(),
        /// Log-sum-exp output (kernels with `lse`).
        pub lse_ptr: *mut c_void = ptr::null_mut(),
        /// O, the output.
        pub o_ptr: *mut c_void = ptr::null_mut(),
        /// Group mode: `batch + 1` query sequence starts.
        pub seqstart_q_ptr: *const c_void = ptr::null(),
        /// Group mode: `batch + 1` key sequence starts.
        pub seqstart_k_ptr: *const c_void = ptr::null(),
        /// Group mode: per-sequence key lengths, when given.
        pub seqlen_k_ptr: *const c_void = ptr::null(),
        /// Query sequence length (batch mode).
        pub seqlen_q: i32 = 0,
        /// Key sequence length (batch mode).
        pub seqlen_k: i32 = 0,
        /// Batch size.
        pub batch: i32 = 1,
        /// Longest query sequence (group mode).
        pub max_seqlen_q: i32 = 0,
        /// Q/K head dimension.
        pub hdim_q: i32 = 0,
        /// V head dimension.
        pub hdim_v: i32 = 0,
        /// Query heads.
        pub nhead_q: i32 = 1,
        /// Key/value heads (fewer than `nhead_q` for MQA/GQA).
        pub nhead_k: i32 = 1,
        /// Softmax scale, usually `1/sqrt(hdim_q)`.
        pub scale_s: f32 = 1.0,
        /// fp8 static quantisation: scale of P.
        pub scale_p: f32 = 1.0,
        /// fp8 static quantisation: scale of O.
        pub scale_o: f32 = 1.0,
        pub stride_q: i32 = 0,
        pub stride_k: i32 = 0,
        pub stride_v: i32 = 0,
        /// For ALiBi: `nhead` when slopes are per batch and head, 0 when
        /// per head only.
        pub stride_bias: i32 = 0,
        pub stride_randval: i32 = 0,
        pub stride_o: i32 = 0,
        pub nhead_stride_q: i32 = 0,
        pub nhead_stride_k: i32 = 0,
        pub nhead_stride_v: i32 = 0,
        pub nhead_stride_bias: i32 = 0,
        pub nhead_stride_randval: i32 = 0,
        pub nhead_stride_lse: i32 = 0,
        pub nhead_stride_o: i32 = 0,
        pub batch_stride_q: i32 = 0,
        pub batch_stride_k: i32 = 0,
        pub batch_stride_v: i32 = 0,
        pub batch_stride_bias: i32 = 0,
        pub batch_stride_randval: i32 = 0,
        pub batch_stride_lse: i32 = 0,
        pub batch_stride_o: i32 = 0,
        /// Sliding window to the left (-1: unbounded).
        pub window_size_left: i32 = -1,
        /// Sliding window to the right (-1: unbounded, 0: causal).
        pub window_size_right: i32 = -1,
        /// CK's `mask_enum` value ([`Mask::ck_value`](crate::Mask::ck_value)).
        pub mask_type: i32 = 0,
        /// Dropout probability.
        pub p_drop: f32 = 0.0,
        /// Whether the random values are stored to `rand_val_ptr`.
        pub s_randval: bool = false,
        /// Dropout seed and offset.
        pub drop_seed_offset: DropSeedOffset = DropSeedOffset::values(0, 0),
    }
}

ck_struct! {
    /// `fmha_fwd_splitkv_args`: one split-KV forward call, for the
    /// `fwd_splitkv` pass (partial results into `o_acc`/`lse_acc`, one per
    /// split) and the `fwd_splitkv_combine` pass (reduced into `o`).
    pub struct FmhaFwdSplitkvArgs {
        pub q_ptr: *const c_void = ptr::null(),
        pub k_ptr: *const c_void = ptr::null(),
        pub v_ptr: *const c_void = ptr::null(),
        /// Elementwise bias, or ALiBi slopes.
        pub bias_ptr: *const c_void = ptr::null(),
        /// Per-split log-sum-exp (written by the split pass).
        pub lse_acc_ptr: *mut c_void = ptr::null_mut(),
        /// Per-split partial output (written by the split pass).
        pub o_acc_ptr: *mut c_void = ptr::null_mut(),
        /// Log-sum-exp output (combine kernels with `lse`).
        pub lse_ptr: *mut c_void = ptr::null_mut(),
        /// O, the output (written by the combine pass).
        pub o_ptr: *mut c_void = ptr::null_mut(),
        /// Paged KV cache: the block table (null: not paged).
        pub block_table_ptr: *mut c_void = ptr::null_mut(),
        /// Paged KV cache: the block table's batch stride.
        pub batch_stride_block_table: i32 = 0,
        /// Paged KV cache: tokens per page.
        pub page_block_size: i32 = 0,
        /// KV cache: the cache row of each batch entry.
        pub cache_batch_idx: *const c_void = ptr::null(),
        pub seqstart_q_ptr: *const c_void = ptr::null(),
        pub seqstart_k_ptr: *const c_void = ptr::null(),
        pub seqlen_k_ptr: *const c_void = ptr::null(),
        pub seqlen_q: i32 = 0,
        pub seqlen_k: i32 = 0,
        pub batch: i32 = 1,
        pub max_seqlen_q: i32 = 0,
        pub hdim_q: i32 = 0,
        pub hdim_v: i32 = 0,
        pub nhead_q: i32 = 1,
        pub nhead_k: i32 = 1,
        /// How many splits the keys are processed in.
        pub num_splits: i32 = 1,
        pub scale_s: f32 = 1.0,
        pub scale_p: f32 = 1.0,
        pub scale_o: f32 = 1.0,
        pub stride_q: i32 = 0,
        pub stride_k: i32 = 0,
        pub stride_v: i32 = 0,
        pub stride_bias: i32 = 0,
        pub stride_o_acc: i32 = 0,
        pub stride_o: i32 = 0,
        pub nhead_stride_q: i32 = 0,
        pub nhead_stride_k: i32 = 0,
        pub nhead_stride_v: i32 = 0,
        pub nhead_stride_bias: i32 = 0,
        pub nhead_stride_lse: i32 = 0,
        pub nhead_stride_lse_acc: i32 = 0,
        pub nhead_stride_o_acc: i32 = 0,
        pub nhead_stride_o: i32 = 0,
        pub batch_stride_q: i32 = 0,
        pub batch_stride_k: i32 = 0,
        pub batch_stride_v: i32 = 0,
        pub batch_stride_bias: i32 = 0,
        pub batch_stride_lse: i32 = 0,
        pub batch_stride_lse_acc: i32 = 0,
        pub batch_stride_o_acc: i32 = 0,
        pub batch_stride_o: i32 = 0,
        pub split_stride_lse_acc: i32 = 0,
        pub split_stride_o_acc: i32 = 0,
        pub window_size_left: i32 = -1,
        pub window_size_right: i32 = -1,
        /// CK's `mask_enum` value.
        pub mask_type: i32 = 0,
    }
}

ck_struct! {
    /// `fmha_fwd_appendkv_args`: appending `knew`/`vnew` to a KV cache
    /// (with rotary embedding of the new keys and of Q), for the
    /// `fwd_appendkv` family.
    pub struct FmhaFwdAppendkvArgs {
        /// Q (rotated in place when `rotary_dim > 0`).
        pub q_ptr: *mut c_void = ptr::null_mut(),
        /// The K cache, appended to.
        pub k_ptr: *mut c_void = ptr::null_mut(),
        /// The new keys.
        pub knew_ptr: *const c_void = ptr::null(),
        /// The V cache, appended to.
        pub v_ptr: *mut c_void = ptr::null_mut(),
        /// The new values.
        pub vnew_ptr: *const c_void = ptr::null(),
        /// Per-sequence cache lengths before the append.
        pub seqlen_k_ptr: *const c_void = ptr::null(),
        pub seqlen_q: i32 = 0,
        /// New tokens per sequence.
        pub seqlen_knew: i32 = 0,
        pub batch: i32 = 1,
        pub hdim_q: i32 = 0,
        pub hdim_v: i32 = 0,
        pub nhead_q: i32 = 1,
        pub nhead_k: i32 = 1,
        /// Rotary cos table (when `rotary_dim > 0`).
        pub rotary_cos_ptr: *const c_void = ptr::null(),
        /// Rotary sin table (when `rotary_dim > 0`).
        pub rotary_sin_ptr: *const c_void = ptr::null(),
        /// Dimensions rotated (0: none).
        pub rotary_dim: i32 = 0,
        /// Whether the following attention is masked (causal rotary of Q).
        pub has_mask: bool = false,
        /// Paged KV cache: the block table (null: not paged).
        pub block_table_ptr: *mut c_void = ptr::null_mut(),
        pub batch_stride_block_table: i32 = 0,
        pub page_block_size: i32 = 0,
        pub cache_batch_idx: *const c_void = ptr::null(),
        pub stride_q: i32 = 0,
        pub stride_k: i32 = 0,
        pub stride_knew: i32 = 0,
        pub stride_v: i32 = 0,
        pub stride_vnew: i32 = 0,
        pub nhead_stride_q: i32 = 0,
        pub nhead_stride_k: i32 = 0,
        pub nhead_stride_knew: i32 = 0,
        pub nhead_stride_v: i32 = 0,
        pub nhead_stride_vnew: i32 = 0,
        pub batch_stride_q: i32 = 0,
        pub batch_stride_k: i32 = 0,
        pub batch_stride_knew: i32 = 0,
        pub batch_stride_v: i32 = 0,
        pub batch_stride_vnew: i32 = 0,
    }
}

ck_struct! {
    /// `fmha_bwd_args`: one backward attention call, shared by its three
    /// kernels: `bwd_dot_do_o` (`D = rowsum(dO ∘ O)` into `d`),
    /// `bwd_dq_dk_dv` (dK, dV, and dQ accumulated in `dq_acc`) and
    /// `bwd_convert_dq` (`dq_acc` into dQ).
    pub struct FmhaBwdArgs {
        pub q_ptr: *const c_void = ptr::null(),
        pub k_ptr: *const c_void = ptr::null(),
        pub v_ptr: *const c_void = ptr::null(),
        /// Elementwise bias, or ALiBi slopes.
        pub bias_ptr: *const c_void = ptr::null(),
        /// The forward output.
        pub o_ptr: *const c_void = ptr::null(),
        /// The forward log-sum-exp.
        pub lse_ptr: *const c_void = ptr::null(),
        /// dO, the incoming gradient.
        pub do_ptr: *const c_void = ptr::null(),
        /// D (written by `bwd_dot_do_o`).
        pub d_ptr: *mut c_void = ptr::null_mut(),
        pub rand_val_ptr: *mut c_void = ptr::null_mut(),
        /// dQ (written by `bwd_convert_dq`).
        pub dq_ptr: *mut c_void = ptr::null_mut(),
        /// dK (written by `bwd_dq_dk_dv`).
        pub dk_ptr: *mut c_void = ptr::null_mut(),
        /// dV (written by `bwd_dq_dk_dv`).
        pub dv_ptr: *mut c_void = ptr::null_mut(),
        /// The bias gradient (kernels with `dbias`).
        pub dbias_ptr: *mut c_void = ptr::null_mut(),
        /// The float dQ accumulator.
        pub dq_acc_ptr: *mut c_void = ptr::null_mut(),
        pub seqstart_q_ptr: *const c_void = ptr::null(),
        pub seqstart_k_ptr: *const c_void = ptr::null(),
        pub seqlen_k_ptr: *const c_void = ptr::null(),
        pub seqlen_q: i32 = 0,
        pub seqlen_k: i32 = 0,
        pub batch: i32 = 1,
        pub max_seqlen_q: i32 = 0,
        pub max_seqlen_k: i32 = 0,
        pub hdim_q: i32 = 0,
        pub hdim_v: i32 = 0,
        pub nhead_q: i32 = 1,
        pub nhead_k: i32 = 1,
        /// Softmax scale.
        pub scale: f32 = 1.0,
        pub stride_q: i32 = 0,
        pub stride_k: i32 = 0,
        pub stride_v: i32 = 0,
        pub stride_bias: i32 = 0,
        pub stride_o: i32 = 0,
        pub stride_randval: i32 = 0,
        pub stride_do: i32 = 0,
        pub stride_dq_acc: i32 = 0,
        pub stride_dq: i32 = 0,
        pub stride_dk: i32 = 0,
        pub stride_dv: i32 = 0,
        pub stride_dbias: i32 = 0,
        pub nhead_stride_q: i32 = 0,
        pub nhead_stride_k: i32 = 0,
        pub nhead_stride_v: i32 = 0,
        pub nhead_stride_bias: i32 = 0,
        pub nhead_stride_o: i32 = 0,
        pub nhead_stride_randval: i32 = 0,
        pub nhead_stride_do: i32 = 0,
        pub nhead_stride_lsed: i32 = 0,
        pub nhead_stride_dq_acc: i32 = 0,
        pub nhead_stride_dq: i32 = 0,
        pub nhead_stride_dk: i32 = 0,
        pub nhead_stride_dv: i32 = 0,
        pub nhead_stride_dbias: i32 = 0,
        pub batch_stride_q: i32 = 0,
        pub batch_stride_k: i32 = 0,
        pub batch_stride_v: i32 = 0,
        pub batch_stride_bias: i32 = 0,
        pub batch_stride_o: i32 = 0,
        pub batch_stride_randval: i32 = 0,
        pub batch_stride_do: i32 = 0,
        pub batch_stride_lsed: i32 = 0,
        pub batch_stride_dq_acc: i32 = 0,
        pub batch_stride_dq: i32 = 0,
        pub batch_stride_dk: i32 = 0,
        pub batch_stride_dv: i32 = 0,
        pub batch_stride_dbias: i32 = 0,
        /// Deterministic kernels: the stride between the per-split dQ
        /// accumulators.
        pub split_stride_dq_acc: i32 = 0,
        pub window_size_left: i32 = -1,
        pub window_size_right: i32 = -1,
        /// CK's `mask_enum` value.
        pub mask_type: i32 = 0,
        /// Dropout probability.
        pub p_drop: f32 = 0.0,
        /// `1 / (1 - p_drop)`.
        pub p_undrop: f32 = 1.0,
        /// Dropout seed and offset.
        pub drop_seed_offset: DropSeedOffset = DropSeedOffset::values(0, 0),
    }
}
