//! Running a plan of `zmem apply` on the host layer, and undoing it: each step's undo is
//! journaled (`/run/zmem/apply-journal/PID.journal`, fsynced) before the step is made; a
//! failing step rolls back the steps done; a successful run adds the journal's lines to the
//! saved undo list (`/run/zmem/apply.state`, the same format) that `--revert` runs, together
//! with the journal of an apply that was killed.

use std::io;
use std::path::PathBuf;

use zmem_host::{Action, Journal, Sys};

use super::{state_file, ApplyError, Plan, Step};

/// Where the journal of a running apply is kept: `PID.journal` in this directory, inside
/// the state directory (`/run/zmem/apply-journal`).
pub fn journal_dir(sys: &Sys) -> String {
    format!("{}/apply-journal", sys.state_dir())
}

/// The first comment line of the saved undo list.
const STATE_HEADER: &str =
    "zmem apply: undo actions, oldest first; `zmem apply --revert` runs them bottom to top";

/// A step's journal lines: its undo actions in the order the journal undoes them
/// (bottom to top), or the action that cannot be written on one line.
fn step_lines(step: &Step) -> Result<Vec<String>, &Action> {
    step.undo
        .iter()
        .rev()
        .map(|u| u.to_line().ok_or(u))
        .collect()
}

/// Run a plan; on failure roll back. `log` gets each operation as it is done. Each step's
/// undo is journaled (fsynced) before the step is made, so a killed apply is undone by
/// `--revert`; a second apply refuses while such a journal is left.
pub fn execute(sys: &Sys, plan: &Plan, log: &mut dyn FnMut(&str)) -> Result<(), ApplyError> {
    if plan.steps.is_empty() {
        return Ok(());
    }
    let dir = journal_dir(sys);
    if let Some((pid, path)) = zmem_host::orphan_journals(sys, &dir).into_iter().next() {
        return Err(ApplyError::Refused(format!(
            "a previous zmem apply (pid {pid}) stopped before it finished and left {}; run `zmem apply --revert` first",
            path.display()
        )));
    }
    for s in &plan.steps {
        if let Err(u) = step_lines(s) {
            return Err(ApplyError::Refused(format!(
                "cannot journal the undo `{u}` (a tab or newline in a value)"
            )));
        }
    }
    // The state directory first, as serve makes it (others may look, not write: 0755); the
    // journal's own directory inside it is private.
    let state_dir = sys.path(sys.state_dir());
    sys.check_in_tree(&state_dir)
        .and_then(|()| zmem_files::shared_dir(&state_dir))
        .map_err(|e| ApplyError::Read(format!("the state directory: {e}")))?;
    let mut journal = Journal::create_in(sys, &dir, std::process::id())
        .map_err(|e| ApplyError::Read(format!("cannot create the journal in {dir}: {e}")))?;
    let mut done: Vec<&Step> = Vec::new();
    for step in &plan.steps {
        let before = journal.lines().len();
        let lines = step_lines(step).expect("checked above");
        let made = journal
            .push_all(lines)
            .map_err(|e| format!("cannot write the journal {}: {e}", journal.path().display()))
            .and_then(|()| {
                log(&step.op.to_string());
                step.op.execute(sys)
            });
        if let Err(error) = made {
            // This step did not happen: its undo never runs.
            journal.truncate(before);
            log(&format!("failed: {error}; rolling back"));
            return Err(roll_back(sys, &done, &mut journal, error, log));
        }
        done.push(step);
    }
    save_state(sys, plan, &mut journal, log);
    Ok(())
}

/// Undo the steps done, newest first; what could not be undone stays in the journal.
fn roll_back(
    sys: &Sys,
    done: &[&Step],
    journal: &mut Journal,
    error: String,
    log: &mut dyn FnMut(&str),
) -> ApplyError {
    let mut rollback_errors = Vec::new();
    for s in done.iter().rev() {
        for u in &s.undo {
            log(&format!("undo: {u}"));
            match u.execute(sys) {
                Ok(()) => journal.remove(&u.to_line().unwrap_or_default()),
                Err(e) => {
                    log(&format!("undo failed: {e}"));
                    rollback_errors.push(e);
                }
            }
        }
    }
    ApplyError::Failed {
        error,
        rolled_back: done.len(),
        rollback_errors,
    }
}

/// Add the journal's undo lines to the saved undo list (after any earlier apply's) and the
/// applied algorithm strings beside it; then the journal goes. If the list cannot be
/// saved, the journal stays for `--revert`.
fn save_state(sys: &Sys, plan: &Plan, journal: &mut Journal, log: &mut dyn FnMut(&str)) {
    let state = sys.path(&state_file(sys));
    let save = || -> io::Result<()> {
        if let Some(dir) = state.parent().filter(|d| !d.exists()) {
            // Where serve's sockets go too: others may look, not write (0755).
            sys.check_in_tree(dir)?;
            zmem_files::shared_dir(dir)?;
        }
        let mut lines = state_lines(&read_state(sys)?.unwrap_or_default());
        lines.extend(journal.lines().iter().cloned());
        zmem_host::write_journal(&state, STATE_HEADER, &lines)?;
        for (dev, algos) in &plan.applied_algorithms {
            sys.write_file(
                &format!("{}/{dev}.algorithms", sys.state_dir()),
                &format!("{algos}\n"),
            )?;
        }
        Ok(())
    };
    match save() {
        Ok(()) => journal.clear(),
        Err(e) => log(&format!(
            "warning: could not save the undo list to {}: {e}; `zmem apply --revert` finds it in {}",
            state.display(),
            journal.path().display()
        )),
    }
}

/// The action lines of a saved undo list, oldest first. A list saved by an older zmem
/// (`# zmem apply: undo operations, run top to bottom`) was newest first.
fn state_lines(text: &str) -> Vec<String> {
    let mut lines = zmem_host::journal_lines(text);
    if text.starts_with("# zmem apply: undo operations") {
        lines.reverse();
    }
    lines
}

/// What `--revert` undoes: the saved list, then the journals of applies that were killed
/// (newer than anything saved, since an apply refuses while one is left). Oldest first.
struct Pending {
    /// (action, journal line, whether it comes from a killed apply's journal)
    actions: Vec<(Action, String, bool)>,
    journals: Vec<PathBuf>,
}

/// The saved undo list, if there is one, read only when no other user could
/// have written it (`zmem_host::read_journal`: it is run as root).
fn read_state(sys: &Sys) -> io::Result<Option<String>> {
    let path = sys.path(&state_file(sys));
    sys.check_in_tree(&path)?;
    match zmem_host::read_journal(&path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn pending(sys: &Sys) -> Result<Pending, String> {
    let state = read_state(sys).map_err(|e| e.to_string())?;
    let orphans = zmem_host::orphan_journals(sys, &journal_dir(sys));
    if state.is_none() && orphans.is_empty() {
        return Err(format!(
            "nothing to revert: {} does not exist",
            sys.path(&state_file(sys)).display()
        ));
    }
    let mut p = Pending {
        actions: Vec::new(),
        journals: Vec::new(),
    };
    let mut add = |file: &std::path::Path, lines: Vec<String>, killed: bool| {
        for l in lines {
            let a = Action::parse(&l)
                .ok_or_else(|| format!("{}: cannot read {l:?}", file.display()))?;
            p.actions.push((a, l, killed));
        }
        Ok::<(), String>(())
    };
    add(
        &sys.path(&state_file(sys)),
        state_lines(&state.unwrap_or_default()),
        false,
    )?;
    for (_, path) in orphans {
        sys.check_in_tree(&path).map_err(|e| e.to_string())?;
        let text = zmem_host::read_journal(&path).map_err(|e| e.to_string())?;
        add(&path, zmem_host::journal_lines(&text), true)?;
        p.journals.push(path);
    }
    Ok(p)
}

/// The undo operations saved by earlier applies (and left by a killed one), in the order
/// `revert` runs them (what `zmem apply --revert --dry-run` shows).
pub fn revert_ops(sys: &Sys) -> Result<Vec<Action>, String> {
    Ok(pending(sys)?
        .actions
        .into_iter()
        .rev()
        .map(|(a, _, _)| a)
        .collect())
}

/// Undo everything applied since the last revert, and what a killed apply left. Returns the
/// number of operations run.
pub fn revert(sys: &Sys, log: &mut dyn FnMut(&str)) -> Result<usize, String> {
    let p = pending(sys)?;
    let mut failed = Vec::new();
    for (a, line, killed) in p.actions.iter().rev() {
        log(&a.to_string());
        // A killed apply's last step may not have been made: nothing to undo then.
        let r = if *killed {
            a.replay(sys).map(|_| ())
        } else {
            a.execute(sys)
        };
        if let Err(e) = r {
            log(&format!("failed: {e}"));
            failed.push(line.clone());
        }
    }
    for n in sys.list(sys.state_dir()).unwrap_or_default() {
        if n.ends_with(".algorithms") {
            let _ = std::fs::remove_file(sys.path(&format!("{}/{n}", sys.state_dir())));
        }
    }
    let state = sys.path(&state_file(sys));
    let result = if failed.is_empty() {
        match std::fs::remove_file(&state) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e.to_string()),
            _ => Ok(p.actions.len()),
        }
    } else {
        failed.reverse();
        zmem_host::write_journal(
            &state,
            "zmem apply: undo actions that failed during --revert, oldest first",
            &failed,
        )
        .map_err(|e| e.to_string())?;
        Err(format!(
            "{} of {} undo operations failed; they are kept in {}",
            failed.len(),
            p.actions.len(),
            state.display()
        ))
    };
    for j in &p.journals {
        zmem_host::discard_journal(j);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_undo_list_is_read_newest_first() {
        let old = "# zmem apply: undo operations, run top to bottom by `zmem apply --revert`\nwrite\t/a\t1\nhot_remove\t0\n";
        assert_eq!(state_lines(old), ["hot_remove\t0", "write\t/a\t1"]);
        let new = format!("# {STATE_HEADER}\nhot_remove\t0\nwrite\t/a\t1\n");
        assert_eq!(state_lines(&new), ["hot_remove\t0", "write\t/a\t1"]);
    }
}
