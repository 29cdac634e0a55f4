//! `zmem doctor`: reads the machine (through [`Sys`], so a fixture tree works as well as the
//! running kernel) and names each problem of its zram, zswap and swap set-up with the command
//! that fixes it now and, where one exists, how to make the fix survive a reboot.
//!
//! The checks live in the children, one file per group: `swap` (zswap in front of zram, no
//! swap under pressure, priorities, page-cluster, swappiness), `zram` (resume target,
//! writeback without a limit), `boot` (systemd-oomd, zram-generator) and `leftovers` (what a
//! killed zmem left, from its journals). Each check is a row of [`CHECKS`].

use std::fmt::Write;
use std::io;

use serde::Serialize;

use crate::zram::{self, ZramDevice};
use zmem_host::{PsiFile, Sys};
use zmem_kernel::SwapEntry;

mod boot;
mod leftovers;
mod swap;
mod zram_checks;

/// How bad a finding is. `zmem doctor` exits 1 when any finding is a warning or an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth knowing; nothing to fix.
    Note,
    /// Works, but worse than it should (double compression, slow swap-in, no OOM action).
    Warning,
    /// Breaks something (hibernation into RAM).
    Error,
}

impl Severity {
    pub fn word(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One problem found, with the numbers read and its fix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The check's id (a row of [`CHECKS`]).
    pub check: &'static str,
    pub severity: Severity,
    /// One line: what was read and why it is a problem.
    pub finding: String,
    /// The command that fixes it now (as root).
    pub fix: Option<String>,
    /// How to make the fix survive a reboot (zram-generator.conf, sysctl.d, kernel command line).
    pub permanent: Option<String>,
}

impl Finding {
    fn new(check: &'static str, severity: Severity, finding: String) -> Finding {
        Finding {
            check,
            severity,
            finding,
            fix: None,
            permanent: None,
        }
    }
    fn fix(mut self, cmd: impl Into<String>) -> Finding {
        self.fix = Some(cmd.into());
        self
    }
    fn permanent(mut self, how: impl Into<String>) -> Finding {
        self.permanent = Some(how.into());
        self
    }
}

/// Every check: (id, what it looks for). The ids are the `check` of each [`Finding`].
pub const CHECKS: &[(&str, &str)] = &[
    (
        "zswap-over-zram",
        "zswap enabled while swap goes to zram (double compression)",
    ),
    (
        "no-swap-pressure",
        "no swap at all while memory pressure (PSI) is present",
    ),
    (
        "oomd-zram",
        "systemd-oomd set up so that it does not act on zram swap",
    ),
    (
        "zram-priority",
        "a zram swap not above every disk swap's priority",
    ),
    (
        "resume-on-zram",
        "a zram device as the hibernation resume target",
    ),
    (
        "page-cluster",
        "vm.page-cluster not 0 while swap goes to zram",
    ),
    ("swappiness", "vm.swappiness below 100 with zram swap"),
    (
        "writeback-limit",
        "a zram backing_dev without writeback_limit_enable",
    ),
    (
        "generator-missing",
        "a zmem-written zram-generator.conf but no zram-generator",
    ),
    (
        "leftovers",
        "devices or swaps a killed zmem left (its journals)",
    ),
];

/// What the checks read once: the zram devices, /proc/swaps and the memory pressure.
pub(crate) struct Machine {
    pub devices: Vec<ZramDevice>,
    pub swaps: Vec<SwapEntry>,
    pub psi: Option<PsiFile>,
}

impl Machine {
    fn read(sys: &Sys) -> io::Result<Machine> {
        // Every kernel has /proc/meminfo: without it the root is not a machine nor a fixture
        // tree, and every check would pass on nothing.
        sys.read("/proc/meminfo")
            .map_err(|e| io::Error::new(e.kind(), format!("/proc/meminfo: {e}")))?;
        Ok(Machine {
            devices: zram::read_all(sys)?,
            swaps: sys.swaps()?,
            psi: zmem_host::system_pressure(sys),
        })
    }

    /// The swaps on zram devices.
    pub fn zram_swaps(&self) -> Vec<&SwapEntry> {
        self.swaps.iter().filter(|s| is_zram(&s.device)).collect()
    }

    /// The other swaps (partitions and files).
    pub fn disk_swaps(&self) -> Vec<&SwapEntry> {
        self.swaps.iter().filter(|s| !is_zram(&s.device)).collect()
    }

    /// The zram swaps' names, for a finding: `/dev/zram0, /dev/zram1`.
    pub fn zram_swap_names(&self) -> String {
        let v: Vec<&str> = self
            .zram_swaps()
            .iter()
            .map(|s| s.device.as_str())
            .collect();
        v.join(", ")
    }
}

/// Whether a /proc/swaps device is a zram device (`/dev/zram0`).
fn is_zram(dev: &str) -> bool {
    dev.strip_prefix("/dev/zram")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// What `zmem doctor` found.
#[derive(Debug, Clone, Serialize)]
pub struct Diagnosis {
    /// The ids of the checks run, in [`CHECKS`] order.
    pub checks: Vec<&'static str>,
    pub findings: Vec<Finding>,
}

impl Diagnosis {
    /// 0 when clean or only notes, 1 when a warning or an error was found.
    pub fn exit_code(&self) -> i32 {
        i32::from(
            self.findings
                .iter()
                .any(|f| f.severity >= Severity::Warning),
        )
    }
}

/// Run every check on the machine under `sys`.
pub fn diagnose(sys: &Sys) -> io::Result<Diagnosis> {
    let m = Machine::read(sys)?;
    let mut findings = Vec::new();
    findings.extend(swap::zswap_over_zram(sys, &m));
    findings.extend(swap::no_swap_pressure(&m));
    findings.extend(boot::oomd(sys, &m));
    findings.extend(swap::priority(&m));
    findings.extend(zram_checks::resume_target(sys, &m)?);
    findings.extend(swap::page_cluster(sys, &m));
    findings.extend(swap::swappiness(sys, &m));
    findings.extend(zram_checks::writeback_limit(sys, &m));
    findings.extend(boot::generator_missing(sys));
    findings.extend(leftovers::journals(sys, &m));
    Ok(Diagnosis {
        checks: CHECKS.iter().map(|c| c.0).collect(),
        findings,
    })
}

impl Diagnosis {
    /// The table: one block per finding (severity, check, finding, fix, permanent), then a summary.
    pub fn text(&self) -> String {
        let d = self;
        let mut o = String::new();
        let _ = writeln!(o, "{:<8} {:<18} finding / fix", "severity", "check");
        for f in &d.findings {
            let _ = writeln!(o, "{:<8} {:<18} {}", f.severity.word(), f.check, f.finding);
            if let Some(x) = &f.fix {
                let _ = writeln!(o, "{:<27} fix now:   {x}", "");
            }
            if let Some(x) = &f.permanent {
                let _ = writeln!(o, "{:<27} permanent: {x}", "");
            }
        }
        let count = |s: Severity| d.findings.iter().filter(|f| f.severity == s).count();
        let _ = writeln!(
            o,
            "{} checks: {} errors, {} warnings, {} notes{}",
            d.checks.len(),
            count(Severity::Error),
            count(Severity::Warning),
            count(Severity::Note),
            if d.findings.is_empty() {
                " (clean)"
            } else {
                ""
            }
        );
        o
    }

    /// The JSON form: `{"checks": [...], "findings": [{check, severity, finding, fix, permanent}]}`.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the diagnosis serialises")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zram_devices_are_told_from_other_swaps() {
        assert!(is_zram("/dev/zram0") && is_zram("/dev/zram12"));
        assert!(!is_zram("/dev/zram") && !is_zram("/dev/zramx") && !is_zram("/swapfile"));
        assert!(!is_zram("/dev/sda2"));
    }

    #[test]
    fn exit_code_is_one_only_for_warnings_and_errors() {
        let mut d = Diagnosis {
            checks: vec!["swappiness"],
            findings: vec![],
        };
        assert_eq!(d.exit_code(), 0);
        d.findings
            .push(Finding::new("leftovers", Severity::Note, "n".into()));
        assert_eq!(d.exit_code(), 0);
        d.findings
            .push(Finding::new("swappiness", Severity::Warning, "w".into()));
        assert_eq!(d.exit_code(), 1);
        assert!(d.text().contains("0 errors, 1 warnings, 1 notes"));
    }

    #[test]
    fn every_check_id_is_unique() {
        let mut ids: Vec<&str> = CHECKS.iter().map(|c| c.0).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), CHECKS.len());
    }
}
