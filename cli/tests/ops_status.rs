//! `zmem status` on fixture trees and (read-only) on this machine.

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ops/admin/tests/fixtures")
        .join(case)
}

fn zmem(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn text_matches_the_fixture_expectation() {
    let root = fixture("06-in-use/root");
    let (ok, out, err) = zmem(&["status", "--root", root.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(
        out,
        std::fs::read_to_string(fixture("06-in-use/expected-status.txt")).unwrap()
    );
    // Current and peak apart, limits "none", ratio and savings.
    assert!(out.contains("RAM used now") && out.contains("RAM used at peak"));
    assert!(out.contains("memory limit           none"));
    assert!(out.contains("ratio 4.00:1") && out.contains("RAM saved"));
}

#[test]
fn json_has_the_numbers_in_bytes() {
    let root = fixture("15-policy/root");
    let (ok, out, err) = zmem(&["status", "--json", "--root", root.to_str().unwrap()]);
    assert!(ok, "{err}");
    for key in [
        "\"name\": \"zram0\"",
        "\"orig_data_bytes\": 2147483648",
        "\"mem_limit_bytes\": null",
        "\"ratio\": 4",
        "\"backing_dev\": \"/dev/vdb1\"",
        "\"zswap\": {",
    ] {
        assert!(out.contains(key), "{key} missing in {out}");
    }
    // Balanced braces and brackets outside strings: the document is complete.
    let mut depth = 0i32;
    let mut in_str = false;
    let mut esc = false;
    for c in out.chars() {
        match (in_str, esc, c) {
            (true, true, _) => esc = false,
            (true, false, '\\') => esc = true,
            (true, false, '"') => in_str = false,
            (false, _, '"') => in_str = true,
            (false, _, '{' | '[') => depth += 1,
            (false, _, '}' | ']') => depth -= 1,
            _ => {}
        }
        assert!(depth >= 0);
    }
    assert_eq!(depth, 0);
}

#[test]
fn status_of_this_machine_reads() {
    // Read-only: works with or without zram devices; never fails on a normal machine.
    let (ok, out, err) = zmem(&["status", "--no-debugfs"]);
    assert!(ok, "{err}");
    assert!(out.contains("zswap"), "{out}");
}

#[test]
fn watch_of_zero_seconds_is_refused() {
    let (ok, _, err) = zmem(&["status", "--watch", "0"]);
    assert!(!ok && err.contains("--watch"), "{err}");
}
