//! Model-based property test: random writes, reads, discards, write-zeroes
//! and partial I/O against a reference map of bytes; the mm_stat invariants
//! (sums over the slot table, as zram_drv.c keeps them) are checked after every sequence. The device has a fast
//! algorithm (lz4m), a secondary (zstd) and a backing file of random size
//! (often too small, so ENOSPC happens) in plain or compressed_writeback mode:
//! fast-path writes, the `always` fast path, idle marking, precise
//! recompression back to the primary, kernel-syntax recompression and
//! writeback of random ranges/modes are mixed in; no byte may ever be lost.
mod common;
use common::*;
use proptest::prelude::*;
use zmem_codec::Params;
use zmem_device::BlockDevice;
use zmem_files::testutil::ScratchDir;
use zmem_kernel::Errno;
use zmem_zram::{RecompressParams, Zram, PAGE_SIZE};

const PAGES: u64 = 24;
const SIZE: u64 = PAGES * PAGE_SIZE as u64;

#[derive(Debug, Clone)]
enum Op {
    /// Write `sectors` sectors of page kind `kind` at sector `at`.
    Write {
        at: u64,
        sectors: u64,
        kind: u64,
        seed: u64,
    },
    Read {
        at: u64,
        sectors: u64,
    },
    Discard {
        at: u64,
        sectors: u64,
    },
    Zeroes {
        at: u64,
        sectors: u64,
    },
    /// An unaligned or out-of-range request: must fail and change nothing.
    Bad {
        at: u64,
        len: u64,
    },
    /// `Zram::write_page_fast` of one whole page.
    FastWrite {
        page: u64,
        kind: u64,
        seed: u64,
    },
    /// `fast_path mode=always` (true) or `mode=off`.
    FastMode(bool),
    /// `idle all`.
    IdleAll,
    /// `recompress from=lz4m` (to the primary) or `from=lz4 algo=zstd`, with
    /// an optional idle filter and max_pages.
    Precise {
        to_zstd: bool,
        idle: bool,
        max_pages: u64,
    },
    /// Kernel-syntax `recompress` (to zstd).
    Recompress {
        idle: bool,
    },
    /// `writeback` of pages `lo..=hi`, then (mode 1..4) `type=` of that range.
    Writeback {
        lo: u64,
        hi: u64,
        mode: usize,
    },
}

const MODES: [&str; 5] = ["", "idle", "huge", "huge_idle", "incompressible"];

fn op() -> impl Strategy<Value = Op> {
    let sec = SIZE / 512;
    prop_oneof![
        4 => (0..sec, 1u64..20, 0u64..6, any::<u64>()).prop_map(|(at, n, kind, seed)| Op::Write { at, sectors: n, kind, seed }),
        3 => (0..sec, 1u64..20).prop_map(|(at, n)| Op::Read { at, sectors: n }),
        1 => (0..sec, 1u64..24).prop_map(|(at, n)| Op::Discard { at, sectors: n }),
        1 => (0..sec, 1u64..24).prop_map(|(at, n)| Op::Zeroes { at, sectors: n }),
        1 => (0..SIZE + 8192, 1u64..9000).prop_map(|(at, len)| Op::Bad { at, len }),
        3 => (0..PAGES, 0u64..6, any::<u64>()).prop_map(|(page, kind, seed)| Op::FastWrite { page, kind, seed }),
        1 => any::<bool>().prop_map(Op::FastMode),
        1 => Just(Op::IdleAll),
        2 => (any::<bool>(), any::<bool>(), 0u64..30).prop_map(|(to_zstd, idle, max_pages)| Op::Precise { to_zstd, idle, max_pages }),
        1 => any::<bool>().prop_map(|idle| Op::Recompress { idle }),
        2 => (0..PAGES, 0..PAGES, 0..MODES.len()).prop_map(|(a, b, mode)| Op::Writeback { lo: a.min(b), hi: a.max(b), mode }),
    ]
}

fn data(kind: u64, seed: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    let mut s = seed;
    while v.len() < len {
        v.extend_from_slice(&page(kind, s));
        s = s.wrapping_add(1);
    }
    v.truncate(len);
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn engine_matches_a_byte_map(ops in proptest::collection::vec(op(), 1..60), bpages in 2u64..PAGES, compressed: bool) {
        let dir = ScratchDir::new("model-wb");
        let backing = dir.join("backing");
        std::fs::File::create(&backing).unwrap().set_len(bpages * PAGE_SIZE as u64).unwrap();
        let dev = Zram::builder()
            .algorithm(ALGO, Params::default())
            .secondary(1, "zstd", Params::default())
            .fast_algorithm("lz4m")
            .backing_dev(&backing)
            .compressed_writeback(compressed)
            .disksize(SIZE)
            .build()
            .unwrap();
        drop(dir); // the backing file goes; the open file lives on
        let mut model = vec![0u8; SIZE as usize];
        // The kernel's recompression allocates without sampling the peak
        // (mem_used_max is updated on the write path only).
        let mut recompressed = false;
        for op in ops {
            match op {
                Op::Write { at, sectors, kind, seed } => {
                    let (off, len) = (at * 512, (sectors * 512).min(SIZE - at * 512));
                    let d = data(kind, seed, len as usize);
                    dev.write_at(off, &d).unwrap();
                    model[off as usize..(off + len) as usize].copy_from_slice(&d);
                }
                Op::Read { at, sectors } => {
                    let (off, len) = (at * 512, (sectors * 512).min(SIZE - at * 512));
                    let mut b = vec![0u8; len as usize];
                    dev.read_at(off, &mut b).unwrap();
                    prop_assert_eq!(&b[..], &model[off as usize..(off + len) as usize]);
                }
                Op::Discard { at, sectors } => {
                    let (off, len) = (at * 512, (sectors * 512).min(SIZE - at * 512));
                    dev.discard(off, len).unwrap();
                    // Only whole pages inside the range are freed.
                    let p = PAGE_SIZE as u64;
                    let (a, b) = (off.div_ceil(p) * p, (off + len) / p * p);
                    if a < b { model[a as usize..b as usize].fill(0); }
                }
                Op::Zeroes { at, sectors } => {
                    let (off, len) = (at * 512, (sectors * 512).min(SIZE - at * 512));
                    dev.write_zeroes(off, len).unwrap();
                    model[off as usize..(off + len) as usize].fill(0);
                }
                Op::FastWrite { page: i, kind, seed } => {
                    let d = page(kind, seed);
                    dev.write_page_fast(i as usize, &d).unwrap();
                    let off = (i * PAGE_SIZE as u64) as usize;
                    model[off..off + PAGE_SIZE].copy_from_slice(&d);
                }
                Op::FastMode(on) => dev.attr_write("fast_path", if on { "mode=always" } else { "mode=off" }).unwrap(),
                Op::IdleAll => dev.attr_write("idle", "all").unwrap(),
                Op::Precise { to_zstd, idle, max_pages } => {
                    let mut p = if to_zstd { RecompressParams::new().from(ALGO).algo("zstd") } else { RecompressParams::new().from("lz4m") };
                    if idle { p = p.idle(); }
                    if max_pages != 0 { p = p.max_pages(max_pages); }
                    let r = dev.recompress(&p).unwrap();
                    recompressed |= r.recompressed > 0;
                    prop_assert!(r.recompressed <= r.attempted && r.attempted <= r.candidates);
                }
                Op::Recompress { idle } => {
                    let p = if idle { RecompressParams::new().idle() } else { RecompressParams::new() };
                    recompressed |= dev.recompress(&p).unwrap().recompressed > 0;
                }
                Op::Bad { at, len } => {
                    let bad = at % 512 != 0 || len % 512 != 0 || at + len > SIZE;
                    if bad {
                        prop_assert!(dev.write_at(at, &vec![0xAB; len as usize]).is_err());
                        prop_assert!(dev.read_at(at, &mut vec![0; len as usize]).is_err());
                    }
                }
                Op::Writeback { lo, hi, mode } => {
                    let cmd = match MODES[mode] {
                        "" => format!("page_indexes={lo}-{hi}"),
                        m => format!("page_indexes={lo}-{hi} type={m}"),
                    };
                    // A full backing file is the only error possible here.
                    if let Err(e) = dev.attr_write("writeback", &cmd) {
                        prop_assert_eq!(e.errno, Errno::ENOSPC, "{}", e);
                    }
                    let wb = dev.block_state().iter().filter(|s| s.wb).count() as u64;
                    prop_assert!(wb < bpages, "block 0 is never used");
                }
            }
        }
        let mut all = vec![0u8; SIZE as usize];
        dev.read_at(0, &mut all).unwrap();
        prop_assert_eq!(&all, &model);
        // §12 invariants against the slot table.
        let m = dev.mm_stat();
        let slots = dev.block_state();
        let same = slots.iter().filter(|s| s.same).count() as u64;
        // WB slots: no allocator object (with compressed_writeback they keep size and HUGE for the read path).
        let huge = slots.iter().filter(|s| s.huge && !s.wb).count() as u64;
        let compr: u64 = slots.iter().filter(|s| !s.wb).map(|s| s.size as u64).sum();
        let wb = slots.iter().filter(|s| s.wb).count() as u64;
        prop_assert_eq!(dev.bd_stat().bd_count, wb);
        prop_assert!(slots.iter().all(|s| !s.pp_slot), "every PP_SLOT released");
        prop_assert!(slots.iter().filter(|s| s.wb).all(|s| !s.idle), "WB slots are never idle");
        prop_assert_eq!(m.orig_data_size, slots.len() as u64 * PAGE_SIZE as u64);
        prop_assert_eq!(m.same_pages, same);
        prop_assert_eq!(m.huge_pages, huge);
        prop_assert_eq!(m.compr_data_size, compr);
        prop_assert!(m.huge_pages_since >= m.huge_pages);
        prop_assert!(recompressed || m.mem_used_max >= m.mem_used_total);
        let objects = slots.iter().filter(|s| s.size > 0 && !s.wb).count() as u64;
        prop_assert!(m.mem_used_total >= compr + 8 * (objects - huge));
        prop_assert!(slots.iter().all(|s| !s.pp_slot && !(s.fast && (s.priority != 0 || s.same))));
        // Discarding everything returns every page to the allocator.
        dev.discard(0, SIZE).unwrap();
        let m = dev.mm_stat();
        prop_assert_eq!((m.orig_data_size, m.compr_data_size, m.mem_used_total, m.same_pages, m.huge_pages), (0, 0, 0, 0, 0));
        prop_assert_eq!(dev.bd_stat().bd_count, 0, "every block released");
    }
}
