//! Where zmem's answers go, driven as users do: every verdict run writes a
//! new private file (0600, in a 0700 state directory of the user's) that
//! holds exactly the configuration the run showed; two users at once each
//! get their own; a symbolic link planted at any output path (the config
//! in `--out-dir`, the out dir itself, the state directory, an HTML report)
//! is refused and nothing is written through it.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use zmem_files::testutil::{skip, ScratchDir};

const BIN: &str = env!("CARGO_BIN_EXE_zmem");

/// Runs `c` to the end, killed (and the test failed) after 300 s.
fn run(mut c: Command) -> Output {
    let child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run zmem");
    wait(child)
}

fn wait(child: std::process::Child) -> Output {
    let id = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(300)) {
        Ok(o) => o.expect("wait for zmem"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &id.to_string()]).status();
            panic!("zmem (pid {id}) did not finish in 300 s");
        }
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn corpus(d: &Path) -> PathBuf {
    let c = d.join("c.pages");
    let mut cmd = Command::new(BIN);
    cmd.args(["corpus", "gen", "text", "--size", "2M", "-o"])
        .arg(&c);
    let o = run(cmd);
    assert!(o.status.success(), "{}", text(&o.stderr));
    c
}

/// A cheap verdict on `corpus`, planned for `ram` (runs with different RAM
/// show different disksizes, so a file holding another run's answer shows).
fn verdict(bin: &Path, corpus: &Path, ram: &str) -> Command {
    let mut c = Command::new(bin);
    c.args(["bench", "verdict"]).arg(corpus).args([
        "--no-kernel",
        "--algo",
        "lz4,lzo",
        "--rounds",
        "2",
        "--requests",
        "300",
        "--fs-read",
        "100",
        "--ram",
        ram,
    ]);
    c
}

/// Points the state directory at `base/zmem` the way this user's runs find
/// it (root's default is /var/lib/zmem, so root's runs are given
/// `ZMEM_STATE_DIR`; others' go through `XDG_STATE_HOME`).
fn state_in(c: &mut Command, base: &Path) -> PathBuf {
    c.env_remove("ZMEM_STATE_DIR").env_remove("XDG_STATE_HOME");
    if zmem_files::euid_is_root() {
        c.env("ZMEM_STATE_DIR", base.join("zmem"));
    } else {
        c.env("XDG_STATE_HOME", base).env("HOME", base);
    }
    base.join("zmem")
}

/// What a verdict's table showed: the config path and the settings.
#[derive(Debug)]
struct Shown {
    path: PathBuf,
    algorithm: String,
    disksize_mib: String,
    swappiness: String,
}

fn shown(out: &str) -> Shown {
    let field = |key: &str| {
        out.lines()
            .map(str::split_whitespace)
            .find_map(|mut w| (w.next() == Some(key)).then(|| w.next().unwrap_or("").to_string()))
            .unwrap_or_else(|| panic!("no {key} line in\n{out}"))
    };
    Shown {
        path: PathBuf::from(field("config:")),
        algorithm: field("algorithm"),
        disksize_mib: field("disksize"),
        swappiness: field("vm.swappiness"),
    }
}

/// The file at the shown path holds exactly the configuration shown.
fn holds_what_was_shown(s: &Shown) -> String {
    let conf = fs::read_to_string(&s.path).unwrap();
    for want in [
        format!("#   disksize {} MiB,", s.disksize_mib),
        format!("compression-algorithm = {}\n", s.algorithm),
        format!("vm.swappiness = {}\n", s.swappiness),
    ] {
        assert!(
            conf.contains(&want),
            "{want:?} not in {}:\n{conf}",
            s.path.display()
        );
    }
    conf
}

fn mode(p: &Path) -> u32 {
    fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn each_run_writes_a_new_private_file_holding_the_config_it_showed() {
    let d = ScratchDir::new("outputs-new");
    let c = corpus(d.path());
    let base = d.join("state");
    let mut shown_runs = Vec::new();
    for ram in ["1G", "2G"] {
        let mut cmd = verdict(Path::new(BIN), &c, ram);
        let dir = state_in(&mut cmd, &base);
        let o = run(cmd);
        let out = text(&o.stdout);
        assert!(o.status.success(), "{out}{}", text(&o.stderr));
        let s = shown(&out);
        assert_eq!(s.path.parent(), Some(dir.as_path()), "{out}");
        let name = s.path.file_name().unwrap().to_str().unwrap().to_string();
        assert!(
            name.starts_with("verdict-") && name.ends_with(".conf"),
            "{name}"
        );
        assert_eq!(mode(&s.path), 0o600, "{}", s.path.display());
        assert_eq!(mode(&dir), 0o700);
        shown_runs.push(s);
    }
    assert_ne!(shown_runs[0].path, shown_runs[1].path);
    assert_ne!(shown_runs[0].disksize_mib, shown_runs[1].disksize_mib);
    for s in &shown_runs {
        holds_what_was_shown(s);
    }
    // JSON names the file too, and it holds the recommendation's config.
    let mut cmd = verdict(Path::new(BIN), &c, "1G");
    cmd.args(["--format", "json"]);
    state_in(&mut cmd, &base);
    let o = run(cmd);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = PathBuf::from(v["config_file"].as_str().unwrap());
    let r = &v["recommendation"];
    let conf = fs::read_to_string(&p).unwrap();
    let want = format!(
        "{}\n{}",
        r["zram_generator_conf"].as_str().unwrap(),
        r["sysctl_conf"].as_str().unwrap()
    );
    assert!(conf.starts_with(&want), "{conf}\n---\n{want}");
    assert_eq!(fs::read_dir(base.join("zmem")).unwrap().count(), 3);
}

/// Asserts the run failed naming a symbolic link.
fn refused_as_link(o: &Output) {
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{}", text(&o.stdout));
    assert!(err.contains("symbolic link"), "{err}");
}

#[test]
fn symlinks_at_any_output_path_are_refused() {
    let d = ScratchDir::new("outputs-links");
    let c = corpus(d.path());
    let victim = d.join("victim");
    fs::write(&victim, "keep\n").unwrap();
    let real = d.join("real");
    fs::create_dir(&real).unwrap();
    let empty = |p: &Path| fs::read_dir(p).unwrap().count() == 0;
    // The config file in --out-dir (bench and recommend).
    let out = d.join("out");
    fs::create_dir(&out).unwrap();
    std::os::unix::fs::symlink(&victim, out.join("zmem.conf")).unwrap();
    let mut cmd = verdict(Path::new(BIN), &c, "1G");
    cmd.arg("--out-dir").arg(&out);
    refused_as_link(&run(cmd));
    let mut cmd = Command::new(BIN);
    cmd.arg("recommend")
        .arg(&c)
        .args(["--no-kernel", "--algo", "lz4", "--fs-read", "100"]);
    cmd.arg("--out-dir").arg(&out);
    refused_as_link(&run(cmd));
    // The out dir itself.
    let link = d.join("link-dir");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let mut cmd = verdict(Path::new(BIN), &c, "1G");
    cmd.arg("--out-dir").arg(&link);
    refused_as_link(&run(cmd));
    // The state directory.
    let base = d.join("state");
    fs::create_dir(&base).unwrap();
    std::os::unix::fs::symlink(&real, base.join("zmem")).unwrap();
    let mut cmd = verdict(Path::new(BIN), &c, "1G");
    state_in(&mut cmd, &base);
    refused_as_link(&run(cmd));
    // The HTML report of `bench full`.
    let mut cmd = Command::new(BIN);
    cmd.args(["bench", "full"])
        .arg(&c)
        .args(["--no-kernel", "--algo", "lz4", "--fs-read", "100"]);
    cmd.arg("--report").arg(out.join("zmem.conf"));
    let o = run(cmd);
    assert!(!o.status.success() && text(&o.stderr).contains("symbolic link"));
    // Nothing was written through any of them.
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep\n");
    assert!(empty(&real));
}

#[test]
fn a_state_dir_others_can_write_is_refused() {
    let d = ScratchDir::new("outputs-open");
    let c = corpus(d.path());
    let base = d.join("state");
    fs::create_dir_all(base.join("zmem")).unwrap();
    fs::set_permissions(base.join("zmem"), fs::Permissions::from_mode(0o770)).unwrap();
    let mut cmd = verdict(Path::new(BIN), &c, "1G");
    state_in(&mut cmd, &base);
    let o = run(cmd);
    let err = text(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("lets group or others write it"), "{err}");
    assert_eq!(fs::read_dir(base.join("zmem")).unwrap().count(), 0);
}

/// Root and nobody (HOME=/nonexistent: a new private directory in TMPDIR)
/// run the main job's verdict at the same time; each printed path holds the
/// configuration that run showed, and only its owner can read it.
#[test]
fn root_and_another_user_at_once_each_get_their_own_answer() {
    let name = "root_and_another_user_at_once_each_get_their_own_answer";
    if !zmem_files::euid_is_root() {
        skip(&format!("SKIP {name}: needs root to run as a second user"));
        return;
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        skip(&format!(
            "SKIP {name}: setpriv (util-linux) is not installed"
        ));
        return;
    }
    let d = ScratchDir::new("outputs-two-users");
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let c = corpus(d.path());
    fs::set_permissions(&c, fs::Permissions::from_mode(0o644)).unwrap();
    // The test binary under the build tree may not be reachable by nobody.
    let bin = d.join("bin/zmem");
    fs::create_dir(d.join("bin")).unwrap();
    fs::copy(BIN, &bin).unwrap();
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
    let tmp = d.join("tmp");
    fs::create_dir(&tmp).unwrap();
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o1777)).unwrap();

    let mut root = verdict(&bin, &c, "1G");
    let root_dir = state_in(&mut root, &d.join("root-state"));
    let mut nobody = Command::new("setpriv");
    nobody
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .args(verdict(&bin, &c, "2G").get_args())
        .env_remove("ZMEM_STATE_DIR")
        .env_remove("XDG_STATE_HOME")
        .env("HOME", "/nonexistent")
        .env("TMPDIR", &tmp);
    let spawn = |c: &mut Command| {
        c.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run zmem")
    };
    let (a, b) = (spawn(&mut root), spawn(&mut nobody));
    let (a, b) = (wait(a), wait(b));
    if text(&b.stderr).contains("Permission denied") && !b.status.success() {
        skip(&format!(
            "SKIP {name}: nobody cannot run the copied binary: {}",
            text(&b.stderr)
        ));
        return;
    }
    assert!(a.status.success(), "root: {}", text(&a.stderr));
    assert!(
        b.status.success(),
        "nobody: {}{}",
        text(&b.stdout),
        text(&b.stderr)
    );
    let (ra, rb) = (shown(&text(&a.stdout)), shown(&text(&b.stdout)));
    assert_eq!(ra.path.parent(), Some(root_dir.as_path()));
    let nobody_dir = rb.path.parent().unwrap();
    assert_eq!(nobody_dir.parent(), Some(tmp.as_path()), "{rb:?}");
    assert!(
        text(&b.stderr)
            .contains("HOME (/nonexistent) does not exist: using a new private directory"),
        "{}",
        text(&b.stderr)
    );
    assert_ne!(ra.disksize_mib, rb.disksize_mib);
    holds_what_was_shown(&ra);
    holds_what_was_shown(&rb);
    for (p, uid) in [(&ra.path, 0), (&rb.path, 65534)] {
        let m = fs::metadata(p).unwrap();
        assert_eq!((m.uid(), m.mode() & 0o777), (uid, 0o600), "{}", p.display());
        assert_eq!(mode(p.parent().unwrap()), 0o700);
    }
}

#[test]
fn out_dir_config_is_private_and_replaced_only_when_zmem_wrote_it() {
    let d = ScratchDir::new("outputs-outdir");
    let c = corpus(d.path());
    let out = d.join("new/out");
    let conf = out.join("zmem.conf");
    for ram in ["1G", "2G"] {
        let mut cmd = verdict(Path::new(BIN), &c, ram);
        cmd.arg("--out-dir").arg(&out);
        let o = run(cmd);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let s = shown(&text(&o.stdout));
        assert_eq!(s.path, conf);
        holds_what_was_shown(&s);
        assert_eq!(mode(&conf), 0o600);
        // A world-readable copy of zmem's own file is replaced by a private one.
        fs::set_permissions(&conf, fs::Permissions::from_mode(0o644)).unwrap();
    }
    assert_eq!(mode(&out), 0o700, "a directory zmem made is private");
    fs::write(&conf, "# my own zram-generator.conf\n").unwrap();
    let mut cmd = verdict(Path::new(BIN), &c, "1G");
    cmd.arg("--out-dir").arg(&out);
    let o = run(cmd);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("not written by zmem"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(
        fs::read_to_string(&conf).unwrap(),
        "# my own zram-generator.conf\n"
    );
    assert_eq!(
        fs::read_dir(&out).unwrap().count(),
        1,
        "no temporary file left"
    );
}

#[test]
fn a_report_replaces_only_a_report_zmem_wrote() {
    let d = ScratchDir::new("outputs-report");
    let c = corpus(d.path());
    let report = d.join("r.html");
    let full = || {
        let mut cmd = Command::new(BIN);
        cmd.args(["bench", "full"]).arg(&c).args([
            "--no-kernel",
            "--algo",
            "lz4",
            "--fs-read",
            "100",
            "--requests",
            "300",
        ]);
        cmd.arg("--report").arg(&report);
        run(cmd)
    };
    for _ in 0..2 {
        let o = full();
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert_eq!(mode(&report), 0o600);
    }
    fs::write(&report, "<!DOCTYPE html><title>my notes</title>\n").unwrap();
    let o = full();
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("not written by zmem"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(
        fs::read_to_string(&report).unwrap(),
        "<!DOCTYPE html><title>my notes</title>\n"
    );
}
