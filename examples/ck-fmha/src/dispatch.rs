//! The Rust side of CK's `*_api.cpp` dispatchers: from what an operation
//! needs (CK's public `fmha_*_traits`: data type, head dimension, mode,
//! mask, bias, lse, dropout, ...) and its arguments to the blob(s) that
//! run it.
//!
//! Each `*Traits` maps to a [`Query`] over the blobs' metadata
//! ([`FwdTraits::query`]); `select` takes the matching blobs of the
//! smallest head dimension that covers the operation in name order (the
//! order of CK's if-chain) and returns the first whose tile and padding
//! handle the arguments' lengths and head dimensions, by the checks CK's
//! dispatcher makes (`a.seqlen_q % 128 == 0` for a kernel without
//! sequence padding, ...). Like CK's dispatcher it does not fall back to a
//! kernel for a larger head dimension when none of the smallest fits. Split-KV picks the combine blob that
//! matches its split blob, and backward the `dot_do_o` and `convert_dq`
//! blobs that go with its main kernel, as CK's dispatcher derives them.
//!
//! Selection compares strings: do it once per configuration and keep the
//! kernels. It compiles nothing; the first call of a chosen blob does.

use std::collections::BTreeMap;

use ck_jit_rt::Query;

use crate::args::{
    FmhaBwdArgs, FmhaFwdAppendkvArgs, FmhaFwdArgs, FmhaFwdSplitkvArgs, StreamConfig,
};
use crate::error::Error;
use crate::kernels::{
    bwd_convert_dq, bwd_dot_do_o, bwd_dq_dk_dv, fwd, fwd_appendkv, fwd_splitkv, fwd_splitkv_combine,
};

/// Element type of Q, K and V (the `dtype` metadata, CK's `data_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// `fp16`.
    Fp16,
    /// `bf16`.
    Bf16,
    /// `fp8` (forward only, with static quantisation).
    Fp8,
    /// `bf8`.
    Bf8,
}

impl DType {
    /// CK's name: `fp16`, `bf16`, `fp8`, `bf8`.
    pub fn as_str(self) -> &'static str {
        match self {
            DType::Fp16 => "fp16",
            DType::Bf16 => "bf16",
            DType::Fp8 => "fp8",
            DType::Bf8 => "bf8",
        }
    }

    fn is_8bit(self) -> bool {
        matches!(self, DType::Fp8 | DType::Bf8)
    }
}

/// Batch mode (equal lengths) or group mode (packed sequences of different
/// lengths, `seqstart_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// `batch`.
    Batch,
    /// `group`.
    Group,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Mode::Batch => "batch",
            Mode::Group => "group",
        }
    }
}

/// Layout of V.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VLayout {
    /// `[seqlen_k, hdim_v]` (`vr`).
    RowMajor,
    /// `[hdim_v, seqlen_k]` (`vc`).
    ColMajor,
}

impl VLayout {
    fn as_str(self) -> &'static str {
        match self {
            VLayout::RowMajor => "row",
            VLayout::ColMajor => "col",
        }
    }
}

/// Attention mask (CK's `mask_enum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mask {
    /// No mask.
    None,
    /// Causal, aligned to the top left.
    TopLeft,
    /// Causal, aligned to the bottom right.
    BottomRight,
    /// A sliding window (`window_size_left/right`).
    Window,
}

impl Mask {
    /// The `mask_type` argument value (CK's `mask_enum`).
    pub fn ck_value(self) -> i32 {
        match self {
            Mask::None => 0,
            Mask::TopLeft => 1,
            Mask::BottomRight => 2,
            Mask::Window => 3,
        }
    }

    /// The blobs that handle it: unmasked ones for no mask, masked ones
    /// (CK's simplified generic mask, any kind at run time) otherwise.
    fn meta(self) -> &'static str {
        if self == Mask::None {
            "no"
        } else {
            "mask"
        }
    }
}

/// Attention bias.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bias {
    /// None.
    None,
    /// An elementwise bias tensor.
    Elementwise,
    /// ALiBi slopes.
    Alibi,
}

impl Bias {
    fn meta(self) -> &'static str {
        match self {
            Bias::None => "no",
            Bias::Elementwise => "bias",
            Bias::Alibi => "alibi",
        }
    }
}

/// Rotary embedding applied by the KV-cache append.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rope {
    /// None.
    None,
    /// Interleaved pairs.
    Interleaved,
    /// Half-rotated.
    HalfRotated,
}

impl Rope {
    fn meta(self) -> &'static str {
        match self {
            Rope::None => "no",
            Rope::Interleaved => "inter",
            Rope::HalfRotated => "half",
        }
    }
}

fn flag(q: Query, key: &str, on: bool) -> Query {
    if on {
        q.has(key)
    } else {
        q.lacks(key)
    }
}

fn hdim(hdim_q: u32, hdim_v: u32) -> i64 {
    i64::from(hdim_q.max(hdim_v))
}

/// A blob's metadata, read as the dispatcher's checks need it.
struct Meta<'a>(&'a BTreeMap<String, String>);

impl<'a> Meta<'a> {
    fn get(&self, key: &str) -> &'a str {
        self.0.get(key).map_or("", String::as_str)
    }

    fn flag(&self, key: &str) -> bool {
        self.get(key) == "true"
    }

    /// The block tile the blob declares (`fmha_block_tile_0`, recorded as
    /// `block_tile` = `128x64x...`), entry `i`; 0 when absent.
    fn tile(&self, i: usize) -> i32 {
        self.get("block_tile")
            .split('x')
            .nth(i)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }
}

fn divides(len: i32, by: i32) -> bool {
    by > 0 && len % by == 0
}

/// The first of `candidates` (best first, so smallest head dimension
/// first) that handles the shape, or the error saying why the best one
/// does not.
///
/// Only the candidates of the smallest head dimension are tried, as in
/// CK's dispatchers: each is an if-chain over head dimension buckets that
/// enters the first bucket covering the operation and reports "no kernel"
/// when nothing in it fits, rather than running the operation on a kernel
/// for a larger head dimension.
fn first_fitting<K: Copy>(
    family: &'static str,
    query: &Query,
    candidates: &[K],
    meta: impl Fn(K) -> &'static BTreeMap<String, String>,
    name: impl Fn(K) -> &'static str,
    fits: impl Fn(&Meta<'_>) -> Result<(), String>,
) -> Result<K, Error> {
    let bucket = candidates.first().map(|&k| Meta(meta(k)).get("hdim"));
    let mut why = None;
    let mut tried = 0;
    for &k in candidates {
        let m = Meta(meta(k));
        if Some(m.get("hdim")) != bucket {
            break;
        }
        tried += 1;
        match fits(&m) {
            Ok(()) => return Ok(k),
            Err(e) => {
                why.get_or_insert_with(|| format!("{} {e}", name(k)));
            }
        }
    }
    Err(Error::Shape {
        family,
        query: query.to_string(),
        matched: tried,
        why: why.unwrap_or_default(),
    })
}

/// CK's forward padding checks (`fmha_fwd_api.cpp`, split-KV too): a
/// kernel without padding of a dimension needs it to be a multiple of its
/// tile; the async pipeline needs head dimensions in whole vectors and
/// pads the key length only when it is not aligned.
fn fwd_fits(
    m: &Meta<'_>,
    dtype_8bit: bool,
    seqlen_q: i32,
    seqlen_k: i32,
    hdim_q: i32,
    hdim_v: i32,
) -> Result<(), String> {
    let group = m.get("mode") == "group";
    let asyn = m.get("pipeline") == "qr_async";
    let (bm0, bn0, bk0max) = (m.tile(0), m.tile(1), m.tile(5));
    let need = |ok: bool, what: String| if ok { Ok(()) } else { Err(what) };
    if !group && !asyn && !m.flag("spad") {
        need(
            divides(seqlen_q, bm0),
            format!("needs seqlen_q % {bm0} == 0 (seqlen_q = {seqlen_q})"),
        )?;
    }
    if !group {
        match (asyn, m.flag("skpad")) {
            (true, true) => need(
                seqlen_k == 0 || !divides(seqlen_k, bn0),
                format!("pads seqlen_k only when seqlen_k % {bn0} != 0 (seqlen_k = {seqlen_k})"),
            )?,
            (true, false) => need(
                seqlen_k != 0 && divides(seqlen_k, bn0),
                format!("needs seqlen_k % {bn0} == 0 and seqlen_k > 0 (seqlen_k = {seqlen_k})"),
            )?,
            (false, true) => {}
            (false, false) => need(
                divides(seqlen_k, bn0),
                format!("needs seqlen_k % {bn0} == 0 (seqlen_k = {seqlen_k})"),
            )?,
        }
    }
    // CK's K0_MAX_SUBMAX: the hdim granularity of an unpadded kernel.
    let sub = match bk0max {
        96 => 128,
        other => other,
    };
    let vec = if dtype_8bit { 16 } else { 8 };
    for (dim, key, pad) in [(hdim_q, "hdim_q", "dpad"), (hdim_v, "hdim_v", "dvpad")] {
        if asyn {
            need(
                divides(dim, vec),
                format!("needs {key} % {vec} == 0 ({key} = {dim})"),
            )?;
        } else if !m.flag(pad) {
            need(
                divides(dim, sub),
                format!("needs {key} % {sub} == 0 ({key} = {dim})"),
            )?;
        }
    }
    Ok(())
}

/// What a forward attention call needs (CK's `fmha_fwd_traits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FwdTraits {
    /// Q/K head dimension.
    pub hdim_q: u32,
    /// V head dimension.
    pub hdim_v: u32,
    /// Element type.
    pub dtype: DType,
    /// Batch or group mode.
    pub mode: Mode,
    /// Layout of V.
    pub v_layout: VLayout,
    /// Mask.
    pub mask: Mask,
    /// Bias.
    pub bias: Bias,
    /// Whether the log-sum-exp is stored (`lse_ptr`).
    pub lse: bool,
    /// Whether dropout is applied.
    pub dropout: bool,
    /// fp8 static quantisation (`scale_p`, `scale_o`).
    pub fp8_static_quant: bool,
}

impl FwdTraits {
    /// `dtype` attention with head dimension `hdim` (Q, K and V): batch
    /// mode, row-major V, no mask, bias, lse or dropout; static
    /// quantisation for the 8-bit types (the only fp8 kernels CK
    /// generates).
    pub fn new(dtype: DType, hdim: u32) -> FwdTraits {
        FwdTraits {
            hdim_q: hdim,
            hdim_v: hdim,
            dtype,
            mode: Mode::Batch,
            v_layout: VLayout::RowMajor,
            mask: Mask::None,
            bias: Bias::None,
            lse: false,
            dropout: false,
            fp8_static_quant: dtype.is_8bit(),
        }
    }

    /// The blobs that support these traits: the `fwd` family's metadata
    /// must match the data type, mode, V layout, mask, bias and the lse,
    /// dropout and quantisation switches, with the smallest head dimension
    /// that covers both `hdim_q` and `hdim_v` preferred.
    ///
    /// ```
    /// use ck_fmha::{DType, FwdTraits};
    ///
    /// let q = FwdTraits { lse: true, ..FwdTraits::new(DType::Bf16, 128) }.query();
    /// assert_eq!(
    ///     q.to_string(),
    ///     "dtype = bf16, mode = batch, hdim >= 128, vlayout = row, mask = no, bias = no, \
    ///      has lse, lacks dropout, lacks squant"
    /// );
    /// ```
    pub fn query(&self) -> Query {
        let q = Query::new()
            .eq("dtype", self.dtype.as_str())
            .eq("mode", self.mode.as_str())
            .ge("hdim", hdim(self.hdim_q, self.hdim_v))
            .eq("vlayout", self.v_layout.as_str())
            .eq("mask", self.mask.meta())
            .eq("bias", self.bias.meta());
        let q = flag(q, "lse", self.lse);
        let q = flag(q, "dropout", self.dropout);
        flag(q, "squant", self.fp8_static_quant)
    }

    /// The `fwd` blob that runs these traits on `a`'s shape: the first of
    /// [`query`](FwdTraits::query)'s matches whose padding handles
    /// `a.seqlen_q`, `a.seqlen_k`, `a.hdim_q` and `a.hdim_v`.
    ///
    /// # Errors
    ///
    /// [`Error::NoBlob`] when no blob supports the traits,
    /// [`Error::Shape`] when none handles the shape, [`Error::Runtime`]
    /// when the manifest cannot be read.
    pub fn select(&self, a: &FmhaFwdArgs) -> Result<fwd::Kernel, Error> {
        let q = self.query();
        // Fails with the family's explanation when nothing matches.
        fwd::select(&q)?;
        let candidates = fwd::candidates(&q)?;
        let small = self.dtype.is_8bit();
        first_fitting(
            "fwd",
            &q,
            &candidates,
            |k| k.meta(),
            |k| k.name(),
            |m| fwd_fits(m, small, a.seqlen_q, a.seqlen_k, a.hdim_q, a.hdim_v),
        )
    }
}

/// Runs forward attention as CK's `fmha_fwd(traits, args, stream)` does:
/// selects the blob ([`FwdTraits::select`]), compiles and loads it on its
/// first use, and calls it. Returns what the kernel returns (CK: the
/// kernel time in ms when the stream config times it).
///
/// Selection compares strings on every call; for repeated calls keep the
/// kernel from `select` and call it with [`fwd::call`].
///
/// # Safety
///
/// Every pointer in `a` must be valid for what the kernel reads and
/// writes, as for CK's `fmha_fwd`.
///
/// # Errors
///
/// As [`FwdTraits::select`], and [`Error::Runtime`] when the blob cannot be
/// compiled or loaded.
pub unsafe fn fmha_fwd(t: &FwdTraits, a: FmhaFwdArgs, s: &StreamConfig) -> Result<f32, Error> {
    let f = fwd::try_get(t.select(&a)?)?;
    // SAFETY: the blob's entry has this signature (the fwd family's); the
    // caller vouches for the pointers in `a`.
    Ok(unsafe { f(s, a) })
}

/// What a split-KV forward call needs (CK's `fmha_fwd_splitkv_traits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SplitkvTraits {
    /// Q/K head dimension.
    pub hdim_q: u32,
    /// V head dimension.
    pub hdim_v: u32,
    /// Element type.
    pub dtype: DType,
    /// Batch or group mode.
    pub mode: Mode,
    /// Layout of V.
    pub v_layout: VLayout,
    /// Mask.
    pub mask: Mask,
    /// Bias.
    pub bias: Bias,
    /// Whether the log-sum-exp is stored.
    pub lse: bool,
    /// fp8 static quantisation.
    pub fp8_static_quant: bool,
}

/// The two kernels of a split-KV call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitkvKernels {
    /// The split pass.
    pub splitkv: fwd_splitkv::Kernel,
    /// The combine pass that goes with it.
    pub combine: fwd_splitkv_combine::Kernel,
}

impl SplitkvTraits {
    /// As [`FwdTraits::new`], without dropout (split-KV has none).
    pub fn new(dtype: DType, hdim: u32) -> SplitkvTraits {
        SplitkvTraits {
            hdim_q: hdim,
            hdim_v: hdim,
            dtype,
            mode: Mode::Batch,
            v_layout: VLayout::RowMajor,
            mask: Mask::None,
            bias: Bias::None,
            lse: false,
            fp8_static_quant: dtype.is_8bit(),
        }
    }

    /// The split blobs that support these traits (`fwd_splitkv` family);
    /// [`select`](SplitkvTraits::select) adds whether the KV cache is paged.
    pub fn query(&self) -> Query {
        let q = Query::new()
            .eq("dtype", self.dtype.as_str())
            .eq("mode", self.mode.as_str())
            .ge("hdim", hdim(self.hdim_q, self.hdim_v))
            .eq("vlayout", self.v_layout.as_str())
            .eq("mask", self.mask.meta())
            .eq("bias", self.bias.meta());
        let q = flag(q, "lse", self.lse);
        flag(q, "squant", self.fp8_static_quant)
    }

    /// The split blob for `a` (paged when `a.block_table_ptr` is set, its
    /// padding handling `a`'s shape) and the combine blob CK pairs with it:
    /// same head dimension, data type and mode, tile `bm0/2 x bn1/2` of the
    /// split tile, the same lse, quantisation and padding of `seqlen_q` and
    /// `hdim_v`.
    ///
    /// # Errors
    ///
    /// As [`FwdTraits::select`].
    pub fn select(&self, a: &FmhaFwdSplitkvArgs) -> Result<SplitkvKernels, Error> {
        let q = flag(self.query(), "pagedkv", !a.block_table_ptr.is_null());
        fwd_splitkv::select(&q)?;
        let candidates = fwd_splitkv::candidates(&q)?;
        let small = self.dtype.is_8bit();
        let split = first_fitting(
            "fwd_splitkv",
            &q,
            &candidates,
            |k| k.meta(),
            |k| k.name(),
            |m| fwd_fits(m, small, a.seqlen_q, a.seqlen_k, a.hdim_q, a.hdim_v),
        )?;
        SplitkvKernels::for_split(split)
    }
}

impl SplitkvKernels {
    /// The pair CK runs for the split blob `split`: the combine blob of the
    /// same head dimension, data type and mode, with tile `bm0/2 x bn1/2`
    /// of the split tile, and the split blob's lse, quantisation and
    /// padding of `seqlen_q` and `hdim_v`.
    ///
    /// # Errors
    ///
    /// [`Error::NoBlob`] when the manifest has no such combine blob.
    pub fn for_split(split: fwd_splitkv::Kernel) -> Result<SplitkvKernels, Error> {
        let m = Meta(split.meta());
        let combine = Query::new()
            .eq("dtype", m.get("dtype"))
            .eq("mode", m.get("mode"))
            .eq("hdim", m.get("hdim"))
            .eq("block_tile", format!("{}x{}", m.tile(0) / 2, m.tile(3) / 2))
            .eq("lse", m.get("lse"))
            .eq("squant", m.get("squant"))
            .eq("spad", m.get("spad"))
            .eq("dvpad", m.get("dvpad"));
        Ok(SplitkvKernels {
            splitkv: split,
            combine: fwd_splitkv_combine::select(&combine)?,
        })
    }

    /// Runs the split pass, then the combine pass, as CK's
    /// `fmha_fwd_splitkv_` does.
    ///
    /// # Safety
    ///
    /// Every pointer in `a` must be valid for what the kernels read and
    /// write.
    ///
    /// # Errors
    ///
    /// When either blob cannot be compiled or loaded (then neither runs).
    pub unsafe fn run(&self, s: &StreamConfig, a: FmhaFwdSplitkvArgs) -> Result<(), Error> {
        let split = fwd_splitkv::try_get(self.splitkv)?;
        let combine = fwd_splitkv_combine::try_get(self.combine)?;
        // SAFETY: the entries have these signatures (their families'); the
        // caller vouches for the pointers in `a`.
        unsafe {
            split(s, a);
            combine(s, a);
        }
        Ok(())
    }
}

/// What a KV-cache append needs (CK's `fmha_fwd_appendkv_traits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AppendkvTraits {
    /// Q/K head dimension.
    pub hdim_q: u32,
    /// V head dimension.
    pub hdim_v: u32,
    /// Element type.
    pub dtype: DType,
    /// Layout of V.
    pub v_layout: VLayout,
    /// Rotary embedding.
    pub rope: Rope,
}

impl AppendkvTraits {
    /// `dtype` with head dimension `hdim`, row-major V, no rotary
    /// embedding.
    pub fn new(dtype: DType, hdim: u32) -> AppendkvTraits {
        AppendkvTraits {
            hdim_q: hdim,
            hdim_v: hdim,
            dtype,
            v_layout: VLayout::RowMajor,
            rope: Rope::None,
        }
    }

    /// The `fwd_appendkv` blobs that support these traits;
    /// [`select`](AppendkvTraits::select) adds whether the cache is paged.
    pub fn query(&self) -> Query {
        Query::new()
            .eq("dtype", self.dtype.as_str())
            .ge("hdim", hdim(self.hdim_q, self.hdim_v))
            .eq("vlayout", self.v_layout.as_str())
            .eq("rope", self.rope.meta())
    }

    /// The blob for `a`: paged when `a.block_table_ptr` is set, its padding
    /// handling `a.seqlen_q`, `a.hdim_q` and `a.hdim_v`.
    ///
    /// # Errors
    ///
    /// As [`FwdTraits::select`].
    pub fn select(&self, a: &FmhaFwdAppendkvArgs) -> Result<fwd_appendkv::Kernel, Error> {
        let q = flag(self.query(), "pagedkv", !a.block_table_ptr.is_null());
        fwd_appendkv::select(&q)?;
        let candidates = fwd_appendkv::candidates(&q)?;
        first_fitting(
            "fwd_appendkv",
            &q,
            &candidates,
            |k| k.meta(),
            |k| k.name(),
            |m| {
                for (len, key, tile, pad) in [
                    (a.seqlen_q, "seqlen_q", m.tile(0), "spad"),
                    (a.hdim_q, "hdim_q", m.tile(2), "dpad"),
                    (a.hdim_v, "hdim_v", m.tile(3), "dvpad"),
                ] {
                    if !m.flag(pad) && !divides(len, tile) {
                        return Err(format!("needs {key} % {tile} == 0 ({key} = {len})"));
                    }
                }
                Ok(())
            },
        )
    }
}

/// Appends to a KV cache as CK's `fmha_fwd_appendkv` does: selects,
/// compiles and loads on first use, calls.
///
/// # Safety
///
/// Every pointer in `a` must be valid for what the kernel reads and
/// writes.
///
/// # Errors
///
/// As [`fmha_fwd`].
pub unsafe fn fmha_fwd_appendkv(
    t: &AppendkvTraits,
    a: FmhaFwdAppendkvArgs,
    s: &StreamConfig,
) -> Result<f32, Error> {
    let f = fwd_appendkv::try_get(t.select(&a)?)?;
    // SAFETY: the fwd_appendkv family's signature; pointers per the caller.
    Ok(unsafe { f(s, a) })
}

/// What a backward attention call needs (CK's `fmha_bwd_traits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BwdTraits {
    /// Q/K head dimension.
    pub hdim_q: u32,
    /// V head dimension.
    pub hdim_v: u32,
    /// Element type (`fp16` or `bf16`).
    pub dtype: DType,
    /// Batch or group mode.
    pub mode: Mode,
    /// Mask.
    pub mask: Mask,
    /// Bias.
    pub bias: Bias,
    /// Whether the bias gradient is computed.
    pub dbias: bool,
    /// Whether dropout was applied in the forward pass.
    pub dropout: bool,
    /// Whether the dropout random values are stored.
    pub store_randval: bool,
    /// Deterministic dQ (per-split accumulators instead of atomics).
    pub deterministic: bool,
}

/// The three kernels of a backward call, in launch order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BwdKernels {
    /// `D = rowsum(dO ∘ O)`.
    pub dot_do_o: bwd_dot_do_o::Kernel,
    /// dK, dV and the dQ accumulator.
    pub dq_dk_dv: bwd_dq_dk_dv::Kernel,
    /// The dQ accumulator into dQ.
    pub convert_dq: bwd_convert_dq::Kernel,
}

impl BwdTraits {
    /// `dtype` with head dimension `hdim`: batch mode, no mask, bias,
    /// dropout; non-deterministic.
    pub fn new(dtype: DType, hdim: u32) -> BwdTraits {
        BwdTraits {
            hdim_q: hdim,
            hdim_v: hdim,
            dtype,
            mode: Mode::Batch,
            mask: Mask::None,
            bias: Bias::None,
            dbias: false,
            dropout: false,
            store_randval: false,
            deterministic: false,
        }
    }

    /// The main-kernel blobs (`bwd_dq_dk_dv` family) that support these
    /// traits.
    pub fn query(&self) -> Query {
        let q = Query::new()
            .eq("dtype", self.dtype.as_str())
            .eq("mode", self.mode.as_str())
            .ge("hdim", hdim(self.hdim_q, self.hdim_v))
            .eq("mask", self.mask.meta())
            .eq("bias", self.bias.meta());
        let q = flag(q, "dbias", self.dbias);
        // The generator names the dropout variant (`DROPOUT_MAP` of its
        // cpp_symbol_map.py): whether random values are stored is part of
        // it.
        let q = match (self.dropout, self.store_randval) {
            (false, _) => q.eq("dropout", "no"),
            (true, false) => q.eq("dropout", "dropout_wg16"),
            (true, true) => q.eq("dropout", "dropout_wg16_storerandval"),
        };
        flag(q, "deterministic", self.deterministic)
    }

    /// The three blobs for `a`: the first main kernel whose padding handles
    /// `a`'s shape (CK's backward kernels pad a dimension only when it is
    /// not a multiple of the tile, so padded and unpadded kernels exclude
    /// each other), then the `dot_do_o` and `convert_dq` blobs of the same
    /// head dimension, data type and mode that CK pairs with it: their
    /// `seqlen_q` padding is on in group mode, with a padded main kernel,
    /// or when `seqlen_q` is not a multiple of 64.
    ///
    /// # Errors
    ///
    /// As [`FwdTraits::select`].
    pub fn select(&self, a: &FmhaBwdArgs) -> Result<BwdKernels, Error> {
        let q = self.query();
        bwd_dq_dk_dv::select(&q)?;
        let candidates = bwd_dq_dk_dv::candidates(&q)?;
        let group = self.mode == Mode::Group;
        let main = first_fitting(
            "bwd_dq_dk_dv",
            &q,
            &candidates,
            |k| k.meta(),
            |k| k.name(),
            |m| {
                for (len, key, tile, pad, seq) in [
                    (a.seqlen_q, "seqlen_q", m.tile(0), "spad", true),
                    (a.seqlen_k, "seqlen_k", m.tile(1), "skpad", true),
                    (a.hdim_q, "hdim_q", m.tile(7), "dpad", false),
                    (a.hdim_v, "hdim_v", m.tile(8), "dvpad", false),
                ] {
                    if seq && group {
                        continue;
                    }
                    let aligned = divides(len, tile);
                    if m.flag(pad) == aligned {
                        let (op, is) = if aligned {
                            ("!=", "is")
                        } else {
                            ("==", "is not")
                        };
                        return Err(format!(
                            "needs {key} % {tile} {op} 0 ({key} = {len} {is} a multiple)"
                        ));
                    }
                }
                Ok(())
            },
        )?;
        let spad = group || Meta(main.meta()).flag("spad") || !divides(a.seqlen_q, 64);
        BwdKernels::for_main(main, spad)
    }
}

impl BwdKernels {
    /// The three kernels CK runs with the main kernel `main`: the
    /// `dot_do_o` and `convert_dq` blobs of its head dimension, data type
    /// and mode, padding `seqlen_q` as `spad` says (CK pads it in group
    /// mode, with a padded main kernel, and when `seqlen_q % 64 != 0`),
    /// `hdim_v` (dot_do_o) and `hdim_q` (convert_dq) as the main kernel
    /// does, and as deterministic as it is.
    ///
    /// # Errors
    ///
    /// [`Error::NoBlob`] when the manifest has no such helper blob.
    pub fn for_main(main: bwd_dq_dk_dv::Kernel, spad: bool) -> Result<BwdKernels, Error> {
        let m = Meta(main.meta());
        let helper = || {
            Query::new()
                .eq("dtype", m.get("dtype"))
                .eq("mode", m.get("mode"))
                .eq("hdim", m.get("hdim"))
                .eq("spad", spad)
        };
        let dot = helper().eq("dvpad", m.get("dvpad"));
        let convert = helper()
            .eq("dpad", m.get("dpad"))
            .eq("deterministic", m.get("deterministic"));
        Ok(BwdKernels {
            dot_do_o: bwd_dot_do_o::select(&dot)?,
            dq_dk_dv: main,
            convert_dq: bwd_convert_dq::select(&convert)?,
        })
    }

    /// Runs the three kernels in order, as CK's `fmha_bwd_` does, and
    /// returns the sum of what they return (CK: their time).
    ///
    /// # Safety
    ///
    /// Every pointer in `a` must be valid for what the kernels read and
    /// write.
    ///
    /// # Errors
    ///
    /// When a blob cannot be compiled or loaded (then none runs).
    pub unsafe fn run(&self, s: &StreamConfig, a: FmhaBwdArgs) -> Result<f32, Error> {
        let dot = bwd_dot_do_o::try_get(self.dot_do_o)?;
        let main = bwd_dq_dk_dv::try_get(self.dq_dk_dv)?;
        let convert = bwd_convert_dq::try_get(self.convert_dq)?;
        // SAFETY: the entries have these signatures (their families'); the
        // caller vouches for the pointers in `a`.
        Ok(unsafe { dot(s, a) + main(s, a) + convert(s, a) })
    }
}

/// Runs backward attention as CK's `fmha_bwd(traits, args, stream)` does.
///
/// # Safety
///
/// Every pointer in `a` must be valid for what the kernels read and write.
///
/// # Errors
///
/// As [`fmha_fwd`].
pub unsafe fn fmha_bwd(t: &BwdTraits, a: FmhaBwdArgs, s: &StreamConfig) -> Result<f32, Error> {
    let kernels = t.select(&a)?;
    // SAFETY: forwarded from the caller.
    unsafe { kernels.run(s, a) }
}
