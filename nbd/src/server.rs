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
//! * A client that stops reading its replies stalls only its own threads,
//!   and is dropped when a reply cannot be written within [`WRITE_TIMEOUT`].
//!
//! Shutdown: [`Server::run`] returns when its stop flag is set. It stops
//! accepting and shuts down the reading side of every connection: each
//! thread sees end of file when it next reads, requests already read finish
//! and their replies go out, then the connection is closed.

use std::collections::HashMap;
use std::io::{self, BufReader, Read, Write};
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use zmem_sysfs::BlockDevice;

use crate::handshake::{drain, negotiate, Export, Outcome};
use crate::proto::*;
use crate::stream::{Listener, Stream};
use crate::transmission::{decode, execute, Command};

/// Largest READ/WRITE payload we accept (advertised as the maximum block size).
pub const MAX_PAYLOAD: u32 = 32 << 20;
/// Handshake must finish within this time.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// A reply that cannot be written within this time drops the connection.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

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
    export: Export,
    stopping: AtomicBool,
    opts: Options,
}

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

    /// Serve until `stop` is set, then shut down cleanly (see the module doc).
    pub fn run(self, stop: &AtomicBool) -> io::Result<()> {
        let shared = Arc::new(Shared {
            export: export_for(&*self.dev, &self.opts),
            dev: self.dev.clone(),
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
                    conns
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(id, clone);
                    let shared = shared.clone();
                    let conns = conns.clone();
                    let h =
                        thread::Builder::new()
                            .name(format!("nbd-conn-{id}"))
                            .spawn(move || {
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
        Ok(())
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

/// What the next request asks for, read whole under the read lock.
enum Next {
    Run(Command, u64, Vec<u8>),
    Refuse(u32, u64),
    End(&'static str),
}

fn next_request<R: Read>(r: &mut R, export: &Export) -> Next {
    let mut h = [0u8; REQUEST_LEN];
    if r.read_exact(&mut h).is_err() {
        return Next::End("end of stream");
    }
    let Some(req) = parse_request(&h) else {
        return Next::End("bad request magic");
    };
    match decode(&req, export.size, export.max_payload) {
        Err(refusal) => match drain(r, refusal.drain) {
            Ok(()) => Next::Refuse(refusal.error, req.cookie),
            Err(_) => Next::End("disconnected mid-request"),
        },
        Ok(Command::Disconnect) => Next::End("NBD_CMD_DISC"),
        Ok(cmd) => {
            let mut payload = Vec::new();
            if let Command::Write { len, .. } = cmd {
                payload = vec![0u8; len as usize];
                if r.read_exact(&mut payload).is_err() {
                    return Next::End("disconnected mid-request");
                }
            }
            Next::Run(cmd, req.cookie, payload)
        }
    }
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
    let _ = s.set_write_timeout(Some(WRITE_TIMEOUT));
    if sh.opts.verbose {
        eprintln!("zmem serve: connection {id} ({peer}) in transmission");
    }
    let (Ok(rs), Ok(ws)) = (s.try_clone(), s.try_clone()) else {
        return;
    };
    let reader = Mutex::new(BufReader::with_capacity(256 * 1024, rs));
    let writer = Mutex::new(ws);
    let done = AtomicBool::new(false);
    let reason: Mutex<&'static str> = Mutex::new("");
    // Ending the connection also shuts its read side: a sibling thread that
    // is already blocked reading the next header wakes with end of stream
    // instead of waiting forever for a client that has been cut off.
    let end = |why: &'static str| {
        if !done.swap(true, Ordering::AcqRel) {
            *reason.lock().unwrap_or_else(|e| e.into_inner()) = why;
        }
        let _ = s.shutdown(Shutdown::Read);
    };
    thread::scope(|sc| {
        for _ in 0..sh.opts.threads.max(1) {
            sc.spawn(|| loop {
                let next = {
                    let mut r = reader.lock().unwrap_or_else(|e| e.into_inner());
                    if done.load(Ordering::Acquire) {
                        return;
                    }
                    match next_request(&mut *r, &sh.export) {
                        // Marked while the read lock is held, so no sibling
                        // starts another read after the stream has ended.
                        Next::End(why) => {
                            end(why);
                            return;
                        }
                        Next::Run(cmd, cookie, payload) => Ok((cmd, cookie, payload)),
                        Next::Refuse(error, cookie) => Err((error, cookie)),
                    }
                };
                let reply = match next {
                    Ok((cmd, cookie, payload)) => run_job(&*sh.dev, cmd, cookie, payload),
                    Err((error, cookie)) => error_reply(error, cookie),
                };
                let mut w = writer.lock().unwrap_or_else(|e| e.into_inner());
                if w.write_all(&reply).is_err() {
                    end("cannot write a reply");
                    let _ = w.shutdown(Shutdown::Both);
                    return;
                }
            });
        }
    });
    let _ = s.shutdown(Shutdown::Both);
    if sh.opts.verbose {
        eprintln!(
            "zmem serve: connection {id} ({peer}) closed: {}",
            reason.lock().unwrap_or_else(|e| e.into_inner())
        );
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
