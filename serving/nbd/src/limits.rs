//! What one client may cost the server, and the watchdog that enforces the
//! time limits (docs/serve.md, "Limits").
//!
//! Time limits are deadlines, not per-read socket timeouts: a client that
//! sends one byte every few seconds does not extend them. Each connection
//! has a read deadline and a write deadline (0 = none) that its threads set
//! and clear around blocking calls; the accept loop, which wakes every
//! 20 ms anyway, shuts down the socket of a connection past a deadline, and
//! the blocked call returns at once.

use std::net::Shutdown;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::stream::Stream;

/// The bounds of `zmem serve` (flags of the same names).
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections served at once; more are accepted and closed at once.
    pub max_connections: usize,
    /// Connections of one client (a Unix socket's peer user, a TCP peer's
    /// address) served at once, so one client cannot take them all.
    pub max_per_client: usize,
    /// The whole handshake, from accept to transmission.
    pub handshake_timeout: Duration,
    /// One request, from its first byte to its last payload byte.
    pub request_timeout: Duration,
    /// Between requests; `None`: an idle client (a VM that is not
    /// swapping) keeps its connection.
    pub idle_timeout: Option<Duration>,
    /// One reply, until the client has taken its last byte.
    pub reply_timeout: Duration,
    /// Bytes of READ replies and WRITE payloads one connection may hold at
    /// once; beyond it the server stops reading that client's requests until
    /// replies drain. One request of any size is always allowed.
    pub max_inflight: u64,
    /// Bytes of READ replies and WRITE payloads all connections together may
    /// hold at once; beyond it a connection's next request waits until
    /// replies drain, so many clients that read no replies cannot grow the
    /// server past it. A connection holding nothing may always have one
    /// request of up to [`SMALL_REQUEST`] bytes, so small requests (swap's)
    /// of other clients are still served while the budget is taken.
    pub max_inflight_total: u64,
    /// After SIGTERM/SIGINT/SIGHUP: how long requests already read may take
    /// to finish before every connection is cut.
    pub shutdown_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 64,
            max_per_client: 16,
            handshake_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            idle_timeout: None,
            reply_timeout: Duration::from_secs(30),
            max_inflight: 32 << 20,
            max_inflight_total: 256 << 20,
            shutdown_grace: Duration::from_secs(2),
        }
    }
}

/// A connection as the watchdog sees it.
pub(crate) struct Watched {
    pub stream: Stream,
    /// Who is connected ([`Stream::client`]), for the per-client cap.
    pub client: String,
    epoch: Instant,
    /// Nanoseconds since `epoch` + 1 when reads must be done; 0: no deadline.
    read_deadline: AtomicU64,
    write_deadline: AtomicU64,
    /// Why the watchdog cut it (for the log).
    pub cut: Mutex<Option<&'static str>>,
}

impl Watched {
    pub fn new(stream: Stream, client: String, epoch: Instant) -> Watched {
        Watched {
            stream,
            client,
            epoch,
            read_deadline: AtomicU64::new(0),
            write_deadline: AtomicU64::new(0),
            cut: Mutex::new(None),
        }
    }

    fn at(&self, within: Option<Duration>) -> u64 {
        within.map_or(0, |d| {
            (Instant::now() + d).duration_since(self.epoch).as_nanos() as u64 + 1
        })
    }

    /// Reads must be done within `within` from now (`None`: no limit).
    pub fn read_within(&self, within: Option<Duration>) {
        self.read_deadline.store(self.at(within), Ordering::Relaxed);
    }

    /// Writes must be done within `within` from now (`None`: no limit).
    pub fn write_within(&self, within: Option<Duration>) {
        self.write_deadline
            .store(self.at(within), Ordering::Relaxed);
    }

    /// The watchdog's check: cuts the connection past a deadline.
    pub fn check(&self, now: Instant) {
        let now = now.duration_since(self.epoch).as_nanos() as u64 + 1;
        for (d, why) in [
            (&self.read_deadline, "read deadline passed"),
            (&self.write_deadline, "reply not taken in time"),
        ] {
            let t = d.load(Ordering::Relaxed);
            if t != 0 && now > t {
                let mut cut = self.cut.lock().unwrap_or_else(|e| e.into_inner());
                if cut.is_none() {
                    *cut = Some(why);
                }
                let _ = self.stream.shutdown(Shutdown::Both);
            }
        }
    }
}

/// A request this small (the kernel's NBD client sends at most its
/// `max_sectors`, 128 KiB to 1 MiB) is admitted past the server-wide budget
/// when its connection holds nothing else.
pub const SMALL_REQUEST: u64 = 1 << 20;

/// Bytes in flight, bounded: one connection's ([`Limits::max_inflight`]) or
/// the server's ([`Limits::max_inflight_total`]).
pub(crate) struct Inflight {
    used: Mutex<u64>,
    drained: Condvar,
    cap: u64,
}

impl Inflight {
    pub fn new(cap: u64) -> Inflight {
        Inflight {
            used: Mutex::new(0),
            drained: Condvar::new(),
            cap,
        }
    }

    /// Waits until `n` more bytes fit (always when nothing is in flight),
    /// or `give_up()` says the connection is over (then `false`).
    pub fn acquire(&self, n: u64, give_up: &dyn Fn() -> bool) -> bool {
        self.acquire_or_pass(n, false, give_up)
    }

    /// [`Inflight::acquire`], admitting `n` at once when `pass` is set (it
    /// is still counted, so others wait for it).
    pub fn acquire_or_pass(&self, n: u64, pass: bool, give_up: &dyn Fn() -> bool) -> bool {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        while !pass && *used > 0 && *used + n > self.cap {
            if give_up() {
                return false;
            }
            used = self
                .drained
                .wait_timeout(used, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *used += n;
        true
    }

    /// Bytes held now.
    pub fn used(&self) -> u64 {
        *self.used.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn release(&self, n: u64) {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        *used = used.saturating_sub(n);
        self.drained.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn inflight_blocks_beyond_the_cap_and_always_admits_one() {
        let f = Arc::new(Inflight::new(100));
        assert!(f.acquire(1000, &|| false), "one request of any size");
        let f2 = f.clone();
        let t = std::thread::spawn(move || f2.acquire(10, &|| false));
        std::thread::sleep(Duration::from_millis(100));
        assert!(!t.is_finished(), "waits while 1000 bytes are in flight");
        f.release(1000);
        assert!(t.join().unwrap());
        assert!(
            !f.acquire(95, &|| true),
            "gives up when the connection ends"
        );
    }

    #[test]
    fn a_pass_is_admitted_past_the_cap_and_counted() {
        let f = Inflight::new(100);
        assert!(f.acquire(100, &|| false));
        assert!(!f.acquire_or_pass(10, false, &|| true), "full: waits");
        assert!(
            f.acquire_or_pass(10, true, &|| true),
            "a pass does not wait"
        );
        assert_eq!(f.used(), 110);
        f.release(110);
        assert_eq!(f.used(), 0);
    }
}
