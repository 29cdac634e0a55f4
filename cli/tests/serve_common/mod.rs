// A `zmem serve` child process on a temporary Unix socket, for the serve_* tests.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

static N: AtomicUsize = AtomicUsize::new(0);

pub fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zmem-serve-{tag}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Whether `tool` runs (`tool --version` or `tool -V` exits at all).
pub fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false)
}

pub struct Served {
    pub child: Child,
    pub dir: PathBuf,
    pub sock: PathBuf,
    pub ctl: PathBuf,
    stderr: PathBuf,
}

impl Served {
    /// `zmem serve --size SIZE --algo lz4 --listen unix:… --ctl … EXTRA…`, waiting until it listens.
    pub fn start(size: &str, extra: &[&str]) -> Served {
        let dir = tmpdir("srv");
        let sock = dir.join("nbd.sock");
        let ctl = dir.join("dev.ctl");
        let stderr = dir.join("stderr");
        let mut child = Command::new(env!("CARGO_BIN_EXE_zmem"))
            .args(["serve", "--size", size, "--algo", "lz4", "--export", "zmem"])
            .arg("--listen")
            .arg(format!("unix:{}", sock.display()))
            .arg("--ctl")
            .arg(&ctl)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert!(
            line.starts_with("listening on unix:"),
            "zmem serve did not start: {line:?}; stderr: {}",
            std::fs::read_to_string(&stderr).unwrap_or_default()
        );
        Served { child, dir, sock, ctl, stderr }
    }

    /// The libnbd/qemu URI of the export.
    pub fn uri(&self) -> String {
        format!("nbd+unix:///zmem?socket={}", self.sock.display())
    }

    /// SIGTERM, wait, and return (exit success, stderr).
    pub fn stop(mut self) -> (bool, String) {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let st = self.child.wait().unwrap();
        (st.success(), std::fs::read_to_string(&self.stderr).unwrap_or_default())
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Run a command; panic with its output when it fails.
pub fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Mixed test data: text, zeros, random bytes.
pub fn mixed_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let text = b"zmem serves a compressed RAM disk over NBD; ";
    (0..len)
        .map(|i| match (i / 65536) % 3 {
            0 => text[i % text.len()],
            1 => 0,
            _ => {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            }
        })
        .collect()
}

pub fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}
