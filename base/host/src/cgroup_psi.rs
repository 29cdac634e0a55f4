//! Memory pressure (PSI, Documentation/accounting/psi.rst) of a run: the
//! `memory.pressure` file of the run's cgroup on cgroup v2 (the cgroup is new,
//! so its `total` is the run's), else `/proc/pressure/memory`, which is
//! system-wide (cgroup v1 has no per-cgroup pressure file), as the change of
//! its `total` over the run.
//!
//! A pressure file is two lines (kernel/sched/psi.c `psi_show`):
//! `some avg10=0.00 avg60=0.00 avg300=0.00 total=0` and the same for `full`
//! (`full` is absent from /proc/pressure/cpu of old kernels, and may be from
//! other files; it is optional here). `avg*` are percentages of wall time
//! stalled over the last 10, 60 and 300 s; `total` is the stall time in µs.

use crate::Sys;

/// The system-wide memory pressure file.
pub const SYSTEM_MEMORY_PRESSURE: &str = "/proc/pressure/memory";

/// Whose pressure a [`Pressure`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PsiScope {
    /// The run's own cgroup (`memory.pressure`, cgroup v2).
    Cgroup,
    /// The whole machine (`/proc/pressure/memory`): cgroup v1 has no
    /// per-cgroup pressure, so other work on the machine counts too.
    System,
}

impl PsiScope {
    /// Where the figures come from, for a note under a table.
    pub fn source(self) -> &'static str {
        match self {
            PsiScope::Cgroup => "memory.pressure of the run's cgroup",
            PsiScope::System => {
                "/proc/pressure/memory, system-wide (cgroup v1 has no memory.pressure); total is its change over the run"
            }
        }
    }
}

/// One line of a pressure file as the kernel prints it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PsiLine {
    /// Share of wall time stalled, percent, over 10, 60 and 300 s.
    pub avg10: f64,
    pub avg60: f64,
    pub avg300: f64,
    /// Stall time since the group was created (the machine booted), µs.
    pub total_us: u64,
}

/// A pressure file: `some` (at least one task stalled on memory) and `full`
/// (every non-idle task stalled at once).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PsiFile {
    pub some: PsiLine,
    pub full: Option<PsiLine>,
}

/// Parse a pressure file; `None` when it has no `some` line.
pub fn parse_pressure(text: &str) -> Option<PsiFile> {
    let mut some = None;
    let mut full = None;
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let kind = f.next();
        let mut l = PsiLine::default();
        for kv in f {
            let (k, v) = kv.split_once('=')?;
            match k {
                "avg10" => l.avg10 = v.parse().ok()?,
                "avg60" => l.avg60 = v.parse().ok()?,
                "avg300" => l.avg300 = v.parse().ok()?,
                "total" => l.total_us = v.parse().ok()?,
                _ => {}
            }
        }
        match kind {
            Some("some") => some = Some(l),
            Some("full") => full = Some(l),
            _ => {}
        }
    }
    Some(PsiFile { some: some?, full })
}

/// A run's memory pressure at its end: the kernel's averages then, and the
/// stall time over the run, s. One name per quantity in every output
/// (`psi_some_total_s` is also the summaries' name for its median).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pressure {
    pub psi_scope: PsiScope,
    pub psi_some_avg10: f64,
    pub psi_some_avg60: f64,
    pub psi_some_avg300: f64,
    pub psi_some_total_s: f64,
    pub psi_full_avg10: Option<f64>,
    pub psi_full_avg60: Option<f64>,
    pub psi_full_avg300: Option<f64>,
    pub psi_full_total_s: Option<f64>,
}

impl Pressure {
    /// From the file at the run's end and, for the system-wide file, at its
    /// start (`total` becomes the change over the run).
    pub fn of(scope: PsiScope, end: &PsiFile, start: Option<&PsiFile>) -> Pressure {
        let secs =
            |end: u64, start: Option<u64>| end.saturating_sub(start.unwrap_or(0)) as f64 / 1e6;
        let full_start = start.and_then(|s| s.full.map(|f| f.total_us));
        Pressure {
            psi_scope: scope,
            psi_some_avg10: end.some.avg10,
            psi_some_avg60: end.some.avg60,
            psi_some_avg300: end.some.avg300,
            psi_some_total_s: secs(end.some.total_us, start.map(|s| s.some.total_us)),
            psi_full_avg10: end.full.map(|f| f.avg10),
            psi_full_avg60: end.full.map(|f| f.avg60),
            psi_full_avg300: end.full.map(|f| f.avg300),
            psi_full_total_s: end.full.map(|f| secs(f.total_us, full_start)),
        }
    }
}

/// The system-wide memory pressure file, parsed (`None` without PSI: a
/// kernel without CONFIG_PSI, or booted with psi=0).
pub fn system_pressure(sys: &Sys) -> Option<PsiFile> {
    parse_pressure(&sys.read(SYSTEM_MEMORY_PRESSURE).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "some avg10=1.50 avg60=0.25 avg300=0.05 total=2500000\n\
                        full avg10=0.75 avg60=0.10 avg300=0.02 total=1000000\n";

    #[test]
    fn parses_both_lines() {
        let p = parse_pressure(FILE).unwrap();
        assert_eq!(p.some.avg10, 1.5);
        assert_eq!(p.some.total_us, 2_500_000);
        let full = p.full.unwrap();
        assert_eq!((full.avg60, full.total_us), (0.10, 1_000_000));
        // A file with `some` only (no full line) still parses.
        let only = parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=7\n").unwrap();
        assert_eq!((only.some.total_us, only.full), (7, None));
        assert_eq!(parse_pressure(""), None);
        assert_eq!(parse_pressure("some avg10=x total=1\n"), None);
    }

    #[test]
    fn a_cgroup_total_is_the_run_the_system_total_its_change() {
        let end = parse_pressure(FILE).unwrap();
        let p = Pressure::of(PsiScope::Cgroup, &end, None);
        assert_eq!((p.psi_some_total_s, p.psi_full_total_s), (2.5, Some(1.0)));
        assert_eq!(p.psi_some_avg10, 1.5);
        let start = parse_pressure(
            "some avg10=0 avg60=0 avg300=0 total=500000\nfull avg10=0 avg60=0 avg300=0 total=250000\n",
        )
        .unwrap();
        let p = Pressure::of(PsiScope::System, &end, Some(&start));
        assert_eq!((p.psi_some_total_s, p.psi_full_total_s), (2.0, Some(0.75)));
        assert_eq!(p.psi_scope, PsiScope::System);
    }
}
