//! The leftovers check of `zmem doctor`: journals of zmem runs that were killed before they
//! undid their changes (an apply's under the state directory, a trial's, tune's or bench's in
//! /run/zmem-trial), and which of the zram devices and swaps they created are still there.

use std::path::Path;

use super::{Finding, Machine, Severity};
use crate::apply::journal_dir;
use zmem_host::{orphan_journals, Action, Sys, JOURNAL_DIR};

/// What a journal's undo lines say its run created: zram devices (the id, and which
/// incarnation when the line records it) and swap areas.
fn created(path: &Path) -> (Vec<(u32, Option<u64>)>, Vec<String>) {
    // A journal is a regular file of a few lines: a FIFO, link or huge file there (a fixture
    // tree's, `--root`) is read as empty, never waited on.
    let bytes = zmem_files::input::read_state("journal", path, 4 << 20)
        .ok()
        .flatten()
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let (mut ids, mut swaps) = (Vec::new(), Vec::new());
    for l in zmem_host::journal_lines(&text) {
        match Action::parse(&l) {
            Some(Action::RemoveZram(id, ino)) => ids.push((id, ino)),
            Some(Action::HotRemove(id)) => ids.push((id, None)),
            Some(Action::Swapoff(dev)) => swaps.push(dev),
            _ => {}
        }
    }
    ids.sort_unstable();
    ids.dedup();
    (ids, swaps)
}

/// One finding per journal of a dead zmem run: a warning when a device or swap it created is
/// still there, a note when only the journal is left.
pub fn journals(sys: &Sys, m: &Machine) -> Vec<Finding> {
    let kinds = [
        (journal_dir(sys), "zmem apply", "zmem apply --revert"),
        (
            JOURNAL_DIR.to_string(),
            "zmem trial, tune or bench",
            "zmem trial --recover",
        ),
    ];
    let mut out = Vec::new();
    for (dir, who, fix) in kinds {
        for (pid, path) in orphan_journals(sys, &dir) {
            let (ids, swaps) = created(&path);
            // A device whose number was reused is someone else's: not the dead run's.
            let now = |id: u32| zmem_host::zram_incarnation(sys, id);
            let mut left: Vec<String> = ids
                .iter()
                .filter(|(id, ino)| now(*id).is_some_and(|n| ino.is_none_or(|i| i == n)))
                .map(|(id, _)| format!("zram{id}"))
                .collect();
            let reused: Vec<String> = ids
                .iter()
                .filter(|(id, ino)| ino.is_some_and(|i| now(*id).is_some_and(|n| n != i)))
                .map(|(id, _)| format!("zram{id} (another device now, its number reused)"))
                .collect();
            left.extend(
                swaps
                    .iter()
                    .filter(|s| m.swaps.iter().any(|a| &a.device == *s))
                    .map(|s| format!("swap on {s}")),
            );
            let shown = path.strip_prefix(sys.root()).unwrap_or(&path);
            let (severity, what) = if left.is_empty() {
                let mut what = "none of what it created is left".to_string();
                if !reused.is_empty() {
                    what.push_str(&format!("; not its: {}", reused.join(", ")));
                }
                (Severity::Note, what)
            } else {
                (
                    Severity::Warning,
                    format!("still there: {}", left.join(", ")),
                )
            };
            out.push(
                Finding::new(
                    "leftovers",
                    severity,
                    format!(
                        "{who} (pid {pid}) died and left /{}: it created {} zram devices and {} swaps; {what}",
                        shown.display().to_string().trim_start_matches('/'),
                        ids.len(),
                        swaps.len()
                    ),
                )
                .fix(fix),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_files::testutil::ScratchDir;

    #[test]
    fn a_journal_names_the_devices_and_swaps_its_run_created() {
        let d = ScratchDir::new("doctor-journal");
        let p = d.join("1.journal");
        std::fs::write(
            &p,
            "# header\nzram\t3\nswapoff\t/dev/zram3\nwrite\t/proc/sys/vm/swappiness\t60\nhot_remove\t3\nzram\t4\nzram\t5\t20512\n",
        )
        .unwrap();
        assert_eq!(
            created(&p),
            (
                vec![(3, None), (4, None), (5, Some(20512))],
                vec!["/dev/zram3".to_string()]
            )
        );
    }
}
