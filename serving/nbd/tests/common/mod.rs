// Shared by the nbd integration tests: an in-process server on a temporary
// Unix socket.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use zmem_device::BlockDevice;
use zmem_files::testutil::ScratchDir;
use zmem_nbd::{Listen, Listener, Options, Server};
use zmem_zram::Zram;

pub struct Running {
    /// Holds the socket: removed after `Drop` has stopped the server.
    pub dir: ScratchDir,
    pub sock: PathBuf,
    pub dev: Arc<Zram>,
    pub stop: Arc<AtomicBool>,
    pub thread: Option<JoinHandle<std::io::Result<zmem_nbd::FailureCounts>>>,
}

/// A private scratch directory, removed with what is in it when dropped; its
/// path is short enough for the Unix sockets put in it.
pub fn tmpdir(tag: &str) -> ScratchDir {
    ScratchDir::new(&format!("nbd-{tag}"))
}

pub fn device(size: u64, mem_limit: u64) -> Arc<Zram> {
    let mut b = Zram::builder()
        .algorithm("lz4", Default::default())
        .disksize(size);
    if mem_limit > 0 {
        b = b.mem_limit(mem_limit);
    }
    Arc::new(b.build().unwrap())
}

pub fn start(dev: Arc<Zram>) -> Running {
    let dir = tmpdir("srv");
    let sock = dir.join("nbd.sock");
    let listener = Listener::bind(&Listen::Unix(sock.clone()), Default::default()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let d: Arc<dyn BlockDevice> = dev.clone();
    let server = Server::new(
        d,
        listener,
        Options {
            threads: 3,
            ..Options::default()
        },
    );
    let st = stop.clone();
    let thread = std::thread::spawn(move || server.run(&st));
    Running {
        dir,
        sock,
        dev,
        stop,
        thread: Some(thread),
    }
}

impl Running {
    pub fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap().unwrap();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A client of the test server whose reads give up after 30 s, so that a
/// server that never answers fails the test instead of hanging the run.
pub fn connect(sock: &std::path::Path, export: &str) -> zmem_nbd::Client {
    let mut c = zmem_nbd::Client::connect(sock, export).unwrap();
    c.stream()
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    c
}

/// Deterministic page contents (half compressible).
pub fn page(seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..4096)
        .map(|i| {
            if i < 2048 {
                (seed as u8).wrapping_add((i / 64) as u8)
            } else {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            }
        })
        .collect()
}
