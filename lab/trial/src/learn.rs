//! A workload without memory pressure: one run in a cgroup of its own whose
//! limit is all of RAM, with no swap change, watched every 50 ms. What it
//! learns: how long the workload takes when nothing is swapped, and how much
//! anonymous memory (the pages that go to swap) its processes hold at their
//! peak. A hook sees the processes at every look, so a caller can capture
//! their pages near that peak (`zmem tune` does).

use std::cell::Cell;

use serde::Serialize;
use zmem_host::{self as host, Cgroup, Journal, Sys};

use crate::measure::RunRecord;
use crate::{SignalWatch, TrialError};

/// What one unpressured run showed.
#[derive(Debug, Clone, Serialize)]
pub struct Learned {
    /// The run itself: wall, CPU time, faults, the cgroup's peak, the outcome.
    pub record: RunRecord,
    /// The largest sum of the processes' `RssAnon` seen (bytes): the
    /// workload's anonymous footprint, what a memory limit pushes to swap.
    pub peak_anon_bytes: u64,
}

/// `RssAnon` of every process in `pids`, summed, in bytes (processes that
/// exited in between count 0).
pub fn anon_bytes(sys: &Sys, pids: &[i32]) -> u64 {
    pids.iter()
        .filter_map(|p| {
            let s = sys.read(&format!("/proc/{p}/status")).ok()?;
            let line = s.lines().find(|l| l.starts_with("RssAnon:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        .sum()
}

/// Run `command` once in a cgroup limited to all of RAM and watch it. `hook`
/// gets the processes and their anonymous bytes every 50 ms. Refuses like a
/// trial (root, no pending crash journal); the cgroup is journaled and
/// removed, also when interrupted.
pub fn learn(
    command: &[String],
    service: Option<&crate::ServiceSpec>,
    signals: &SignalWatch,
    hook: &dyn Fn(&[i32], u64),
) -> Result<Learned, TrialError> {
    if command.is_empty() && service.is_none() {
        return Err(TrialError::Invalid("no workload to run".into()));
    }
    let sys = Sys::real();
    crate::refuse_unless_root_and_recovered(&sys)?;
    let hierarchy = host::memory_hierarchy(&sys).map_err(|e| TrialError::Refused(vec![e]))?;
    let ram = sys
        .meminfo_get("MemTotal")
        .ok()
        .flatten()
        .ok_or_else(|| TrialError::Io("cannot read MemTotal from /proc/meminfo".into()))?;
    let journal = std::rc::Rc::new(std::cell::RefCell::new(
        Journal::create(&sys)
            .map_err(|e| TrialError::Io(format!("cannot create the crash journal: {e}")))?,
    ));
    let peak = Cell::new(0u64);
    let watch = |cg: &Cgroup| {
        let pids = host::cgroup_pids(&sys, cg.path());
        let anon = anon_bytes(&sys, &pids);
        peak.set(peak.get().max(anon));
        hook(&pids, anon);
    };
    let place = crate::CgroupPlace {
        sys: &sys,
        hierarchy: &hierarchy,
        journal: &journal,
    };
    let run = crate::CgroupRun {
        command,
        service,
        name: "learn",
        round: 0,
        tag: &format!("{}.learn", std::process::id()),
        limit: ram,
        swappiness: None,
        zram_sys: None,
        zswap: false,
        stop: signals.flag(),
        settings: &[],
        observe: Some(&watch),
    };
    let mut guard = host::Guard::with_journal(&sys, "learn", std::rc::Rc::clone(&journal));
    guard
        .enable_memory_controller(&hierarchy)
        .map_err(|e| TrialError::Io(e.to_string()))?;
    let (record, cleanup) = place.run(&run);
    let mut errors: Vec<String> = cleanup.into_iter().collect();
    errors.extend(guard.unwind());
    if !errors.is_empty() {
        return Err(TrialError::Cleanup(errors));
    }
    Ok(Learned {
        record,
        peak_anon_bytes: peak.get(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anon_bytes_sums_rss_anon_and_skips_exited_processes() {
        let root = std::env::temp_dir().join(format!("zmem-learn.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let sys = Sys::new(&root);
        for (pid, kib) in [(10, 1000), (11, 24)] {
            std::fs::create_dir_all(sys.path(&format!("/proc/{pid}"))).unwrap();
            std::fs::write(
                sys.path(&format!("/proc/{pid}/status")),
                format!("Name:\tx\nRssAnon:\t    {kib} kB\nRssFile:\t 5 kB\n"),
            )
            .unwrap();
        }
        assert_eq!(anon_bytes(&sys, &[10, 11, 12]), 1024 * 1024);
        assert_eq!(anon_bytes(&sys, &[]), 0);
        std::fs::remove_dir_all(root).unwrap();
    }
}
