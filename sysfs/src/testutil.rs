//! Helpers for unit tests of zmem crates (not part of the API).

/// `count` deterministic pseudo-random strings (xorshift64 from `seed`) of
/// length `0..max_len`, drawn from `alphabet`: input for "never panics" tests
/// of the text parsers.
pub fn random_strings(
    seed: u64,
    alphabet: &[u8],
    max_len: u64,
    count: usize,
) -> impl Iterator<Item = String> + '_ {
    let mut x = seed;
    (0..count).map(move |_| {
        let len = (x % max_len) as usize;
        let mut s = String::with_capacity(len);
        for _ in 0..len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s.push(alphabet[(x % alphabet.len() as u64) as usize] as char);
        }
        // Step the state even after an empty string, which would otherwise
        // repeat forever.
        x = x.wrapping_add(1);
        s
    })
}

/// Report a skipped test: print `line` (`SKIP <test>: <reason>`) and append it
/// to the file named by `ZMEM_SKIP_LOG`, so a run whose output `cargo test`
/// captures still lists every skip (`.ci/run` prints that file as its summary).
pub fn skip(line: &str) {
    use std::io::Write;
    debug_assert!(line.starts_with("SKIP "), "{line}");
    println!("{line}");
    if let Some(path) = std::env::var_os("ZMEM_SKIP_LOG") {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path);
        // One write per line: O_APPEND keeps lines of parallel tests whole.
        if let Ok(mut f) = f {
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
}

/// Copy a fixture tree (`ops/tests/fixtures/NN-name/root`) so a test can change the copy.
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).unwrap();
        }
    }
}
