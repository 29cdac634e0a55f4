//! The server: an accept loop, and per connection a few threads that each
//! take a request from the socket, run it on the device and write its reply
//! (the model nbdkit uses): no hand-offs between threads on the way, several
//! requests of one connection in flight at once and served in parallel
//! across cores (the engine locks per slot).
//!
//! * Reading is serialised by the connection's read lock (a buffered reader:
//!   headers and payloads that arrive together cost one syscall); a thread
//!   holds it only while it reads one request, its payload included.
//! * Replies are written whole under the write lock; NBD replies may be out
//!   of order, the cookie pairs them.
//! * A client that stops reading its replies stalls only its own threads:
//!   once [`Limits::max_inflight`] bytes of its replies are pending, the
//!   server reads no more of its requests, and a reply it does not take
//!   within [`Limits::reply_timeout`] drops the connection.
//! * Many such clients cannot add up: all connections together hold at most
//!   [`Limits::max_inflight_total`] bytes (plus one small request each,
//!   [`crate::limits::SMALL_REQUEST`]); beyond it a connection's next request
//!   waits, unread, until replies drain or a reply deadline cuts their client.
//! * Every time limit is a deadline enforced by the accept loop's watchdog
//!   ([`crate::limits`]); connections beyond [`Limits::max_connections`] are
//!   closed at once.
//!
//! Shutdown: [`Server::run`] returns when its stop flag is set. It stops
//! accepting and shuts down the reading side of every connection: each
//! thread sees end of file when it next reads, requests already read finish
//! and their replies go out; after [`Limits::shutdown_grace`] every
//! connection still open is cut, whatever its client does.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use zmem_device::BlockDevice;

use crate::handshake::{drain, negotiate, Export, Outcome};
pub use crate::limits::Limits;
use crate::limits::{Inflight, Watched};
use crate::proto::*;
use crate::stream::{Listener, Stream};
use crate::transmission::{decode, Command};

/// Largest READ/WRITE payload we accept (advertised as the maximum block size).
pub const MAX_PAYLOAD: u32 = 32 << 20;

/// Server settings.
#[derive(Debug, Clone)]
pub struct Options {
    pub export_name: String,
    pub description: String,
    /// Threads per connection = requests of one connection served at once
    /// (default: the number of CPUs, at least 2).
    pub threads: usize,
    /// Log connects and disconnects on stderr.
    pub verbose: bool,
    /// What one client may cost (connections, time, memory).
    pub limits: Limits,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            export_name: "zmem".into(),
            description: "zmem compressed RAM device".into(),
            threads: thread::available_parallelism()
                .map_or(2, |n| n.get())
                .max(2),
            verbose: false,
            limits: Limits::default(),
        }
    }
}

/// Transmission flags of a zmem export.
pub const EXPORT_FLAGS: u16 = TF_HAS_FLAGS
    | TF_SEND_FLUSH
    | TF_SEND_FUA
    | TF_SEND_TRIM
    | TF_SEND_WRITE_ZEROES
    | TF_SEND_FAST_ZERO
    // One device behind every connection, writes complete before their reply,
    // flush is global: every connection sees the same data.
    | TF_CAN_MULTI_CONN;

/// The export description for a device.
pub fn export_for(dev: &dyn BlockDevice, opts: &Options) -> Export {
    Export {
        name: opts.export_name.clone(),
        description: opts.description.clone(),
        size: dev.size(),
        flags: EXPORT_FLAGS,
        min_block: 512,
        preferred_block: 4096,
        max_payload: MAX_PAYLOAD,
    }
}

/// A running NBD server for one device.
pub struct Server {
    dev: Arc<dyn BlockDevice>,
    opts: Options,
    listener: Listener,
}

struct Shared {
    dev: Arc<dyn BlockDevice>,
    failures: crate::failures::Failures,
    export: Export,
    stopping: AtomicBool,
    /// The shutdown grace has passed: requests still running stop at their
    /// next chunk ([`CHUNK`]) and answer ESHUTDOWN.
    cut: AtomicBool,
    /// Bytes in flight across all connections ([`Limits::max_inflight_total`]).
    total: Inflight,
    opts: Options,
}

/// Reads and writes run on the device this many bytes at a time, so a
/// shutdown stops a large request within one chunk's work (a 32 MiB write
/// at zstd level 22 takes tens of seconds whole).
const CHUNK: usize = 256 << 10;

impl Server {
    pub fn new(dev: Arc<dyn BlockDevice>, listener: Listener, opts: Options) -> Server {
        Server {
            dev,
            opts,
            listener,
        }
    }

    pub fn listener(&self) -> &Listener {
        &self.listener
    }

    /// Serve until `stop` is set, then shut down cleanly (see the module
    /// doc). Returns the failed requests by kind.
    pub fn run(self, stop: &AtomicBool) -> io::Result<crate::FailureCounts> {
        let shared = Arc::new(Shared {
            export: export_for(&*self.dev, &self.opts),
            dev: self.dev.clone(),
            failures: Default::default(),
            stopping: AtomicBool::new(false),
            cut: AtomicBool::new(false),
            total: Inflight::new(self.opts.limits.max_inflight_total),
            opts: self.opts.clone(),
        });
        let epoch = Instant::now();
        let conns: Conns = Arc::default();
        let mut handles: Vec<JoinHandle<()>> = Vec::new();
        let mut next_id = 0u64;
        while !stop.load(Ordering::Relaxed) {
            watchdog(&conns);
            match self.listener.accept() {
                Ok(Some(s)) => {
                    next_id += 1;
                    if let Some(h) = admit(&shared, &conns, s, next_id, epoch) {
                        handles.push(h);
                    }
                    handles.retain(|h| !h.is_finished());
                }
                Ok(None) => thread::sleep(Duration::from_millis(20)),
                Err(e) => {
                    eprintln!("zmem serve: accept: {e}");
                    thread::sleep(Duration::from_millis(100));
                }
            }
        }
        shutdown(&shared, &conns, handles);
        Ok(shared.failures.snapshot())
    }
}

type Conns = Arc<Mutex<HashMap<u64, Arc<Watched>>>>;

/// Cuts every connection past one of its deadlines.
fn watchdog(conns: &Conns) {
    let now = Instant::now();
    for w in conns.lock().unwrap_or_else(|e| e.into_inner()).values() {
        w.check(now);
    }
}

/// Starts a thread for a new connection, or closes it when the server is full.
fn admit(
    shared: &Arc<Shared>,
    conns: &Conns,
    s: Stream,
    id: u64,
    epoch: Instant,
) -> Option<JoinHandle<()>> {
    let (max, per) = (
        shared.opts.limits.max_connections,
        shared.opts.limits.max_per_client,
    );
    let client = s.client();
    let (all, theirs) = {
        let c = conns.lock().unwrap_or_else(|e| e.into_inner());
        (c.len(), c.values().filter(|w| w.client == client).count())
    };
    if all >= max || theirs >= per {
        if shared.opts.verbose {
            let why = if all >= max {
                format!("{max} connections already (--max-connections)")
            } else {
                format!("{per} connections of {client} already (--max-connections-per-client)")
            };
            eprintln!("zmem serve: connection {id} ({}) refused: {why}", s.peer());
        }
        let _ = s.shutdown(Shutdown::Both);
        return None;
    }
    let clone = s.try_clone().ok()?;
    let watched = Arc::new(Watched::new(clone, client, epoch));
    conns
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, watched.clone());
    let (shared, conns2) = (shared.clone(), conns.clone());
    let h = thread::Builder::new()
        .name(format!("nbd-conn-{id}"))
        .spawn(move || {
            connection(&shared, s, &watched, id);
            conns2.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        });
    match h {
        Ok(h) => Some(h),
        Err(e) => {
            eprintln!("zmem serve: cannot start a connection thread: {e}");
            conns.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
            None
        }
    }
}

/// No new requests; requests already read get [`Limits::shutdown_grace`] to
/// finish, then every connection is cut and its threads joined.
fn shutdown(shared: &Shared, conns: &Conns, handles: Vec<JoinHandle<()>>) {
    shared.stopping.store(true, Ordering::Relaxed);
    for w in conns.lock().unwrap_or_else(|e| e.into_inner()).values() {
        let _ = w.stream.shutdown(Shutdown::Read);
    }
    let until = Instant::now() + shared.opts.limits.shutdown_grace;
    while Instant::now() < until && handles.iter().any(|h| !h.is_finished()) {
        thread::sleep(Duration::from_millis(10));
    }
    shared.cut.store(true, Ordering::Relaxed);
    for w in conns.lock().unwrap_or_else(|e| e.into_inner()).values() {
        let _ = w.stream.shutdown(Shutdown::Both);
    }
    // Requests still running stop at their next chunk; one chunk of the
    // slowest algorithm is well under a second. A device call that hangs
    // is not waited for beyond this: the process is exiting.
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until && handles.iter().any(|h| !h.is_finished()) {
        thread::sleep(Duration::from_millis(10));
    }
    for h in handles.into_iter().filter(|h| h.is_finished()) {
        let _ = h.join();
    }
}

/// Run a read or write `CHUNK` bytes at a time; `None` (answered
/// ESHUTDOWN) once `sh` says the shutdown grace has passed.
fn in_chunks(
    dev: &dyn BlockDevice,
    sh: &Shared,
    cmd: &Command,
    buf: &mut [u8],
) -> Option<Result<(), zmem_device::IoError>> {
    let (offset, fua, read) = match *cmd {
        Command::Read { offset, .. } => (offset, false, true),
        Command::Write { offset, fua, .. } => (offset, fua, false),
        _ => return Some(crate::transmission::execute_io(dev, cmd, buf)),
    };
    for (i, part) in buf.chunks_mut(CHUNK).enumerate() {
        if sh.cut.load(Ordering::Relaxed) {
            return None;
        }
        let at = offset + (i * CHUNK) as u64;
        let r = if read {
            dev.read_at(at, part)
        } else {
            dev.write_at(at, part)
        };
        if r.is_err() {
            return Some(r);
        }
    }
    Some(if fua { dev.flush() } else { Ok(()) })
}

/// Run one command; the reply buffer is the simple-reply header plus, for a
/// successful READ, the data. Without `sh`, failures are neither counted nor logged.
fn run_job(
    dev: &dyn BlockDevice,
    sh: Option<&Shared>,
    cmd: Command,
    cookie: u64,
    mut payload: Vec<u8>,
) -> Vec<u8> {
    let exec = |buf: &mut [u8]| match match sh {
        Some(sh) => in_chunks(dev, sh, &cmd, buf),
        None => Some(crate::transmission::execute_io(dev, &cmd, buf)),
    } {
        None => NBD_ESHUTDOWN,
        Some(Ok(())) => 0,
        Some(Err(e)) => {
            if let Some(sh) = sh {
                sh.failures.count(&e);
                if sh.opts.verbose {
                    eprintln!("zmem serve: request {cookie:#x} failed: {e}");
                }
            }
            crate::proto::nbd_error(e.errno())
        }
    };
    let mut reply = match cmd {
        Command::Read { len, .. } => {
            let mut buf = vec![0u8; REPLY_LEN + len as usize];
            let err = exec(&mut buf[REPLY_LEN..]);
            if err != 0 {
                buf.truncate(REPLY_LEN);
            }
            put_simple_reply(&mut buf, err, cookie);
            return buf;
        }
        _ => vec![0u8; REPLY_LEN],
    };
    let err = exec(&mut payload);
    put_simple_reply(&mut reply, err, cookie);
    reply
}

fn error_reply(error: u32, cookie: u64) -> Vec<u8> {
    let mut b = vec![0u8; REPLY_LEN];
    put_simple_reply(&mut b, error, cookie);
    b
}

/// What the next request asks for, read whole under the read lock.
enum Next {
    /// A command, its cookie, its WRITE payload and the bytes it holds in flight.
    Run(Command, u64, Vec<u8>, u64),
    Refuse(u32, u64),
    End(&'static str),
}

/// Bytes a command holds until its reply is written: a READ's reply data or
/// a WRITE's payload.
fn inflight_bytes(cmd: &Command) -> u64 {
    match cmd {
        Command::Read { len, .. } | Command::Write { len, .. } => *len as u64,
        _ => 0,
    }
}

/// Reads one request under the connection's limits: idle deadline until its
/// first byte, request deadline for the header and payload, and no read
/// until its bytes fit in the in-flight budget.
fn next_request<R: BufRead>(r: &mut R, c: &Conn) -> Next {
    c.watched.read_within(c.limits.idle_timeout);
    match r.fill_buf() {
        Ok([]) | Err(_) => return Next::End("end of stream"),
        Ok(_) => {}
    }
    c.watched.read_within(Some(c.limits.request_timeout));
    let mut h = [0u8; REQUEST_LEN];
    if r.read_exact(&mut h).is_err() {
        return Next::End("end of stream");
    }
    c.watched.read_within(None);
    let Some(req) = parse_request(&h) else {
        return Next::End("bad request magic");
    };
    let cmd = match decode(&req, c.export.size, c.export.max_payload) {
        Err(refusal) => {
            c.watched.read_within(Some(c.limits.request_timeout));
            let r = match drain(r, refusal.drain) {
                Ok(()) => Next::Refuse(refusal.error, req.cookie),
                Err(_) => Next::End("disconnected mid-request"),
            };
            c.watched.read_within(None);
            return r;
        }
        Ok(Command::Disconnect) => return Next::End("NBD_CMD_DISC"),
        Ok(cmd) => cmd,
    };
    let held = inflight_bytes(&cmd);
    if !c.acquire(held) {
        return Next::End("connection ended");
    }
    let mut payload = Vec::new();
    if let Command::Write { len, .. } = cmd {
        payload = vec![0u8; len as usize];
        c.watched.read_within(Some(c.limits.request_timeout));
        let ok = r.read_exact(&mut payload).is_ok();
        c.watched.read_within(None);
        if !ok {
            c.release(held);
            return Next::End("disconnected mid-request");
        }
    }
    Next::Run(cmd, req.cookie, payload, held)
}

/// One connection in transmission, shared by its threads.
struct Conn<'a> {
    export: &'a Export,
    limits: &'a Limits,
    watched: &'a Watched,
    inflight: Inflight,
    /// The server's budget ([`Shared::total`]) and its cut flag.
    total: &'a Inflight,
    cut: &'a AtomicBool,
    done: AtomicBool,
}

impl Conn<'_> {
    /// Waits until `n` bytes fit in this connection's budget and then the
    /// server's (where a small request of a connection holding nothing else
    /// passes); `false` when the connection or the server ends first.
    fn acquire(&self, n: u64) -> bool {
        let give_up = || self.done.load(Ordering::Acquire) || self.cut.load(Ordering::Relaxed);
        if !self.inflight.acquire(n, &give_up) {
            return false;
        }
        let pass = n <= crate::limits::SMALL_REQUEST && self.inflight.used() == n;
        if !self.total.acquire_or_pass(n, pass, &give_up) {
            self.inflight.release(n);
            return false;
        }
        true
    }

    fn release(&self, n: u64) {
        self.inflight.release(n);
        self.total.release(n);
    }
}

fn connection(sh: &Shared, mut s: Stream, watched: &Watched, id: u64) {
    let peer = s.peer();
    let limits = &sh.opts.limits;
    watched.read_within(Some(limits.handshake_timeout));
    watched.write_within(Some(limits.handshake_timeout));
    let stopping = || sh.stopping.load(Ordering::Relaxed);
    match negotiate(&mut s, &sh.export, &stopping) {
        Ok(Outcome::Transmission) => {}
        Ok(Outcome::Closed) | Err(_) => {
            let _ = s.shutdown(Shutdown::Both);
            return;
        }
    }
    watched.read_within(None);
    watched.write_within(None);
    if sh.opts.verbose {
        eprintln!("zmem serve: connection {id} ({peer}) in transmission");
    }
    let c = Conn {
        export: &sh.export,
        limits,
        watched,
        inflight: Inflight::new(limits.max_inflight),
        total: &sh.total,
        cut: &sh.cut,
        done: AtomicBool::new(false),
    };
    let reason = transmission(sh, &s, &c);
    let _ = s.shutdown(Shutdown::Both);
    // Give the memory of its replies back to the system (glibc keeps freed
    // arenas otherwise: 1.45 GB stayed after clients that read no replies).
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only releases free heap memory; no pointers.
    unsafe {
        libc::malloc_trim(0);
    }
    if sh.opts.verbose {
        let cut = *watched.cut.lock().unwrap_or_else(|e| e.into_inner());
        eprintln!(
            "zmem serve: connection {id} ({peer}) closed: {}",
            cut.unwrap_or(reason)
        );
    }
}

/// The transmission phase: `threads` workers, each reading a request under
/// the read lock, running it and writing its reply under the write lock.
/// Returns why it ended.
fn transmission(sh: &Shared, s: &Stream, c: &Conn) -> &'static str {
    let (Ok(rs), Ok(ws)) = (s.try_clone(), s.try_clone()) else {
        return "cannot clone the socket";
    };
    let reader = Mutex::new(BufReader::with_capacity(256 * 1024, rs));
    let writer = Mutex::new(ws);
    let reason: Mutex<&'static str> = Mutex::new("");
    // Ending the connection also shuts its read side: a sibling thread that
    // is already blocked reading the next header wakes with end of stream
    // instead of waiting forever for a client that has been cut off.
    let end = |why: &'static str| {
        if !c.done.swap(true, Ordering::AcqRel) {
            *reason.lock().unwrap_or_else(|e| e.into_inner()) = why;
        }
        let _ = s.shutdown(Shutdown::Read);
    };
    thread::scope(|sc| {
        for _ in 0..sh.opts.threads.max(1) {
            sc.spawn(|| loop {
                let next = {
                    let mut r = reader.lock().unwrap_or_else(|e| e.into_inner());
                    if c.done.load(Ordering::Acquire) {
                        return;
                    }
                    match next_request(&mut *r, c) {
                        // Marked while the read lock is held, so no sibling
                        // starts another read after the stream has ended.
                        Next::End(why) => {
                            end(why);
                            return;
                        }
                        Next::Run(cmd, cookie, payload, held) => Ok((cmd, cookie, payload, held)),
                        Next::Refuse(error, cookie) => Err((error, cookie)),
                    }
                };
                let (reply, held) = match next {
                    Ok((cmd, cookie, payload, held)) => {
                        (run_job(&*sh.dev, Some(sh), cmd, cookie, payload), held)
                    }
                    Err((error, cookie)) => (error_reply(error, cookie), 0),
                };
                let mut w = writer.lock().unwrap_or_else(|e| e.into_inner());
                c.watched.write_within(Some(c.limits.reply_timeout));
                let ok = w.write_all(&reply).is_ok();
                c.watched.write_within(None);
                drop(reply);
                c.release(held);
                if !ok {
                    end("cannot write a reply");
                    let _ = w.shutdown(Shutdown::Both);
                    return;
                }
            });
        }
    });
    let r = *reason.lock().unwrap_or_else(|e| e.into_inner());
    r
}

/// Serve one connection synchronously from an input byte stream, writing the
/// server's side into `out`: the handshake, then each request run inline.
/// Used by the fuzz target and property tests (same parsers and checks as
/// the threaded server).
pub fn serve_bytes(dev: &dyn BlockDevice, opts: &Options, input: &[u8]) -> Vec<u8> {
    struct Duplex<'a> {
        r: &'a [u8],
        w: Vec<u8>,
    }
    impl Read for Duplex<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.r.read(buf)
        }
    }
    impl Write for Duplex<'_> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.w.write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let export = export_for(dev, opts);
    let mut d = Duplex {
        r: input,
        w: Vec::new(),
    };
    if !matches!(
        negotiate(&mut d, &export, &|| false),
        Ok(Outcome::Transmission)
    ) {
        return d.w;
    }
    loop {
        let mut h = [0u8; REQUEST_LEN];
        if d.r.read_exact(&mut h).is_err() {
            break;
        }
        let Some(req) = parse_request(&h) else { break };
        match decode(&req, export.size, export.max_payload) {
            Err(refusal) => {
                if drain(&mut d.r, refusal.drain).is_err() {
                    break;
                }
                d.w.extend_from_slice(&error_reply(refusal.error, req.cookie));
            }
            Ok(Command::Disconnect) => break,
            Ok(cmd) => {
                let payload = if let Command::Write { len, .. } = cmd {
                    let mut p = vec![0u8; len as usize];
                    if d.r.read_exact(&mut p).is_err() {
                        break;
                    }
                    p
                } else {
                    Vec::new()
                };
                let r = run_job(dev, None, cmd, req.cookie, payload);
                d.w.extend_from_slice(&r);
            }
        }
    }
    d.w
}

/// A flag set by SIGINT, SIGTERM or SIGHUP (for [`Server::run`]): each
/// stops the server cleanly, its socket files removed.
pub fn stop_on_signals() -> io::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(stop)
}
