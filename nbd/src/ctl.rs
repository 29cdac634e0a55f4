//! The control socket's server (docs/ctl-protocol.md): one request line per
//! connection — `read ATTR`, `write ATTR VALUE`, `list` — answered `ok\n` +
//! payload or `err ERRNO_NAME message\n`, then closed. The protocol's codec
//! is `zmem_sysfs::ctl`, shared with the client.

use std::io::{self, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use zmem_sysfs::ctl::{self, CtlRequest, MAX_REQUEST};
use zmem_sysfs::BlockDevice;

const IO_TIMEOUT: Duration = Duration::from_secs(5);

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
        s.set_read_timeout(Some(IO_TIMEOUT))?;
        s.set_write_timeout(Some(IO_TIMEOUT))?;
        let mut raw = Vec::new();
        let mut chunk = [0u8; 4096];
        // Until end of stream, a newline, or one byte past the limit.
        loop {
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
        s.write_all(&self.answer(&raw))?;
        s.shutdown(std::net::Shutdown::Write)?;
        // Read what the client still sends (bounded), so closing does not
        // reset the connection before the client has read the reply.
        let _ = io::copy(&mut (&mut s).take(1 << 20), &mut io::sink());
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
    /// Bind `path` (mode 0600) and serve requests on a thread.
    pub fn start(path: &Path, control: Control) -> io::Result<CtlServer> {
        use std::os::unix::fs::PermissionsExt;
        let l: UnixListener = crate::stream::bind_unix(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        l.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let control = Arc::new(control);
        let thread = thread::Builder::new()
            .name("zmem-ctl".into())
            .spawn(move || {
                while !st.load(Ordering::Relaxed) {
                    match l.accept() {
                        Ok((s, _)) => {
                            let c = control.clone();
                            let _ = s.set_nonblocking(false);
                            let _ = thread::Builder::new().name("zmem-ctl-req".into()).spawn(
                                move || {
                                    let _ = c.serve_one(s);
                                },
                            );
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
