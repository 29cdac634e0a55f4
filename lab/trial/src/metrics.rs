//! The workload's own figures: the metrics protocol and the file it writes to.
//!
//! Before each run zmem creates a private directory (0700, in `$TMPDIR` or
//! /tmp) holding an empty file (0600), and names the file in the workload's
//! environment as `ZMEM_METRICS`. The workload, or anything it starts,
//! appends lines
//!
//! ```text
//! NAME VALUE [UNIT]
//! ```
//!
//! (`get_max_ms 12.3`, `get_rps 21400 1/s`): NAME is 1 to 64 of `A-Z a-z 0-9
//! _ . -` starting with a letter, VALUE a finite decimal number, UNIT at
//! most 16 characters. Blank lines and lines starting with `#` are skipped.
//! A name given twice in one run keeps its last value. After the run zmem
//! reads at most [`MAX_BYTES`] and [`MAX_LINES`] lines (the rest is ignored
//! and said), reports each bad line with its number (the run still counts),
//! and removes the file and the directory.

use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The environment variable naming the run's metrics file.
pub const METRICS_ENV: &str = "ZMEM_METRICS";
/// Bytes of the metrics file read after a run.
pub const MAX_BYTES: usize = 1 << 20;
/// Lines of the metrics file read after a run.
pub const MAX_LINES: usize = 10_000;
/// Bad lines reported per run (the rest are counted).
const MAX_PROBLEMS: usize = 10;

/// Which way a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Smaller is better (a latency, a time).
    Lower,
    /// Larger is better (a throughput).
    Higher,
}

impl Direction {
    pub fn word(self) -> &'static str {
        match self {
            Direction::Lower => "lower",
            Direction::Higher => "higher",
        }
    }

    /// `a` is better than `b`.
    pub fn better(self, a: f64, b: f64) -> bool {
        match self {
            Direction::Lower => a < b,
            Direction::Higher => a > b,
        }
    }
}

/// The direction the name says by the conventions every reader follows: a
/// time (`_ns`, `_us`, `_ms`, `_s`) is better lower, a rate (`_per_s`,
/// `_rps`, `_tps`, `_qps`, `_iops`) higher; `None` for anything else.
pub fn direction_of(name: &str) -> Option<Direction> {
    let n = name.to_ascii_lowercase();
    let rate = ["_per_s", "_rps", "_tps", "_qps", "_iops"];
    if rate.iter().any(|s| n.ends_with(s)) || ["rps", "tps", "qps", "iops"].contains(&n.as_str()) {
        return Some(Direction::Higher);
    }
    let time = ["_ns", "_us", "_ms", "_s"];
    time.iter()
        .any(|s| n.ends_with(s))
        .then_some(Direction::Lower)
}

/// One figure a run reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Where it came from: `ZMEM_METRICS`, or the reader of the workload's
    /// output (`redis-benchmark --csv`, `pgbench`, `fio json`, `sysbench`).
    pub source: String,
}

/// A valid metric name: 1 to 64 of `A-Z a-z 0-9 _ . -`, starting with a letter.
pub fn valid_name(n: &str) -> bool {
    (1..=64).contains(&n.len())
        && n.starts_with(|c: char| c.is_ascii_alphabetic())
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// One line of the protocol: `None` for a blank or `#` line.
pub fn parse_line(line: &str) -> Result<Option<(String, f64, Option<String>)>, String> {
    let t = line.trim();
    if t.is_empty() || t.starts_with('#') {
        return Ok(None);
    }
    let f: Vec<&str> = t.split_whitespace().collect();
    if f.len() < 2 || f.len() > 3 {
        return Err("expected NAME VALUE [UNIT]".into());
    }
    if !valid_name(f[0]) {
        return Err(format!(
            "bad name {:?} (1 to 64 of A-Z a-z 0-9 _ . -, starting with a letter)",
            shorten(f[0])
        ));
    }
    let value: f64 = f[1]
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| format!("bad value {:?} (a finite number)", shorten(f[1])))?;
    let unit = f.get(2).map(|u| u.to_string());
    if unit.as_ref().is_some_and(|u| u.chars().count() > 16) {
        return Err("unit longer than 16 characters".into());
    }
    Ok(Some((f[0].to_string(), value, unit)))
}

fn shorten(s: &str) -> String {
    s.chars().take(40).collect()
}

/// What a metrics file held: its figures (a name once, its last value) and
/// what was wrong with it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    pub metrics: Vec<Metric>,
    pub problems: Vec<String>,
}

/// Parse the protocol's lines (at most [`MAX_LINES`]).
pub fn parse(text: &str, source: &str) -> Parsed {
    let mut p = Parsed::default();
    let mut bad = 0usize;
    for (i, line) in text.lines().enumerate() {
        if i == MAX_LINES {
            p.problems.push(format!(
                "more than {MAX_LINES} lines: the rest were not read"
            ));
            break;
        }
        match parse_line(line) {
            Ok(None) => {}
            Ok(Some((name, value, unit))) => {
                p.metrics.retain(|m| m.name != name);
                p.metrics.push(Metric {
                    name,
                    value,
                    unit,
                    source: source.into(),
                });
            }
            Err(e) => {
                bad += 1;
                if bad <= MAX_PROBLEMS {
                    p.problems
                        .push(format!("{METRICS_ENV} line {}: {e}", i + 1));
                }
            }
        }
    }
    if bad > MAX_PROBLEMS {
        p.problems.push(format!(
            "{} more bad lines in {METRICS_ENV}",
            bad - MAX_PROBLEMS
        ));
    }
    p
}

/// A run's metrics file in a private directory; both removed on drop.
#[derive(Debug)]
pub struct MetricsFile {
    dir: PathBuf,
    path: PathBuf,
}

impl MetricsFile {
    /// Create `zmem-metrics.TAG/metrics` under `parent` (the directory 0700,
    /// new; the file 0600, empty).
    pub fn create_in(parent: &Path, tag: &str) -> io::Result<MetricsFile> {
        let dir = parent.join(format!("zmem-metrics.{tag}"));
        fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let path = dir.join("metrics");
        let made = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path);
        if let Err(e) = made {
            let _ = fs::remove_dir(&dir);
            return Err(e);
        }
        Ok(MetricsFile { dir, path })
    }

    /// In `$TMPDIR` (or /tmp).
    pub fn create(tag: &str) -> io::Result<MetricsFile> {
        Self::create_in(&std::env::temp_dir(), tag)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Read what the run wrote (at most [`MAX_BYTES`]; never through a link).
    pub fn read(&self) -> Parsed {
        let mut f = match fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&self.path)
        {
            Ok(f) if f.metadata().is_ok_and(|m| m.is_file()) => f,
            Ok(_) => return problem(format!("{METRICS_ENV} is no longer a regular file")),
            Err(e) => return problem(format!("cannot read {METRICS_ENV}: {e}")),
        };
        let mut buf = Vec::new();
        if let Err(e) = f.by_ref().take(MAX_BYTES as u64 + 1).read_to_end(&mut buf) {
            return problem(format!("cannot read {METRICS_ENV}: {e}"));
        }
        let over = buf.len() > MAX_BYTES;
        if over {
            // Keep whole lines of the first MAX_BYTES.
            buf.truncate(MAX_BYTES);
            let end = buf.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            buf.truncate(end);
        }
        let mut p = parse(&String::from_utf8_lossy(&buf), METRICS_ENV);
        if over {
            p.problems.push(format!(
                "{METRICS_ENV} is larger than {} KiB: the rest was not read",
                MAX_BYTES >> 10
            ));
        }
        p
    }
}

fn problem(p: String) -> Parsed {
    Parsed {
        metrics: Vec::new(),
        problems: vec![p],
    }
}

impl Drop for MetricsFile {
    fn drop(&mut self) {
        // Whatever the workload left in the directory goes too (it is ours, 0700).
        let _ = fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn lines_and_their_problems() {
        let p = parse(
            "get_max_ms 12.3\n\n# comment\nget_rps 21400 1/s\nget_max_ms 9.5 ms\nbad\n9lives 1\nx nan\nx 1 2 3\n",
            METRICS_ENV,
        );
        let got: Vec<(&str, f64, Option<&str>)> = p
            .metrics
            .iter()
            .map(|m| (m.name.as_str(), m.value, m.unit.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("get_rps", 21400.0, Some("1/s")),
                ("get_max_ms", 9.5, Some("ms"))
            ]
        );
        assert_eq!(p.problems.len(), 4, "{:?}", p.problems);
        assert!(p.problems[0].starts_with("ZMEM_METRICS line 6: expected NAME VALUE"));
        assert!(p.problems[1].contains("bad name \"9lives\""));
        assert!(p.problems[2].contains("bad value \"nan\""));
    }

    #[test]
    fn bad_lines_are_bounded() {
        let text = "?\n".repeat(50) + &"a 1\n".repeat(MAX_LINES);
        let p = parse(&text, METRICS_ENV);
        assert_eq!(p.problems.len(), MAX_PROBLEMS + 2, "{:?}", p.problems);
        assert!(p.problems[MAX_PROBLEMS].contains("more than 10000 lines"));
        assert!(p.problems[MAX_PROBLEMS + 1].contains("40 more bad lines"));
        assert_eq!(p.metrics.len(), 1);
    }

    #[test]
    fn directions_by_name() {
        assert_eq!(direction_of("get_max_ms"), Some(Direction::Lower));
        assert_eq!(direction_of("wall_s"), Some(Direction::Lower));
        assert_eq!(direction_of("get_rps"), Some(Direction::Higher));
        assert_eq!(
            direction_of("fio_read_bw_kib_per_s"),
            Some(Direction::Higher)
        );
        assert_eq!(direction_of("tps"), Some(Direction::Higher));
        assert_eq!(direction_of("errors"), None);
        assert_eq!(direction_of("rows"), None);
    }

    #[test]
    fn the_file_is_private_bounded_and_removed() {
        let parent = std::env::temp_dir();
        let tag = format!("test.{}", std::process::id());
        let f = MetricsFile::create_in(&parent, &tag).unwrap();
        let dir = f.path().parent().unwrap().to_path_buf();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&dir), mode(f.path())), (0o700, 0o600));
        assert!(
            MetricsFile::create_in(&parent, &tag).is_err(),
            "never reuses a directory"
        );
        let line = format!("a {}\n", "1".repeat(200));
        fs::write(f.path(), line.repeat(MAX_BYTES / line.len() + 10)).unwrap();
        let p = f.read();
        assert_eq!(p.metrics.len(), 1);
        assert!(
            p.problems[0].contains("larger than 1024 KiB"),
            "{:?}",
            p.problems
        );
        // A link in its place is not followed.
        fs::remove_file(f.path()).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", f.path()).unwrap();
        assert!(f.read().problems[0].starts_with("cannot read"));
        drop(f);
        assert!(!dir.exists());
    }
}
