//! The line under every bench table that says what each corpus was.

use std::fmt::Write as _;

use zmem_corpus::Corpus;

/// `corpus NAME: N pages (SOURCE)`, one line per corpus.
pub fn corpus_lines(corpora: &[Corpus]) -> String {
    let mut o = String::new();
    for c in corpora {
        let _ = writeln!(
            o,
            "corpus {}: {} pages ({})",
            c.name,
            c.page_count(),
            c.source
        );
    }
    o
}
