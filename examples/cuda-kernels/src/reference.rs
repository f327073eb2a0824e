//! CPU references of the kernels, in f64, to check GPU results against.

/// `y = a * x + y`.
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi = (f64::from(a) * f64::from(*xi) + f64::from(*yi)) as f32;
    }
}

/// Softmax of each row of `cols` elements.
pub fn softmax_rows(input: &[f32], out: &mut [f32], cols: usize) {
    for (row, dst) in input.chunks(cols).zip(out.chunks_mut(cols)) {
        let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f64> = row.iter().map(|v| f64::from(v - m).exp()).collect();
        let s: f64 = e.iter().sum();
        for (d, v) in dst.iter_mut().zip(e) {
            *d = (v / s) as f32;
        }
    }
}

/// `c = a * b`, row-major, `m x k` by `k x n`.
pub fn sgemm(a: &[f32], b: &[f32], c: &mut [f32], m: usize, n: usize, k: usize) {
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f64;
            for p in 0..k {
                acc += f64::from(a[i * k + p]) * f64::from(b[p * n + j]);
            }
            c[i * n + j] = acc as f32;
        }
    }
}

/// The largest `|a[i] - b[i]|` (infinite when the lengths differ or a
/// value is NaN).
pub fn max_abs_error(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return f32::INFINITY;
    }
    a.iter().zip(b).fold(0.0f32, |m, (x, y)| {
        let d = (x - y).abs();
        if d.is_nan() {
            f32::INFINITY
        } else {
            m.max(d)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_compute_what_they_say() {
        let mut y = [1.0, 2.0];
        saxpy(2.0, &[3.0, 4.0], &mut y);
        assert_eq!(y, [7.0, 10.0]);
        let mut c = [0.0; 4];
        sgemm(
            &[1.0, 2.0, 3.0, 4.0],
            &[5.0, 6.0, 7.0, 8.0],
            &mut c,
            2,
            2,
            2,
        );
        assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
        let mut s = [0.0; 4];
        softmax_rows(&[0.0, 0.0, 1.0, 1.0], &mut s, 2);
        assert_eq!(s, [0.5, 0.5, 0.5, 0.5]);
        assert_eq!(max_abs_error(&[1.0, 2.0], &[1.5, 2.0]), 0.5);
        assert_eq!(max_abs_error(&[f32::NAN], &[1.0]), f32::INFINITY);
    }
}
