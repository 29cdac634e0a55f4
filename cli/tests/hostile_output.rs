//! Hostile round 3, outputs (issue 35, findings 2, 3, 12 and 14), driven as
//! users run zmem: root's answer never lands in a file or directory another
//! user owns; a file zmem did not write is never replaced, whatever its
//! encoding, and `--report` is checked like every other output, before
//! anything is measured; `zmem persist` writes all its files or none, and
//! names the file it could not write; `zmem policy` refuses a state file
//! that is a FIFO, a device or a symbolic link instead of hanging, reading
//! forever or writing through it. Every run is killed after 60 s.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use zmem_files::testutil::{skip, ScratchDir};

const BIN: &str = env!("CARGO_BIN_EXE_zmem");

/// Runs `c` to the end, killed (and the test failed) after 60 s.
fn run(mut c: Command) -> Output {
    let child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run zmem");
    let id = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(o) => o.expect("wait for zmem"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &id.to_string()]).status();
            panic!("zmem (pid {id}) hung for 60 s");
        }
    }
}

fn zmem(args: &[&str]) -> Output {
    let mut c = Command::new(BIN);
    c.args(args);
    run(c)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Asserts the run failed and its error contains every one of `want`.
fn refused(o: &Output, want: &[&str]) -> String {
    let e = text(&o.stderr);
    assert!(!o.status.success(), "not refused: {}{e}", text(&o.stdout));
    for w in want {
        assert!(e.contains(w), "{w:?} not in: {e}");
    }
    e
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A config with devices, sysctls and zswap: three files for `zmem persist`.
fn persist_config(d: &Path) -> PathBuf {
    let conf = d.join("zmem.conf");
    fs::write(
        &conf,
        "[zram0]\nzram-size = ram / 2\n\n[sysctl]\nvm.swappiness = 180\n\n[zswap]\nenabled = N\n",
    )
    .unwrap();
    conf
}

/// Finding 12: a later file refused (not zmem's, not even UTF-8) or
/// unwritable leaves the earlier ones unwritten; the error names the file.
#[test]
fn persist_writes_all_its_files_or_none() {
    let d = ScratchDir::new("hostile-out-persist");
    let (conf, root) = (persist_config(d.path()), d.join("root"));
    let sysctl = root.join("etc/sysctl.d/90-zmem.conf");
    fs::create_dir_all(sysctl.parent().unwrap()).unwrap();
    fs::write(&sysctl, b"kernel.panic = 10 # admin \xe9\n").unwrap();
    let o = zmem(&["persist", s(&conf), "--root", s(&root)]);
    refused(
        &o,
        &["90-zmem.conf exists and was not written by zmem", "--force"],
    );
    assert!(
        !root.join("etc/systemd").exists(),
        "an earlier file was written"
    );
    assert!(
        !root.join("etc/tmpfiles.d").exists(),
        "a later file was written"
    );
    assert_eq!(
        fs::read(&sysctl).unwrap(),
        b"kernel.panic = 10 # admin \xe9\n"
    );
    // --force replaces it deliberately, and all three files are written.
    let o = zmem(&["persist", s(&conf), "--root", s(&root), "--force"]);
    assert!(
        o.status.code() == Some(3) || o.status.success(),
        "{}",
        text(&o.stderr)
    );
    for f in [
        "etc/systemd/zram-generator.conf",
        "etc/sysctl.d/90-zmem.conf",
        "etc/tmpfiles.d/zmem-zswap.conf",
    ] {
        let t = fs::read_to_string(root.join(f)).unwrap();
        assert!(t.starts_with("# Written by `zmem persist`"), "{f}: {t}");
    }
}

/// Finding 12, second half: a read-only directory for a later file: the
/// error names that file and nothing is written. Root ignores directory
/// modes, so root runs this as nobody (setpriv).
#[test]
fn persist_names_the_file_a_read_only_directory_refused() {
    let name = "persist_names_the_file_a_read_only_directory_refused";
    let d = ScratchDir::new("hostile-out-persist-ro");
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let (conf, root) = (persist_config(d.path()), d.join("root"));
    let ro = root.join("etc/sysctl.d");
    fs::create_dir_all(&ro).unwrap();
    let mut c = Command::new(BIN);
    if zmem_files::euid_is_root() {
        if Command::new("setpriv").arg("--version").output().is_err() {
            skip(&format!(
                "SKIP {name}: root ignores modes, and setpriv is missing"
            ));
            return;
        }
        // The test binary under the build tree may not be reachable by nobody.
        let bin = d.join("zmem");
        fs::copy(BIN, &bin).unwrap();
        fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(&conf, fs::Permissions::from_mode(0o644)).unwrap();
        for p in [&root, &root.join("etc"), &ro] {
            std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
        }
        c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin);
    }
    fs::set_permissions(&ro, fs::Permissions::from_mode(0o555)).unwrap();
    c.args(["persist", s(&conf), "--root", s(&root)]);
    let o = run(c);
    if text(&o.stderr).contains("setpriv") {
        skip(&format!("SKIP {name}: setpriv failed: {}", text(&o.stderr)));
        return;
    }
    refused(
        &o,
        &[
            &format!("{}: cannot write", ro.join("90-zmem.conf").display()),
            "nothing was written",
        ],
    );
    assert!(
        !root.join("etc/systemd").exists(),
        "an earlier file was written"
    );
    assert_eq!(fs::read_dir(&ro).unwrap().count(), 0);
}

/// Finding 14: a FIFO, a link to /dev/zero and a link to another file at
/// policy.state: each refused at once with an error naming it; the linked
/// file is neither read nor overwritten.
#[test]
fn policy_refuses_a_state_file_that_is_a_fifo_or_a_link() {
    let d = ScratchDir::new("hostile-out-policy");
    let root = d.join("root");
    let run_zmem = root.join("run/zmem");
    fs::create_dir_all(&run_zmem).unwrap();
    fs::create_dir_all(root.join("sys/block")).unwrap();
    let state = run_zmem.join("policy.state");
    let policy = || {
        zmem(&[
            "policy",
            "--once",
            "--root",
            s(&root),
            "--now",
            "1700000000",
        ])
    };
    let st = Command::new("mkfifo").arg(&state).status().expect("mkfifo");
    assert!(st.success());
    refused(&policy(), &["policy.state", "is a FIFO", "regular file"]);
    fs::remove_file(&state).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &state).unwrap();
    refused(&policy(), &["policy.state", "symbolic link"]);
    fs::remove_file(&state).unwrap();
    let other = d.join("other.conf");
    fs::write(&other, "# someone's file\n").unwrap();
    std::os::unix::fs::symlink(&other, &state).unwrap();
    refused(&policy(), &["policy.state", "symbolic link"]);
    assert_eq!(fs::read_to_string(&other).unwrap(), "# someone's file\n");
    // A regular state file is read and replaced whole, private.
    fs::remove_file(&state).unwrap();
    let o = policy();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let m = fs::symlink_metadata(&state).unwrap();
    assert!(m.is_file() && m.permissions().mode() & 0o777 == 0o600);
}

/// Captures and generated corpora go through the one writer too: a file
/// that is not a sidecar where the sidecar goes is refused before anything
/// is written (on main it was overwritten), and a link there is never
/// followed; `--force` replaces it deliberately.
#[test]
fn a_corpus_never_overwrites_a_foreign_file_where_its_sidecar_goes() {
    let d = ScratchDir::new("hostile-out-sidecar");
    let (c, side) = (d.join("n.pages"), d.join("n.pages.json"));
    fs::write(&side, "my notes\n").unwrap();
    let gen = |extra: &[&str]| {
        let mut a = vec!["corpus", "gen", "text", "--size", "64K", "-o", s(&c)];
        a.extend_from_slice(extra);
        zmem(&a)
    };
    refused(
        &gen(&[]),
        &["n.pages.json", "not a zmem sidecar", "--force"],
    );
    assert_eq!(fs::read_to_string(&side).unwrap(), "my notes\n");
    assert!(!c.exists(), "the corpus was written without its sidecar");
    fs::remove_file(&side).unwrap();
    let victim = d.join("victim");
    fs::write(&victim, "keep\n").unwrap();
    std::os::unix::fs::symlink(&victim, &side).unwrap();
    refused(&gen(&["--force"]), &["n.pages.json", "symbolic link"]);
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep\n");
    fs::remove_file(&side).unwrap();
    fs::write(&side, "my notes\n").unwrap();
    let o = gen(&["--force"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(fs::read_to_string(&side).unwrap().contains("\"source\""));
}

/// A small corpus in `d`.
fn corpus(d: &Path) -> PathBuf {
    let c = d.join("c.pages");
    let o = zmem(&["corpus", "gen", "text", "--size", "256K", "-o", s(&c)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    c
}

/// `zmem recommend` on `c`, cheaply, writing DIR/zmem.conf.
fn recommend(c: &Path, out_dir: &Path, extra: &[&str]) -> Output {
    let mut a = vec![
        "recommend",
        s(c),
        "--no-kernel",
        "--algo",
        "lz4",
        "--rounds",
        "1",
        "--requests",
        "100",
        "--fs-read",
        "100",
        "--ram",
        "1G",
        "--out-dir",
        s(out_dir),
    ];
    a.extend_from_slice(extra);
    zmem(&a)
}

/// Finding 2: root's answer never lands in a directory or file another user
/// owns (on main, root replaced nobody's marked zmem.conf in nobody's
/// directory, which nobody could then swap for a config of theirs).
#[test]
fn roots_answer_never_lands_where_another_user_can_change_it() {
    let name = "roots_answer_never_lands_where_another_user_can_change_it";
    if !zmem_files::euid_is_root() {
        skip(&format!(
            "SKIP {name}: needs root to give files to another user"
        ));
        return;
    }
    let d = ScratchDir::new("hostile-out-owner");
    let c = corpus(d.path());
    let marked = b"# zram-generator.conf from `zmem`, says nobody\n[sysctl]\nkernel.core_pattern = |/tmp/evil\n";
    let theirs = d.join("theirs");
    fs::create_dir(&theirs).unwrap();
    fs::write(theirs.join("zmem.conf"), marked).unwrap();
    for p in [&theirs, &theirs.join("zmem.conf")] {
        std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
    }
    for extra in [&[][..], &["--overwrite"][..]] {
        refused(
            &recommend(&c, &theirs, extra),
            &["theirs", "owned by uid 65534", "not by you or root"],
        );
    }
    assert_eq!(fs::read(theirs.join("zmem.conf")).unwrap(), marked);
    // Nobody's file in root's directory: refused too, naming the owner, even with --overwrite.
    let mine = d.join("mine");
    fs::create_dir(&mine).unwrap();
    fs::write(mine.join("zmem.conf"), marked).unwrap();
    std::os::unix::fs::chown(mine.join("zmem.conf"), Some(65534), None).unwrap();
    for extra in [&[][..], &["--overwrite"][..]] {
        refused(
            &recommend(&c, &mine, extra),
            &["zmem.conf is owned by uid 65534", "another user's file"],
        );
    }
    assert_eq!(fs::read(mine.join("zmem.conf")).unwrap(), marked);
    // A report in nobody's directory: refused before anything is measured.
    let o = zmem(&[
        "bench",
        "full",
        s(&c),
        "--algo",
        "lz4",
        "--report",
        s(&theirs.join("r.html")),
    ]);
    refused(&o, &["--report", "owned by uid 65534"]);
    assert!(o.stdout.is_empty(), "measured first: {}", text(&o.stdout));
}

/// Finding 3: a file zmem did not write is refused whatever its encoding
/// (one \xe9 is enough) by every `--out-dir`, and `--report` is guarded
/// like them (a link, another file, not UTF-8) before anything is measured
/// or run; `--overwrite` replaces a file of yours deliberately.
#[test]
fn non_utf8_files_and_reports_are_guarded_like_every_output() {
    let d = ScratchDir::new("hostile-out-utf8");
    let c = corpus(d.path());
    let out = d.join("out");
    fs::create_dir(&out).unwrap();
    let conf = out.join("zmem.conf");
    let admin = b"[zram0]\nzram-size = ram # r\xe9glage de l'admin\n";
    fs::write(&conf, admin).unwrap();
    refused(
        &recommend(&c, &out, &[]),
        &[
            "zmem.conf exists and was not written by zmem",
            "--overwrite",
        ],
    );
    let o = zmem(&[
        "bench",
        "verdict",
        s(&c),
        "--no-kernel",
        "--out-dir",
        s(&out),
    ]);
    refused(&o, &["not written by zmem"]);
    let o = zmem(&[
        "tune",
        "--memory",
        "64M",
        "--builtin",
        "memalloc",
        "--out-dir",
        s(&out),
    ]);
    refused(&o, &["not written by zmem"]);
    assert_eq!(fs::read(&conf).unwrap(), admin);
    // Reports: a link, someone's page (not UTF-8), each refused at once by all three commands.
    let victim = d.join("victim.html");
    fs::write(&victim, "keep\n").unwrap();
    let link = d.join("link.html");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let page = d.join("page.html");
    fs::write(&page, b"<html>caf\xe9</html>\n").unwrap();
    for (r, why) in [(&link, "symbolic link"), (&page, "not written by zmem")] {
        let o = zmem(&["bench", "full", s(&c), "--algo", "lz4", "--report", s(r)]);
        refused(&o, &[why]);
        assert!(o.stdout.is_empty(), "measured first: {}", text(&o.stdout));
        // The swap directory is bad too: only a report checked first names the report.
        let o = zmem(&[
            "trial",
            "--memory",
            "64M",
            "--builtin",
            "memalloc",
            "--swap-dir",
            "/nonexistent/zmem",
            "--report",
            s(r),
        ]);
        refused(&o, &["--report", why]);
        let o = zmem(&[
            "tune",
            "--memory",
            "64M",
            "--builtin",
            "memalloc",
            "--swap-dir",
            "/nonexistent/zmem",
            "--report",
            s(r),
        ]);
        refused(&o, &["--report", why]);
    }
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep\n");
    assert_eq!(fs::read(&page).unwrap(), b"<html>caf\xe9</html>\n");
    let o = recommend(&c, &out, &["--overwrite"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(fs::read_to_string(&conf)
        .unwrap()
        .starts_with("# zram-generator.conf from `zmem"));
}
