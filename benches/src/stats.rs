//! Order statistics of repeated measurements: benchmarks quote medians,
//! which one slow run (another build on the machine) does not move.

/// Median, minimum and maximum of a set of measurements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// How many measurements.
    pub n: usize,
    /// The median.
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

/// Summarises `xs`; `None` when empty.
pub fn summary(xs: &[f64]) -> Option<Summary> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some(Summary {
        n,
        median,
        min: v[0],
        max: v[n - 1],
    })
}

/// The median of `xs` (NaN when empty, so a missing figure shows).
pub fn median(xs: &[f64]) -> f64 {
    summary(xs).map_or(f64::NAN, |s| s.median)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        let s = summary(&[5.0, 1.0, 9.0]).unwrap();
        assert_eq!((s.n, s.min, s.max), (3, 1.0, 9.0));
    }
}
