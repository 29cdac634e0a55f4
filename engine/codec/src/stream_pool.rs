//! One compression stream per thread, the user-space analogue of zcomp's
//! per-CPU streams.
//!
//! The pool holds a fixed array of stream slots, each behind its own mutex.
//! A thread starts at "its" slot (a per-thread index) and takes the first free
//! one, so threads do not contend on a single lock. Streams are created lazily
//! and reused for the life of the pool; no per-page allocation happens.

use std::cell::Cell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::{Backend, CodecError, Params, Stream};

static NEXT_THREAD: AtomicUsize = AtomicUsize::new(0);
thread_local! {
    static THREAD_INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn thread_index() -> usize {
    THREAD_INDEX.with(|c| {
        let mut v = c.get();
        if v == usize::MAX {
            v = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
            c.set(v);
        }
        v
    })
}

/// One thread's slot: its stream, created on first use.
type StreamSlot = Mutex<Option<Box<dyn Stream>>>;

/// Streams of one configured algorithm.
pub struct StreamPool {
    backend: &'static dyn Backend,
    params: Params,
    slots: Box<[StreamSlot]>,
}

impl std::fmt::Debug for StreamPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamPool")
            .field("algorithm", &self.backend.name())
            .field("params", &self.params)
            .field("slots", &self.slots.len())
            .finish()
    }
}

/// A stream borrowed from a [`StreamPool`]; returned to it on drop.
pub struct PooledStream<'a> {
    guard: MutexGuard<'a, Option<Box<dyn Stream>>>,
}

impl Deref for PooledStream<'_> {
    type Target = dyn Stream;
    fn deref(&self) -> &Self::Target {
        self.guard
            .as_deref()
            .expect("stream slot is filled before it is handed out")
    }
}

impl DerefMut for PooledStream<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.guard
            .as_deref_mut()
            .expect("stream slot is filled before it is handed out")
    }
}

impl StreamPool {
    /// Create a pool; the parameters are checked by creating the first stream
    /// now, as the kernel creates its streams at `disksize` time.
    pub fn new(backend: &'static dyn Backend, params: Params) -> Result<Self, CodecError> {
        let n = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .max(1)
            * 2;
        let first = backend.new_stream(&params)?;
        let slots: Vec<_> = (0..n).map(|_| Mutex::new(None)).collect();
        *slots[0].lock().unwrap_or_else(|e| e.into_inner()) = Some(first);
        Ok(StreamPool {
            backend,
            params,
            slots: slots.into_boxed_slice(),
        })
    }

    /// The algorithm this pool compresses with.
    pub fn backend(&self) -> &'static dyn Backend {
        self.backend
    }

    /// The parameters the streams were created with.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Borrow a stream for this thread.
    pub fn get(&self) -> Result<PooledStream<'_>, CodecError> {
        let n = self.slots.len();
        let start = thread_index() % n;
        let mut guard = None;
        for i in 0..n {
            if let Ok(g) = self.slots[(start + i) % n].try_lock() {
                guard = Some(g);
                break;
            }
        }
        let mut guard = match guard {
            Some(g) => g,
            None => self.slots[start].lock().unwrap_or_else(|e| e.into_inner()),
        };
        if guard.is_none() {
            *guard = Some(self.backend.new_stream(&self.params)?);
        }
        Ok(PooledStream { guard })
    }

    /// Compress one page with a pooled stream.
    pub fn compress(&self, src: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
        self.get()?.compress(src, dst)
    }

    /// Decompress with a pooled stream.
    pub fn decompress(&self, src: &[u8], dst: &mut [u8]) -> Result<(), CodecError> {
        self.get()?.decompress(src, dst)
    }
}
