//! The safe API over the family: [`scale_add`] and [`sum`] for each
//! [`Element`] type and [`Block`] size, and [`variants`], the family as the
//! manifest's metadata describes it.

use std::os::raw::c_int;

use crate::error::{check, Error};
use crate::kernels;
use crate::F16;

/// Threads per block of a kernel variant (each size is its own blob).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Block {
    /// 64 threads: one wavefront on CDNA GPUs.
    B64,
    /// 256 threads.
    B256,
}

impl Block {
    /// Every block size the family is built in.
    pub const ALL: [Block; 2] = [Block::B64, Block::B256];

    /// Threads per block.
    pub const fn threads(self) -> u32 {
        match self {
            Block::B64 => 64,
            Block::B256 => 256,
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// An element type the family has blobs for: `f32` and [`F16`].
pub trait Element: Copy + sealed::Sealed {
    /// Its name in blob names and metadata (`f32`, `f16`).
    const DTYPE: &'static str;

    /// Runs the `scale_add` launcher of this type and `block` over the
    /// common length of `x` and `y`; returns the blob and its status.
    #[doc(hidden)]
    fn scale_add_launch(
        block: Block,
        alpha: f32,
        x: &[Self],
        y: &mut [Self],
    ) -> Result<(&'static str, c_int), ck_jit_rt::Error>;

    /// Runs the `sum` launcher of this type and `block` over `x`.
    #[doc(hidden)]
    fn sum_launch(
        block: Block,
        x: &[Self],
        out: &mut f32,
    ) -> Result<(&'static str, c_int), ck_jit_rt::Error>;
}

/// Implements [`Element`] by picking the declared kernel of each block size.
macro_rules! element {
    ($t:ty, $dtype:literal, $($block:ident => $scale_add:ident, $sum:ident;)*) => {
        impl sealed::Sealed for $t {}

        impl Element for $t {
            const DTYPE: &'static str = $dtype;

            fn scale_add_launch(
                block: Block,
                alpha: f32,
                x: &[$t],
                y: &mut [$t],
            ) -> Result<(&'static str, c_int), ck_jit_rt::Error> {
                let n = x.len().min(y.len());
                match block {
                    $(Block::$block => {
                        // The fallible step; the call below is then the warm path.
                        kernels::$scale_add::prepare()?;
                        // SAFETY: the launcher reads n elements of x and
                        // reads and writes n of y; both hold at least n.
                        let status =
                            unsafe { kernels::$scale_add(alpha, x.as_ptr(), y.as_mut_ptr(), n) };
                        Ok((kernels::$scale_add::BLOB, status))
                    })*
                }
            }

            fn sum_launch(
                block: Block,
                x: &[$t],
                out: &mut f32,
            ) -> Result<(&'static str, c_int), ck_jit_rt::Error> {
                match block {
                    $(Block::$block => {
                        kernels::$sum::prepare()?;
                        // SAFETY: the launcher reads x.len() elements of x
                        // and writes one f32 to out.
                        let status = unsafe { kernels::$sum(x.as_ptr(), x.len(), out) };
                        Ok((kernels::$sum::BLOB, status))
                    })*
                }
            }
        }
    };
}

element!(f32, "f32",
    B64 => scale_add_f32_b64, sum_f32_b64;
    B256 => scale_add_f32_b256, sum_f32_b256;
);
element!(F16, "f16",
    B64 => scale_add_f16_b64, sum_f16_b64;
    B256 => scale_add_f16_b256, sum_f16_b256;
);

/// `y = alpha * x + y` on the GPU, with `block`-thread blocks.
///
/// The first call of each (type, block) compiles its blob with `hipcc`.
///
/// # Errors
///
/// [`Error::LengthMismatch`] when the slices differ in length,
/// [`Error::Jit`] when the kernel cannot be compiled or loaded, and
/// [`Error::Hip`] with the launcher's status when HIP fails (on a machine
/// without an AMD GPU: `hipErrorInvalidDevice`, 101).
pub fn scale_add<T: Element>(block: Block, alpha: f32, x: &[T], y: &mut [T]) -> Result<(), Error> {
    if x.len() != y.len() {
        return Err(Error::LengthMismatch {
            x: x.len(),
            y: y.len(),
        });
    }
    let (blob, status) = T::scale_add_launch(block, alpha, x, y)?;
    check(blob, status)
}

/// The sum of `x` on the GPU (accumulated in f32), with `block`-thread
/// blocks.
///
/// # Errors
///
/// As [`scale_add`], less the length check.
pub fn sum<T: Element>(block: Block, x: &[T]) -> Result<f32, Error> {
    let mut out = 0.0f32;
    let (blob, status) = T::sum_launch(block, x, &mut out)?;
    check(blob, status)?;
    Ok(out)
}

/// One blob of the crate, as its manifest metadata describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// The blob name (`scale_add_f16_b256`).
    pub blob: String,
    /// The operation (`scale_add`, `sum`).
    pub op: String,
    /// The element type (`f32`, `f16`).
    pub dtype: String,
    /// Threads per block.
    pub block: u32,
    /// `Some("ck")` for the CK-shaped blobs.
    pub api: Option<String>,
}

/// Every blob of the crate, from the metadata the build recorded from the
/// file names (`op`, `dtype`, `block`), in blob-name order.
///
/// # Errors
///
/// When the embedded manifest cannot be read.
pub fn variants() -> Result<Vec<Variant>, ck_jit_rt::Error> {
    let rt = crate::runtime()?;
    Ok(rt
        .manifest()
        .blobs
        .iter()
        .filter_map(|b| {
            let m = &b.meta;
            Some(Variant {
                blob: b.name.clone(),
                op: m.get("op")?.clone(),
                dtype: m.get("dtype")?.clone(),
                block: m.get("block")?.parse().ok()?,
                api: m.get("api").cloned(),
            })
        })
        .collect())
}
