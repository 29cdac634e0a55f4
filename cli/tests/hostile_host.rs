//! Hostile input, round 4 (issue 46), the host's part: journals and the
//! saved undo list are private whatever the umask and never replayed when
//! another user could have written them (finding 2); `--root` trees are
//! never written through a link or a directory above the target that leads
//! out (findings 3, 9); a journal's zram device is told apart from another
//! that took its number (finding 4, doctor); a `--swap-dir` another user
//! controls is refused (finding 5); SIGTERM and SIGHUP in a trial exit with
//! their own status and leave no lock (finding 13). Each test drives `zmem`
//! as a user does; what needs root or the kernel says SKIP elsewhere.

mod hostile_common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use hostile_common::{chmod, places, NOBODY};
use zmem_files::testutil::{copy_tree, skip, ScratchDir};

fn zmem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .output()
        .expect("run zmem")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A copy of apply's fixture tree `01-basic` and its config, in `d`.
fn basic_tree(d: &ScratchDir) -> (PathBuf, PathBuf) {
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ops/admin/tests/fixtures/01-basic");
    let root = d.join("root");
    copy_tree(&fx.join("root"), &root);
    (root, fx.join("zmem.conf"))
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// Finding 2: under `umask 000` apply's undo list and journal directory were
/// created 0666/0777, and `--revert` ran whatever lines were in the list.
/// Now they are 0600/0700 whatever the umask, and a list writable by others
/// (or another user's) is refused, naming it and why, nothing run.
#[test]
fn an_undo_list_others_could_write_is_never_replayed() {
    let d = ScratchDir::new("hostile-undo-list");
    let (root, conf) = basic_tree(&d);
    let (r, c) = (root.to_str().unwrap(), conf.to_str().unwrap());
    let cmd = "umask 000; exec \"$0\" apply \"$1\" --root \"$2\"";
    let o = Command::new("sh")
        .args(["-c", cmd, env!("CARGO_BIN_EXE_zmem"), c, r])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let state = root.join("run/zmem/apply.state");
    assert_eq!(mode(&state), 0o600, "apply.state under umask 000");
    assert_eq!(mode(&root.join("run/zmem")), 0o755);
    let swappiness = root.join("proc/sys/vm/swappiness");
    let applied = fs::read_to_string(&swappiness).unwrap();
    // Anyone could have added a line now: refused, nothing undone.
    chmod(&state, 0o666);
    let o = zmem(&["apply", "--revert", "--root", r]);
    let t = text(&o);
    assert!(!o.status.success(), "replayed a list others may write: {t}");
    assert!(t.contains("apply.state") && t.contains("mode 666"), "{t}");
    assert!(t.contains("refusing to replay it"), "{t}");
    assert_eq!(fs::read_to_string(&swappiness).unwrap(), applied);
    if zmem_files::euid_is_root() {
        chmod(&state, 0o600);
        std::os::unix::fs::chown(&state, Some(NOBODY), Some(NOBODY)).unwrap();
        let o = zmem(&["apply", "--revert", "--root", r]);
        let t = text(&o);
        assert!(!o.status.success(), "replayed nobody's list: {t}");
        assert!(t.contains("owned by uid 65534"), "{t}");
        assert_eq!(fs::read_to_string(&swappiness).unwrap(), applied);
        std::os::unix::fs::chown(&state, Some(0), Some(0)).unwrap();
    }
    let o = zmem(&["apply", "--revert", "--root", r]);
    assert!(o.status.success(), "its own list: {}", text(&o));
}

/// Finding 3: `apply --root TREE` followed the tree's links (`zmem-fixture.log`,
/// `run/zmem`) and changed files outside the tree. Now a link on the way to
/// anything it writes is refused naming it; the file outside is untouched.
#[test]
fn apply_never_writes_through_a_link_in_the_tree() {
    let d = ScratchDir::new("hostile-apply-link");
    let outside = d.join("outside");
    fs::create_dir(&outside).unwrap();
    let precious = outside.join("precious");
    fs::write(&precious, "root's own file\n").unwrap();
    for link in ["zmem-fixture.log", "run/zmem"] {
        let (root, conf) = basic_tree(&d);
        let target = if link == "run/zmem" {
            outside.clone()
        } else {
            precious.clone()
        };
        fs::create_dir_all(root.join("run")).unwrap();
        std::os::unix::fs::symlink(&target, root.join(link)).unwrap();
        let o = zmem(&[
            "apply",
            conf.to_str().unwrap(),
            "--root",
            root.to_str().unwrap(),
        ]);
        let t = text(&o);
        assert!(!o.status.success(), "{link}: {t}");
        assert!(t.contains("symbolic link inside the tree"), "{link}: {t}");
        assert_eq!(fs::read_to_string(&precious).unwrap(), "root's own file\n");
        assert_eq!(
            fs::read_dir(&outside).unwrap().count(),
            1,
            "{link}: wrote outside"
        );
        fs::remove_dir_all(&root).unwrap();
    }
    // A tree another user owns is theirs to steer: refused as a whole.
    if zmem_files::euid_is_root() {
        let (root, conf) = basic_tree(&d);
        std::os::unix::fs::chown(&root, Some(NOBODY), Some(NOBODY)).unwrap();
        let o = zmem(&[
            "apply",
            conf.to_str().unwrap(),
            "--root",
            root.to_str().unwrap(),
        ]);
        let t = text(&o);
        assert!(
            !o.status.success() && t.contains("owned by uid 65534"),
            "{t}"
        );
    }
}

/// Finding 9: `persist --root TREE` checked a target's own directory only; a
/// linked `TREE/etc/systemd` put the unit outside the tree. Now nothing is
/// written and the link is named.
#[test]
fn persist_never_writes_through_a_directory_link_above_a_target() {
    let d = ScratchDir::new("hostile-persist-above");
    let root = d.join("root");
    let outside = d.join("outside");
    fs::create_dir_all(outside.join("system")).unwrap();
    fs::create_dir_all(root.join("etc")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("etc/systemd")).unwrap();
    let conf = d.join("zmem.conf");
    fs::write(
        &conf,
        "[zram0]\nzram-size = ram / 2\ncompression-algorithm = lz4\n\n[policy]\nidle-age = 1h\n",
    )
    .unwrap();
    let o = zmem(&[
        "persist",
        conf.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(
        t.contains("etc/systemd") && t.contains("symbolic link inside the tree"),
        "{t}"
    );
    assert!(t.contains("nothing was written"), "{t}");
    let left: Vec<_> = walk(&outside);
    assert_eq!(
        left,
        vec![outside.join("system")],
        "written outside the tree"
    );
    assert!(!root.join("etc/sysctl.d").exists() && !root.join("etc/zmem").exists());
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        v.push(p.clone());
        if p.is_dir() {
            v.extend(walk(&p));
        }
    }
    v.sort();
    v
}

/// Finding 4: a dead trial's journal named zram5 by number; after zram5 was
/// removed and the number taken by another device, doctor blamed the dead
/// trial for it. Now the journal records which device it made, and doctor
/// says the device there is another one.
#[test]
fn doctor_does_not_blame_a_dead_run_for_a_device_that_took_its_number() {
    let d = ScratchDir::new("hostile-doctor-reused");
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ops/admin/tests/fixtures/doctor");
    let case = fx.join("clean");
    let root = d.join("root");
    copy_tree(&case.join("root"), &root);
    let dev = root.join("sys/block/zram5");
    fs::create_dir_all(&dev).unwrap();
    let ino = fs::metadata(&dev).unwrap().ino();
    let journals = root.join("run/zmem-trial");
    fs::create_dir_all(&journals).unwrap();
    chmod(&journals, 0o700);
    let dead = 4_000_000_000u32;
    let journal = journals.join(format!("{dead}.zram5.journal"));
    fs::write(&journal, format!("zram\t5\t{ino}\n")).unwrap();
    chmod(&journal, 0o600);
    let o = zmem(&["doctor", "--root", root.to_str().unwrap()]);
    let t = text(&o);
    assert!(
        t.contains("still there: zram5"),
        "its own device is named: {t}"
    );
    // zram5 removed by hand, then a new zram5 (another inode, as kernfs gives;
    // the old directory is kept elsewhere so the filesystem cannot hand its
    // inode number to the new one).
    fs::rename(&dev, root.join("sys/block-old-zram5")).unwrap();
    fs::create_dir_all(&dev).unwrap();
    assert_ne!(fs::metadata(&dev).unwrap().ino(), ino);
    let o = zmem(&["doctor", "--root", root.to_str().unwrap()]);
    let t = text(&o);
    assert!(
        !t.contains("still there: zram5"),
        "blamed for another's device: {t}"
    );
    assert!(
        t.contains("zram5 (another device now, its number reused)"),
        "{t}"
    );
}

/// Finding 5: `trial --swap-dir DIR` in a directory another user owns swapped
/// on whatever file that user put in place of zmem's. Now such a directory
/// is refused before anything changes.
#[test]
fn a_swap_dir_another_user_controls_is_refused() {
    let test = "a_swap_dir_another_user_controls_is_refused";
    if !zmem_files::euid_is_root() {
        return skip(&format!(
            "SKIP {test}: needs root (a directory of nobody's)"
        ));
    }
    let p = places("hostile-swapdir");
    // nobody's own directory, and one writable by all without the sticky bit.
    let open = p.scratch.join("open");
    fs::create_dir(&open).unwrap();
    chmod(&open, 0o777);
    for (dir, why) in [(&p.theirs, "owned by uid 65534"), (&open, "mode 777")] {
        for cmd in ["trial", "tune"] {
            let mut args = vec![cmd, "--memory", "64M", "--swap-dir", dir.to_str().unwrap()];
            if cmd == "trial" {
                args.extend(["--config", "zram:lz4+disk", "--", "true"]);
            } else {
                args.extend(["--builtin", "memalloc"]);
            }
            let o = zmem(&args);
            let t = text(&o);
            assert!(
                !o.status.success(),
                "{cmd} --swap-dir {}: {t}",
                dir.display()
            );
            assert!(t.contains(why) && t.contains("--swap-dir"), "{cmd}: {t}");
            assert_eq!(fs::read_dir(dir).unwrap().count(), 0, "{cmd}: left a file");
        }
    }
}

/// Finding 13: SIGTERM and SIGHUP during a trial's run exited with 130
/// (SIGINT's) and left `/run/zmem/trial.lock`. Now 143 and 129, after
/// undoing, and the lock's file is gone.
#[test]
fn term_and_hup_in_a_trial_exit_with_their_status_and_leave_no_lock() {
    let test = "term_and_hup_in_a_trial_exit_with_their_status_and_leave_no_lock";
    if !zmem_files::euid_is_root() {
        return skip(&format!("SKIP {test}: not root"));
    }
    let lock = Path::new("/run/zmem/trial.lock");
    for (sig, code) in [("TERM", 143), ("HUP", 129)] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_zmem"))
            .args([
                "trial", "--memory", "64M", "--config", "none", "--repeat", "1", "--force",
            ])
            .args(["--", "sleep", "60"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let end = Instant::now() + Duration::from_secs(60);
        // The trial holds the lock and its workload runs (a `sleep` child of it).
        loop {
            let held = fs::read_to_string(lock).unwrap_or_default().trim() == pid.to_string();
            let children =
                fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
            if held && !children.trim().is_empty() {
                break;
            }
            if let Some(s) = child.try_wait().unwrap() {
                let mut e = String::new();
                let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut e);
                return skip(&format!(
                    "SKIP {test}: the trial cannot run here ({s}): {e}"
                ));
            }
            assert!(Instant::now() < end, "the trial never started its run");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(500));
        Command::new("kill")
            .args([&format!("-{sig}"), &pid.to_string()])
            .status()
            .unwrap();
        let end = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > end {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the trial did not stop on SIG{sig}");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut e = String::new();
        let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut e);
        assert_eq!(status.code(), Some(code), "SIG{sig}: {e}");
        let holder = fs::read_to_string(lock).unwrap_or_default();
        assert_ne!(
            holder.trim(),
            pid.to_string(),
            "SIG{sig} left the trial's lock file"
        );
    }
}
