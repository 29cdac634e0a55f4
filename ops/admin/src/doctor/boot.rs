//! The boot-time checks of `zmem doctor`: systemd-oomd set up so that it does not act on zram
//! swap, and a zmem-written zram-generator.conf without zram-generator to read it.
//!
//! What makes systemd-oomd blind to zram swap, read in systemd's `src/oom/` and its issues:
//! * oomd watches swap only for cgroups whose unit sets `ManagedOOMSwap=kill` (its swap timer
//!   stays off while no unit asks, `oomd-manager.c`); upstream ships no such unit (Fedora's
//!   systemd-oomd-defaults sets it on `-.slice`), so without one oomd never acts on swap use;
//! * at start it reads SwapTotal from /proc/meminfo once and, at 0, logs "No swap; memory
//!   pressure usage will be degraded" (`oomd.c`); zram swap made at boot by zram-generator
//!   comes later than oomd unless its unit is ordered `After=swap.target`, which systemd added
//!   in v258 (systemd #36704, #23095; zram-generator #225);
//! * it needs cgroup v2 with the memory controller, or it does not run (`oomd.c`).
//!
//! What the running oomd saw (`oomctl`, its journal) needs systemd running and is not read here.

use super::{Finding, Machine, Severity};
use crate::persist::{MARK, ZRAM_GENERATOR};
use zmem_host::Sys;

/// Where systemd-oomd is installed.
const OOMD_PATHS: &[&str] = &["/usr/lib/systemd/systemd-oomd", "/lib/systemd/systemd-oomd"];

/// systemd's unit directories, highest precedence first.
const UNIT_DIRS: &[&str] = &[
    "/etc/systemd/system",
    "/run/systemd/system",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
];

const DROP_IN: &str = "/etc/systemd/system/systemd-oomd.service.d/10-after-swap.conf";

/// Every unit file and drop-in under the unit directories: (path, text).
fn unit_files(sys: &Sys) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for dir in UNIT_DIRS {
        for name in sys.list(dir).unwrap_or_default() {
            let path = format!("{dir}/{name}");
            if name.ends_with(".d") {
                for conf in sys.list(&path).unwrap_or_default() {
                    let p = format!("{path}/{conf}");
                    if let Ok(t) = sys.read(&p) {
                        out.push((p, t));
                    }
                }
            } else if let Ok(t) = sys.read(&path) {
                out.push((path, t));
            }
        }
    }
    out
}

/// The values of `key=` lines in a unit file's text (spaces around `=` allowed).
fn values<'a>(text: &'a str, key: &str) -> Vec<&'a str> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then_some(v.trim())
        })
        .collect()
}

/// Whether a systemd-oomd process runs (a /proc/PID/comm of `systemd-oomd`).
fn oomd_running(sys: &Sys) -> bool {
    sys.list("/proc").unwrap_or_default().iter().any(|p| {
        p.bytes().all(|b| b.is_ascii_digit())
            && sys
                .read(&format!("/proc/{p}/comm"))
                .is_ok_and(|c| c.trim() == "systemd-oomd")
    })
}

/// Whether systemd-oomd is enabled (a `*.wants/systemd-oomd.*` link in /etc or /run).
fn oomd_enabled(sys: &Sys) -> bool {
    UNIT_DIRS[..2].iter().any(|dir| {
        sys.list(dir).unwrap_or_default().iter().any(|w| {
            w.ends_with(".wants")
                && sys
                    .list(&format!("{dir}/{w}"))
                    .unwrap_or_default()
                    .iter()
                    .any(|u| u.starts_with("systemd-oomd."))
        })
    })
}

/// systemd-oomd installed and (enabled or running) while swap goes to zram, but set up so that
/// it does not act on that swap.
pub fn oomd(sys: &Sys, m: &Machine) -> Vec<Finding> {
    let Some(bin) = OOMD_PATHS.iter().find(|p| sys.path(p).is_file()) else {
        return Vec::new();
    };
    let (running, enabled) = (oomd_running(sys), oomd_enabled(sys));
    if m.zram_swaps().is_empty() || !(running || enabled) {
        return Vec::new();
    }
    let state = match (running, enabled) {
        (true, true) => "enabled and running",
        (true, false) => "running",
        _ => "enabled",
    };
    let units = unit_files(sys);
    let mut out = Vec::new();
    if !sys.exists("/sys/fs/cgroup/cgroup.controllers") {
        out.push(Finding::new(
            "oomd-zram",
            Severity::Warning,
            format!("{bin} is {state} but /sys/fs/cgroup is not cgroup v2 (no cgroup.controllers): oomd refuses to run, so nothing acts on {} filling up", m.zram_swap_names()),
        ).fix("none at runtime: boot with systemd.unified_cgroup_hierarchy=1")
        .permanent("kernel command line systemd.unified_cgroup_hierarchy=1"));
    }
    if let Some(f) = no_swap_policy(bin, state, &units, m) {
        out.push(f);
    }
    if let Some(f) = not_after_swap(bin, &units, m) {
        out.push(f);
    }
    out
}

/// No unit sets ManagedOOMSwap=kill: oomd's swap monitor never runs.
fn no_swap_policy(
    bin: &str,
    state: &str,
    units: &[(String, String)],
    m: &Machine,
) -> Option<Finding> {
    if units
        .iter()
        .any(|(_, t)| values(t, "ManagedOOMSwap").contains(&"kill"))
    {
        return None;
    }
    let fix = "mkdir -p /etc/systemd/system/-.slice.d && printf '[Slice]\\nManagedOOMSwap=kill\\n' > /etc/systemd/system/-.slice.d/10-oomd-swap.conf && systemctl daemon-reload";
    Some(
        Finding::new(
            "oomd-zram",
            Severity::Warning,
            format!(
                "{bin} is {state} but no unit in {} sets ManagedOOMSwap=kill ({} unit files and drop-ins read): oomd never acts on swap use, so {} can fill up unwatched",
                UNIT_DIRS.join(", "),
                units.len(),
                m.zram_swap_names()
            ),
        )
        .fix(fix)
        .permanent("the drop-in the fix writes stays (Fedora ships the same as systemd-oomd-defaults)"),
    )
}

/// systemd-oomd.service not ordered After=swap.target: started before zram swap exists, it sees
/// no swap (systemd #36704).
fn not_after_swap(bin: &str, units: &[(String, String)], m: &Machine) -> Option<Finding> {
    let own: Vec<&(String, String)> = units
        .iter()
        .filter(|(p, _)| p.contains("/systemd-oomd.service"))
        .collect();
    let (unit, _) = own
        .iter()
        .find(|(p, _)| p.ends_with("/systemd-oomd.service"))?;
    let after = own
        .iter()
        .flat_map(|(_, t)| values(t, "After"))
        .any(|v| v.split_whitespace().any(|u| u == "swap.target"));
    if after {
        return None;
    }
    Some(
        Finding::new(
            "oomd-zram",
            Severity::Warning,
            format!(
                "{unit} (and its drop-ins) has no After=swap.target: at boot {bin} can start before {} exists, read SwapTotal 0 and log \"No swap\" (systemd #36704, fixed in v258); whether the running oomd saw the swap needs `oomctl` with systemd running, not read here",
                m.zram_swap_names()
            ),
        )
        .fix("systemctl restart systemd-oomd")
        .permanent(format!("{DROP_IN}: [Unit] After=swap.target (then systemctl daemon-reload)")),
    )
}

/// A zram-generator.conf written by `zmem persist` while zram-generator is not installed:
/// nothing creates the devices at boot.
pub fn generator_missing(sys: &Sys) -> Option<Finding> {
    let conf = "/etc/systemd/zram-generator.conf";
    let text = sys.read(conf).ok()?;
    if !text.starts_with(MARK) || ZRAM_GENERATOR.paths.iter().any(|p| sys.path(p).is_file()) {
        return None;
    }
    Some(
        Finding::new(
            "generator-missing",
            Severity::Warning,
            format!(
                "{conf} was written by `zmem persist` but zram-generator is in none of {}: no zram device is made at boot",
                ZRAM_GENERATOR.paths.join(", ")
            ),
        )
        .fix("zmem apply --zram-generator   # makes the devices now, from the same file")
        .permanent(format!("install zram-generator ({})", ZRAM_GENERATOR.install)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_values_are_read_by_key_with_spaces_around_the_sign() {
        let t = "[Unit]\nAfter=a.service swap.target\nAfter = b.target\n#After=c\n[Slice]\nManagedOOMSwap=kill\n";
        assert_eq!(values(t, "After"), ["a.service swap.target", "b.target"]);
        assert_eq!(values(t, "ManagedOOMSwap"), ["kill"]);
        assert!(values(t, "ManagedOOMMemoryPressure").is_empty());
    }
}
