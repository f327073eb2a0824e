//! [`F16`]: the 16-bit float the f16 blobs read and write (`_Float16` on
//! the HIP side), with exact conversions to and from `f32`. It only stores
//! and converts; arithmetic happens in the kernels.

use std::fmt;

/// An IEEE 754 binary16 value, laid out like HIP's `_Float16` / `__half`.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct F16(u16);

impl F16 {
    /// The value with these bits.
    pub const fn from_bits(bits: u16) -> F16 {
        F16(bits)
    }

    /// Its bits.
    pub const fn to_bits(self) -> u16 {
        self.0
    }

    /// The nearest `F16` to `v` (ties to even; beyond ±65504 is infinite).
    pub fn from_f32(v: f32) -> F16 {
        let x = v.to_bits();
        let sign = ((x >> 16) & 0x8000) as u16;
        let exp = ((x >> 23) & 0xff) as i32;
        let man = x & 0x007f_ffff;
        if exp == 0xff {
            // Infinity stays infinite; NaN stays NaN (quiet, payload kept
            // where it fits).
            let nan = if man != 0 {
                0x0200 | (man >> 13) as u16
            } else {
                0
            };
            return F16(sign | 0x7c00 | nan);
        }
        let half_exp = exp - 127 + 15;
        if half_exp >= 0x1f {
            return F16(sign | 0x7c00);
        }
        if half_exp <= 0 {
            // A half subnormal: units of 2^-24.
            let m = man | 0x0080_0000;
            let shift = (126 - exp) as u32;
            if shift >= 25 {
                return F16(sign);
            }
            return F16(sign | round_shift(m, shift) as u16);
        }
        // Normal: rounding may carry into the exponent, which is right
        // (up to infinity at the top).
        let bits = ((half_exp as u32) << 10) | (man >> 13);
        let rest = man & 0x1fff;
        let up = rest > 0x1000 || (rest == 0x1000 && bits & 1 == 1);
        F16(sign | (bits + u32::from(up)) as u16)
    }

    /// The exact `f32` value.
    pub fn to_f32(self) -> f32 {
        let h = u32::from(self.0);
        let sign = (h & 0x8000) << 16;
        let exp = (h >> 10) & 0x1f;
        let man = h & 0x03ff;
        match exp {
            0 => {
                let v = man as f32 * (1.0 / 16_777_216.0);
                if sign != 0 {
                    -v
                } else {
                    v
                }
            }
            0x1f => f32::from_bits(sign | 0x7f80_0000 | (man << 13)),
            _ => f32::from_bits(sign | ((exp + 112) << 23) | (man << 13)),
        }
    }
}

/// `m >> shift`, rounded to nearest, ties to even.
fn round_shift(m: u32, shift: u32) -> u32 {
    let q = m >> shift;
    let rest = m & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    q + u32::from(rest > half || (rest == half && q & 1 == 1))
}

impl From<f32> for F16 {
    fn from(v: f32) -> F16 {
        F16::from_f32(v)
    }
}

impl From<F16> for f32 {
    fn from(v: F16) -> f32 {
        v.to_f32()
    }
}

impl fmt::Debug for F16 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}f16", self.to_f32())
    }
}

impl fmt::Display for F16 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_f32(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_convert_exactly() {
        for (v, bits) in [
            (0.0f32, 0x0000u16),
            (-0.0, 0x8000),
            (1.0, 0x3c00),
            (-2.0, 0xc000),
            (0.5, 0x3800),
            (65504.0, 0x7bff),
            (6.103_515_6e-5, 0x0400), // smallest normal
            (5.960_464_5e-8, 0x0001), // smallest subnormal
            (0.1, 0x2e66),
            (f32::INFINITY, 0x7c00),
            (f32::NEG_INFINITY, 0xfc00),
        ] {
            assert_eq!(F16::from_f32(v).to_bits(), bits, "{v}");
        }
    }

    #[test]
    fn out_of_range_saturates_to_infinity_or_zero() {
        assert_eq!(F16::from_f32(65520.0).to_bits(), 0x7c00);
        assert_eq!(F16::from_f32(1e10).to_bits(), 0x7c00);
        assert_eq!(F16::from_f32(1e-10).to_bits(), 0x0000);
        assert_eq!(F16::from_f32(-1e-10).to_bits(), 0x8000);
        assert!(F16::from_f32(f32::NAN).to_f32().is_nan());
    }

    #[test]
    fn ties_round_to_even() {
        // 2049 is halfway between 2048 and 2050 (spacing 2): even is 2048.
        assert_eq!(F16::from_f32(2049.0).to_f32(), 2048.0);
        assert_eq!(F16::from_f32(2051.0).to_f32(), 2052.0);
        // Halfway between the two smallest subnormals rounds to even (0).
        assert_eq!(F16::from_f32(2.0f32.powi(-25)).to_bits(), 0);
        assert_eq!(F16::from_f32(3.0 * 2.0f32.powi(-25)).to_bits(), 2);
    }

    #[test]
    fn every_finite_f16_survives_a_round_trip() {
        for bits in 0..=u16::MAX {
            let h = F16::from_bits(bits);
            let f = h.to_f32();
            if f.is_nan() {
                continue;
            }
            assert_eq!(F16::from_f32(f).to_bits(), bits, "{bits:#06x} -> {f}");
        }
    }
}
