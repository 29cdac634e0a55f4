//! `zmem apply` and `zmem persist` driven as a user would, on copies of the fixture trees.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ops/tests/fixtures")
        .join(case)
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

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zmem-cli-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    d
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
fn dry_run_prints_the_writes_in_order_and_changes_nothing() {
    let root = scratch("dry");
    copy_tree(&fixture("03-multi-comp-writeback/root"), &root);
    let conf = fixture("03-multi-comp-writeback/zmem.conf");
    let (ok, out, err) = zmem(&[
        "apply",
        conf.to_str().unwrap(),
        "--dry-run",
        "--root",
        root.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let ops: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).collect();
    let want = fs::read_to_string(fixture("03-multi-comp-writeback/expected-apply.log")).unwrap();
    assert_eq!(ops, want.lines().collect::<Vec<_>>());
    assert!(
        out.contains("# zram0: recompression parameters `type=huge`"),
        "{out}"
    );
    assert!(
        !root.join("zmem-fixture.log").exists(),
        "dry run wrote something"
    );
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn apply_twice_then_revert() {
    let root = scratch("apply");
    copy_tree(&fixture("01-basic/root"), &root);
    let r = root.to_str().unwrap();
    let conf = fixture("01-basic/zmem.conf");
    let c = conf.to_str().unwrap();
    let (ok, out, err) = zmem(&["apply", c, "--root", r]);
    assert!(ok, "{err}");
    assert!(
        out.contains("write /sys/block/zram0/comp_algorithm lz4"),
        "{out}"
    );
    assert!(out.contains("applied 6 change(s)"), "{out}");
    let (ok, out, _) = zmem(&["apply", c, "--root", r]);
    assert!(ok);
    assert!(out.contains("nothing to do"), "{out}");
    let (ok, out, err) = zmem(&["status", "--root", r]);
    assert!(ok, "{err}");
    assert!(out.contains("zram0: swap, priority 100"), "{out}");
    let (ok, out, err) = zmem(&["apply", "--revert", "--root", r]);
    assert!(ok, "{err}");
    assert!(out.contains("write /proc/sys/vm/swappiness 60"), "{out}");
    assert_eq!(
        fs::read_to_string(root.join("proc/sys/vm/swappiness")).unwrap(),
        "60\n"
    );
    let (ok, _, err) = zmem(&["apply", "--revert", "--root", r]);
    assert!(!ok && err.contains("nothing to revert"), "{err}");
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn bad_config_names_file_line_and_reason() {
    let root = scratch("bad");
    copy_tree(&fixture("08-bad-key/root"), &root);
    let conf = fixture("08-bad-key/zmem.conf");
    let (ok, _, err) = zmem(&[
        "apply",
        conf.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(
        err.contains("zmem.conf:3: unknown key `compresion-algorithm`"),
        "{err}"
    );
    assert!(!root.join("zmem-fixture.log").exists());
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn missing_feature_and_in_use_are_refused() {
    for (case, want) in [
        ("02-no-zstd", "CONFIG_ZRAM_BACKEND_ZSTD"),
        ("05-no-writeback", "CONFIG_ZRAM_WRITEBACK"),
        ("06-in-use", "--force"),
    ] {
        let root = scratch(case);
        copy_tree(&fixture(case).join("root"), &root);
        let conf = fixture(case).join("zmem.conf");
        let (ok, _, err) = zmem(&[
            "apply",
            conf.to_str().unwrap(),
            "--root",
            root.to_str().unwrap(),
        ]);
        assert!(!ok, "{case}");
        assert!(
            err.contains(want) && err.contains("nothing was changed"),
            "{case}: {err}"
        );
        let _ = fs::remove_dir_all(&root);
    }
}

#[test]
fn persist_writes_generator_sysctl_and_tmpfiles() {
    let root = scratch("persist");
    let dir = scratch("persist-conf");
    fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("zmem.conf");
    fs::write(
        &conf,
        "[zram0]\nzram-size = min(ram, 8192)\ncompression-algorithm = zstd lz4 (type=huge)\n\n[sysctl]\nvm.swappiness = 180\n\n[zswap]\nenabled = N\n\n[disk-swap]\ndevice = /swapfile\npriority = 5\n\n[policy]\nwriteback = no\n",
    )
    .unwrap();
    let (ok, out, err) = zmem(&[
        "persist",
        conf.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("wrote"), "{out}");
    let gen = fs::read_to_string(root.join("etc/systemd/zram-generator.conf")).unwrap();
    assert!(
        gen.contains(
            "[zram0]\nzram-size = min(ram, 8192)\ncompression-algorithm = zstd lz4 (type=huge)\n"
        ),
        "{gen}"
    );
    // What zmem writes, zmem (and the lab) can read back.
    let back = zmem_ops::config::load(&root.join("etc/systemd/zram-generator.conf")).unwrap();
    assert_eq!(
        back.devices[0].algorithms.as_ref().unwrap().recompress[0].name,
        "lz4"
    );
    assert_eq!(
        fs::read_to_string(root.join("etc/sysctl.d/90-zmem.conf"))
            .unwrap()
            .lines()
            .nth(1),
        Some("vm.swappiness = 180")
    );
    assert!(
        fs::read_to_string(root.join("etc/tmpfiles.d/zmem-zswap.conf"))
            .unwrap()
            .contains("w- /sys/module/zswap/parameters/enabled - - - - N")
    );
    assert!(
        fs::read_to_string(root.join("etc/systemd/system/swapfile.swap"))
            .unwrap()
            .contains("Priority=5")
    );
    assert!(
        fs::read_to_string(root.join("etc/systemd/system/zmem-policy.service"))
            .unwrap()
            .contains("policy --config /etc/zmem/zmem.conf")
    );
    // A file zmem did not write is not replaced without --force.
    fs::write(
        root.join("etc/sysctl.d/90-zmem.conf"),
        "vm.swappiness = 10\n",
    )
    .unwrap();
    let (ok, _, err) = zmem(&[
        "persist",
        conf.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
    ]);
    assert!(!ok && err.contains("--force"), "{err}");
    let _ = fs::remove_dir_all(&root);
    let _ = fs::remove_dir_all(&dir);
}
