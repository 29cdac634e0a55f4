//! The server: an accept loop, a reader thread and a writer thread per
//! connection, and one pool of worker threads shared by all connections.
//!
//! * The reader runs the handshake, then parses requests; refused requests
//!   are answered at once, the rest become jobs for the pool (a WRITE's
//!   payload is read first). At most `max_inflight` requests per connection
//!   are queued or running; the reader waits for a free slot, so a client
//!   that never reads its replies stalls only itself.
//! * Workers run jobs on the device in parallel (the engine locks per slot)
//!   and hand the finished reply to the connection's writer.
//! * The writer sends replies in completion order (NBD replies may be out of
//!   order; the cookie pairs them) and frees the slot.
//!
//! Shutdown: [`Server::run`] returns when its stop flag is set. It stops
//! accepting, shuts down the reading side of every connection (the reader
//! sees end of file), lets in-flight requests finish and their replies go
//! out, then closes every connection and stops the workers.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use zmem_zram::BlockDevice;

use crate::handshake::{drain, negotiate, Export, Outcome};
use crate::proto::*;
use crate::stream::{Listener, Stream};
use crate::transmission::{decode, execute, Command};

/// Largest READ/WRITE payload we accept (advertised as the maximum block size).
pub const MAX_PAYLOAD: u32 = 32 << 20;
/// Handshake must finish within this time.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// Server settings.
#[derive(Debug, Clone)]
pub struct Options {
    pub export_name: String,
    pub description: String,
    /// Worker threads (default: the number of CPUs).
    pub threads: usize,
    /// Requests queued or running per connection.
    pub max_inflight: usize,
    /// Log connects and disconnects on stderr.
    pub verbose: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            export_name: "zmem".into(),
            description: "zmem compressed RAM device".into(),
            threads: thread::available_parallelism().map_or(2, |n| n.get()).max(2),
            max_inflight: 64,
            verbose: false,
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

struct Job {
    cmd: Command,
    cookie: u64,
    /// WRITE payload.
    payload: Vec<u8>,
    reply: Sender<(Vec<u8>, u64)>,
}

/// Bytes of payload (WRITE data, READ replies) one connection may hold in flight.
const MAX_INFLIGHT_BYTES: u64 = 128 << 20;

/// One connection's in-flight window: requests and payload bytes queued,
/// running or waiting to be written.
struct Window {
    used: Mutex<(usize, u64)>,
    freed: Condvar,
    max: usize,
}

impl Window {
    fn acquire(&self, bytes: u64) {
        let mut u = self.used.lock().unwrap_or_else(|e| e.into_inner());
        // A single request larger than the byte budget still runs, alone.
        while u.0 >= self.max || (u.0 > 0 && u.1 + bytes > MAX_INFLIGHT_BYTES) {
            u = self.freed.wait(u).unwrap_or_else(|e| e.into_inner());
        }
        u.0 += 1;
        u.1 += bytes;
    }
    fn release(&self, bytes: u64) {
        let mut u = self.used.lock().unwrap_or_else(|e| e.into_inner());
        u.0 -= 1;
        u.1 -= bytes;
        drop(u);
        self.freed.notify_all();
    }
    fn wait_idle(&self) {
        let mut u = self.used.lock().unwrap_or_else(|e| e.into_inner());
        while u.0 > 0 {
            u = self.freed.wait(u).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Payload bytes a command holds while in flight.
fn cost(cmd: &Command) -> u64 {
    match *cmd {
        Command::Read { len, .. } | Command::Write { len, .. } => len as u64,
        _ => 0,
    }
}

/// A running NBD server for one device.
pub struct Server {
    dev: Arc<dyn BlockDevice>,
    opts: Options,
    listener: Listener,
}

struct Shared {
    export: Export,
    jobs: Mutex<Option<Sender<Job>>>,
    stopping: AtomicBool,
    opts: Options,
}

impl Server {
    pub fn new(dev: Arc<dyn BlockDevice>, listener: Listener, opts: Options) -> Server {
        Server { dev, opts, listener }
    }

    pub fn listener(&self) -> &Listener {
        &self.listener
    }

    /// Serve until `stop` is set, then shut down cleanly (see the module doc).
    pub fn run(self, stop: &AtomicBool) -> io::Result<()> {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let workers: Vec<JoinHandle<()>> = (0..self.opts.threads.max(1))
            .map(|i| {
                let rx = rx.clone();
                let dev = self.dev.clone();
                thread::Builder::new()
                    .name(format!("nbd-worker-{i}"))
                    .spawn(move || worker(&*dev, &rx))
                    .expect("spawn worker thread")
            })
            .collect();
        let shared = Arc::new(Shared {
            export: export_for(&*self.dev, &self.opts),
            jobs: Mutex::new(Some(tx)),
            stopping: AtomicBool::new(false),
            opts: self.opts.clone(),
        });
        let conns: Arc<Mutex<HashMap<u64, Stream>>> = Arc::default();
        let mut handles: Vec<JoinHandle<()>> = Vec::new();
        let next_id = AtomicU64::new(0);
        while !stop.load(Ordering::Relaxed) {
            match self.listener.accept() {
                Ok(Some(s)) => {
                    let id = next_id.fetch_add(1, Ordering::Relaxed);
                    let Ok(clone) = s.try_clone() else { continue };
                    conns.lock().unwrap_or_else(|e| e.into_inner()).insert(id, clone);
                    let shared = shared.clone();
                    let conns = conns.clone();
                    let h = thread::Builder::new().name(format!("nbd-conn-{id}")).spawn(move || {
                        connection(&shared, s, id);
                        conns.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                    });
                    match h {
                        Ok(h) => handles.push(h),
                        Err(e) => eprintln!("zmem serve: cannot start a connection thread: {e}"),
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
        // Shutdown: no new connections or requests; let in-flight ones finish.
        shared.stopping.store(true, Ordering::Relaxed);
        for s in conns.lock().unwrap_or_else(|e| e.into_inner()).values() {
            let _ = s.shutdown(Shutdown::Read);
        }
        for h in handles {
            let _ = h.join();
        }
        shared.jobs.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(shared);
        for w in workers {
            let _ = w.join();
        }
        Ok(())
    }
}

fn worker(dev: &dyn BlockDevice, rx: &Mutex<Receiver<Job>>) {
    loop {
        let job = match rx.lock().unwrap_or_else(|e| e.into_inner()).recv() {
            Ok(j) => j,
            Err(_) => return,
        };
        let c = cost(&job.cmd);
        let reply = run_job(dev, job.cmd, job.cookie, job.payload);
        // The writer may be gone (client vanished); the slot is then moot.
        let _ = job.reply.send((reply, c));
    }
}

/// Run one command; the reply buffer is the simple-reply header plus, for a
/// successful READ, the data.
fn run_job(dev: &dyn BlockDevice, cmd: Command, cookie: u64, mut payload: Vec<u8>) -> Vec<u8> {
    let mut reply = match cmd {
        Command::Read { len, .. } => {
            let mut buf = vec![0u8; REPLY_LEN + len as usize];
            let err = execute(dev, &cmd, &mut buf[REPLY_LEN..]);
            if err != 0 {
                buf.truncate(REPLY_LEN);
            }
            put_simple_reply(&mut buf, err, cookie);
            return buf;
        }
        _ => vec![0u8; REPLY_LEN],
    };
    let err = execute(dev, &cmd, &mut payload);
    put_simple_reply(&mut reply, err, cookie);
    reply
}

fn error_reply(error: u32, cookie: u64) -> Vec<u8> {
    let mut b = vec![0u8; REPLY_LEN];
    put_simple_reply(&mut b, error, cookie);
    b
}

fn connection(sh: &Shared, mut s: Stream, id: u64) {
    let peer = s.peer();
    let _ = s.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
    let _ = s.set_write_timeout(Some(HANDSHAKE_TIMEOUT));
    let stopping = || sh.stopping.load(Ordering::Relaxed);
    match negotiate(&mut s, &sh.export, &stopping) {
        Ok(Outcome::Transmission) => {}
        Ok(Outcome::Closed) | Err(_) => {
            let _ = s.shutdown(Shutdown::Both);
            return;
        }
    }
    let _ = s.set_read_timeout(None);
    let _ = s.set_write_timeout(None);
    if sh.opts.verbose {
        eprintln!("zmem serve: connection {id} ({peer}) in transmission");
    }
    let Ok(mut out) = s.try_clone() else { return };
    let window = Arc::new(Window { used: Mutex::new((0, 0)), freed: Condvar::new(), max: sh.opts.max_inflight.max(1) });
    let (reply_tx, reply_rx) = mpsc::channel::<(Vec<u8>, u64)>();
    let w2 = window.clone();
    let writer = thread::Builder::new().name(format!("nbd-writer-{id}")).spawn(move || {
        let mut broken = false;
        for (buf, bytes) in reply_rx {
            if !broken && out.write_all(&buf).is_err() {
                broken = true;
            }
            drop(buf);
            w2.release(bytes);
        }
        let _ = out.shutdown(Shutdown::Both);
    });
    let Ok(writer) = writer else { return };
    let jobs = sh.jobs.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let reason = match jobs {
        Some(jobs) => read_requests(sh, &mut s, &window, &reply_tx, &jobs),
        None => "server stopping",
    };
    // In-flight requests finish and their replies go out before the close.
    window.wait_idle();
    drop(reply_tx);
    let _ = writer.join();
    let _ = s.shutdown(Shutdown::Both);
    if sh.opts.verbose {
        eprintln!("zmem serve: connection {id} ({peer}) closed: {reason}");
    }
}

/// Parse requests until the client disconnects; returns why the loop ended.
fn read_requests(
    sh: &Shared,
    s: &mut Stream,
    window: &Window,
    reply: &Sender<(Vec<u8>, u64)>,
    jobs: &Sender<Job>,
) -> &'static str {
    let size = sh.export.size;
    loop {
        let mut h = [0u8; REQUEST_LEN];
        if s.read_exact(&mut h).is_err() {
            return "end of stream";
        }
        let Some(req) = parse_request(&h) else { return "bad request magic" };
        match decode(&req, size, sh.export.max_payload) {
            Err(refusal) => {
                if drain(s, refusal.drain).is_err() {
                    return "disconnected mid-request";
                }
                window.acquire(0);
                if reply.send((error_reply(refusal.error, req.cookie), 0)).is_err() {
                    window.release(0);
                    return "writer gone";
                }
            }
            Ok(Command::Disconnect) => return "NBD_CMD_DISC",
            Ok(cmd) => {
                let c = cost(&cmd);
                window.acquire(c);
                let payload = if let Command::Write { len, .. } = cmd {
                    let mut p = vec![0u8; len as usize];
                    if s.read_exact(&mut p).is_err() {
                        window.release(c);
                        return "disconnected mid-request";
                    }
                    p
                } else {
                    Vec::new()
                };
                if jobs.send(Job { cmd, cookie: req.cookie, payload, reply: reply.clone() }).is_err() {
                    window.release(c);
                    return "server stopping";
                }
            }
        }
    }
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
    let mut d = Duplex { r: input, w: Vec::new() };
    if !matches!(negotiate(&mut d, &export, &|| false), Ok(Outcome::Transmission)) {
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
                let r = run_job(dev, cmd, req.cookie, payload);
                d.w.extend_from_slice(&r);
            }
        }
    }
    d.w
}

/// Lock all current and future pages in RAM (`--mlock`), so a device used as
/// swap on the same host is never itself swapped out.
pub fn mlock_all() -> io::Result<()> {
    // SAFETY: mlockall takes only flags and touches no Rust-visible memory.
    let r = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A flag set by SIGINT or SIGTERM (for [`Server::run`]).
pub fn stop_on_signals() -> io::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(stop)
}
