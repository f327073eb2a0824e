//! The traits a CK FMHA blob's file name encodes, parsed into
//! [`BlobTraits`] and rendered as manifest metadata.
//!
//! The grammar follows CK's code generator (`codegen/ops/fmha_*.py`, the
//! `name` properties): `fmha_<kind>_d<hdim>_<dtype>`, then per kind a mode
//! (`batch`/`group`), the tile (`b<..>`, `r<..>`, `w<..>`, `o<occupancy>`),
//! a pipeline tag, the V layout (`vr`/`vc`) and the optional features in a
//! fixed order, each present only when enabled (`p<pads>`, `bias`/`alibi`,
//! `dbias`, `mask`, `lse`, `dropout[_wg16][_storerandval]`, `squant`,
//! `pagedkv`, `inter`/`half`, `deterministic`). It only looks at names; it
//! never fails on a token it does not know, which goes to
//! [`BlobTraits::extra`], so a newer CK still yields a manifest.

use std::collections::BTreeMap;
use std::fmt;

use super::kind::Kind;

/// Batch or group (variable sequence length) mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// `batch`: every sequence has the same length.
    Batch,
    /// `group`: sequences of different lengths packed together.
    Group,
}

impl Mode {
    /// `batch` or `group`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Batch => "batch",
            Mode::Group => "group",
        }
    }
}

/// Layout of V: row-major (`vr`) or column-major (`vc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VLayout {
    /// `vr`.
    Row,
    /// `vc`.
    Col,
}

impl VLayout {
    /// `row` or `col`.
    pub fn as_str(self) -> &'static str {
        match self {
            VLayout::Row => "row",
            VLayout::Col => "col",
        }
    }
}

/// Attention bias.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bias {
    /// No bias.
    No,
    /// `bias`: an elementwise bias tensor.
    Elementwise,
    /// `alibi`: ALiBi slopes.
    Alibi,
}

impl Bias {
    /// `no`, `bias` or `alibi` (CK's codegen keys).
    pub fn as_str(self) -> &'static str {
        match self {
            Bias::No => "no",
            Bias::Elementwise => "bias",
            Bias::Alibi => "alibi",
        }
    }
}

/// Attention mask, as the file name tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mask {
    /// No mask.
    No,
    /// `mask`: the simplified mask implementation (any mask type at run time).
    Masked,
    /// `mc`: the generic implementation's causal mask.
    Causal,
    /// `mg`: the generic implementation's windowed mask.
    Generic,
}

impl Mask {
    /// `no`, `mask`, `causal` or `generic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mask::No => "no",
            Mask::Masked => "mask",
            Mask::Causal => "causal",
            Mask::Generic => "generic",
        }
    }
}

/// Rotary embedding applied while appending to the KV cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rope {
    /// None.
    No,
    /// `inter`: interleaved.
    Interleaved,
    /// `half`: half-rotated.
    HalfRotated,
}

impl Rope {
    /// `no`, `inter` or `half` (CK's codegen keys).
    pub fn as_str(self) -> &'static str {
        match self {
            Rope::No => "no",
            Rope::Interleaved => "inter",
            Rope::HalfRotated => "half",
        }
    }
}

/// Which dimensions are padded (`p` followed by `s`, `sk`, `d`, `dv`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Pad {
    /// Query sequence length (`s`).
    pub s: bool,
    /// Key sequence length (`sk`).
    pub sk: bool,
    /// Q/K head dimension (`d`).
    pub d: bool,
    /// V head dimension (`dv`).
    pub dv: bool,
}

impl Pad {
    /// The name token (`psskddv`, `pdv`, ...), empty without padding.
    pub fn token(self) -> String {
        let mut t = String::new();
        for (on, part) in [
            (self.s, "s"),
            (self.sk, "sk"),
            (self.d, "d"),
            (self.dv, "dv"),
        ] {
            if on {
                t.push_str(part);
            }
        }
        if t.is_empty() {
            t
        } else {
            format!("p{t}")
        }
    }

    fn parse(token: &str) -> Option<Pad> {
        let mut rest = token.strip_prefix('p')?;
        if rest.is_empty() {
            return None;
        }
        let mut pad = Pad::default();
        // `s` then `sk` then `d` then `dv`: an `s` followed by `k` is `sk`,
        // a `d` followed by `v` is `dv`.
        if rest.starts_with('s') && !rest.starts_with("sk") {
            pad.s = true;
            rest = &rest[1..];
        }
        if let Some(r) = rest.strip_prefix("sk") {
            pad.sk = true;
            rest = r;
        }
        if rest.starts_with('d') && !rest.starts_with("dv") {
            pad.d = true;
            rest = &rest[1..];
        }
        if let Some(r) = rest.strip_prefix("dv") {
            pad.dv = true;
            rest = r;
        }
        rest.is_empty().then_some(pad)
    }
}

/// Everything a blob's file name says about its kernel.
///
/// # Example
///
/// ```
/// use ck_jit_build::ck::{BlobTraits, Kind, Mode};
///
/// let t = BlobTraits::parse(
///     "fmha_fwd_d128_bf16_batch_shb_b128x128x32x128x32x128_r4x1x1_w32x32x16_qr_async_vc_psddv_alibi_lse.cpp",
/// )?;
/// assert_eq!(t.kind, Kind::Fwd);
/// assert_eq!((t.hdim, t.dtype.as_str(), t.mode), (128, "bf16", Some(Mode::Batch)));
/// assert_eq!(t.pipeline.as_deref(), Some("qr_async"));
/// assert!(t.lse && !t.dropout && t.pad.dv && !t.pad.sk);
/// assert_eq!(t.meta()["bias"], "alibi");
/// # Ok::<(), ck_jit_build::ck::NameError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlobTraits {
    /// The blob kind (from the prefix).
    pub kind: Kind,
    /// Head dimension (`d<hdim>`).
    pub hdim: u32,
    /// A separate V head dimension, when the name gives a second `d<n>`.
    pub hdim_v: Option<u32>,
    /// Data type (`fp16`, `bf16`, `fp8`, ...).
    pub dtype: String,
    /// Batch or group mode; the append-KV kernels have none.
    pub mode: Option<Mode>,
    /// Tile partitioner (`shb` or `hbs`) where the name gives one.
    pub partitioner: Option<String>,
    /// Block tile sizes (`b128x128x32...`).
    pub tile: Vec<u32>,
    /// Warps per block, one entry per `r<..>` token.
    pub warps: Vec<Vec<u32>>,
    /// Warp tiles, one entry per `w<..>` token.
    pub warp_tiles: Vec<Vec<u32>>,
    /// Occupancy (`o<n>`).
    pub occupancy: Option<u32>,
    /// Pipeline tag (`qr`, `qr_async`, `kr_ktr_vr`, `kr_ktr_vr_iglp`,
    /// `unused`, ...).
    pub pipeline: Option<String>,
    /// V layout, for the kinds that have one.
    pub vlayout: Option<VLayout>,
    /// Padded dimensions.
    pub pad: Pad,
    /// Bias.
    pub bias: Bias,
    /// Whether the bias gradient is computed (backward).
    pub dbias: bool,
    /// Mask.
    pub mask: Mask,
    /// Whether the log-sum-exp is stored.
    pub lse: bool,
    /// Whether dropout is applied.
    pub dropout: bool,
    /// The dropout workgroup variant (`wg16`, `wg32`), backward only.
    pub dropout_variant: Option<String>,
    /// Whether random values are stored (backward dropout).
    pub store_randval: bool,
    /// FP8 static quantisation.
    pub squant: bool,
    /// Paged KV cache.
    pub pagedkv: bool,
    /// Rotary embedding (append-KV).
    pub rope: Rope,
    /// Deterministic (no atomics) dQ reduction.
    pub deterministic: bool,
    /// Tokens this parser does not know, in order.
    pub extra: Vec<String>,
}

/// Why a file name is not a CK FMHA blob name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameError {
    /// The name, escaped.
    pub name: String,
    /// What is wrong with it.
    pub why: String,
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "'{}' is not a CK FMHA blob name: {}",
            self.name, self.why
        )
    }
}

impl std::error::Error for NameError {}

/// `letter` followed by `x`-separated numbers (`b128x64`, `r4x1x1`).
fn dims(token: &str, letter: char) -> Option<Vec<u32>> {
    let rest = token.strip_prefix(letter)?;
    if rest.is_empty() {
        return None;
    }
    rest.split('x')
        .map(|n| {
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                None
            } else {
                n.parse().ok()
            }
        })
        .collect()
}

fn number_after(token: &str, letter: char) -> Option<u32> {
    let rest = token.strip_prefix(letter)?;
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.parse().ok()
}

/// The features a kind may carry after its pipeline.
#[derive(Clone, Copy)]
struct Allowed {
    bias: bool,
    dbias: bool,
    mask: bool,
    lse: bool,
    dropout: bool,
    squant: bool,
    pagedkv: bool,
    rope: bool,
    deterministic: bool,
}

const NONE_ALLOWED: Allowed = Allowed {
    bias: false,
    dbias: false,
    mask: false,
    lse: false,
    dropout: false,
    squant: false,
    pagedkv: false,
    rope: false,
    deterministic: false,
};

impl Allowed {
    fn of(kind: Kind) -> Allowed {
        match kind {
            Kind::Fwd => Allowed {
                bias: true,
                mask: true,
                lse: true,
                dropout: true,
                squant: true,
                ..NONE_ALLOWED
            },
            Kind::FwdSplitkv => Allowed {
                bias: true,
                mask: true,
                lse: true,
                squant: true,
                pagedkv: true,
                ..NONE_ALLOWED
            },
            Kind::FwdSplitkvCombine => Allowed {
                lse: true,
                squant: true,
                ..NONE_ALLOWED
            },
            Kind::FwdAppendkv => Allowed {
                rope: true,
                pagedkv: true,
                ..NONE_ALLOWED
            },
            Kind::BwdDotDoO => NONE_ALLOWED,
            Kind::BwdDqDkDv => Allowed {
                bias: true,
                dbias: true,
                mask: true,
                dropout: true,
                deterministic: true,
                ..NONE_ALLOWED
            },
            Kind::BwdConvertDq => Allowed {
                deterministic: true,
                ..NONE_ALLOWED
            },
        }
    }

    /// Whether `token` starts a feature of this kind (ends a pipeline tag).
    fn is_feature(self, token: &str) -> bool {
        Pad::parse(token).is_some()
            || (self.bias && matches!(token, "bias" | "alibi"))
            || (self.dbias && token == "dbias")
            || (self.mask && matches!(token, "mask" | "mc" | "mg"))
            || (self.lse && token == "lse")
            || (self.dropout && token == "dropout")
            || (self.squant && token == "squant")
            || (self.pagedkv && token == "pagedkv")
            || (self.rope && matches!(token, "inter" | "half"))
            || (self.deterministic && token == "deterministic")
    }
}

struct Cursor<'a> {
    tokens: Vec<&'a str>,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.tokens.get(self.at).copied()
    }

    fn next(&mut self) -> Option<&'a str> {
        let t = self.peek();
        if t.is_some() {
            self.at += 1;
        }
        t
    }
}

impl BlobTraits {
    /// Parses a blob file name (a path, a file name or a stem; a directory
    /// and extension are ignored).
    pub fn parse(name: &str) -> Result<BlobTraits, NameError> {
        let file = name.rsplit('/').next().unwrap_or(name);
        let stem = match file.rsplit_once('.') {
            Some((stem, ext)) if super::kind::SOURCE_EXTENSIONS.contains(&ext) => stem,
            _ => file,
        };
        let err = |why: String| NameError {
            name: crate::manifest::escape(stem),
            why,
        };
        let kind = Kind::of_stem(stem).ok_or_else(|| err("no known fmha_* blob prefix".into()))?;
        // The prefix ends with the `d` of `d<hdim>`: keep that `d`.
        let rest = &stem[kind.file_prefix().len() - 1..];
        let mut c = Cursor {
            tokens: rest.split('_').collect(),
            at: 0,
        };
        let mut t = BlobTraits {
            kind,
            hdim: 0,
            hdim_v: None,
            dtype: String::new(),
            mode: None,
            partitioner: None,
            tile: Vec::new(),
            warps: Vec::new(),
            warp_tiles: Vec::new(),
            occupancy: None,
            pipeline: None,
            vlayout: None,
            pad: Pad::default(),
            bias: Bias::No,
            dbias: false,
            mask: Mask::No,
            lse: false,
            dropout: false,
            dropout_variant: None,
            store_randval: false,
            squant: false,
            pagedkv: false,
            rope: Rope::No,
            deterministic: false,
            extra: Vec::new(),
        };
        t.hdim = c
            .next()
            .and_then(|tok| number_after(tok, 'd'))
            .ok_or_else(|| err("expected d<hdim> after the prefix".into()))?;
        if let Some(hv) = c.peek().and_then(|tok| number_after(tok, 'd')) {
            t.hdim_v = Some(hv);
            c.next();
        }
        let dtype = c
            .next()
            .filter(|tok| {
                tok.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
                    && tok.bytes().all(|b| b.is_ascii_alphanumeric())
            })
            .ok_or_else(|| err("expected a data type after d<hdim>".into()))?;
        t.dtype = dtype.to_string();

        let allowed = Allowed::of(kind);
        match kind {
            Kind::Fwd | Kind::FwdSplitkv => {
                t.mode = Some(mode(&mut c).ok_or_else(|| err("expected batch or group".into()))?);
                if let Some(p @ ("shb" | "hbs")) = c.peek() {
                    t.partitioner = Some(p.to_string());
                    c.next();
                }
                tile(&mut c, &mut t).map_err(err)?;
                let mut pipeline = Vec::new();
                loop {
                    match c.next() {
                        Some("vr") => {
                            t.vlayout = Some(VLayout::Row);
                            break;
                        }
                        Some("vc") => {
                            t.vlayout = Some(VLayout::Col);
                            break;
                        }
                        Some(tok) => pipeline.push(tok),
                        None => return Err(err("expected the V layout (vr or vc)".into())),
                    }
                }
                if pipeline.is_empty() {
                    return Err(err("expected a pipeline tag before the V layout".into()));
                }
                t.pipeline = Some(pipeline.join("_"));
            }
            Kind::FwdSplitkvCombine => {
                t.mode = Some(mode(&mut c).ok_or_else(|| err("expected batch or group".into()))?);
                tile(&mut c, &mut t).map_err(err)?;
                t.pipeline = pipeline_until_feature(&mut c, allowed);
            }
            Kind::FwdAppendkv => {
                tile(&mut c, &mut t).map_err(err)?;
                t.vlayout = match c.next() {
                    Some("vr") => Some(VLayout::Row),
                    Some("vc") => Some(VLayout::Col),
                    _ => return Err(err("expected the V layout (vr or vc) after the tile".into())),
                };
            }
            Kind::BwdDotDoO => {
                t.mode = Some(mode(&mut c).ok_or_else(|| err("expected batch or group".into()))?);
                tile(&mut c, &mut t).map_err(err)?;
            }
            Kind::BwdConvertDq => {
                tile(&mut c, &mut t).map_err(err)?;
                t.mode = Some(mode(&mut c).ok_or_else(|| err("expected batch or group".into()))?);
                tile(&mut c, &mut t).map_err(err)?;
            }
            Kind::BwdDqDkDv => {
                t.mode = Some(mode(&mut c).ok_or_else(|| err("expected batch or group".into()))?);
                tile(&mut c, &mut t).map_err(err)?;
                t.pipeline = pipeline_until_feature(&mut c, allowed);
            }
        }
        if t.tile.is_empty() && !matches!(kind, Kind::BwdDotDoO) {
            return Err(err("expected a block tile (b<..>)".into()));
        }
        features(&mut c, &mut t, allowed);
        Ok(t)
    }

    /// The traits as manifest metadata: `kind`, `hdim`, `dtype`, and every
    /// attribute the kind has, with `true`/`false` for switches and CK's
    /// codegen keys for the rest (`bias`: `no`/`bias`/`alibi`, `mask`:
    /// `no`/`mask`/`causal`/`generic`, `vlayout`: `row`/`col`, `rope`:
    /// `no`/`inter`/`half`, `dropout` in backward: `no`/`wg16`/`wg32`).
    pub fn meta(&self) -> BTreeMap<String, String> {
        // Collected first and built in one go: cheaper than one insertion
        // per key, which matters at ten thousand blobs per build.
        let mut m: Vec<(String, String)> = Vec::with_capacity(24);
        let mut put = |k: &str, v: String| {
            m.push((k.to_string(), v));
        };
        let b = |v: bool| if v { "true" } else { "false" }.to_string();
        let a = Allowed::of(self.kind);
        put("kind", self.kind.as_str().into());
        put("hdim", self.hdim.to_string());
        if let Some(hv) = self.hdim_v {
            put("hdim_v", hv.to_string());
        }
        put("dtype", self.dtype.clone());
        if let Some(mode) = self.mode {
            put("mode", mode.as_str().into());
        }
        if let Some(p) = &self.partitioner {
            put("partitioner", p.clone());
        }
        if !self.tile.is_empty() {
            put("tile", dims_text(&[&self.tile], 'b'));
        }
        if !self.warps.is_empty() {
            let w: Vec<&[u32]> = self.warps.iter().map(Vec::as_slice).collect();
            put("warps", dims_text(&w, 'r'));
        }
        if !self.warp_tiles.is_empty() {
            let w: Vec<&[u32]> = self.warp_tiles.iter().map(Vec::as_slice).collect();
            put("warp_tile", dims_text(&w, 'w'));
        }
        if let Some(o) = self.occupancy {
            put("occupancy", o.to_string());
        }
        if let Some(p) = &self.pipeline {
            put("pipeline", p.clone());
        }
        if let Some(v) = self.vlayout {
            put("vlayout", v.as_str().into());
        }
        let pads: &[(&str, bool)] = match self.kind {
            Kind::FwdSplitkvCombine | Kind::BwdDotDoO => {
                &[("spad", self.pad.s), ("dvpad", self.pad.dv)]
            }
            Kind::BwdConvertDq => &[("spad", self.pad.s), ("dpad", self.pad.d)],
            _ => &[
                ("spad", self.pad.s),
                ("skpad", self.pad.sk),
                ("dpad", self.pad.d),
                ("dvpad", self.pad.dv),
            ],
        };
        for (k, v) in pads {
            put(k, b(*v));
        }
        if a.bias {
            put("bias", self.bias.as_str().into());
        }
        if a.dbias {
            put("dbias", b(self.dbias));
        }
        if a.mask {
            put("mask", self.mask.as_str().into());
        }
        if a.lse {
            put("lse", b(self.lse));
        }
        if a.dropout {
            if self.kind == Kind::BwdDqDkDv {
                let d = match (&self.dropout_variant, self.dropout) {
                    (Some(v), true) => v.clone(),
                    (None, true) => "yes".into(),
                    _ => "no".into(),
                };
                put("dropout", d);
                put("store_randval", b(self.store_randval));
            } else {
                put("dropout", b(self.dropout));
            }
        }
        if a.squant {
            put("squant", b(self.squant));
        }
        if a.pagedkv {
            put("pagedkv", b(self.pagedkv));
        }
        if a.rope {
            put("rope", self.rope.as_str().into());
        }
        if a.deterministic {
            put("deterministic", b(self.deterministic));
        }
        if !self.extra.is_empty() {
            put("extra", self.extra.join("_"));
        }
        m.into_iter().collect()
    }
}

/// `b128x64`, or `r1x4x1_r4x1x1` for several groups: as the name spells
/// them.
fn dims_text(groups: &[&[u32]], letter: char) -> String {
    let mut s = String::with_capacity(groups.len() * 12);
    for (i, g) in groups.iter().enumerate() {
        if i > 0 {
            s.push('_');
        }
        s.push(letter);
        for (j, n) in g.iter().enumerate() {
            if j > 0 {
                s.push('x');
            }
            push_number(&mut s, *n);
        }
    }
    s
}

fn push_number(s: &mut String, mut n: u32) {
    let mut digits = [0u8; 10];
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in digits[..len].iter().rev() {
        s.push(char::from(d));
    }
}

fn mode(c: &mut Cursor<'_>) -> Option<Mode> {
    let m = match c.peek()? {
        "batch" => Mode::Batch,
        "group" => Mode::Group,
        _ => return None,
    };
    c.next();
    Some(m)
}

/// `b<..>` then any `r<..>`, `w<..>` and an `o<n>`, in that order; each part
/// optional (the caller checks what its kind needs).
fn tile(c: &mut Cursor<'_>, t: &mut BlobTraits) -> Result<(), String> {
    if let Some(b) = c.peek().and_then(|tok| dims(tok, 'b')) {
        if !t.tile.is_empty() {
            return Err("two block tiles".into());
        }
        t.tile = b;
        c.next();
    }
    while let Some(r) = c.peek().and_then(|tok| dims(tok, 'r')) {
        t.warps.push(r);
        c.next();
    }
    while let Some(w) = c.peek().and_then(|tok| dims(tok, 'w')) {
        t.warp_tiles.push(w);
        c.next();
    }
    if let Some(o) = c.peek().and_then(|tok| number_after(tok, 'o')) {
        t.occupancy = Some(o);
        c.next();
    }
    Ok(())
}

fn pipeline_until_feature(c: &mut Cursor<'_>, allowed: Allowed) -> Option<String> {
    let mut parts = Vec::new();
    while let Some(tok) = c.peek() {
        if allowed.is_feature(tok) {
            break;
        }
        parts.push(tok);
        c.next();
    }
    (!parts.is_empty()).then(|| parts.join("_"))
}

fn features(c: &mut Cursor<'_>, t: &mut BlobTraits, a: Allowed) {
    while let Some(tok) = c.next() {
        if let Some(p) = Pad::parse(tok) {
            t.pad = p;
            continue;
        }
        match tok {
            "bias" if a.bias => t.bias = Bias::Elementwise,
            "alibi" if a.bias => t.bias = Bias::Alibi,
            "dbias" if a.dbias => t.dbias = true,
            "mask" if a.mask => t.mask = Mask::Masked,
            "mc" if a.mask => t.mask = Mask::Causal,
            "mg" if a.mask => t.mask = Mask::Generic,
            "lse" if a.lse => t.lse = true,
            "squant" if a.squant => t.squant = true,
            "pagedkv" if a.pagedkv => t.pagedkv = true,
            "inter" if a.rope => t.rope = Rope::Interleaved,
            "half" if a.rope => t.rope = Rope::HalfRotated,
            "deterministic" if a.deterministic => t.deterministic = true,
            "dropout" if a.dropout => {
                t.dropout = true;
                if t.kind == Kind::BwdDqDkDv {
                    if let Some(v) = c.peek().filter(|v| {
                        v.strip_prefix("wg")
                            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                    }) {
                        t.dropout_variant = Some(v.to_string());
                        c.next();
                    }
                    if c.peek() == Some("storerandval") {
                        t.store_randval = true;
                        c.next();
                    }
                }
            }
            other => t.extra.push(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_parse_in_codegen_order() {
        let p = |s: &str| Pad::parse(s).map(|p| (p.s, p.sk, p.d, p.dv));
        assert_eq!(p("psskddv"), Some((true, true, true, true)));
        assert_eq!(p("psk"), Some((false, true, false, false)));
        assert_eq!(p("pssk"), Some((true, true, false, false)));
        assert_eq!(p("pddv"), Some((false, false, true, true)));
        assert_eq!(p("pdv"), Some((false, false, false, true)));
        assert_eq!(p("psd"), Some((true, false, true, false)));
        assert_eq!(p("ps"), Some((true, false, false, false)));
        for bad in ["p", "pagedkv", "px", "psds", "pdvd", "bias"] {
            assert_eq!(p(bad), None, "{bad}");
        }
        for tok in ["psskddv", "psk", "pddv", "psdv", "pd"] {
            assert_eq!(Pad::parse(tok).unwrap().token(), tok);
        }
    }

    #[test]
    fn bwd_main_kernel_with_every_feature() {
        let t = BlobTraits::parse(
            "fmha_bwd_d32_bf16_batch_b32x128x32x32x32x32x64x32x32_r1x4x1_r4x1x1_r2x2x1_w16x16x32_w16x16x16_o1_kr_ktr_vr_iglp_pddv_bias_dbias_mask_dropout_wg16_storerandval_deterministic",
        )
        .unwrap();
        assert_eq!(t.kind, Kind::BwdDqDkDv);
        assert_eq!(t.tile, [32, 128, 32, 32, 32, 32, 64, 32, 32]);
        assert_eq!(t.warps.len(), 3);
        assert_eq!(t.warp_tiles, [vec![16, 16, 32], vec![16, 16, 16]]);
        assert_eq!(t.occupancy, Some(1));
        assert_eq!(t.pipeline.as_deref(), Some("kr_ktr_vr_iglp"));
        assert!(t.pad.d && t.pad.dv && !t.pad.s);
        assert_eq!(t.bias, Bias::Elementwise);
        assert!(t.dbias && t.dropout && t.store_randval && t.deterministic);
        assert_eq!(t.mask, Mask::Masked);
        assert_eq!(t.dropout_variant.as_deref(), Some("wg16"));
        assert!(t.extra.is_empty());
        let m = t.meta();
        assert_eq!(m["dropout"], "wg16");
        assert_eq!(m["warps"], "r1x4x1_r4x1x1_r2x2x1");
    }

    #[test]
    fn small_kinds_and_unknown_tokens() {
        let t = BlobTraits::parse(
            "fmha_bwd_convert_dq_d64_fp16_b64x128_group_o2_psd_deterministic.cpp",
        )
        .unwrap();
        assert_eq!(
            (t.kind, t.mode, t.occupancy),
            (Kind::BwdConvertDq, Some(Mode::Group), Some(2))
        );
        assert!(t.pad.s && t.pad.d && t.deterministic);
        let t =
            BlobTraits::parse("fmha_fwd_appendkv_d128_bf16_b64x64x128x128_vc_psskddv_half_pagedkv")
                .unwrap();
        assert_eq!((t.rope, t.pagedkv, t.mode), (Rope::HalfRotated, true, None));
        let t = BlobTraits::parse("fmha_fwd_splitkv_combine_d128_fp8_batch_b64x64_unused_squant")
            .unwrap();
        assert_eq!(t.pipeline.as_deref(), Some("unused"));
        assert!(t.squant);
        let t =
            BlobTraits::parse("fmha_fwd_d64_fp16_batch_b128x64_r4x1x1_w32x32x16_qr_vr_logits_mask")
                .unwrap();
        assert_eq!(t.extra, ["logits"]);
        assert_eq!(t.mask, Mask::Masked);
    }

    #[test]
    fn random_names_never_panic() {
        const PARTS: &[&str] = &[
            "fmha",
            "fwd",
            "bwd",
            "splitkv",
            "combine",
            "appendkv",
            "dot",
            "do",
            "o",
            "dq",
            "dk",
            "dv",
            "convert",
            "d64",
            "d",
            "fp16",
            "batch",
            "group",
            "b128x64",
            "bx",
            "r4x1x1",
            "w32x32x16",
            "o2",
            "o",
            "qr",
            "async",
            "vr",
            "vc",
            "p",
            "psskddv",
            "bias",
            "alibi",
            "mask",
            "lse",
            "dropout",
            "wg",
            "wg16",
            "storerandval",
            "squant",
            "pagedkv",
            "half",
            "é",
            "",
            "99999999999",
            "x",
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..20_000 {
            let mut name = String::from(["fmha_fwd_d", "fmha_bwd_d", "fmha_", ""][next(4)]);
            for i in 0..next(14) {
                if i > 0 || next(2) == 0 {
                    name.push('_');
                }
                name.push_str(PARTS[next(PARTS.len())]);
            }
            if let Ok(t) = BlobTraits::parse(&name) {
                let _ = t.meta();
            }
        }
    }

    #[test]
    fn malformed_names_are_errors_not_panics() {
        for bad in [
            "",
            "fmha_fwd_",
            "fmha_fwd_dx",
            "fmha_fwd_d64",
            "fmha_fwd_d64_fp16",
            "fmha_fwd_d64_fp16_batch_b1_qr",
            "fmha_fwd_d64_fp16_batch_vr",
            "fmha_fwd_d99999999999999_fp16_batch_b1_qr_vr",
            "fmha_bwd_d32_bf16_batch_o1",
            "fmha_fwd_appendkv_d32_bf16_b64_xx",
            "fmha_bwd_d32_\u{0}",
            "other",
        ] {
            assert!(BlobTraits::parse(bad).is_err(), "{bad:?}");
        }
    }
}
