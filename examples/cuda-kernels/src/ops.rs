//! The safe API: [`saxpy`], [`softmax_rows`], and [`sgemm`], which picks its
//! tile size from the manifest's metadata.
//!
//! # How sgemm picks a tile
//!
//! Every `sgemm_f32_t<N>.cu` blob carries the metadata `op = sgemm` and
//! `tile = N`, recorded by the build from its file name. [`sgemm_variants`]
//! lists the manifest's blobs with `op == "sgemm"` that this crate declares
//! a kernel for, and [`choose_tile`] takes the largest tile dividing `m`,
//! `n` and `k` (no thread idles at an edge), else the smallest tile (the
//! kernels bounds-check their edges, and small tiles waste the fewest
//! threads there). Adding a tile is a new `.cu` file and one line in
//! `kernels.rs` and in the table below.

use std::os::raw::c_int;

use crate::error::{check, Error};
use crate::kernels;

/// `y = a * x + y` on the GPU.
///
/// # Errors
///
/// [`Error::Shape`] when the lengths differ, [`Error::Jit`] when the
/// kernel cannot be compiled or loaded (no nvcc: set `CK_JIT_NVCC`), and
/// [`Error::Cuda`] with the launcher's status when CUDA fails.
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) -> Result<(), Error> {
    if x.len() != y.len() {
        return Err(shape(format!("x has {} elements, y {}", x.len(), y.len())));
    }
    kernels::saxpy_f32::prepare()?;
    // SAFETY: the launcher reads y.len() floats of x and reads and writes
    // y.len() of y.
    let status = unsafe { kernels::saxpy_f32(a, x.as_ptr(), y.as_mut_ptr(), y.len()) };
    check(kernels::saxpy_f32::BLOB, status)
}

/// The softmax of each row of the row-major `input` (rows of `cols`
/// elements), into `out`.
///
/// # Errors
///
/// As [`saxpy`]; [`Error::Shape`] when `input` is not whole rows or `out`
/// differs in length.
pub fn softmax_rows(input: &[f32], out: &mut [f32], cols: usize) -> Result<(), Error> {
    if cols == 0 || !input.len().is_multiple_of(cols) || input.len() != out.len() {
        return Err(shape(format!(
            "{} inputs, {} outputs, rows of {cols}",
            input.len(),
            out.len()
        )));
    }
    kernels::softmax_f32::prepare()?;
    // SAFETY: input and out both hold rows * cols floats.
    let status =
        unsafe { kernels::softmax_f32(input.as_ptr(), out.as_mut_ptr(), input.len() / cols, cols) };
    check(kernels::softmax_f32::BLOB, status)
}

type SgemmFn = unsafe fn(*const f32, *const f32, *mut f32, usize, usize, usize) -> c_int;

/// A declared sgemm kernel: its blob, and its dispatcher.
struct Declared {
    blob: &'static str,
    prepare: fn() -> Result<(), ck_jit_rt::Error>,
    call: SgemmFn,
}

const SGEMM: [Declared; 3] = [
    Declared {
        blob: kernels::sgemm_f32_t8::BLOB,
        prepare: kernels::sgemm_f32_t8::prepare,
        call: kernels::sgemm_f32_t8,
    },
    Declared {
        blob: kernels::sgemm_f32_t16::BLOB,
        prepare: kernels::sgemm_f32_t16::prepare,
        call: kernels::sgemm_f32_t16,
    },
    Declared {
        blob: kernels::sgemm_f32_t32::BLOB,
        prepare: kernels::sgemm_f32_t32::prepare,
        call: kernels::sgemm_f32_t32,
    },
];

/// An sgemm blob of the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SgemmVariant {
    /// Its tile size (metadata `tile`).
    pub tile: u32,
    /// Its blob name.
    pub blob: String,
}

/// The manifest's blobs with metadata `op == "sgemm"` and a `tile`, that
/// this crate declares a kernel for, by tile size.
///
/// # Errors
///
/// When the embedded manifest cannot be read.
pub fn sgemm_variants() -> Result<Vec<SgemmVariant>, ck_jit_rt::Error> {
    let rt = crate::runtime()?;
    let mut v: Vec<SgemmVariant> = rt
        .manifest()
        .blobs
        .iter()
        .filter(|b| b.meta.get("op").map(String::as_str) == Some("sgemm"))
        .filter(|b| SGEMM.iter().any(|d| d.blob == b.name))
        .filter_map(|b| {
            Some(SgemmVariant {
                tile: b.meta.get("tile")?.parse().ok()?,
                blob: b.name.clone(),
            })
        })
        .collect();
    v.sort_by_key(|s| s.tile);
    Ok(v)
}

/// The tile for an `m x k` by `k x n` product: the largest of `tiles` that
/// divides `m`, `n` and `k`, else the smallest; `None` for no tiles.
pub fn choose_tile(tiles: &[u32], m: usize, n: usize, k: usize) -> Option<u32> {
    let divides = |t: u32| {
        let t = t as usize;
        t > 0 && m.is_multiple_of(t) && n.is_multiple_of(t) && k.is_multiple_of(t)
    };
    tiles
        .iter()
        .copied()
        .filter(|t| divides(*t))
        .max()
        .or_else(|| tiles.iter().copied().min())
}

/// `c = a * b` for row-major `a` (`m x k`), `b` (`k x n`) and `c`
/// (`m x n`), with the tile [`choose_tile`] picks from the manifest's sgemm
/// blobs; returns that tile.
///
/// # Errors
///
/// As [`saxpy`]; [`Error::Shape`] when a slice does not hold its matrix,
/// [`Error::NoTile`] when the manifest has no sgemm blob.
pub fn sgemm(
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    m: usize,
    n: usize,
    k: usize,
) -> Result<u32, Error> {
    let tiles: Vec<u32> = sgemm_variants()?.iter().map(|v| v.tile).collect();
    let tile = choose_tile(&tiles, m, n, k).ok_or(Error::NoTile { tile: 0 })?;
    sgemm_with_tile(tile, a, b, c, m, n, k)?;
    Ok(tile)
}

/// As [`sgemm`], with the kernel of this tile size.
///
/// # Errors
///
/// As [`sgemm`]; [`Error::NoTile`] when no declared kernel has this tile.
pub fn sgemm_with_tile(
    tile: u32,
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    m: usize,
    n: usize,
    k: usize,
) -> Result<(), Error> {
    let fits = |len: usize, r: usize, cols: usize| r.checked_mul(cols) == Some(len);
    if !fits(a.len(), m, k) || !fits(b.len(), k, n) || !fits(c.len(), m, n) {
        return Err(shape(format!(
            "a {} / b {} / c {} elements for m={m} n={n} k={k}",
            a.len(),
            b.len(),
            c.len()
        )));
    }
    let blob = format!("sgemm_f32_t{tile}");
    let d = SGEMM
        .iter()
        .find(|d| d.blob == blob)
        .ok_or(Error::NoTile { tile })?;
    (d.prepare)()?;
    // SAFETY: a, b and c hold m*k, k*n and m*n floats (checked above).
    let status = unsafe { (d.call)(a.as_ptr(), b.as_ptr(), c.as_mut_ptr(), m, n, k) };
    check(d.blob, status)
}

fn shape(why: String) -> Error {
    Error::Shape { why }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choose_tile_takes_the_largest_divisor_else_the_smallest_tile() {
        let tiles = [8, 16, 32];
        assert_eq!(choose_tile(&tiles, 64, 64, 64), Some(32));
        assert_eq!(choose_tile(&tiles, 48, 48, 48), Some(16));
        assert_eq!(choose_tile(&tiles, 64, 64, 40), Some(8));
        assert_eq!(choose_tile(&tiles, 100, 100, 100), Some(8));
        assert_eq!(choose_tile(&[32, 16], 1, 1, 1), Some(16));
        assert_eq!(choose_tile(&[], 64, 64, 64), None);
    }

    #[test]
    fn every_declared_sgemm_kernel_is_in_the_manifest_with_its_tile() {
        let v = sgemm_variants().unwrap();
        let tiles: Vec<u32> = v.iter().map(|s| s.tile).collect();
        assert_eq!(tiles, [8, 16, 32]);
        for s in &v {
            assert_eq!(s.blob, format!("sgemm_f32_t{}", s.tile));
        }
    }

    #[test]
    fn shapes_are_checked_before_any_compile() {
        let mut c = [0.0f32; 4];
        let r = sgemm_with_tile(8, &[0.0; 4], &[0.0; 3], &mut c, 2, 2, 2);
        assert!(matches!(r, Err(Error::Shape { .. })), "{r:?}");
        let r = sgemm_with_tile(12, &[0.0; 4], &[0.0; 4], &mut c, 2, 2, 2);
        assert!(matches!(r, Err(Error::NoTile { tile: 12 })), "{r:?}");
        let r = saxpy(1.0, &[0.0; 3], &mut c);
        assert!(matches!(r, Err(Error::Shape { .. })), "{r:?}");
        let r = softmax_rows(&[0.0; 4], &mut c, 3);
        assert!(matches!(r, Err(Error::Shape { .. })), "{r:?}");
    }
}
