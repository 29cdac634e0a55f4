//! The built-in workload `memalloc`: allocate a given amount of moderately
//! compressible memory (about 2.2:1 with lz4/lzo, deterministic for a seed),
//! then read every page back and verify every byte. Under a cgroup limit
//! smaller than the allocation this pushes pages out to swap and faults them
//! back in, which is the experiment of the reference articles ("a program
//! allocating 100 MiB more than free memory").
//!
//! The built-in workload `kvstore`: a key-value table of 4 KiB values with
//! hot and cold keys, looked up and updated with a skewed, repeated access
//! pattern (80 % of the operations go to the 30 % hot keys), every lookup
//! verified. With a table larger than the memory limit, its working set does
//! not fit either: pages go out and come back many times, as in a cache or a
//! database under memory pressure, where memalloc writes once and reads once.
//!
//! Both run in a child process (`zmem trial --worker NAME …`) so the cgroup
//! limit applies to them alone. [`WORKLOADS`] registers them: the CLI's
//! `--builtin`/`--worker` values, their help and what a worker runs come from
//! there (add a workload: its function here and one row in [`WORKLOADS`]).

/// A built-in workload: its name (`--builtin NAME`), one line of help, and
/// what a worker process runs.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    pub name: &'static str,
    pub help: &'static str,
    /// Run it over `bytes` of memory with content seed `seed`, in this
    /// process (the worker a trial starts in its cgroup); a byte read back
    /// wrong is the error.
    pub run: fn(bytes: u64, seed: u64) -> Result<(), Mismatch>,
}

/// The built-in workloads, in the order the CLI lists them.
pub const WORKLOADS: &[Workload] = &[
    Workload {
        name: "memalloc",
        help: "Allocate SIZE of moderately compressible memory (about 2.2:1), then re-read it verifying every byte",
        run: |bytes, seed| memalloc(bytes, seed, 1).map(|_| ()),
    },
    Workload {
        name: "kvstore",
        help: "A SIZE key-value table of 4 KiB values: 4 operations per key, 80 % of them on 30 % hot keys, one in ten an update, every lookup verified",
        run: |bytes, seed| kvstore(bytes, seed).map(|_| ()),
    },
];

/// The workload called `name`.
pub fn find(name: &str) -> Option<&'static Workload> {
    WORKLOADS.iter().find(|w| w.name == name)
}

/// The names as a flag's values are written in messages: `memalloc|kvstore`.
pub fn names() -> String {
    WORKLOADS
        .iter()
        .map(|w| w.name)
        .collect::<Vec<_>>()
        .join("|")
}

/// Page granularity of the content generator (independent of the system page
/// size so the content is the same everywhere).
pub const PAGE: usize = 4096;
const SEGMENT: usize = 32;

/// What a memalloc run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemallocOutcome {
    pub pages: u64,
    pub passes: u32,
}

/// A mismatch found when re-reading.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("memalloc: byte mismatch in page {page} at offset {offset} (pass {pass}): expected {expected:#04x}, found {found:#04x}")]
pub struct Mismatch {
    pub page: u64,
    pub offset: usize,
    pub pass: u32,
    pub expected: u8,
    pub found: u8,
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Fill one 4 KiB page with the content of page `index`: 128 segments of 32
/// bytes, each either fresh pseudo-random bytes (40 %) or a copy of an earlier
/// segment of the same page (60 %). LZ-family compressors find the copies and
/// not the random bytes, so pages compress about 2–2.5:1, and no page is
/// same-filled.
pub fn fill_page(page: &mut [u8], index: u64, seed: u64) {
    debug_assert_eq!(page.len(), PAGE);
    let mut st = seed ^ index.wrapping_mul(0xd6e8_feb8_6659_fd93);
    let segs = PAGE / SEGMENT;
    for i in 0..segs {
        let r = splitmix(&mut st);
        let at = i * SEGMENT;
        if i == 0 || r % 10 < 4 {
            for w in 0..SEGMENT / 8 {
                let v = splitmix(&mut st);
                page[at + w * 8..at + w * 8 + 8].copy_from_slice(&v.to_le_bytes());
            }
        } else {
            let from = ((r >> 8) % i as u64) as usize * SEGMENT;
            page.copy_within(from..from + SEGMENT, at);
        }
    }
}

/// Allocate `bytes` (rounded up to whole pages), write every page, then read
/// everything back `passes` times comparing every byte.
pub fn memalloc(bytes: u64, seed: u64, passes: u32) -> Result<MemallocOutcome, Mismatch> {
    let pages = bytes.div_ceil(PAGE as u64);
    // vec! of zeros comes from fresh anonymous memory: nothing is resident
    // until a page is written below.
    let mut mem = vec![0u8; (pages as usize) * PAGE];
    for (i, page) in mem.chunks_exact_mut(PAGE).enumerate() {
        fill_page(page, i as u64, seed);
    }
    let mut want = vec![0u8; PAGE];
    for pass in 1..=passes {
        for (i, page) in mem.chunks_exact(PAGE).enumerate() {
            fill_page(&mut want, i as u64, seed);
            if page != &want[..] {
                let offset = page
                    .iter()
                    .zip(&want)
                    .position(|(a, b)| a != b)
                    .unwrap_or(0);
                return Err(Mismatch {
                    page: i as u64,
                    offset,
                    pass,
                    expected: want[offset],
                    found: page[offset],
                });
            }
        }
    }
    Ok(MemallocOutcome { pages, passes })
}

/// Share of the keys that are hot, and of the operations that go to them.
pub const KV_HOT_KEYS: f64 = 0.30;
pub const KV_HOT_OPS: f64 = 0.80;
/// One operation in this many is an update (the value is rewritten).
pub const KV_UPDATE_EVERY: u64 = 10;
/// Operations per key of the table.
pub const KV_OPS_PER_KEY: u64 = 4;

/// What a kvstore run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvOutcome {
    pub keys: u64,
    pub lookups: u64,
    pub updates: u64,
}

/// The content seed of `key`'s value at `version`.
fn kv_seed(seed: u64, version: u16) -> u64 {
    seed ^ (u64::from(version) << 48)
}

/// A table of `bytes` of 4 KiB values (every one written once), then
/// `KV_OPS_PER_KEY` × keys operations: 80 % on the 30 % hot keys (spread over
/// the table), one in ten an update, every lookup compared byte for byte
/// with what the key must hold.
pub fn kvstore(bytes: u64, seed: u64) -> Result<KvOutcome, Mismatch> {
    let keys = bytes.div_ceil(PAGE as u64).max(1);
    let mut table = vec![0u8; keys as usize * PAGE];
    let mut versions = vec![0u16; keys as usize];
    let mut st = seed ^ 0x006b_7673_746f_7265;
    let hot: Vec<u64> = (0..keys)
        .filter(|_| (splitmix(&mut st) % 1000) < (KV_HOT_KEYS * 1000.0) as u64)
        .collect();
    for (i, v) in table.chunks_exact_mut(PAGE).enumerate() {
        fill_page(v, i as u64, kv_seed(seed, 0));
    }
    let mut want = vec![0u8; PAGE];
    let mut out = KvOutcome {
        keys,
        lookups: 0,
        updates: 0,
    };
    for op in 0..keys * KV_OPS_PER_KEY {
        let r = splitmix(&mut st);
        let key = if !hot.is_empty() && (r % 1000) < (KV_HOT_OPS * 1000.0) as u64 {
            hot[((r >> 10) % hot.len() as u64) as usize]
        } else {
            (r >> 10) % keys
        };
        let at = key as usize * PAGE;
        let value = &mut table[at..at + PAGE];
        if op % KV_UPDATE_EVERY == KV_UPDATE_EVERY - 1 {
            let v = &mut versions[key as usize];
            *v = v.wrapping_add(1);
            fill_page(value, key, kv_seed(seed, *v));
            out.updates += 1;
            continue;
        }
        fill_page(&mut want, key, kv_seed(seed, versions[key as usize]));
        if let Some(offset) = value.iter().zip(&want).position(|(a, b)| a != b) {
            return Err(Mismatch {
                page: key,
                offset,
                pass: 1,
                expected: want[offset],
                found: value[offset],
            });
        }
        out.lookups += 1;
    }
    Ok(out)
}

/// A 64-bit FNV-1a hash of a page: how replay checks pages it no longer holds.
fn page_hash(p: &[u8]) -> u64 {
    p.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Replay captured pages: a `bytes` table whose page `i` is corpus page
/// `i mod n` (the corpus itself is dropped once the table is written, so
/// the table is the footprint), then every page read back and checked
/// against its page's hash. Swapping this table swaps the real content.
pub fn replay(corpus: Vec<u8>, bytes: u64) -> Result<u64, Mismatch> {
    let n = corpus.len() / PAGE;
    if n == 0 {
        return Ok(0);
    }
    let pages = bytes.div_ceil(PAGE as u64).max(1) as usize;
    let mut table = vec![0u8; pages * PAGE];
    let hashes: Vec<u64> = corpus.chunks_exact(PAGE).map(page_hash).collect();
    for (i, p) in table.chunks_exact_mut(PAGE).enumerate() {
        let src = (i % n) * PAGE;
        p.copy_from_slice(&corpus[src..src + PAGE]);
    }
    drop(corpus);
    for (i, p) in table.chunks_exact(PAGE).enumerate() {
        if page_hash(p) != hashes[i % n] {
            return Err(Mismatch {
                page: i as u64,
                offset: 0,
                pass: 1,
                expected: 0,
                found: p[0],
            });
        }
    }
    Ok(pages as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_finds_and_runs_each_workload() {
        assert_eq!(names(), "memalloc|kvstore");
        for w in WORKLOADS {
            assert_eq!(find(w.name).map(|f| f.name), Some(w.name));
            assert!(!w.help.is_empty());
            (w.run)(64 * PAGE as u64, 1).unwrap();
        }
        assert!(find("nope").is_none());
    }

    #[test]
    fn deterministic_and_distinct() {
        let mut a = vec![0u8; PAGE];
        let mut b = vec![0u8; PAGE];
        fill_page(&mut a, 7, 1);
        fill_page(&mut b, 7, 1);
        assert_eq!(a, b);
        fill_page(&mut b, 8, 1);
        assert_ne!(a, b);
        fill_page(&mut b, 7, 2);
        assert_ne!(a, b);
        // Never same-filled.
        assert!(a.chunks_exact(8).any(|w| w != &a[..8]));
    }

    #[test]
    fn moderately_compressible() {
        // Estimate what an LZ compressor can drop: segments that repeat an
        // earlier one in the same page. 40 % fresh → about 2.5:1 before
        // match overhead.
        let mut total_fresh = 0usize;
        let mut p = vec![0u8; PAGE];
        for idx in 0..200u64 {
            fill_page(&mut p, idx, 42);
            let segs: Vec<&[u8]> = p.chunks_exact(SEGMENT).collect();
            for i in 0..segs.len() {
                if !segs[..i].contains(&segs[i]) {
                    total_fresh += 1;
                }
            }
        }
        let fresh = total_fresh as f64 / (200.0 * (PAGE / SEGMENT) as f64);
        assert!((0.3..0.5).contains(&fresh), "fresh fraction {fresh}");
    }

    #[test]
    fn memalloc_verifies() {
        let r = memalloc(1 << 20, 3, 2).unwrap();
        assert_eq!(
            r,
            MemallocOutcome {
                pages: 256,
                passes: 2
            }
        );
        let r = memalloc(5000, 3, 1).unwrap();
        assert_eq!(r.pages, 2);
    }

    #[test]
    fn kvstore_verifies_and_skews() {
        let r = kvstore(2 << 20, 5).unwrap();
        assert_eq!(r.keys, 512);
        assert_eq!(r.lookups + r.updates, 512 * KV_OPS_PER_KEY);
        assert_eq!(r.updates, 512 * KV_OPS_PER_KEY / KV_UPDATE_EVERY);
        // Deterministic for a seed.
        assert_eq!(kvstore(2 << 20, 5).unwrap(), r);
        assert_eq!(kvstore(4096, 1).unwrap().keys, 1);
    }

    #[test]
    fn replay_repeats_the_corpus_and_checks_it() {
        let mut corpus = vec![0u8; 3 * PAGE];
        for (i, p) in corpus.chunks_exact_mut(PAGE).enumerate() {
            fill_page(p, i as u64, 9);
        }
        assert_eq!(replay(corpus.clone(), 10 * PAGE as u64).unwrap(), 10);
        assert_eq!(replay(corpus[..PAGE - 1].to_vec(), 8192).unwrap(), 0);
        assert_ne!(
            page_hash(&corpus[..PAGE]),
            page_hash(&corpus[PAGE..2 * PAGE])
        );
    }
}
