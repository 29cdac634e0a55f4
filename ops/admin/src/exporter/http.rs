//! `/metrics` over HTTP/1.1: requests parsed by `httparse`, each connection
//! on its own thread, at most [`HttpLimits::max_connections`] at once, each
//! within a deadline for reading its request and writing its answer. A slow
//! or half-sent request costs one connection slot until its deadline and
//! never delays another scrape.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zmem_host::Sys;

/// What one scraper may cost.
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    /// Connections served at once; more are answered 503 and closed.
    pub max_connections: usize,
    /// Reading the request and writing the answer, in all.
    pub deadline: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_connections: 16,
            deadline: Duration::from_secs(5),
        }
    }
}

/// The largest request head read (request line and headers).
const MAX_HEAD: usize = 16 * 1024;

/// Serve `/metrics` on a bound listener; with `max_requests`, stop after
/// that many connections were accepted and answered.
pub fn serve(
    listener: TcpListener,
    sys: &Sys,
    ctl_dir: &str,
    limits: HttpLimits,
    max_requests: Option<usize>,
) -> io::Result<()> {
    let busy = Arc::new(AtomicUsize::new(0));
    let mut accepted = 0;
    std::thread::scope(|sc| {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            if busy.load(Ordering::Acquire) >= limits.max_connections {
                let _ = s.set_write_timeout(Some(Duration::from_millis(100)));
                let _ = respond(
                    &mut s,
                    "503 Service Unavailable",
                    "text/plain",
                    b"busy\n",
                    false,
                );
                let _ = s.shutdown(Shutdown::Both);
                continue;
            }
            busy.fetch_add(1, Ordering::AcqRel);
            let b = busy.clone();
            sc.spawn(move || {
                let _ = handle(s, sys, ctl_dir, limits.deadline);
                b.fetch_sub(1, Ordering::AcqRel);
            });
            accepted += 1;
            if max_requests.is_some_and(|m| accepted >= m) {
                break;
            }
        }
    });
    Ok(())
}

/// The time left before `deadline`, or a timeout error.
fn left(deadline: Instant) -> io::Result<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| io::Error::new(io::ErrorKind::TimedOut, "deadline passed"))
}

/// Reads a request head (up to the blank line) within the deadline.
fn read_head(s: &mut TcpStream, deadline: Instant) -> io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        s.set_read_timeout(Some(left(deadline)?))?;
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.windows(4).any(|w| w == b"\r\n\r\n") || buf.windows(2).any(|w| w == b"\n\n") {
            return Ok(buf);
        }
        if buf.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too large",
            ));
        }
    }
}

/// One connection: one request, one answer, close.
fn handle(mut s: TcpStream, sys: &Sys, ctl_dir: &str, limit: Duration) -> io::Result<()> {
    let deadline = Instant::now() + limit;
    let head = match read_head(&mut s, deadline) {
        Ok(h) => h,
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            s.set_write_timeout(Some(left(deadline)?))?;
            return respond(
                &mut s,
                "431 Request Header Fields Too Large",
                "text/plain",
                b"",
                false,
            );
        }
        Err(e) => return Err(e),
    };
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let parsed = req.parse(&head);
    s.set_write_timeout(Some(left(deadline)?))?;
    let (method, path) = match (parsed, req.method, req.path) {
        (Ok(httparse::Status::Complete(_)), Some(m), Some(p)) => (m, p),
        _ => {
            return respond(
                &mut s,
                "400 Bad Request",
                "text/plain",
                b"bad request\n",
                false,
            )
        }
    };
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return respond(
            &mut s,
            "405 Method Not Allowed",
            "text/plain",
            b"GET or HEAD\n",
            false,
        );
    }
    let path = path.split('?').next().unwrap_or("/");
    match path {
        "/metrics" => {
            let body = super::collect(sys, ctl_dir);
            respond(
                &mut s,
                "200 OK",
                "text/plain; version=0.0.4; charset=utf-8",
                body.as_bytes(),
                head_only,
            )
        }
        "/" => respond(
            &mut s,
            "200 OK",
            "text/html",
            b"<html><body><a href=\"/metrics\">zmem metrics</a></body></html>\n",
            head_only,
        ),
        _ => respond(
            &mut s,
            "404 Not Found",
            "text/plain",
            b"only /metrics is here\n",
            head_only,
        ),
    }
}

/// Writes a whole answer (headers with the body's length; the body unless `head_only`).
fn respond(
    s: &mut TcpStream,
    status: &str,
    ctype: &str,
    body: &[u8],
    head_only: bool,
) -> io::Result<()> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head_only {
        out.extend_from_slice(body);
    }
    s.write_all(&out)?;
    s.flush()
}
