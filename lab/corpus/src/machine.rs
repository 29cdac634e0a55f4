//! The default corpus of `zmem bench` with no corpus given: this machine's own
//! memory (every readable process when root, this user's other processes
//! otherwise; at most
//! [`DEFAULT_CAPTURE`], sampled evenly) plus the built-in synthetic sections
//! of [`crate::corpus::default_sections`].

use zmem_codec::PAGE_SIZE;

use crate::corpus::{self, Corpus, Section};
use crate::sidecar::Sidecar;

/// At most this much captured memory in the default corpus.
pub const DEFAULT_CAPTURE: u64 = 16 << 20;

/// Build the default corpus; `notes` says what went in, how much of the
/// `max_capture` asked for was read, and why not more (or why no memory was
/// captured).
pub fn default_corpus_with_memory(max_capture: u64) -> (Corpus, Vec<String>) {
    let mut notes = Vec::new();
    let mut sections: Vec<Section> = Vec::new();
    let mut buf = Vec::new();
    let scope = crate::capture::machine_scope();
    match crate::capture::capture_machine(max_capture, &mut buf) {
        Ok(sc) if sc.pages > 0 => {
            let what = captured_what(&sc, max_capture, &scope);
            notes.push(format!("captured: {what}"));
            sections.push(Section {
                name: "captured".into(),
                what,
                pages: buf,
            });
        }
        Ok(_) => notes.push(format!(
            "captured: nothing readable in {scope}; synthetic pages only"
        )),
        Err(e) => notes.push(format!(
            "captured: none from {scope} ({e:#}); synthetic pages only"
        )),
    }
    if !zmem_files::euid_is_root() {
        notes.push(
            "not root: only this user's processes were read; as root the capture samples every process on the machine"
                .into(),
        );
    }
    let captured = sections.first().map_or(0, |s| s.pages.len() as u64);
    sections.extend(corpus::default_sections(corpus::DEFAULT_SEED));
    if captured < max_capture / 2 {
        let how = if zmem_files::euid_is_root() {
            " (this machine holds little anonymous memory now); for a truer answer run the verdict while the workload runs"
        } else {
            "; for a truer answer run as root"
        };
        notes.push(format!("{SMALL_CORPUS}{how}, or {CAPTURE_WORKLOAD}"));
    }
    (corpus::from_sections(&sections), notes)
}

/// Said when less than half the memory asked for was captured.
const SMALL_CORPUS: &str =
    "a corpus this small may sit in the CPU cache and flatter every read path";
/// How to get the pages that matter.
const CAPTURE_WORKLOAD: &str = "capture the workload's processes as their user (`zmem capture --pid PID -o FILE`) and run `zmem bench verdict FILE`";

/// What a capture read from `scope`, in pages and MiB, against what was
/// asked for, and why it is less.
fn captured_what(sc: &Sidecar, max_capture: u64, scope: &str) -> String {
    let page = PAGE_SIZE as u64;
    let mib = |pages: u64| (pages * page) as f64 / (1u64 << 20) as f64;
    let asked = max_capture / page;
    let n = sc.pids.len();
    let mut what = format!(
        "{} pages ({:.1} MiB) of anonymous memory from {n} process{}; read from {scope}",
        sc.pages,
        mib(sc.pages),
        if n == 1 { "" } else { "es" },
    );
    let resident = sc.resident_pages.unwrap_or(sc.pages);
    if resident < asked {
        what += &format!(
            ": all the resident anonymous memory they hold, less than the {asked} pages ({:.0} MiB) asked for",
            mib(asked)
        );
    } else if resident > sc.pages {
        what += &format!(": sampled evenly from {resident} resident pages");
    }
    if !sc.skipped.is_empty() {
        what += &format!(" ({} unreadable skipped)", sc.skipped.len());
    }
    what
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_corpus_has_captured_and_synthetic_pages() {
        let (c, notes) = default_corpus_with_memory(1 << 20);
        assert!(notes[0].starts_with("captured: "), "{notes:?}");
        assert!(c.source.contains("text"), "{}", c.source);
        if !zmem_files::euid_is_root() {
            // Without root only this user's other processes are read: maybe none.
            assert!(
                notes.iter().any(|n| n.starts_with("not root:")),
                "{notes:?}"
            );
            return;
        }
        assert!(c.page_count() > 1024, "{} pages", c.page_count());
        assert!(c.page_count() <= 1024 + 256);
        assert!(c.source.contains("captured"), "{}", c.source);
        assert!(notes[0].contains("read from every process"), "{notes:?}");
    }

    fn sidecar(pages: u64, resident: u64, pids: usize) -> Sidecar {
        Sidecar {
            source: "user".into(),
            pages,
            resident_pages: Some(resident),
            pids: (1..=pids as u32).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_short_capture_says_how_much_and_why() {
        let w = captured_what(
            &sidecar(86, 86, 1),
            64 << 20,
            "the processes of nobody (uid 65534)",
        );
        assert_eq!(
            w,
            "86 pages (0.3 MiB) of anonymous memory from 1 process; read from the processes of nobody (uid 65534): \
             all the resident anonymous memory they hold, less than the 16384 pages (64 MiB) asked for"
        );
        let w = captured_what(
            &sidecar(16370, 90000, 40),
            64 << 20,
            "every process on this machine",
        );
        assert!(
            w.starts_with("16370 pages (63.9 MiB) of anonymous memory from 40 processes"),
            "{w}"
        );
        assert!(
            w.ends_with(": sampled evenly from 90000 resident pages"),
            "{w}"
        );
        let mut sc = sidecar(100, 100, 2);
        sc.skipped.push(crate::sidecar::Skipped {
            what: "pid 7".into(),
            reason: "denied".into(),
        });
        assert!(captured_what(&sc, 400 << 10, "x")
            .ends_with("from 2 processes; read from x (1 unreadable skipped)"));
    }
}
