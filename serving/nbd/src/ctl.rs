//! The control socket's server (docs/ctl-protocol.md): one request line per
//! connection — `read ATTR`, `write ATTR VALUE`, `list` — answered `ok\n` +
//! payload or `err ERRNO_NAME message\n`, then closed. The protocol's codec
//! is `zmem_device::ctl`, shared with the client.

use std::io::{self, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use zmem_device::ctl::{self, CtlRequest, MAX_REQUEST};
use zmem_device::BlockDevice;

/// A request must arrive within this time of the connection, and its reply
/// be taken within this time of being ready; the operation in between
/// takes what it takes (as a sysfs write does).
const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// Requests served at once; more connections are closed at once.
pub const MAX_CTL_CONNECTIONS: usize = 16;

/// The device and the attribute names it lists (readable and writable).
pub struct Control {
    pub dev: Arc<dyn BlockDevice>,
    pub names: Vec<String>,
}

impl Control {
    /// Answer one request with the reply bytes.
    pub fn answer(&self, raw: &[u8]) -> Vec<u8> {
        let r = ctl::parse_request(raw).and_then(|req| match req {
            CtlRequest::List => Ok(self
                .names
                .iter()
                .map(|n| format!("{n}\n"))
                .collect::<String>()),
            CtlRequest::Read(a) => self.dev.attr_read(&a),
            // As `echo VALUE > /sys/block/zramN/ATTR`: the value arrives with a newline.
            CtlRequest::Write(a, v) => self
                .dev
                .attr_write(&a, &format!("{v}\n"))
                .map(|()| String::new()),
        });
        ctl::render_reply(&r)
    }

    fn serve_one(&self, mut s: UnixStream) -> io::Result<()> {
        let deadline = std::cell::Cell::new(std::time::Instant::now() + REQUEST_DEADLINE);
        // Each read and write may only take what is left of the deadline: a
        // client trickling bytes does not extend it.
        let left = || {
            deadline
                .get()
                .checked_duration_since(std::time::Instant::now())
                .filter(|d| !d.is_zero())
                .ok_or_else(|| io::Error::new(io::ErrorKind::TimedOut, "request deadline"))
        };
        let mut raw = Vec::new();
        let mut chunk = [0u8; 4096];
        // Until end of stream, a newline, or one byte past the limit.
        loop {
            s.set_read_timeout(Some(left()?))?;
            let n = s.read(&mut chunk)?;
            if n == 0 {
                break;
            }
            raw.extend_from_slice(&chunk[..n]);
            if raw.contains(&b'\n') || raw.len() > MAX_REQUEST {
                break;
            }
        }
        // One request per connection: the first line is it.
        if let Some(i) = raw.iter().position(|&b| b == b'\n') {
            raw.truncate(i + 1);
        }
        let reply = self.answer(&raw);
        deadline.set(std::time::Instant::now() + REQUEST_DEADLINE);
        s.set_write_timeout(Some(left()?))?;
        s.write_all(&reply)?;
        s.shutdown(std::net::Shutdown::Write)?;
        // Read what the client still sends (bounded), so closing does not
        // reset the connection before the client has read the reply.
        if let Ok(t) = left() {
            let _ = s.set_read_timeout(Some(t));
            let _ = io::copy(&mut (&mut s).take(1 << 20), &mut io::sink());
        }
        Ok(())
    }
}

/// A control socket being served; stops and removes its file on drop.
pub struct CtlServer {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl CtlServer {
    /// Bind `path` with `perms` (0600 by default, atomically: see
    /// [`crate::stream::bind_unix`]) and serve requests on a thread, at most
    /// [`MAX_CTL_CONNECTIONS`] at once, each within a 5 s deadline.
    pub fn start(
        path: &Path,
        control: Control,
        perms: crate::stream::SocketPerms,
    ) -> io::Result<CtlServer> {
        let l: UnixListener = crate::stream::bind_unix(path, perms)?;
        l.set_nonblocking(true)?;
        let busy = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let control = Arc::new(control);
        let thread = thread::Builder::new()
            .name("zmem-ctl".into())
            .spawn(move || {
                while !st.load(Ordering::Relaxed) {
                    match l.accept() {
                        Ok((s, _)) => {
                            if busy.load(Ordering::Acquire) >= MAX_CTL_CONNECTIONS {
                                let _ = s.shutdown(std::net::Shutdown::Both);
                                continue;
                            }
                            busy.fetch_add(1, Ordering::AcqRel);
                            let (c, b) = (control.clone(), busy.clone());
                            let _ = s.set_nonblocking(false);
                            let spawned = thread::Builder::new().name("zmem-ctl-req".into()).spawn(
                                move || {
                                    let _ = c.serve_one(s);
                                    b.fetch_sub(1, Ordering::AcqRel);
                                },
                            );
                            if spawned.is_err() {
                                busy.fetch_sub(1, Ordering::AcqRel);
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            thread::sleep(Duration::from_millis(20))
                        }
                        Err(e) => {
                            eprintln!("zmem serve: control socket accept: {e}");
                            thread::sleep(Duration::from_millis(100));
                        }
                    }
                }
            })?;
        Ok(CtlServer {
            path: path.to_path_buf(),
            stop,
            thread: Some(thread),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for CtlServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}
