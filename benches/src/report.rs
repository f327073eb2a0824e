//! How every benchmark reports: the baseline, the measured figure, their
//! ratio (and difference), the target and whether it was met, as aligned
//! text and as one `result:` JSON line per comparison for collecting.
//!
//! Targets are printed, never asserted: a slow machine gives a "missed",
//! not a failed run.

use std::fmt;

/// The unit a figure is in (all figures of a comparison share it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds.
    Ns,
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
    /// Blobs per second.
    PerS,
    /// Bytes.
    Bytes,
}

impl Unit {
    fn suffix(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Ms => "ms",
            Unit::S => "s",
            Unit::PerS => "blobs/s",
            Unit::Bytes => "bytes",
        }
    }

    /// `value` with this unit, at a precision that suits it.
    pub fn show(self, value: f64) -> String {
        match self {
            Unit::Ns if value < 10.0 => format!("{value:.2} ns"),
            Unit::Ns => format!("{value:.1} ns"),
            Unit::Ms if value < 10.0 => format!("{value:.3} ms"),
            Unit::Ms => format!("{value:.1} ms"),
            Unit::S => format!("{value:.2} s"),
            Unit::PerS => format!("{value:.2} blobs/s"),
            Unit::Bytes => format!("{value:.0} bytes"),
        }
    }
}

/// What a comparison is meant to show.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// measured - baseline <= this (in the comparison's unit).
    DiffAtMost(f64),
    /// measured <= this (in the comparison's unit).
    AtMost(f64),
    /// measured / baseline <= this.
    RatioAtMost(f64),
    /// measured / baseline >= this.
    RatioAtLeast(f64),
    /// No target: the figure is context.
    None,
}

impl Target {
    /// Whether `baseline`/`measured` meet it (`None` when there is none).
    pub fn met(self, baseline: f64, measured: f64) -> Option<bool> {
        let ratio = measured / baseline;
        match self {
            Target::DiffAtMost(d) => Some(measured - baseline <= d),
            Target::AtMost(v) => Some(measured <= v),
            Target::RatioAtMost(r) => Some(ratio <= r),
            Target::RatioAtLeast(r) => Some(ratio >= r),
            Target::None => None,
        }
    }

    fn describe(self, unit: Unit) -> String {
        match self {
            Target::DiffAtMost(d) => format!("difference <= {}", unit.show(d)),
            Target::AtMost(v) => format!("measured <= {}", unit.show(v)),
            Target::RatioAtMost(r) => format!("ratio <= {r}"),
            Target::RatioAtLeast(r) => format!("ratio >= {r}"),
            Target::None => "none (context)".into(),
        }
    }
}

/// One figure against its baseline from the same run.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// Which benchmark (a short id, e.g. `warm_dispatch`).
    pub bench: &'static str,
    /// What is compared, in words.
    pub what: String,
    /// The baseline, in words.
    pub baseline_label: String,
    /// The baseline's median.
    pub baseline: f64,
    /// The measured thing, in words.
    pub measured_label: String,
    /// Its median.
    pub measured: f64,
    /// The unit of both.
    pub unit: Unit,
    /// The target.
    pub target: Target,
}

impl Comparison {
    /// measured / baseline.
    pub fn ratio(&self) -> f64 {
        self.measured / self.baseline
    }

    /// Prints the comparison and its `result:` line.
    pub fn print(&self) {
        println!("{self}");
        println!("result: {}", self.json());
    }

    /// The comparison as one JSON object.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "bench": self.bench,
            "what": self.what,
            "baseline_label": self.baseline_label,
            "baseline": self.baseline,
            "measured_label": self.measured_label,
            "measured": self.measured,
            "unit": self.unit.suffix(),
            "ratio": self.ratio(),
            "difference": self.measured - self.baseline,
            "target": self.target.describe(self.unit),
            "met": self.target.met(self.baseline, self.measured),
        })
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = self.baseline_label.len().max(self.measured_label.len());
        writeln!(f, "{}", self.what)?;
        writeln!(
            f,
            "  baseline  {:<w$}  {:>14}",
            self.baseline_label,
            self.unit.show(self.baseline)
        )?;
        writeln!(
            f,
            "  measured  {:<w$}  {:>14}",
            self.measured_label,
            self.unit.show(self.measured)
        )?;
        let diff = self.measured - self.baseline;
        let sign = if diff >= 0.0 { "+" } else { "-" };
        let met = match self.target.met(self.baseline, self.measured) {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "-",
        };
        write!(
            f,
            "  ratio {:.3}, difference {sign}{}; target {}: {met}",
            self.ratio(),
            self.unit.show(diff.abs()),
            self.target.describe(self.unit)
        )
    }
}

/// Prints a heading for a benchmark's output.
pub fn heading(title: &str) {
    println!("\n== {title} ==");
}

/// Prints one context figure (no baseline) and its `result:` line.
pub fn figure(bench: &'static str, what: &str, value: f64, unit: Unit) {
    println!("  {what:<52} {:>14}", unit.show(value));
    println!(
        "result: {}",
        serde_json::json!({"bench": bench, "what": what, "value": value, "unit": unit.suffix()})
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_judge_the_right_quantity() {
        assert_eq!(Target::DiffAtMost(0.5).met(1.0, 1.4), Some(true));
        assert_eq!(Target::DiffAtMost(0.5).met(1.0, 1.6), Some(false));
        assert_eq!(Target::RatioAtLeast(0.95).met(10.0, 9.4), Some(false));
        assert_eq!(Target::RatioAtMost(1.1).met(10.0, 10.9), Some(true));
        assert_eq!(Target::AtMost(1.0).met(0.1, 0.9), Some(true));
        assert_eq!(Target::None.met(1.0, 2.0), None);
    }

    #[test]
    fn a_comparison_prints_both_figures_and_the_ratio() {
        let c = Comparison {
            bench: "t",
            what: "thing".into(),
            baseline_label: "base".into(),
            baseline: 2.0,
            measured_label: "new".into(),
            measured: 3.0,
            unit: Unit::Ms,
            target: Target::RatioAtMost(1.1),
        };
        let s = c.to_string();
        assert!(s.contains("2.000 ms") && s.contains("3.000 ms"), "{s}");
        assert!(s.contains("ratio 1.500") && s.contains("MISSED"), "{s}");
        assert_eq!(c.json()["met"], false);
    }
}
