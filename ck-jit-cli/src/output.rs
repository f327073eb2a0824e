//! How results reach the user: a progress bar when stderr is a terminal,
//! plain lines otherwise, or one JSON document on stdout with `--json`.
//!
//! Results go to stdout, progress and diagnostics to stderr, so a pipe
//! gets the results alone. Nothing here decides what a command does.

use std::io::{IsTerminal, Write};
use std::time::{Duration, SystemTime};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use crate::error::CliError;

/// The reporting mode of this run.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    json: bool,
    terminal: bool,
}

impl Output {
    /// Text or JSON; a progress bar only when stderr is a terminal.
    pub fn new(json: bool) -> Output {
        Output {
            json,
            terminal: std::io::stderr().is_terminal(),
        }
    }

    /// Whether the result is one JSON document.
    pub fn is_json(&self) -> bool {
        self.json
    }

    /// Prints the command's result: `doc` as JSON, or the text `text` makes.
    pub fn result<T: Serialize>(&self, doc: &T, text: impl FnOnce() -> String) {
        let mut stdout = std::io::stdout().lock();
        // A closed pipe (`ck-jit list | head`) is not worth a panic.
        if self.json {
            if let Ok(s) = serde_json::to_string_pretty(doc) {
                let _ = writeln!(stdout, "{s}");
            }
        } else {
            let t = text();
            if !t.is_empty() {
                let _ = writeln!(stdout, "{}", t.trim_end_matches('\n'));
            }
        }
    }

    /// A diagnostic line on stderr (also in JSON mode: it is not a result).
    pub fn warn(&self, line: &str) {
        eprintln!("{line}");
    }

    /// Reports an error that ended the command, after the program's name.
    pub fn error(&self, e: &CliError) {
        if matches!(e, CliError::Failed) {
            return;
        }
        let message = message(e);
        eprintln!("{message}");
        if self.json {
            #[derive(Serialize)]
            struct Doc {
                error: String,
                exit_status: u8,
            }
            let doc = Doc {
                error: message,
                exit_status: e.exit_status(),
            };
            self.result(&doc, String::new);
        }
    }

    /// Progress over `len` steps: a bar on a terminal, else one stderr line
    /// per step (none in JSON mode).
    pub fn progress(&self, len: u64) -> Progress {
        if self.terminal {
            let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
            let style =
                ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {wide_msg}")
                    .map(|s| s.progress_chars("=> "))
                    .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            Progress {
                bar: Some(bar),
                lines: false,
            }
        } else {
            Progress {
                bar: None,
                lines: !self.json,
            }
        }
    }
}

/// An error as the user reads it: the message after the program's name
/// (errors' own messages do not name it).
pub fn message(e: &impl std::fmt::Display) -> String {
    format!("ck-jit: {e}")
}

/// A running progress report (safe to share between threads).
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
    lines: bool,
}

impl Progress {
    /// One step done, described by `line`.
    pub fn step(&self, line: &str) {
        match &self.bar {
            Some(bar) => {
                bar.inc(1);
                bar.set_message(line.to_string());
            }
            None if self.lines => eprintln!("{line}"),
            None => {}
        }
    }

    /// One step done, described by a line that must stay visible (a
    /// failure): printed above the bar rather than as its message.
    pub fn step_kept(&self, line: &str) {
        match &self.bar {
            Some(bar) => {
                bar.println(line);
                bar.inc(1);
            }
            None if self.lines => eprintln!("{line}"),
            None => {}
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// A byte count for people: `512 B`, `1.5 KiB`, `3.2 GiB`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Seconds since the epoch of a time (0 before it).
pub fn epoch(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Seconds since the epoch as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn time(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A duration as seconds with one decimal.
pub fn seconds(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// Lays out rows as left-aligned columns separated by two spaces.
pub fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c + 1 == r.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_times_read_well() {
        assert_eq!(size(512), "512 B");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(3 << 30), "3.0 GiB");
        assert_eq!(time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(time(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(time(1_700_000_000), "2023-11-14 22:13:20 UTC");
    }

    #[test]
    fn table_aligns_columns() {
        let t = table(&[
            vec!["NAME".into(), "STATE".into()],
            vec!["a_long_name".into(), "cached".into()],
        ]);
        assert_eq!(t, "NAME         STATE\na_long_name  cached\n");
    }
}
