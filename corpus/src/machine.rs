//! The default corpus of `zmem bench` with no corpus given: this machine's own
//! memory (every readable process when root, zmem's own otherwise; at most
//! [`DEFAULT_CAPTURE`], sampled evenly) plus the built-in synthetic sections
//! of [`crate::corpus::default_sections`].

use crate::corpus::{self, Corpus, Section};

/// At most this much captured memory in the default corpus.
pub const DEFAULT_CAPTURE: u64 = 16 << 20;

/// Build the default corpus; `notes` says what went in (or why no memory was captured).
pub fn default_corpus_with_memory(max_capture: u64) -> (Corpus, Vec<String>) {
    let mut notes = Vec::new();
    let mut sections: Vec<Section> = Vec::new();
    let mut buf = Vec::new();
    match crate::capture::capture_machine(max_capture, &mut buf) {
        Ok(sc) if sc.pages > 0 => {
            let what = format!(
                "{} pages of anonymous memory from {} process{} ({})",
                sc.pages,
                sc.pids.len(),
                if sc.pids.len() == 1 { "" } else { "es" },
                if sc.source == "self" {
                    "zmem's own: not root".to_string()
                } else {
                    format!("{} unreadable skipped", sc.skipped.len())
                }
            );
            notes.push(format!("captured: {what}"));
            sections.push(Section {
                name: "captured".into(),
                what,
                pages: buf,
            });
        }
        Ok(_) => notes.push("captured: nothing readable; synthetic pages only".into()),
        Err(e) => notes.push(format!("captured: none ({e:#}); synthetic pages only")),
    }
    sections.extend(corpus::default_sections(corpus::DEFAULT_SEED));
    (corpus::from_sections(&sections), notes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn default_corpus_has_captured_and_synthetic_pages() {
        let (c, notes) = super::default_corpus_with_memory(1 << 20);
        assert!(c.page_count() > 1024, "{} pages", c.page_count());
        assert!(c.page_count() <= 1024 + 256);
        assert!(
            c.source.contains("captured") && c.source.contains("text"),
            "{}",
            c.source
        );
        assert!(notes[0].starts_with("captured: "), "{notes:?}");
    }
}
