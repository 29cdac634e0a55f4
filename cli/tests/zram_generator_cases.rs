//! `zmem apply --zram-generator --dry-run` on fixture trees, one directory per case
//! (cli/tests/fixtures/zram-generator/NN-name/, zram-generator's tests/ style): how zmem reads
//! zram-generator's traps as zram-generator does and says so, and the deliberate differences
//! it announces ("at boot zram-generator …"). Each case's `root/` holds the configuration
//! files (symlinks included) and /proc/cmdline, laid over a kernel with zram loaded and no
//! device (ops' zg-01-basic without its configuration; MemTotal 782 MiB); `expected` is `ok`
//! or `error` and then the lines the output must contain.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use zmem_files::testutil::{copy_tree, ScratchDir};

/// Copy `from` over `to`, symlinks as symlinks.
fn overlay(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        let ft = e.file_type().unwrap();
        if ft.is_symlink() {
            let _ = fs::remove_file(&t);
            symlink(fs::read_link(e.path()).unwrap(), &t).unwrap();
        } else if ft.is_dir() {
            overlay(&e.path(), &t);
        } else {
            fs::copy(e.path(), &t).unwrap();
        }
    }
}

fn run_case(dir: &Path) -> Result<(), String> {
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let scratch = ScratchDir::new(&format!("zg-case-{name}"));
    let root = scratch.join("root");
    let base =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../ops/admin/tests/fixtures/zg-01-basic/root");
    for d in ["proc", "sys"] {
        copy_tree(&base.join(d), &root.join(d));
    }
    overlay(&dir.join("root"), &root);
    let out = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(["apply", "--zram-generator", "--dry-run", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = fs::read_to_string(dir.join("expected")).unwrap();
    let mut lines = expected.lines();
    let want_ok = lines.next() == Some("ok");
    if out.status.success() != want_ok {
        return Err(format!(
            "{name}: expected {}, got:\n{text}",
            if want_ok { "success" } else { "an error" }
        ));
    }
    for want in lines.filter(|l| !l.is_empty()) {
        if !text.contains(want) {
            return Err(format!("{name}: output lacks `{want}`:\n{text}"));
        }
    }
    Ok(())
}

#[test]
fn zram_generator_traps_and_differences_are_read_and_announced() {
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/zram-generator");
    let mut dirs: Vec<_> = fs::read_dir(&cases)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 12, "{} cases", dirs.len());
    let failures: Vec<String> = dirs.iter().filter_map(|d| run_case(d).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
