// A `zmem serve` child process on a temporary Unix socket, for the serve_* tests.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use zmem_files::testutil::ScratchDir;

/// A private scratch directory, removed with what is in it when dropped; its
/// path is short enough for the Unix sockets put in it.
pub fn tmpdir(tag: &str) -> ScratchDir {
    ScratchDir::new(&format!("serve-{tag}"))
}

/// Whether `tool` runs (`tool --version` or `tool -V` exits at all).
pub fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

#[allow(unused_imports)]
pub use zmem_files::euid_is_root as is_root;

/// `zmem serve ARGS…` started, and the first line it printed, which says it
/// listens. Its stderr goes to the file `stderr` (quoted when it does not
/// start) or nowhere. A server that does not start is killed before the test fails.
pub fn spawn_serve<S: AsRef<OsStr>>(args: &[S], stderr: Option<&Path>) -> (Child, String) {
    let err = match stderr {
        Some(p) => Stdio::from(std::fs::File::create(p).unwrap()),
        None => Stdio::null(),
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(err)
        .spawn()
        .expect("run zmem serve");
    let mut line = String::new();
    let _ = BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
    if !line.starts_with("listening on") {
        let _ = child.kill();
        let _ = child.wait();
        let text = stderr.map(|p| std::fs::read_to_string(p).unwrap_or_default());
        panic!(
            "zmem serve did not start: {line:?}; stderr: {}",
            text.unwrap_or_default()
        );
    }
    (child, line)
}

pub struct Served {
    pub child: Child,
    pub dir: PathBuf,
    pub sock: PathBuf,
    pub ctl: PathBuf,
    stderr: PathBuf,
    /// Holds `dir`: dropped (removed) after `Drop` has ended the child.
    _scratch: ScratchDir,
}

impl Served {
    /// `zmem serve --size SIZE --algo lz4 --listen unix:… --ctl … EXTRA…`, waiting until it listens.
    pub fn start(size: &str, extra: &[&str]) -> Served {
        let scratch = tmpdir("srv");
        let dir = scratch.path().to_path_buf();
        let sock = dir.join("nbd.sock");
        let ctl = dir.join("dev.ctl");
        let stderr = dir.join("stderr");
        let listen = format!("unix:{}", sock.display());
        let head = [
            "--size", size, "--algo", "lz4", "--export", "zmem", "--listen",
        ];
        let mut args: Vec<&OsStr> = head.iter().map(OsStr::new).collect();
        args.extend([OsStr::new(&listen), OsStr::new("--ctl"), ctl.as_os_str()]);
        args.extend(extra.iter().map(OsStr::new));
        let (child, line) = spawn_serve(&args, Some(&stderr));
        assert!(line.starts_with("listening on unix:"), "{line:?}");
        Served {
            child,
            dir,
            sock,
            ctl,
            stderr,
            _scratch: scratch,
        }
    }

    /// The libnbd/qemu URI of the export.
    pub fn uri(&self) -> String {
        format!("nbd+unix:///zmem?socket={}", self.sock.display())
    }

    /// SIGTERM, wait, and return (exit success, stderr).
    pub fn stop(mut self) -> (bool, String) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let st = wait_within(
            &mut self.child,
            Duration::from_secs(60),
            "zmem serve after SIGTERM",
        );
        (
            st.success(),
            std::fs::read_to_string(&self.stderr).unwrap_or_default(),
        )
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
        // `_scratch` goes after this, with the sockets and stderr in it.
    }
}

/// How long one client command (fio, qemu-img, mkfs, ...) may run before the
/// test kills it and fails: a hang must fail the test, not stall the suite.
pub const COMMAND_LIMIT: Duration = Duration::from_secs(300);

/// Wait for `child` at most `limit`; past it, kill it and panic naming `what`.
pub fn wait_within(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = child
            .try_wait()
            .unwrap_or_else(|e| panic!("{what}: wait: {e}"))
        {
            return st;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running after {limit:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `cmd.output()`, but killed (and the test failed) after `limit`.
pub fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let status = wait_within(&mut child, limit, &what);
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Run a command (at most [`COMMAND_LIMIT`]); panic with its output when it fails.
pub fn run(cmd: &mut Command) -> String {
    let out = output_within(cmd, COMMAND_LIMIT);
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
