//! `zmem apply` and `zmem persist` driven as a user would, on copies of the fixture trees.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use zmem_files::testutil::ScratchDir;

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
fn dry_run_prints_the_writes_in_order_and_changes_nothing() {
    let (_scratch, root) =
        ScratchDir::with_copy("cli-dry", &fixture("03-multi-comp-writeback/root"));
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
}

#[test]
fn apply_twice_then_revert() {
    let (_scratch, root) = ScratchDir::with_copy("cli-apply", &fixture("01-basic/root"));
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
    // --dry-run previews the undo and changes nothing.
    let log_before = fs::read_to_string(root.join("zmem-fixture.log")).unwrap();
    let (ok, preview, err) = zmem(&["apply", "--revert", "--dry-run", "--root", r]);
    assert!(ok, "{err}");
    assert!(preview.contains("--revert would run these"), "{preview}");
    assert_eq!(
        fs::read_to_string(root.join("proc/sys/vm/swappiness")).unwrap(),
        "180\n"
    );
    assert_eq!(
        fs::read_to_string(root.join("zmem-fixture.log")).unwrap(),
        log_before
    );
    let (ok, out, err) = zmem(&["apply", "--revert", "--root", r]);
    assert!(ok, "{err}");
    assert!(out.contains("write /proc/sys/vm/swappiness 60"), "{out}");
    let previewed: Vec<&str> = preview.lines().filter(|l| !l.starts_with('#')).collect();
    let ran: Vec<&str> = out.lines().filter(|l| !l.starts_with("reverted")).collect();
    assert_eq!(previewed, ran, "the preview is what --revert runs");
    assert_eq!(
        fs::read_to_string(root.join("proc/sys/vm/swappiness")).unwrap(),
        "60\n"
    );
    let (ok, _, err) = zmem(&["apply", "--revert", "--root", r]);
    assert!(!ok && err.contains("nothing to revert"), "{err}");
}

/// An unknown key is a warning, as zram-generator takes it ("unknown key …, ignoring"), and
/// an error naming file, line and reason with --strict.
#[test]
fn unknown_keys_warn_and_strict_refuses_them() {
    let (_scratch, root) = ScratchDir::with_copy("cli-bad", &fixture("08-bad-key/root"));
    let conf = fixture("08-bad-key/zmem.conf");
    let (c, r) = (conf.to_str().unwrap(), root.to_str().unwrap());
    let (ok, out, err) = zmem(&["apply", c, "--dry-run", "--root", r]);
    assert!(ok, "{err}");
    assert!(
        out.contains("# warning: ")
            && out.contains("zmem.conf:3: unknown key `compresion-algorithm` in [zram0], ignored"),
        "{out}"
    );
    assert!(out.contains("write /sys/block/zram0/disksize"), "{out}");
    let (ok, _, err) = zmem(&["apply", c, "--strict", "--root", r]);
    assert!(!ok);
    assert!(
        err.contains("zmem.conf:3: unknown key `compresion-algorithm` in [zram0]; known keys")
            && err.contains("(an error with --strict)"),
        "{err}"
    );
    assert!(!root.join("zmem-fixture.log").exists());
    let (ok, _, err) = zmem(&["persist", c, "--strict", "--dry-run"]);
    assert!(
        !ok && err.contains("unknown key `compresion-algorithm`"),
        "{err}"
    );
}

/// `--zram-generator` reads zram-generator's own files in its order (zram-generator's
/// 04-dropins) and prints what the fixture test expects.
#[test]
fn zram_generator_files_and_dropins_dry_run() {
    let (_scratch, root) = ScratchDir::with_copy("cli-zg04", &fixture("zg-04-dropins/root"));
    let r = root.to_str().unwrap();
    let (ok, out, err) = zmem(&["apply", "--zram-generator", "--dry-run", "--root", r]);
    assert!(ok, "{err}");
    let want = fs::read_to_string(fixture("zg-04-dropins/expected-dry-run.log")).unwrap();
    assert_eq!(out, want);
    assert!(!root.join("zmem-fixture.log").exists());
    let (ok, _, err) = zmem(&["apply", "x.conf", "--zram-generator", "--root", r]);
    assert!(!ok && err.contains("cannot be used with"), "{err}");
}

/// apply's level ranges are the ones `zmem codecs` prints (one table of truth per
/// algorithm: the codec crate's parameter ranges).
#[test]
fn apply_level_ranges_agree_with_zmem_codecs() {
    for (algo, lo, hi, _) in zmem_conf::LEVEL_RANGES.iter().copied() {
        let backend = zmem_codec::all()
            .iter()
            .find(|b| b.name() == algo)
            .unwrap_or_else(|| panic!("{algo} is not in zmem codecs"));
        let level = backend.params().iter().find(|p| p.key == "level").unwrap();
        assert_eq!(level.range, format!("{lo}..={hi}"), "{algo}");
    }
    let (ok, out, _) = zmem(&["codecs", "--format", "csv"]);
    assert!(ok);
    assert!(out.contains("level=3 (-131072..=22)"), "{out}");
}

#[test]
fn missing_feature_and_in_use_are_refused() {
    for (case, want) in [
        ("02-no-zstd", "CONFIG_ZRAM_BACKEND_ZSTD"),
        ("05-no-writeback", "CONFIG_ZRAM_WRITEBACK"),
        ("06-in-use", "--force"),
    ] {
        let (_scratch, root) =
            ScratchDir::with_copy(&format!("cli-{case}"), &fixture(case).join("root"));
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
    }
}

#[test]
fn persist_writes_generator_sysctl_and_tmpfiles() {
    let scratch = ScratchDir::new("cli-persist");
    let root = scratch.join("root");
    // The programs that read the files at boot (cli/tests/persist_cli.rs: when they are missing).
    for p in [
        "usr/lib/systemd/system-generators/zram-generator",
        "usr/lib/systemd/systemd-sysctl",
        "usr/bin/systemd-tmpfiles",
        "usr/lib/systemd/systemd",
    ] {
        fs::create_dir_all(root.join(p).parent().unwrap()).unwrap();
        fs::write(root.join(p), "").unwrap();
    }
    let dir = scratch.join("conf");
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
    let back = zmem_conf::load(&root.join("etc/systemd/zram-generator.conf")).unwrap();
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
}

/// `apply` never swaps over or mounts over what zmem did not create: a
/// `[disk-swap]` device holding data or no swap signature, and mount points
/// that are system directories, are refused (nothing written) unless --force.
#[test]
fn disk_swap_and_mount_points_that_would_destroy_data_are_refused() {
    let (_scratch, root) = ScratchDir::with_copy("cli-refuse", &fixture("01-basic/root"));
    let r = root.to_str().unwrap();
    fs::create_dir_all(root.join("etc")).unwrap();
    fs::write(root.join("etc/passwd"), "root:x:0:0:root:/root:/bin/bash\n").unwrap();
    fs::write(root.join("zeros"), vec![0u8; 65536]).unwrap();
    let mut swap = vec![0u8; 65536];
    swap[4086..4096].copy_from_slice(b"SWAPSPACE2");
    fs::write(root.join("swapfile"), &swap).unwrap();
    let conf = root.join("c.conf");
    let c = conf.to_str().unwrap();
    let cases = [
        ("[disk-swap]\ndevice = /etc/passwd\n", Some("holds data")),
        ("[disk-swap]\ndevice = /zeros\n", Some("no swap signature")),
        ("[disk-swap]\ndevice = /missing\n", Some("cannot be used")),
        (
            "[zram1]\nfs-type = ext4\nmount-point = /\n",
            Some("system directory"),
        ),
        (
            "[zram1]\nfs-type = ext4\nmount-point = /usr/\n",
            Some("system directory"),
        ),
        ("[disk-swap]\ndevice = /swapfile\n", None),
        ("[zram1]\nfs-type = ext4\nmount-point = /var/tmp\n", None),
    ];
    for (text, refusal) in cases {
        fs::write(&conf, format!("[zram0]\nzram-size = 512\n{text}")).unwrap();
        let (ok, out, err) = zmem(&["apply", c, "--dry-run", "--root", r]);
        match refusal {
            Some(why) => {
                assert!(
                    !ok && err.contains(why) && err.contains("nothing was changed"),
                    "{text}: {err}"
                );
                assert!(
                    err.contains("--force")
                        || why == "cannot be used"
                        || why == "no swap signature",
                    "{err}"
                );
                let (ok, _, err) = zmem(&["apply", c, "--dry-run", "--force", "--root", r]);
                assert_eq!(ok, why != "cannot be used", "{text} with --force: {err}");
            }
            None => assert!(ok, "{text}: {err}\n{out}"),
        }
    }
    assert_eq!(
        fs::read_to_string(root.join("etc/passwd")).unwrap(),
        "root:x:0:0:root:/root:/bin/bash\n"
    );
}

/// `ram` is whole MiB, as zram-generator computes it (MemTotal kB / 1024,
/// truncated): on 782.5 MiB, `ram / 2` is 391 MiB and `host-memory-limit =
/// 782` keeps the device.
#[test]
fn ram_is_whole_mib_as_zram_generator_reads_it() {
    let (_scratch, root) = ScratchDir::with_copy("cli-ram", &fixture("01-basic/root"));
    let r = root.to_str().unwrap();
    let meminfo = fs::read_to_string(root.join("proc/meminfo")).unwrap();
    let meminfo = meminfo.replace("MemTotal:        8388608 kB", "MemTotal:         801280 kB");
    fs::write(root.join("proc/meminfo"), meminfo).unwrap();
    let conf = root.join("c.conf");
    fs::write(
        &conf,
        "[zram0]\nzram-size = ram / 2\nhost-memory-limit = 782\n",
    )
    .unwrap();
    let (ok, out, err) = zmem(&["apply", conf.to_str().unwrap(), "--dry-run", "--root", r]);
    assert!(ok, "{err}");
    assert!(
        out.contains("write /sys/block/zram0/disksize 409993216"),
        "{out}"
    );
}

/// The files of a fixture tree, without zmem's own state (`run/`) and the fixture log.
fn tree_files(root: &Path) -> std::collections::BTreeMap<String, String> {
    fn walk(base: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, String>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
            if rel == "zmem-fixture.log" || rel.starts_with("run") {
                continue;
            }
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                out.insert(rel, fs::read_to_string(&p).unwrap());
            }
        }
    }
    let mut m = std::collections::BTreeMap::new();
    walk(root, root, &mut m);
    m
}

/// Start `zmem apply` paused right after it journaled record `n`
/// (`ZMEM_TEST_PAUSE_AT`), and SIGKILL it there.
fn apply_killed_at(n: usize, conf: &str, root: &str, force: bool) {
    use std::io::{BufRead, BufReader};
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zmem"));
    cmd.args(["apply", conf, "--root", root]);
    if force {
        cmd.arg("--force");
    }
    let mut child = cmd
        .env("ZMEM_TEST_PAUSE_AT", n.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(
        line.trim(),
        format!("zmem: paused after journal record {n}")
    );
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), None, "killed by SIGKILL");
}

/// SIGKILL `zmem apply` after each step's undo is journaled (the step not made yet, every
/// step before it made): a new apply refuses, and `zmem apply --revert` brings the tree back
/// to exactly what it was (but for what the case's `revert-differs` names: swap usage and
/// data a reset throws away).
#[test]
fn apply_killed_at_every_step_is_undone_by_revert() {
    for case in ["01-basic", "03-multi-comp-writeback", "07-in-use-force"] {
        let dir = fixture(case);
        let force = fs::read_to_string(dir.join("args"))
            .unwrap_or_default()
            .contains("--force");
        let allowed: Vec<String> = fs::read_to_string(dir.join("revert-differs"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect();
        let steps = fs::read_to_string(dir.join("expected-apply.log"))
            .unwrap()
            .lines()
            .count();
        assert!(steps >= 3, "{case}");
        let conf = dir.join("zmem.conf");
        let c = conf.to_str().unwrap();
        for n in 1..=steps {
            let (_scratch, root) = ScratchDir::with_copy("cli-apply-kill", &dir.join("root"));
            let r = root.to_str().unwrap();
            let before = tree_files(&root);
            apply_killed_at(n, c, r, force);
            if n > 1 {
                assert_ne!(before, tree_files(&root), "{case} @{n}: steps were made");
            }
            let mut args = vec!["apply", c, "--root", r];
            if force {
                args.push("--force");
            }
            let (ok, _, err) = zmem(&args);
            assert!(
                !ok && err.contains("zmem apply --revert"),
                "{case} @{n}: {err}"
            );
            let (ok, preview, err) = zmem(&["apply", "--revert", "--dry-run", "--root", r]);
            assert!(ok, "{case} @{n}: {err}");
            let (ok, out, err) = zmem(&["apply", "--revert", "--root", r]);
            assert!(ok, "{case} @{n}: {err}\n{out}");
            let previewed: Vec<&str> = preview.lines().filter(|l| !l.starts_with('#')).collect();
            let ran: Vec<&str> = out.lines().filter(|l| !l.starts_with("reverted")).collect();
            assert_eq!(
                previewed, ran,
                "{case} @{n}: the preview is what --revert runs"
            );
            let after = tree_files(&root);
            for k in before.keys().chain(after.keys()) {
                if !allowed.contains(k) {
                    assert_eq!(before.get(k), after.get(k), "{case} @{n}: {k}");
                }
            }
            let (ok, _, err) = zmem(&["apply", "--revert", "--root", r]);
            assert!(
                !ok && err.contains("nothing to revert"),
                "{case} @{n}: {err}"
            );
        }
    }
}

/// The writeback-device of a [zramN] is claimed as `zmem serve --backing-dev` claims it: a file
/// holding data is refused at planning (also with --dry-run), naming it, unless --force.
#[test]
fn apply_refuses_a_writeback_device_that_holds_data() {
    let probe = Path::new("/sys/block/zram0/backing_dev");
    if !zmem_files::euid_is_root() || !probe.exists() {
        return zmem_files::testutil::skip(
            "SKIP apply_refuses_a_writeback_device_that_holds_data: needs root and a kernel zram with writeback (backing_dev)",
        );
    }
    let d = ScratchDir::new("apply-backing");
    let backing = d.join("backing.img");
    fs::write(&backing, vec![0x5au8; 1 << 20]).unwrap();
    let conf = d.join("zmem.conf");
    fs::write(
        &conf,
        format!(
            "[zram15]\nzram-size = 64M\nwriteback-device = {}\n",
            backing.display()
        ),
    )
    .unwrap();
    let (ok, _out, err) = zmem(&["apply", "--dry-run", conf.to_str().unwrap()]);
    assert!(!ok, "a backing file with data was accepted");
    assert!(
        err.contains("writeback-device") && err.contains("backing.img"),
        "{err}"
    );
    assert!(fs::read(&backing).unwrap().iter().all(|&b| b == 0x5a));
}

/// `--revert` waits for a device that is busy for a while (udev probing it after swapoff) and
/// tears it down; one that stays busy is reported with what holds it, and kept for a later
/// `--revert`.
#[test]
fn revert_retries_a_busy_device_and_says_what_holds_it() {
    let (_scratch, root) = ScratchDir::with_copy("cli-apply-busy", &fixture("01-basic/root"));
    let r = root.to_str().unwrap();
    let conf = fixture("01-basic/zmem.conf");
    let c = conf.to_str().unwrap();
    let fail = root.join("sys/block/zram0/reset.fail");
    // Busy for three tries, then free: the revert succeeds.
    assert!(zmem(&["apply", c, "--root", r]).0);
    fs::write(&fail, "EBUSY 3").unwrap();
    let (ok, out, err) = zmem(&["apply", "--revert", "--root", r]);
    assert!(ok, "{out}{err}");
    let log = fs::read_to_string(root.join("zmem-fixture.log")).unwrap();
    assert_eq!(
        log.matches("write /sys/block/zram0/reset").count(),
        4,
        "{log}"
    );
    // Busy for good, with a device-mapper table on top: named, and the undo is kept.
    assert!(zmem(&["apply", c, "--root", r]).0);
    fs::write(&fail, "EBUSY").unwrap();
    fs::create_dir_all(root.join("sys/block/zram0/holders/dm-3")).unwrap();
    let (ok, out, err) = zmem(&["apply", "--revert", "--root", r]);
    assert!(!ok);
    assert!(out.contains("reset zram0: still busy (EBUSY)"), "{out}");
    assert!(out.contains("held by dm-3"), "{out}");
    assert!(err.contains("kept in"), "{err}");
    // Once free, the kept undo finishes the job.
    fs::remove_file(&fail).unwrap();
    fs::remove_dir_all(root.join("sys/block/zram0/holders")).unwrap();
    let (ok, out, err) = zmem(&["apply", "--revert", "--root", r]);
    assert!(ok, "{out}{err}");
}
