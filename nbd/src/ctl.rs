//! The control socket (docs/ctl-protocol.md): one request line per
//! connection — `read ATTR`, `write ATTR VALUE`, `list` — answered `ok\n` +
//! payload or `err ERRNO_NAME message\n`, then closed.

use std::io::{self, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use zmem_zram::{AttrError, BlockDevice, Errno};

/// Longest request (bytes, newline included).
pub const MAX_REQUEST: usize = 64 * 1024;
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// A parsed control request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CtlRequest {
    Read(String),
    Write(String, String),
    List,
}

fn bad(msg: impl Into<String>) -> AttrError {
    AttrError::new(Errno::EINVAL, msg)
}

fn check_attr(a: &str) -> Result<String, AttrError> {
    if a.is_empty() || a.contains('/') || a.chars().any(char::is_whitespace) {
        return Err(bad(format!("bad attribute name {a:?}")));
    }
    Ok(a.to_string())
}

/// Parse one request (the bytes the client sent, up to end of stream).
/// Exactly one line: a trailing `\n` is optional, nothing may follow it.
pub fn parse_request(raw: &[u8]) -> Result<CtlRequest, AttrError> {
    if raw.len() > MAX_REQUEST {
        return Err(bad(format!("request longer than {MAX_REQUEST} bytes")));
    }
    let text = std::str::from_utf8(raw).map_err(|_| bad("request is not UTF-8"))?;
    let line = text.strip_suffix('\n').unwrap_or(text);
    if line.contains('\n') {
        return Err(bad("one request per connection (found more than one line)"));
    }
    if line == "list" {
        return Ok(CtlRequest::List);
    }
    if let Some(a) = line.strip_prefix("read ") {
        return Ok(CtlRequest::Read(check_attr(a)?));
    }
    if let Some(rest) = line.strip_prefix("write ") {
        let (a, v) = rest
            .split_once(' ')
            .ok_or_else(|| bad("write needs an attribute and a value"))?;
        return Ok(CtlRequest::Write(check_attr(a)?, v.to_string()));
    }
    let shown: String = line.chars().take(40).collect();
    Err(bad(format!(
        "unknown request {shown:?} (read ATTR, write ATTR VALUE, list)"
    )))
}

/// The device and the attribute names it lists (readable and writable).
pub struct Control {
    pub dev: Arc<dyn BlockDevice>,
    pub names: Vec<String>,
}

impl Control {
    /// Answer one request with the reply bytes.
    pub fn answer(&self, raw: &[u8]) -> Vec<u8> {
        let r = parse_request(raw).and_then(|req| match req {
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
        match r {
            Ok(payload) => format!("ok\n{payload}").into_bytes(),
            Err(e) => {
                format!("err {} {}\n", e.errno.name(), e.message.replace('\n', " ")).into_bytes()
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests() {
        assert_eq!(parse_request(b"list\n").unwrap(), CtlRequest::List);
        assert_eq!(
            parse_request(b"read mm_stat\n").unwrap(),
            CtlRequest::Read("mm_stat".into())
        );
        assert_eq!(
            parse_request(b"read mm_stat").unwrap(),
            CtlRequest::Read("mm_stat".into())
        );
        assert_eq!(
            parse_request(b"write recompress type=idle threshold=1024\n").unwrap(),
            CtlRequest::Write("recompress".into(), "type=idle threshold=1024".into())
        );
        for bad in [
            &b"read \n"[..],
            b"read a/b\n",
            b"write disksize\n",
            b"list\nlist\n",
            b"frob\n",
            &[0xff, b'\n'],
        ] {
            assert_eq!(
                parse_request(bad).unwrap_err().errno,
                Errno::EINVAL,
                "{bad:?}"
            );
        }
        assert!(parse_request(&vec![b'a'; MAX_REQUEST + 1]).is_err());
    }
}
