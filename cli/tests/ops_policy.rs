//! `zmem policy --once` on fixture trees.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernel/tests/fixtures").join(case)
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &t);
        } else {
            fs::copy(e.path(), &t).unwrap();
        }
    }
}

fn zmem(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_zmem")).args(args).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn once_runs_one_round_and_remembers_backoff() {
    let root = std::env::temp_dir().join(format!("zmem-cli-policy-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    copy_tree(&fixture("15-policy/root"), &root);
    let r = root.to_str().unwrap();
    let (ok, out, err) = zmem(&["policy", "--once", "--root", r, "--now", "1700000000"]);
    assert!(ok, "{err}");
    assert!(out.contains("2023-11-14T22:13:20Z zram0: write recompress type=huge_idle threshold=1024: ok"), "{out}");
    assert!(out.contains("zram0: write writeback huge_idle: ok"), "{out}");
    let log = fs::read_to_string(root.join("zmem-fixture.log")).unwrap();
    assert!(log.contains("write /sys/block/zram0/writeback_limit_enable 1"), "{log}");
    // The next round, 1 minute later, backs off (state kept under run/zmem in the tree).
    let (ok, out, _) = zmem(&["policy", "--once", "--root", r, "--now", "1700000060"]);
    assert!(ok);
    assert!(out.contains("recompression backs off for 29 min") && out.contains("writeback backs off for 9 min"), "{out}");
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn dry_run_writes_nothing() {
    let root = std::env::temp_dir().join(format!("zmem-cli-policy-dry-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    copy_tree(&fixture("15-policy/root"), &root);
    let (ok, out, err) = zmem(&["policy", "--once", "--dry-run", "--root", root.to_str().unwrap(), "--now", "1700000000"]);
    assert!(ok, "{err}");
    assert!(out.contains("write writeback huge_idle: ok (dry run)"), "{out}");
    assert!(!root.join("zmem-fixture.log").exists(), "dry run wrote");
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn bad_policy_key_is_reported_with_its_line() {
    let dir = std::env::temp_dir().join(format!("zmem-cli-policy-bad-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("p.conf");
    fs::write(&conf, "[policy]\nwriteback-backoff = 10 minutes\n").unwrap();
    let (ok, _, err) = zmem(&["policy", "--once", "--config", conf.to_str().unwrap(), "--root", dir.to_str().unwrap()]);
    assert!(!ok && err.contains("p.conf:2: writeback-backoff must be a duration"), "{err}");
    let _ = fs::remove_dir_all(&dir);
}
