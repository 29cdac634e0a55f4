//! The codec floor of device mode (`zmem bench floor`): the least any
//! engine can spend on this corpus with this algorithm, measured in the same
//! run as the engine and the kernel, on the same pages and the same random
//! requests. Its rows (`target` = `codec`) say how far an engine/kernel
//! ratio can go on this machine: an engine can approach the floor, not pass it.
//!
//! Write: each page is tested for being same-filled (kept as its word), else
//! compressed through the codec's per-thread stream and copied into memory
//! that is already mapped and touched. A page that compresses to
//! `huge_class_size` or more is copied whole, as zram stores it. The same
//! passes as the engine's write phase are timed.
//!
//! Read: the objects of the last pass lie back to back in one buffer (the
//! pool without size classes: its size is `mem_used_total` of the row, out
//! of the CPU cache for a large corpus). A page is looked up in an index of
//! one entry per page (the slot table's counterpart), its object's lines are
//! prefetched, as the engine does from the slot's hint, and it is
//! decompressed. No slot lock, no handle, no size class, no accounting.

use std::time::Instant;

use zmem_codec::{fill_page, same_filled, Params, StreamPool, PAGE_SIZE};
use zmem_corpus::Corpus;
use zmem_kernel::MmStat;
use zmem_zpool::ObjHint;

use super::device_rows::{huge_class_size, Options, Row, Target};
use super::random_read::{read_phase, request_indexes};

/// Where a page went.
#[derive(Debug, Clone, Copy)]
enum Stored {
    /// Same-filled: the word.
    Same(u64),
    /// Stored whole at this offset.
    Huge(usize),
    /// A compressed object: offset and length.
    Object(usize, usize),
}

/// The corpus as the floor stores it: one buffer of objects and an index.
struct Store {
    bytes: Vec<u8>,
    used: usize,
    index: Vec<Stored>,
}

impl Store {
    /// Room for every page stored whole, touched now so that the timed
    /// copies take no page faults.
    fn new(pages: usize) -> Store {
        Store {
            bytes: vec![0xa5; pages * PAGE_SIZE],
            used: 0,
            index: vec![Stored::Same(0); pages],
        }
    }

    fn push(&mut self, i: usize, obj: &[u8], huge: bool) {
        let at = self.used;
        self.bytes[at..at + obj.len()].copy_from_slice(obj);
        self.used += obj.len();
        self.index[i] = if huge {
            Stored::Huge(at)
        } else {
            Stored::Object(at, obj.len())
        };
    }

    /// What an engine's mm_stat would say of the last pass, with a pool
    /// that wastes nothing (mem_used_total = the bytes stored).
    fn mm_stat(&self) -> MmStat {
        let mut m = MmStat {
            orig_data_size: (self.index.len() * PAGE_SIZE) as u64,
            mem_used_total: self.used as u64,
            ..MmStat::default()
        };
        for s in &self.index {
            match *s {
                Stored::Same(_) => m.same_pages += 1,
                Stored::Huge(_) => {
                    m.huge_pages += 1;
                    m.compr_data_size += PAGE_SIZE as u64;
                }
                Stored::Object(_, len) => m.compr_data_size += len as u64,
            }
        }
        m
    }

    /// Page `i` into `out` (one page).
    fn read(&self, streams: &StreamPool, i: usize, out: &mut [u8]) -> Result<(), String> {
        match self.index[i] {
            Stored::Same(w) => fill_page(out, w),
            Stored::Huge(at) => out.copy_from_slice(&self.bytes[at..at + PAGE_SIZE]),
            Stored::Object(at, len) => {
                let obj = &self.bytes[at..at + len];
                ObjHint::from_raw(obj.as_ptr() as u64).prefetch(len);
                streams.decompress(obj, out).map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }
}

/// Write the corpus the engine's number of times; the store of the last
/// pass and the write MiB/s.
fn write_passes(
    corpus: &Corpus,
    streams: &StreamPool,
    huge_class_size: usize,
    opts: &Options,
) -> Result<(Store, f64), String> {
    let pages = corpus.page_count();
    let passes = opts.write_passes_for(pages);
    let mut store = Store::new(pages);
    let mut comp = vec![0u8; zmem_codec::MAX_COMPRESSED];
    let mut write_s = 0.0;
    for _ in 0..passes {
        store.used = 0;
        let t = Instant::now();
        for (i, p) in corpus.pages().enumerate() {
            if let Some(w) = same_filled(p) {
                store.index[i] = Stored::Same(w);
                continue;
            }
            let n = match streams.compress(p, &mut comp) {
                Ok(n) => n,
                Err(zmem_codec::CodecError::DstTooSmall { .. }) => usize::MAX,
                Err(e) => return Err(format!("compression failed: {e}")),
            };
            if n >= huge_class_size {
                store.push(i, p, true);
            } else {
                store.push(i, &comp[..n], false);
            }
        }
        write_s += t.elapsed().as_secs_f64();
    }
    let mibps = (passes * pages * PAGE_SIZE) as f64 / write_s / (1 << 20) as f64;
    Ok((store, mibps))
}

/// The codec's per-thread streams and the `huge_class_size` the engine
/// device uses with it.
fn codec(opts: &Options, algo: &str, params: &Params) -> Result<(StreamPool, usize), String> {
    let backend = zmem_codec::find(algo).map_err(|e| e.to_string())?;
    let streams = StreamPool::new(backend, params.clone()).map_err(|e| e.to_string())?;
    Ok((streams, huge_class_size(&opts.engine(), algo, params)?))
}

/// The `codec` rows for one algorithm: one per page-cluster value, or one
/// row saying why there are none.
pub fn run_floor(corpus: &Corpus, algo: &str, opts: &Options) -> Vec<Row> {
    let threads = opts.threads.max(1);
    let fail = |reason: String| {
        vec![Row::unavailable(
            Target::Codec,
            algo,
            &corpus.name,
            threads,
            reason,
        )]
    };
    let (streams, huge) = match codec(opts, algo, &opts.params) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let (store, write_mibps) = match write_passes(corpus, &streams, huge, opts) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let m = store.mm_stat();
    let pages = corpus.page_count();
    opts.page_clusters
        .iter()
        .map(|&pc| {
            let plan = request_indexes(pages, pc, opts.requests, threads, opts.seed);
            let r = read_phase(pc, &plan, |buf, index| {
                let n = (1usize << pc).min(pages - index);
                for (k, out) in buf[..n * PAGE_SIZE].chunks_exact_mut(PAGE_SIZE).enumerate() {
                    store.read(&streams, index + k, out)?;
                }
                Ok(())
            });
            match r {
                Ok(r) => Row::measured(
                    Target::Codec,
                    algo,
                    &corpus.name,
                    threads,
                    &m,
                    write_mibps,
                    &r,
                ),
                Err(e) => Row::unavailable(Target::Codec, algo, &corpus.name, threads, e),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Options {
        Options {
            requests: 300,
            kernel: false,
            write_passes: 2,
            ..Options::default()
        }
    }

    /// The floor reads back every page it stored.
    #[test]
    fn floor_reads_back_what_it_stored() {
        let c = zmem_corpus::default_corpus();
        for algo in ["lz4", "lzo-rle", "zstd"] {
            let rows = run_floor(&c, algo, &opts());
            assert_eq!(rows.len(), 4, "{algo}: {:?}", rows[0].reason);
            for f in &rows {
                assert_eq!(f.target, Target::Codec);
                assert_eq!(f.reason, None);
            }
            let (streams, huge) = codec(&Options::default(), algo, &Params::default()).unwrap();
            let (store, _) = write_passes(&c, &streams, huge, &opts()).unwrap();
            let mut out = vec![0u8; PAGE_SIZE];
            for (i, p) in c.pages().enumerate() {
                store.read(&streams, i, &mut out).unwrap();
                assert_eq!(out, p, "{algo} page {i}");
            }
        }
    }

    #[test]
    fn an_unknown_algorithm_is_one_row_with_the_reason() {
        let c = zmem_corpus::default_corpus();
        let rows = run_floor(&c, "nope", &opts());
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].target, Target::Codec);
        assert!(rows[0].reason.as_deref().unwrap().contains("nope"));
    }
}
