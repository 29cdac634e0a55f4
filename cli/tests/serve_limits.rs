//! `zmem serve` against hostile clients: private sockets whatever the umask,
//! a connection cap, deadlines that trickling bytes do not extend, a bound
//! on replies in flight, and shutdown within seconds whatever the clients
//! do (docs/serve.md, "Limits"). Every wait is bounded.

mod serve_common;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serve_common::{tmpdir, wait_within};
use zmem_files::testutil::ScratchDir;
use zmem_nbd::proto::{CMD_READ, FLAG_C_FIXED_NEWSTYLE, OPT_LIST, REQUEST_MAGIC};
use zmem_nbd::Client;

/// `zmem serve` under `umask 000`, with its sockets in a fresh directory
/// (removed after `Drop` has ended the child).
struct Srv {
    child: Child,
    dir: ScratchDir,
}

impl Srv {
    fn start(extra: &[&str]) -> Srv {
        let dir = tmpdir("limits");
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("umask 000; exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_zmem"))
            .args(["serve", "--size", "64M", "--algo", "lz4", "-v", "--listen"])
            .arg(format!("unix:{}", dir.join("nbd.sock").display()))
            .arg("--ctl")
            .arg(dir.join("dev.ctl"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
            .spawn()
            .unwrap();
        let mut line = [0u8; 17];
        child.stdout.take().unwrap().read_exact(&mut line).unwrap();
        assert_eq!(&line, b"listening on unix", "zmem serve did not start");
        Srv { child, dir }
    }
    fn sock(&self) -> PathBuf {
        self.dir.join("nbd.sock")
    }
    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr")).unwrap_or_default()
    }
    fn rss_kib(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let l = s.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        l.split_whitespace().nth(1).unwrap().parse().unwrap()
    }
    fn signal(&self, sig: &str) {
        let st = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
    }
}

impl Drop for Srv {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// How long until the server closes `s` (reads until end of stream), at most `limit`.
fn closed_within(s: &mut UnixStream, limit: Duration) -> Option<Duration> {
    let t = Instant::now();
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buf = vec![0u8; 1 << 20];
    while t.elapsed() < limit {
        match s.read(&mut buf) {
            Ok(0) => return Some(t.elapsed()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return Some(t.elapsed()),
        }
    }
    None
}

fn greeted(p: &Path) -> UnixStream {
    let mut s = UnixStream::connect(p).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut g = [0u8; 18];
    s.read_exact(&mut g).unwrap();
    assert_eq!(&g[..8], b"NBDMAGIC");
    s
}

fn read_request(cookie: u64, offset: u64, len: u32) -> Vec<u8> {
    let mut h = REQUEST_MAGIC.to_be_bytes().to_vec();
    h.extend_from_slice(&0u16.to_be_bytes());
    h.extend_from_slice(&CMD_READ.to_be_bytes());
    h.extend_from_slice(&cookie.to_be_bytes());
    h.extend_from_slice(&offset.to_be_bytes());
    h.extend_from_slice(&len.to_be_bytes());
    h
}

#[test]
fn sockets_are_0600_under_umask_000_and_shared_only_on_request() {
    let s = Srv::start(&[]);
    assert_eq!(mode(&s.sock()), 0o600);
    assert_eq!(mode(&s.dir.join("dev.ctl")), 0o600);
    let shared = Srv::start(&["--socket-mode", "0660", "--socket-group", "0"]);
    assert_eq!(mode(&shared.sock()), 0o660);
    assert_eq!(mode(&shared.dir.join("dev.ctl")), 0o660);
    let bad = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args([
            "serve",
            "--size",
            "1M",
            "--listen",
            "unix:/tmp/x",
            "--socket-mode",
            "0066",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&bad.stderr).contains("includes 0600"));
}

#[test]
fn connections_beyond_the_cap_are_closed_at_once() {
    let s = Srv::start(&["--max-connections", "2"]);
    let a = greeted(&s.sock());
    let _b = greeted(&s.sock());
    let mut c = UnixStream::connect(s.sock()).unwrap();
    let took = closed_within(&mut c, Duration::from_secs(5)).expect("third connection closed");
    assert!(took < Duration::from_secs(2), "{took:?}");
    drop(a);
    let t = Instant::now();
    loop {
        let mut d = UnixStream::connect(s.sock()).unwrap();
        d.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut g = [0u8; 8];
        if d.read_exact(&mut g).is_ok() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "a freed slot is reused"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_handshake_deadline_is_for_the_whole_handshake() {
    let s = Srv::start(&["--handshake-timeout", "1s"]);
    let mut c = greeted(&s.sock());
    c.write_all(&FLAG_C_FIXED_NEWSTYLE.to_be_bytes()).unwrap();
    let t = Instant::now();
    let mut opt = 0x4948_4156_454f_5054u64.to_be_bytes().to_vec(); // IHAVEOPT
    opt.extend_from_slice(&OPT_LIST.to_be_bytes());
    opt.extend_from_slice(&0u32.to_be_bytes());
    // NBD_OPT_LIST every 200 ms: each answered, yet the deadline holds.
    while c.write_all(&opt).is_ok() && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(200));
        let mut buf = [0u8; 4096];
        c.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        if let Ok(0) = c.read(&mut buf) {
            break;
        }
    }
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

#[test]
fn a_half_sent_request_and_an_idle_client_are_cut_at_their_deadlines() {
    let s = Srv::start(&["--request-timeout", "1s"]);
    let mut c = Client::connect(&s.sock(), "zmem").unwrap();
    c.stream()
        .write_all(&read_request(1, 0, 4096)[..10])
        .unwrap();
    let took = closed_within(c.stream(), Duration::from_secs(10)).expect("half request cut");
    assert!(took < Duration::from_secs(3), "{took:?}");
    // Without --idle-timeout an idle client keeps its connection.
    let mut idle = Client::connect(&s.sock(), "zmem").unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        idle.read(0, 4096).unwrap().is_ok(),
        "idle client still served"
    );
    let s = Srv::start(&["--idle-timeout", "1s"]);
    let mut c = Client::connect(&s.sock(), "zmem").unwrap();
    let took = closed_within(c.stream(), Duration::from_secs(10)).expect("idle cut");
    assert!(took < Duration::from_secs(3), "{took:?}");
    let t = Instant::now();
    while !s.stderr().contains("read deadline passed") {
        assert!(t.elapsed() < Duration::from_secs(5), "{}", s.stderr());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn unread_replies_are_bounded_and_dropped_at_the_reply_deadline() {
    let s = Srv::start(&["--threads", "8", "--reply-timeout", "2s"]);
    let before = s.rss_kib();
    let mut c = Client::connect(&s.sock(), "zmem").unwrap();
    for i in 0..16 {
        // Each READ asks for 32 MiB; the client reads none of it.
        let _ = c.stream().write_all(&read_request(i, 0, 32 << 20));
    }
    std::thread::sleep(Duration::from_millis(1000));
    let grown_mib = s.rss_kib().saturating_sub(before) / 1024;
    assert!(
        grown_mib < 120,
        "server grew {grown_mib} MiB for one stalled client"
    );
    let t = Instant::now();
    while !s.stderr().contains("reply not taken in time") {
        assert!(t.elapsed() < Duration::from_secs(10), "{}", s.stderr());
        std::thread::sleep(Duration::from_millis(100));
    }
    // Still serving others.
    let mut other = Client::connect(&s.sock(), "zmem").unwrap();
    assert!(other.read(0, 4096).unwrap().is_ok());
}

/// SIGTERM, SIGINT and SIGHUP each stop the server within 5 s with stalled
/// clients in every phase, and remove both socket files.
#[test]
fn signals_stop_the_server_within_seconds_whatever_the_clients_do() {
    for sig in ["-TERM", "-HUP", "-INT"] {
        let mut s = Srv::start(&[]);
        let _mid_handshake = greeted(&s.sock());
        let mut half = Client::connect(&s.sock(), "zmem").unwrap();
        half.stream()
            .write_all(&read_request(1, 0, 4096)[..7])
            .unwrap();
        let mut stalled = Client::connect(&s.sock(), "zmem").unwrap();
        for i in 0..4 {
            let _ = stalled.stream().write_all(&read_request(i, 0, 32 << 20));
        }
        std::thread::sleep(Duration::from_millis(300));
        s.signal(sig);
        let t = Instant::now();
        let st = wait_within(
            &mut s.child,
            Duration::from_secs(30),
            "zmem serve after a signal",
        );
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{sig}: {:?}",
            t.elapsed()
        );
        assert!(st.success(), "{sig}: {st:?}\n{}", s.stderr());
        assert!(
            !s.sock().exists() && !s.dir.join("dev.ctl").exists(),
            "{sig}: sockets left"
        );
    }
}

/// At mem_limit the client is told ENOSPC — what qemu-img and nbdcopy
/// report as "No space left on device" — where the kernel's zram would say
/// EIO; the server logs each failure with its reason and counts them by kind.
#[test]
fn full_device_is_enospc_for_real_clients_and_counted() {
    let tools: Vec<&str> = ["qemu-img", "nbdcopy"]
        .into_iter()
        .filter(|t| serve_common::have(t))
        .collect();
    if tools.is_empty() {
        zmem_files::testutil::skip(
            "SKIP full_device_is_enospc_for_real_clients_and_counted: neither qemu-img nor nbdcopy installed",
        );
        return;
    }
    let mut s = Srv::start(&["--mem-limit", "1M"]);
    let data = s.dir.join("rand");
    let bytes: Vec<u8> = (0..8u64 << 20)
        .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 29) as u8)
        .collect();
    std::fs::write(&data, bytes).unwrap();
    let uri = format!("nbd+unix:///zmem?socket={}", s.sock().display());
    for t in &tools {
        let mut cmd = Command::new(t);
        match *t {
            "qemu-img" => cmd
                .args(["convert", "-n", "-O", "raw"])
                .arg(&data)
                .arg(&uri),
            _ => cmd.arg(&data).arg(&uri),
        };
        let o = serve_common::output_within(&mut cmd, Duration::from_secs(120));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success(),
            "{t} wrote 8 MiB into a 1 MiB mem_limit"
        );
        assert!(e.contains("No space left on device"), "{t}: {e}");
    }
    s.signal("-TERM");
    wait_within(&mut s.child, Duration::from_secs(30), "zmem serve");
    let log = s.stderr();
    assert!(log.contains("failed: no space"), "{log}");
    let line = log
        .lines()
        .find(|l| l.contains("failed requests:"))
        .unwrap();
    assert!(
        !line.contains(" 0 no space") && line.contains("EIO"),
        "{line}"
    );
}
