//! Hostile input, round 4 (issue 46), `zmem serve`'s keeper: a socket
//! another user bound where the keeper's goes is never trusted (finding 1),
//! and a recovering server whose keeper dies at the handoff keeps serving
//! what it recovered (finding 6). The keeper's refusal reaching the client
//! (finding 14) is a unit test of serve's keeper (`hold.rs`).

mod hostile_common;
mod serve_common;

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hostile_common::{as_nobody, places, python};
use serve_common::{output_within, spawn_serve, tmpdir, wait_within};

const LIMIT: Duration = Duration::from_secs(60);

/// The attacker's keeper: binds `SOCK_SEQPACKET` at argv[1], open to all,
/// and notes every connection in argv[2] (then answers as a keeper holding
/// a store would).
const FAKE_KEEPER: &str = r#"
import os, socket, sys
path, log = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(path)
os.chmod(path, 0o777)
s.listen(4)
open(log + ".ready", "w").close()
s.settimeout(120)
while True:
    try:
        c, _ = s.accept()
    except Exception:
        break
    with open(log, "a") as f:
        f.write("connected\n")
    try:
        c.recv(4096)
    except Exception:
        pass
    c.send(b"OK\nkeeper_pid %d\nheld true\nowner_pid 1\nowner_alive false\n" % os.getpid())
    c.close()
"#;

/// A child killed and reaped when dropped (the attacker's process).
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The fake keeper, as nobody, at `sock`, noting connections in `log`.
fn fake_keeper(test: &str, sock: &Path, log: &Path) -> Option<Reaped> {
    let py = python(test)?;
    let mut c = as_nobody(test, py)?;
    let child = c
        .args(["-c", FAKE_KEEPER])
        .arg(sock)
        .arg(log)
        .stdout(Stdio::null())
        .spawn()
        .expect("setpriv python3");
    let r = Reaped(child);
    let ready = std::path::PathBuf::from(format!("{}.ready", log.display()));
    let t0 = Instant::now();
    while !ready.exists() {
        assert!(t0.elapsed() < LIMIT, "the attacker's socket never came up");
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(r)
}

fn serve_args(ctl: &Path, listen: &Path, extra: &[&str]) -> Vec<std::ffi::OsString> {
    let mut v: Vec<std::ffi::OsString> =
        ["serve", "--size", "16M", "--algo", "lz4", "--export", "x"]
            .iter()
            .map(|s| s.into())
            .collect();
    v.push("--listen".into());
    v.push(format!("unix:{}", listen.display()).into());
    v.push("--ctl".into());
    v.push(ctl.into());
    v.extend(extra.iter().map(|s| s.into()));
    v
}

#[test]
fn a_keeper_socket_another_user_bound_is_never_trusted() {
    let test = "a_keeper_socket_another_user_bound_is_never_trusted";
    if as_nobody(test, "true").is_none() || python(test).is_none() {
        return;
    }
    let p = places("hostile-keeper");
    // In a sticky directory anyone may write (as /tmp), and in nobody's own.
    for dir in [&p.shared, &p.theirs] {
        let sock = dir.join("x.keep");
        let log = p.shared.join(format!(
            "{}.log",
            dir.file_name().unwrap().to_string_lossy()
        ));
        let Some(_attacker) = fake_keeper(test, &sock, &log) else {
            return;
        };
        let args = serve_args(
            &dir.join("x.ctl"),
            &p.scratch.join("n.sock"),
            &["--recover"],
        );
        let out = output_within(Command::new(env!("CARGO_BIN_EXE_zmem")).args(&args), LIMIT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "root recovered from nobody's socket: {err}"
        );
        assert!(err.contains("uid 65534"), "{err}");
        assert!(
            !log.exists(),
            "root connected to the socket nobody bound in {}: {err}",
            dir.display()
        );
    }
    // A plain serve beside the planted socket (sticky directory): served,
    // not recoverable, and it never asks the attacker's keeper anything.
    let log = p.shared.join("shared.log");
    let err = p.scratch.join("serve.stderr");
    let args = serve_args(&p.shared.join("x.ctl"), &p.scratch.join("n.sock"), &[]);
    let (mut child, _) = spawn_serve(&args[1..], Some(&err));
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    wait_within(&mut child, LIMIT, "zmem serve after SIGTERM");
    let said = std::fs::read_to_string(&err).unwrap();
    assert!(said.contains("not recoverable after a crash"), "{said}");
    assert!(said.contains("uid 65534"), "{said}");
    assert!(!log.exists(), "root's server asked nobody's keeper: {said}");
}

/// `zmem serve ARGS` with `env`, once it listens; stderr to `err`.
fn spawn_with(args: &[&OsStr], env: &[(&str, &str)], err: &Path) -> Result<Child, String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .arg("serve")
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(err).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let _ = BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
    if line.starts_with("listening on") {
        return Ok(child);
    }
    let _ = child.kill();
    let _ = child.wait();
    Err(std::fs::read_to_string(err).unwrap_or_default())
}

/// Ends the keeper a server started (by its pid, from the server's words)
/// when the test ends, if it is still there: a failed test leaves nothing.
struct KeeperGone(Option<u32>);

impl KeeperGone {
    fn of(stderr: &Path) -> KeeperGone {
        let t = std::fs::read_to_string(stderr).unwrap_or_default();
        let pid = t
            .split("the keeper (pid ")
            .nth(1)
            .and_then(|r| r.split(')').next())
            .and_then(|p| p.parse().ok());
        KeeperGone(pid)
    }
}

impl Drop for KeeperGone {
    fn drop(&mut self) {
        let Some(pid) = self.0 else { return };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() == "zmem-keeper" {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

fn page(k: u64) -> Vec<u8> {
    format!("page {k:>6} written before the crash ")
        .bytes()
        .cycle()
        .take(4096)
        .collect()
}

#[test]
fn a_recovering_server_keeps_serving_when_the_keeper_dies_at_the_handoff() {
    let scratch = tmpdir("keeper-dies");
    let dir = scratch.path();
    let sock = dir.join("nbd.sock");
    let listen = format!("unix:{}", sock.display());
    let ctl = dir.join("dev.ctl");
    let args: Vec<&OsStr> = [
        "--size", "16M", "--algo", "lz4", "--export", "zmem", "--listen",
    ]
    .iter()
    .map(OsStr::new)
    .chain([OsStr::new(&listen), OsStr::new("--ctl"), ctl.as_os_str()])
    .collect();
    let (mut a, _) = spawn_serve(&args, Some(&dir.join("a.stderr")));
    let _gone = KeeperGone::of(&dir.join("a.stderr"));
    let mut c = zmem_nbd::Client::connect(&sock, "zmem").expect("connect");
    for k in 0..64u64 {
        assert_eq!(c.write(k * 4096, &page(k)).unwrap(), 0);
    }
    drop(c);
    a.kill().unwrap();
    a.wait().unwrap();

    let mut rec = args.clone();
    rec.push(OsStr::new("--recover"));
    let err = dir.join("b.stderr");
    let b = spawn_with(&rec, &[("ZMEM_TEST_KILL_KEEPER", "1")], &err);
    let mut b = b.unwrap_or_else(|e| panic!("the recovering server exited: {e}"));
    let said = std::fs::read_to_string(&err).unwrap();
    assert!(said.contains("zmem serve: recovered 64 pages"), "{said}");
    assert!(said.contains("did not take the store"), "{said}");
    assert!(said.contains("still serving"), "{said}");
    let mut c = zmem_nbd::Client::connect(&sock, "zmem").expect("connect to the recovered server");
    for k in 0..64u64 {
        let got = c.read(k * 4096, 4096).unwrap().expect("read");
        assert_eq!(got, page(k), "page {k} after the recovery");
    }
    drop(c);
    let _ = Command::new("kill").arg(b.id().to_string()).status();
    assert!(wait_within(&mut b, LIMIT, "the recovered server").success());
}
