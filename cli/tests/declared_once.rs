//! One fact in one place (issue 29): each algorithm, each zram attribute and
//! each built-in workload is declared once, and every other list is derived.
//!
//! The workspace's non-test sources (`*/src/**.rs` without `tests/`,
//! `benches/`, `fuzz/`, `examples/`, `test*.rs` files and `#[cfg(test)]
//! items; comments skipped) are scanned for string literals:
//! * an algorithm name (`zmem_codec::all()`) may appear only in
//!   `engine/codec/src/backend/` (its `INFO`);
//! * a list of algorithms inside a string (three or more names as words,
//!   `"lz4, lz4hc and zstd"`) only there too: a message derives it from the
//!   registry;
//! * a workload name (`zmem_trial::workload::WORKLOADS`) only in
//!   `lab/trial/src/workload.rs`;
//! * a zram attribute name (`zmem_kernel::ZRAM_ATTRS`) only in
//!   `base/kernel/src/attrs.rs` (its `attr::` constant): every reader and
//!   writer of an attribute, the engine's `show`/`store` dispatch included,
//!   names it by constant. Tests, docs and the VM check scripts may spell it.

use std::path::{Path, PathBuf};

/// (file, literal, why it may stay). Keep this short.
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "base/host/src/sys/fixture.rs",
        "[lzo-rle] lzo lz4 \\n",
        "a new fixture device's comp_algorithm, as this machine's kernel prints it",
    ),
    (
        "cli/src/cmd/bench.rs",
        "writeback",
        "a flag id of bench's old spellings",
    ),
    (
        "cli/src/cmd/recommend.rs",
        "recompress",
        "a key of recommend's CSV",
    ),
    (
        "ops/policy/src/lib.rs",
        "writeback",
        "a [policy] key (docs/ops.md)",
    ),
    (
        "ops/policy/src/lib.rs",
        "recompress",
        "a [policy] key (docs/ops.md)",
    ),
    (
        "report/src/verdict.rs",
        "disksize",
        "a row label; report does not read the kernel",
    ),
    (
        "report/src/verdict.rs",
        "mem_limit",
        "a row label; report does not read the kernel",
    ),
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let skip = ["target", ".git", "tests", "benches", "fuzz", "examples"];
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            if !skip.contains(&name.as_str()) && !name.starts_with('.') {
                sources(&p, out);
            }
        } else if name.ends_with(".rs") && !name.starts_with("test") {
            out.push(p);
        }
    }
}

/// The text with every `#[cfg(test)]` item blanked (its lines kept empty, so
/// line numbers stay): a `mod … { }`, a `fn … { }`, or one `…;` line.
fn without_tests(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth: i64 = -1; // > 0 inside a blanked item's braces
    for line in text.split_inclusive('\n') {
        if depth < 0 && line.trim() != "#[cfg(test)]" {
            out.push_str(line);
            continue;
        }
        if depth < 0 {
            depth = 0;
        } else {
            depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
            let opened = line.contains('{');
            if depth <= 0 && (opened || line.trim_end().ends_with(';')) {
                depth = -1;
            }
        }
        out.push('\n');
    }
    out
}

/// A string literal and where it stands: the byte offset, and the offset of
/// the `[` it is a direct element of (not inside parentheses or braces).
struct Lit {
    text: String,
    at: usize,
    list: Option<usize>,
}

/// The string literals of Rust source, comments and char literals skipped.
fn literals(src: &str) -> Vec<Lit> {
    let b = src.as_bytes();
    let (mut i, mut out) = (0, Vec::new());
    // Open brackets: (byte, offset).
    let mut open: Vec<(u8, usize)> = Vec::new();
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = src[i..].find('\n').map_or(b.len(), |n| i + n);
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = src[i + 2..].find("*/").map_or(b.len(), |n| i + n + 4);
            }
            b'\'' => {
                i += match (b.get(i + 1), b.get(i + 2)) {
                    (Some(b'\\'), _) => src[i + 2..].find('\'').map_or(1, |n| n + 3),
                    (Some(_), Some(b'\'')) => 3,
                    _ => 1, // a lifetime
                };
            }
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                let start = i + 2 + hashes;
                let end = format!("\"{}", "#".repeat(hashes));
                let n = src[start..].find(&end).unwrap_or(src.len() - start);
                push(&mut out, &open, &src[start..start + n], i);
                i = start + n + end.len();
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                push(&mut out, &open, &src[i + 1..j.min(b.len())], i);
                i = j + 1;
            }
            c @ (b'[' | b'(' | b'{') => {
                open.push((c, i));
                i += 1;
            }
            b']' | b')' | b'}' => {
                open.pop();
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

fn push(out: &mut Vec<Lit>, open: &[(u8, usize)], text: &str, at: usize) {
    let list = open.last().filter(|o| o.0 == b'[').map(|o| o.1);
    out.push(Lit {
        text: text.to_string(),
        at,
        list,
    });
}

/// The algorithm names a text mentions as words (`lz4` in "lz4, zstd", not in "lz4hc").
fn algorithms_in<'a>(text: &str, algos: &[&'a str]) -> Vec<&'a str> {
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .collect();
    algos
        .iter()
        .copied()
        .filter(|a| words.contains(a))
        .collect()
}

fn line_of(src: &str, at: usize) -> usize {
    src[..at].matches('\n').count() + 1
}

/// Every place a fact is declared outside its declaration file.
fn duplicates(root: &Path) -> Vec<String> {
    let algos: Vec<&str> = zmem_codec::all().iter().map(|b| b.name()).collect();
    let attrs: Vec<&str> = zmem_kernel::ZRAM_ATTRS.iter().map(|a| a.name).collect();
    let works: Vec<&str> = zmem_trial::workload::WORKLOADS
        .iter()
        .map(|w| w.name)
        .collect();
    let mut files = Vec::new();
    sources(root, &mut files);
    files.sort();
    let mut found = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(&f).unwrap();
        let src = without_tests(&text);
        let src = src.as_str();
        let lits = literals(src);
        let allowed = |name: &str| ALLOWED.iter().any(|a| a.0 == rel && a.1 == name);
        for l in &lits {
            let t = l.text.as_str();
            let named = algorithms_in(t, &algos);
            if named.len() >= 3 && !rel.starts_with("engine/codec/src/backend/") && !allowed(t) {
                let n = line_of(src, l.at);
                found.push(format!(
                    "{rel}:{n}: algorithms {named:?} listed in a string (derive it from zmem_codec::all())"
                ));
            }
            let (kind, home) = if algos.contains(&t) {
                ("algorithm", "engine/codec/src/backend/")
            } else if attrs.contains(&t) {
                ("zram attribute", "base/kernel/src/attrs.rs")
            } else if works.contains(&t) {
                ("workload", "lab/trial/src/workload.rs")
            } else {
                continue;
            };
            if !rel.starts_with(home) && !allowed(t) {
                let n = line_of(src, l.at);
                found.push(format!("{rel}:{n}: {kind} {t:?} (declared in {home})"));
            }
        }
    }
    found
}

#[test]
fn each_algorithm_attribute_and_workload_is_declared_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let root = root.canonicalize().unwrap();
    let found = duplicates(&root);
    assert!(
        found.is_empty(),
        "facts declared outside their declaration file:\n{}",
        found.join("\n")
    );
}

/// The scanner sees what it must: a planted list and a planted name fail, a
/// comment, a test module, a char literal and a single use do not.
#[test]
fn the_scanner_finds_planted_duplicates() {
    let src = r##"
// "lz4hc" in a comment
const A: [&str; 2] = ["disksize", "reset"];
const B: &[(&str, &str)] = &[("disksize", "0"), ("reset", "")];
fn f(c: char) -> bool { c == '"' || c == '\'' }
fn g<'a>(x: &'a str) -> &'a str { x }
const C: &str = "zstd";
const D: &str = r#"a "quoted" raw"#;
fn h() { read("mm_stat"); }
#[cfg(test)]
mod tests {
    const E: &str = "lz4";
}
#[cfg(test)]
fn sample() -> Vec<&'static str> {
    vec!["lzo", "lz4"]
}
#[cfg(test)]
const F: &str = "842";
const G: &str = "last";
"##;
    let src = without_tests(src);
    let lits = literals(&src);
    let texts: Vec<&str> = lits.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "disksize",
            "reset",
            "disksize",
            "0",
            "reset",
            "",
            "zstd",
            "a \"quoted\" raw",
            "mm_stat",
            "last"
        ]
    );
    let a = lits[0].list;
    assert!(a.is_some() && lits[1].list == a);
    assert!(
        lits[2].list.is_none(),
        "tuple elements are not direct list elements"
    );
    assert!(lits[6].list.is_none() && lits[8].list.is_none());
    let algos = ["lz4", "lz4hc", "zstd", "lzo"];
    assert_eq!(
        algorithms_in("dict= is accepted by lz4, lz4hc and zstd", &algos),
        ["lz4", "lz4hc", "zstd"]
    );
    assert!(algorithms_in("lz4hc-ish lzo-rle", &algos).is_empty());
}
