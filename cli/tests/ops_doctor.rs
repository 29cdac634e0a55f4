//! `zmem doctor` on fixture trees (ops/admin/tests/fixtures/doctor): for each check a problem planted
//! in the clean tree is found, with its fix, and the tree with the fix made is clean again; the
//! tree with every problem planted finds them all; and a read-only run on this machine.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use zmem_files::testutil::ScratchDir;

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ops/admin/tests/fixtures/doctor")
        .join(case)
        .join("root")
}

/// Run `zmem doctor ARGS`: (exit code, stdout, stderr).
fn doctor(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .arg("doctor")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn doctor_json(root: &Path) -> (i32, serde_json::Value) {
    let (code, out, err) = doctor(&["--format", "json", "--root", root.to_str().unwrap()]);
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    (code, v)
}

fn put(root: &Path, abs: &str, text: &str) {
    let p = root.join(abs.trim_start_matches('/'));
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

const SWAPS_HDR: &str = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";

fn swaps(zram_prio: i32) -> String {
    format!("{SWAPS_HDR}/dev/zram0 partition\t4194300\t1048576\t{zram_prio}\n/dev/vda2 partition\t2097148\t0\t10\n")
}

/// One check: its id, what to plant in the clean tree, a word of the fix, how to fix the tree.
struct Case {
    id: &'static str,
    plant: fn(&Path),
    fix_has: &'static str,
    fixed: fn(&Path),
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            id: "zswap-over-zram",
            plant: |r| put(r, "/sys/module/zswap/parameters/enabled", "Y\n"),
            fix_has: "echo N > /sys/module/zswap/parameters/enabled",
            fixed: |r| put(r, "/sys/module/zswap/parameters/enabled", "N\n"),
        },
        Case {
            id: "no-swap-pressure",
            plant: |r| {
                put(r, "/proc/swaps", SWAPS_HDR);
                put(r, "/proc/pressure/memory", "some avg10=30.00 avg60=12.50 avg300=4.00 total=99\nfull avg10=1.00 avg60=1.00 avg300=1.00 total=9\n")
            },
            fix_has: "zmem apply",
            fixed: |r| put(r, "/proc/swaps", &swaps(100)),
        },
        Case {
            id: "oomd-zram",
            plant: |r| fs::remove_dir_all(r.join("usr/lib/systemd/system/-.slice.d")).unwrap(),
            fix_has: "ManagedOOMSwap=kill",
            fixed: |r| {
                put(
                    r,
                    "/etc/systemd/system/-.slice.d/10-oomd-swap.conf",
                    "[Slice]\nManagedOOMSwap=kill\n",
                )
            },
        },
        Case {
            id: "zram-priority",
            plant: |r| put(r, "/proc/swaps", &swaps(10)),
            fix_has: "swapon -p 100 /dev/zram0",
            fixed: |r| put(r, "/proc/swaps", &swaps(100)),
        },
        Case {
            id: "resume-on-zram",
            plant: |r| put(r, "/sys/power/resume", "252:0\n"),
            fix_has: "echo 254:2 > /sys/power/resume",
            fixed: |r| put(r, "/sys/power/resume", "254:2\n"),
        },
        Case {
            id: "page-cluster",
            plant: |r| put(r, "/proc/sys/vm/page-cluster", "3\n"),
            fix_has: "sysctl -w vm.page-cluster=0",
            fixed: |r| put(r, "/proc/sys/vm/page-cluster", "0\n"),
        },
        Case {
            id: "swappiness",
            plant: |r| put(r, "/proc/sys/vm/swappiness", "60\n"),
            fix_has: "sysctl -w vm.swappiness=100",
            fixed: |r| put(r, "/proc/sys/vm/swappiness", "100\n"),
        },
        Case {
            id: "writeback-limit",
            plant: |r| put(r, "/sys/block/zram0/writeback_limit_enable", "0\n"),
            fix_has: "echo 1 > /sys/block/zram0/writeback_limit_enable",
            fixed: |r| put(r, "/sys/block/zram0/writeback_limit_enable", "1\n"),
        },
        Case {
            id: "generator-missing",
            plant: |r| {
                fs::remove_file(r.join("usr/lib/systemd/system-generators/zram-generator")).unwrap()
            },
            fix_has: "zmem apply --zram-generator",
            fixed: |r| put(r, "/lib/systemd/system-generators/zram-generator", ""),
        },
        Case {
            id: "leftovers",
            plant: |r| {
                put(r, "/run/zmem/apply-journal/4242.journal", "zram\t1\n");
                put(r, "/sys/block/zram1/disksize", "0\n")
            },
            fix_has: "zmem apply --revert",
            fixed: |r| fs::remove_dir_all(r.join("sys/block/zram1")).unwrap(),
        },
    ]
}

#[test]
fn the_clean_tree_is_clean() {
    let (code, out, err) = doctor(&["--root", fixture("clean").to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("10 checks: 0 errors, 0 warnings, 0 notes (clean)"),
        "{out}"
    );
}

#[test]
fn each_planted_problem_is_found_with_its_fix_and_gone_once_fixed() {
    for c in cases() {
        let (_d, root) = ScratchDir::with_copy("doctor", &fixture("clean"));
        (c.plant)(&root);
        let (code, v) = doctor_json(&root);
        let found = v["findings"].as_array().unwrap();
        assert_eq!(code, 1, "{}: {v:#}", c.id);
        assert!(
            !found.is_empty() && found.iter().all(|f| f["check"] == c.id),
            "{}: {v:#}",
            c.id
        );
        let fix = found[0]["fix"].as_str().unwrap_or("");
        assert!(fix.contains(c.fix_has), "{}: fix {fix:?}", c.id);
        (c.fixed)(&root);
        let (code, v) = doctor_json(&root);
        let left: Vec<_> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["severity"] != "note")
            .collect();
        assert!(
            code == 0 && left.is_empty(),
            "{} after its fix: {v:#}",
            c.id
        );
    }
}

#[test]
fn every_problem_planted_is_found_in_the_table() {
    let (code, out, err) = doctor(&["--root", fixture("all").to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    for c in cases().iter().filter(|c| c.id != "no-swap-pressure") {
        assert!(
            out.contains(c.id) && out.contains(c.fix_has),
            "{} missing in\n{out}",
            c.id
        );
    }
    // Three oomd findings: no ManagedOOMSwap=kill, and no After=swap.target.
    assert!(
        out.contains("no After=swap.target") && out.contains("sets ManagedOOMSwap=kill"),
        "{out}"
    );
    assert!(
        out.contains("resume=/dev/zram0 on /proc/cmdline") && out.contains("= 252:0 (/dev/zram0)"),
        "{out}"
    );
    assert!(out.contains("1 errors, 9 warnings, 0 notes"), "{out}");
}

#[test]
fn a_journal_whose_devices_are_gone_is_only_a_note() {
    let (_d, root) = ScratchDir::with_copy("doctor", &fixture("clean"));
    put(
        &root,
        "/run/zmem-trial/777.journal",
        "zram\t5\nswapoff\t/dev/zram5\n",
    );
    let (code, out, err) = doctor(&["--root", root.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("note") && out.contains("pid 777") && out.contains("zmem trial --recover"),
        "{out}"
    );
    assert!(out.contains("none of what it created is left"), "{out}");
}

#[test]
fn oomd_absent_or_not_enabled_is_not_checked() {
    let (_d, root) = ScratchDir::with_copy("doctor", &fixture("clean"));
    fs::remove_dir_all(root.join("usr/lib/systemd/system/-.slice.d")).unwrap();
    fs::remove_file(root.join("etc/systemd/system/multi-user.target.wants/systemd-oomd.service"))
        .unwrap();
    let (code, out, _) = doctor(&["--root", root.to_str().unwrap()]);
    assert_eq!(code, 0, "oomd neither enabled nor running:\n{out}");
    put(&root, "/proc/812/comm", "systemd-oomd\n");
    let (code, out, _) = doctor(&["--root", root.to_str().unwrap()]);
    assert!(code == 1 && out.contains("is running but no unit"), "{out}");
}

#[test]
fn help_says_what_the_exit_status_means() {
    let (code, out, _) = doctor(&["--help"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("Exit status: 0 when") && out.contains("1 when any finding is a warning"),
        "{out}"
    );
}

#[test]
fn this_machine_reads() {
    // Read-only; any machine gives 0 or 1 and a summary line.
    let (code, out, err) = doctor(&[]);
    assert!(code == 0 || code == 1, "{out}{err}");
    assert!(out.contains("10 checks:"), "{out}{err}");
}

#[test]
fn a_missing_root_is_a_clear_error() {
    let (code, out, err) = doctor(&["--root", "/nonexistent/zmem-doctor"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains("cannot read /nonexistent/zmem-doctor"),
        "{err}"
    );
}

/// A disk swap already at 32767, the highest priority swapon(2) takes: the fix brings the disk
/// swap down one and zram to the top, never `swapon -p 32768` (refused by the kernel).
#[test]
fn a_disk_swap_at_the_highest_priority_gets_a_fix_the_kernel_takes() {
    let d = ScratchDir::new("doctor-prio-max");
    zmem_files::testutil::copy_tree(&fixture("clean"), d.path());
    put(
        d.path(),
        "/proc/swaps",
        &format!("{SWAPS_HDR}/dev/zram0 partition\t4194300\t1048576\t100\n/dev/vda2 partition\t2097148\t0\t32767\n"),
    );
    let (code, out, err) = doctor(&["--root", d.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("swapoff /dev/vda2 && swapon -p 32766 /dev/vda2 && swapoff /dev/zram0 && swapon -p 32767 /dev/zram0"),
        "{out}"
    );
    assert!(!out.contains("32768"), "{out}");
}

/// A swap file whose name is not UTF-8 or holds a newline (escaped by the kernel as \012):
/// doctor reads the machine and prints the name escaped, on one line.
#[test]
fn a_swap_name_that_is_not_utf8_or_holds_a_newline_is_printed_escaped() {
    let d = ScratchDir::new("doctor-swap-bytes");
    zmem_files::testutil::copy_tree(&fixture("clean"), d.path());
    let p = d.path().join("proc/swaps");
    let mut text = SWAPS_HDR.as_bytes().to_vec();
    text.extend_from_slice(b"/var/tmp/s\xffw\\012ap file\t2097148\t0\t200\n/dev/zram0 partition\t4194300\t1048576\t100\n");
    fs::write(&p, text).unwrap();
    let (code, out, err) = doctor(&["--root", d.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains(r"/var/tmp/s\xffw\012ap has 200"), "{out}");
    let (ok, out, err) = {
        let o = Command::new(env!("CARGO_BIN_EXE_zmem"))
            .args(["status", "--root", d.path().to_str().unwrap()])
            .output()
            .unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    assert!(ok, "{out}{err}");
    assert!(!out.contains("\nap "), "{out}");
}
