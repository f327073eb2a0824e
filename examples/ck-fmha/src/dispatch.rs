//! What CK's `*_api.cpp` dispatchers do, decided in Rust by CK's own
//! decision: the build reads each dispatcher function (`fmha_fwd`,
//! `fmha_fwd_splitkv`, `fmha_fwd_appendkv`, `fmha_bwd<2>`) into rules
//! (`OUT_DIR/rules/*.rules.json`, see [`ck_jit_ck::rules`]), and
//! this module evaluates them with the operation's traits (`t.*`), its
//! arguments (`a.*`) and the device, then calls the blobs the dispatcher
//! would have called. Nothing here knows CK's traits, tile sizes or
//! padding rules: a new CK version brings its own. Where a version's public
//! function only calls internal ones (newer CK's `fmha_fwd` tries
//! `fmha_fwd_v3`, then `fmha_fwd_v2` on a negative result), the rules
//! decide through them, and [`fmha_fwd`] calls the kernels in the order the
//! C++ tries them. The traits and arguments are the function's first two
//! parameters, whatever the version names them (`t`/`a`,
//! `traits`/`args`).
//!
//! What the rules ask of the environment besides `t` and `a`:
//! `ck_tile::get_device_name()` and the CU count (a [`Device`]),
//! `get_num_cus` (always succeeds: the count comes from the `Device`) and
//! `get_num_blocks(kM0)`, CK's `batch * nhead_q * ceil(max_seqlen_q /
//! kM0)`, the one helper of CK's dispatchers mirrored here.
//!
//! A decision compares a few values per arm of CK's if-chains (microseconds
//! for thousands of arms): decide once per configuration and keep the
//! kernels. It compiles nothing; the first call of a chosen blob does.

use std::sync::OnceLock;

use ck_jit_ck::rules::{Decision, Env, RulesFile, Value};

use crate::args::{
    CkStruct, FmhaBwdArgs, FmhaBwdTraits, FmhaFwdAppendkvArgs, FmhaFwdAppendkvTraits, FmhaFwdArgs,
    FmhaFwdSplitkvArgs, FmhaFwdSplitkvTraits, FmhaFwdTraits, StreamConfig,
};
use crate::error::Error;
use crate::kernels::{
    bwd_convert_dq, bwd_dot_do_o, bwd_dq_dk_dv, fwd, fwd_appendkv, fwd_splitkv, fwd_splitkv_combine,
};

/// The device a decision is for: what CK's dispatchers ask HIP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// `hipDeviceProp_t::gcnArchName` (`gfx942:sramecc+:xnack-`); CK's
    /// dispatchers compare its prefix (`gfx9`, `gfx950`).
    pub name: String,
    /// `multiProcessorCount`.
    pub compute_units: u32,
}

impl Device {
    /// An MI300X: `gfx942`, 304 CUs.
    pub fn mi300x() -> Device {
        Device {
            name: "gfx942:sramecc+:xnack-".into(),
            compute_units: 304,
        }
    }
}

/// One of CK's dispatcher files, its rules parsed on first use.
struct Dispatcher {
    file: &'static str,
    json: &'static str,
    rules: OnceLock<Result<RulesFile, String>>,
}

impl Dispatcher {
    const fn new(file: &'static str, json: &'static str) -> Dispatcher {
        Dispatcher {
            file,
            json,
            rules: OnceLock::new(),
        }
    }

    fn rules(&'static self) -> Result<&'static RulesFile, Error> {
        self.rules
            .get_or_init(|| RulesFile::parse(self.json).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|why| Error::Rules(format!("{}: {why}", self.file)))
    }
}

macro_rules! dispatcher {
    ($name:ident, $stem:literal) => {
        static $name: Dispatcher = Dispatcher::new(
            concat!($stem, ".cpp"),
            include_str!(concat!(env!("OUT_DIR"), "/rules/", $stem, ".rules.json")),
        );
    };
}

dispatcher!(FWD, "fmha_fwd_api");
dispatcher!(SPLITKV, "fmha_fwd_splitkv_api");
dispatcher!(APPENDKV, "fmha_fwd_appendkv_api");
dispatcher!(BWD, "fmha_bwd_api");

/// The values a decision reads: the traits, the arguments (by the names
/// the function gives its first two parameters), the device.
struct Operation<'a, T, A> {
    t: &'a T,
    a: &'a A,
    t_name: &'a str,
    a_name: &'a str,
    device: &'a Device,
}

impl<T: CkStruct, A: CkStruct> Env for Operation<'_, T, A> {
    fn value(&self, name: &str) -> Option<Value> {
        let field = |root: &str| name.strip_prefix(root).and_then(|n| n.strip_prefix('.'));
        if let Some(f) = field(self.t_name) {
            return self.t.field(f);
        }
        if let Some(f) = field(self.a_name) {
            return self.a.field(f);
        }
        match name {
            "num_cus" | "num_cu" => Some(Value::Int(i64::from(self.device.compute_units))),
            _ => None,
        }
    }

    fn call(&self, function: &str, args: &[Value]) -> Option<Value> {
        match (function, args) {
            // CK's `get_device_name()` cuts the name at its first `:`.
            ("ck_tile::get_device_name", []) => {
                let name = self.device.name.split(':').next().unwrap_or_default();
                Some(Value::Str(name.to_string()))
            }
            ("get_num_cus", [_]) => Some(Value::Bool(true)),
            ("get_num_blocks", [Value::Int(m0)]) if *m0 > 0 => {
                let int = |f: &str| match self.a.field(f) {
                    Some(Value::Int(v)) => Some(v),
                    _ => None,
                };
                let (batch, heads, len) = (int("batch")?, int("nhead_q")?, int("max_seqlen_q")?);
                let blocks = (len + m0 - 1) / m0;
                Some(Value::Int(batch * heads * blocks))
            }
            _ => None,
        }
    }
}

/// The blobs dispatcher function `function` of `d` calls for `t` and `a`
/// on `device`, in the order it names them; empty when it calls none (CK
/// returns -1). Where the C++ falls back to other blobs when these return
/// a negative value, these are the first it tries ([`candidates`]).
fn decide<T: CkStruct, A: CkStruct>(
    d: &'static Dispatcher,
    function: &str,
    t: &T,
    a: &A,
    device: &Device,
) -> Result<Vec<&'static str>, Error> {
    Ok(candidates(d, function, t, a, device)?
        .into_iter()
        .next()
        .unwrap_or_default())
}

/// Every set of blobs dispatcher function `function` may call, in the
/// order the C++ tries them (the next where the one before returned a
/// negative value); empty when it calls none.
fn candidates<T: CkStruct, A: CkStruct>(
    d: &'static Dispatcher,
    function: &str,
    t: &T,
    a: &A,
    device: &Device,
) -> Result<Vec<Vec<&'static str>>, Error> {
    let rules = d.rules()?;
    let params = rules.function(function).map(|f| f.params.as_slice());
    let param = |k: usize, default| {
        params
            .and_then(|p| p.get(k))
            .map_or(default, String::as_str)
    };
    let op = Operation {
        t,
        a,
        t_name: param(0, "t"),
        a_name: param(1, "a"),
        device,
    };
    let decision: Decision<'static> = rules
        .decide(function, &op)
        .map_err(|e| Error::Rules(e.to_string()))?;
    Ok(decision
        .candidates()
        .into_iter()
        .map(<[&str]>::to_vec)
        .collect())
}

/// The blob of `blobs` whose manifest kind is `kind`.
fn of_kind<'b>(blobs: &[&'b str], kind: &str) -> Option<&'b str> {
    let m = crate::runtime().ok()?.manifest();
    blobs.iter().copied().find(|b| {
        m.blob(b)
            .is_some_and(|b| b.meta.get("kind").is_some_and(|k| k == kind))
    })
}

fn none_for(dispatcher: &str, what: String) -> Error {
    Error::NoKernel {
        dispatcher: dispatcher.to_string(),
        operation: what,
    }
}

/// The forward blob CK's `fmha_fwd(t, a, s)` calls on `device`.
///
/// # Errors
///
/// [`Error::NoKernel`] when CK's dispatcher calls none (it would return
/// -1), [`Error::Rules`] when a condition needs a value this crate does not
/// give.
pub fn select_fwd(
    t: &FmhaFwdTraits,
    a: &FmhaFwdArgs,
    device: &Device,
) -> Result<fwd::Kernel, Error> {
    let blobs = decide(&FWD, "fmha_fwd", t, a, device)?;
    let name = blobs
        .first()
        .ok_or_else(|| none_for("fmha_fwd", format!("{t:?}")))?;
    fwd::by_name(name).map_err(Error::NoBlob)
}

/// Forward attention as CK's `fmha_fwd(t, a, s)`: the blob its dispatcher
/// picks, compiled and loaded on first use, called; where CK falls back to
/// another when that one returns a negative value (newer CK's
/// `fmha_fwd_v3`, then `fmha_fwd_v2`), so does this. Returns what the last
/// kernel called returns (the kernel time in ms when `s` times it).
///
/// # Safety
///
/// `a`'s pointers must be valid device memory for the kernel.
///
/// # Errors
///
/// As [`select_fwd`]; [`Error::Runtime`] when the blob cannot be compiled
/// or loaded.
pub unsafe fn fmha_fwd(
    t: &FmhaFwdTraits,
    a: FmhaFwdArgs,
    s: &StreamConfig,
    device: &Device,
) -> Result<f32, Error> {
    let tries = candidates(&FWD, "fmha_fwd", t, &a, device)?;
    if tries.is_empty() {
        return Err(none_for("fmha_fwd", format!("{t:?}")));
    }
    let mut result = -1.0;
    for blobs in tries {
        let Some(name) = blobs.first() else { continue };
        let k = fwd::by_name(name).map_err(Error::NoBlob)?;
        fwd::prepare(k)?;
        // SAFETY: the caller upholds the kernel's contract.
        result = unsafe { fwd::call(k, s, a) };
        if result >= 0.0 {
            break;
        }
    }
    Ok(result)
}

/// The two passes CK's `fmha_fwd_splitkv` runs.
#[derive(Debug, Clone, Copy)]
pub struct SplitkvKernels {
    /// The split pass.
    pub splitkv: fwd_splitkv::Kernel,
    /// The combine pass.
    pub combine: fwd_splitkv_combine::Kernel,
}

/// The blobs CK's `fmha_fwd_splitkv(t, a, s)` calls on `device`.
///
/// # Errors
///
/// As [`select_fwd`].
pub fn select_fwd_splitkv(
    t: &FmhaFwdSplitkvTraits,
    a: &FmhaFwdSplitkvArgs,
    device: &Device,
) -> Result<SplitkvKernels, Error> {
    let blobs = decide(&SPLITKV, "fmha_fwd_splitkv", t, a, device)?;
    let none = || none_for("fmha_fwd_splitkv", format!("{t:?}"));
    let split = of_kind(&blobs, "fwd_splitkv").ok_or_else(none)?;
    let combine = of_kind(&blobs, "fwd_splitkv_combine").ok_or_else(none)?;
    Ok(SplitkvKernels {
        splitkv: fwd_splitkv::by_name(split).map_err(Error::NoBlob)?,
        combine: fwd_splitkv_combine::by_name(combine).map_err(Error::NoBlob)?,
    })
}

/// Split-KV forward attention as CK's `fmha_fwd_splitkv`: both passes, in
/// order. Returns 0 (the passes are not timed one by one here).
///
/// # Safety
///
/// As [`fmha_fwd`].
///
/// # Errors
///
/// As [`fmha_fwd`].
pub unsafe fn fmha_fwd_splitkv(
    t: &FmhaFwdSplitkvTraits,
    a: FmhaFwdSplitkvArgs,
    s: &StreamConfig,
    device: &Device,
) -> Result<f32, Error> {
    let k = select_fwd_splitkv(t, &a, device)?;
    crate::runtime()?.prepare_together(&[k.splitkv.name(), k.combine.name()])?;
    fwd_splitkv::prepare(k.splitkv)?;
    fwd_splitkv_combine::prepare(k.combine)?;
    // SAFETY: the caller upholds the kernels' contract.
    unsafe {
        fwd_splitkv::call(k.splitkv, s, a);
        fwd_splitkv_combine::call(k.combine, s, a);
    }
    Ok(0.0)
}

/// The blob CK's `fmha_fwd_appendkv(t, a, s)` calls on `device`.
///
/// # Errors
///
/// As [`select_fwd`].
pub fn select_fwd_appendkv(
    t: &FmhaFwdAppendkvTraits,
    a: &FmhaFwdAppendkvArgs,
    device: &Device,
) -> Result<fwd_appendkv::Kernel, Error> {
    let blobs = decide(&APPENDKV, "fmha_fwd_appendkv", t, a, device)?;
    let name = blobs
        .first()
        .ok_or_else(|| none_for("fmha_fwd_appendkv", format!("{t:?}")))?;
    fwd_appendkv::by_name(name).map_err(Error::NoBlob)
}

/// KV-cache append as CK's `fmha_fwd_appendkv`.
///
/// # Safety
///
/// As [`fmha_fwd`].
///
/// # Errors
///
/// As [`fmha_fwd`].
pub unsafe fn fmha_fwd_appendkv(
    t: &FmhaFwdAppendkvTraits,
    a: FmhaFwdAppendkvArgs,
    s: &StreamConfig,
    device: &Device,
) -> Result<f32, Error> {
    let k = select_fwd_appendkv(t, &a, device)?;
    fwd_appendkv::prepare(k)?;
    // SAFETY: the caller upholds the kernel's contract.
    Ok(unsafe { fwd_appendkv::call(k, s, a) })
}

/// The kernels CK's `fmha_bwd` runs, in order.
#[derive(Debug, Clone, Copy)]
pub struct BwdKernels {
    /// `dot(dO, O)`.
    pub dot_do_o: bwd_dot_do_o::Kernel,
    /// The main kernel.
    pub dq_dk_dv: bwd_dq_dk_dv::Kernel,
    /// dQ from its accumulator, where the main kernel needs it.
    pub convert_dq: Option<bwd_convert_dq::Kernel>,
}

/// The name of CK's backward dispatcher function in this CK version
/// (`fmha_bwd<2>` in CK 2025-11, `fmha_bwd` before).
fn bwd_function() -> Result<&'static str, Error> {
    let rules = BWD.rules()?;
    rules
        .functions
        .iter()
        .map(|f| f.name.as_str())
        .find(|n| *n == "fmha_bwd" || n.starts_with("fmha_bwd<"))
        .ok_or_else(|| Error::Rules("fmha_bwd_api.cpp: no fmha_bwd function".into()))
}

/// The blobs CK's `fmha_bwd(t, a, s)` calls on `device`.
///
/// # Errors
///
/// As [`select_fwd`].
pub fn select_bwd(
    t: &FmhaBwdTraits,
    a: &FmhaBwdArgs,
    device: &Device,
) -> Result<BwdKernels, Error> {
    let blobs = decide(&BWD, bwd_function()?, t, a, device)?;
    let none = || none_for("fmha_bwd", format!("{t:?}"));
    let dot = of_kind(&blobs, "bwd_dot_do_o").ok_or_else(none)?;
    let main = of_kind(&blobs, "bwd_dq_dk_dv").ok_or_else(none)?;
    Ok(BwdKernels {
        dot_do_o: bwd_dot_do_o::by_name(dot).map_err(Error::NoBlob)?,
        dq_dk_dv: bwd_dq_dk_dv::by_name(main).map_err(Error::NoBlob)?,
        convert_dq: of_kind(&blobs, "bwd_convert_dq")
            .map(bwd_convert_dq::by_name)
            .transpose()
            .map_err(Error::NoBlob)?,
    })
}

/// Backward attention as CK's `fmha_bwd`: its kernels in CK's order
/// (`dot_do_o`, `dq_dk_dv`, then `convert_dq` where chosen). Returns the
/// sum of what they return.
///
/// # Safety
///
/// As [`fmha_fwd`].
///
/// # Errors
///
/// As [`fmha_fwd`].
pub unsafe fn fmha_bwd(
    t: &FmhaBwdTraits,
    a: FmhaBwdArgs,
    s: &StreamConfig,
    device: &Device,
) -> Result<f32, Error> {
    let k = select_bwd(t, &a, device)?;
    // The first call compiles all of them at once: about one compile, not
    // three in a row.
    let mut names = vec![k.dot_do_o.name(), k.dq_dk_dv.name()];
    names.extend(k.convert_dq.map(|c| c.name()));
    crate::runtime()?.prepare_together(&names)?;
    bwd_dot_do_o::prepare(k.dot_do_o)?;
    bwd_dq_dk_dv::prepare(k.dq_dk_dv)?;
    if let Some(c) = k.convert_dq {
        bwd_convert_dq::prepare(c)?;
    }
    // SAFETY: the caller upholds the kernels' contract.
    unsafe {
        let mut ms = bwd_dot_do_o::call(k.dot_do_o, s, a);
        ms += bwd_dq_dk_dv::call(k.dq_dk_dv, s, a);
        if let Some(c) = k.convert_dq {
            ms += bwd_convert_dq::call(c, s, a);
        }
        Ok(ms)
    }
}

/// The blob names CK's dispatcher function `function` of
/// `fmha_fwd_api.cpp` calls, for tests and tools comparing with the C++.
///
/// # Errors
///
/// As [`select_fwd`].
pub fn fwd_blob_names(
    t: &FmhaFwdTraits,
    a: &FmhaFwdArgs,
    device: &Device,
) -> Result<Vec<&'static str>, Error> {
    decide(&FWD, "fmha_fwd", t, a, device)
}
