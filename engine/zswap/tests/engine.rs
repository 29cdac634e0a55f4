//! Engine tests: reference-model property test, pool limit + hysteresis,
//! incompressible modes, bad parameters, backing-file errors, block view.

use std::collections::HashMap;

use proptest::prelude::*;
use zmem_files::testutil::ScratchDir;
use zmem_zswap::{
    Backing, BlockDevice, Errno, Incompressible, ShrinkWorker, Source, Zswap, ZswapDevice,
    PAGE_SIZE,
};

/// A private scratch directory, new and empty (backing stores refuse existing
/// files that hold data), removed with its files when dropped.
fn scratch() -> ScratchDir {
    ScratchDir::new("zswap")
}

/// A page that compresses about `kind`-wise: 0 = zero, 1 = same-filled non-zero,
/// 2 = text-like, 3 = random (incompressible).
fn page(kind: u8, seed: u64) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_SIZE];
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    match kind % 4 {
        0 => {}
        1 => p.fill((seed % 255) as u8 + 1),
        2 => {
            for (i, b) in p.iter_mut().enumerate() {
                *b = b"the quick brown fox "[(i + seed as usize) % 20]
                    ^ ((i / 512) as u8 & (seed as u8));
            }
        }
        _ => {
            for b in p.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
        }
    }
    p
}

/// An engine whose backing file `name` is in `dir`.
fn engine(
    dir: &ScratchDir,
    name: &str,
    slots: u64,
    pool_bytes: u64,
    zpool: &str,
    worker: ShrinkWorker,
) -> Zswap {
    let backing = Backing::create(dir.join(name), slots).unwrap();
    Zswap::builder()
        .compressor("lz4")
        .zpool(zpool)
        .max_pool_bytes(pool_bytes)
        .accept_threshold_percent(90)
        .shrinker_enabled(true)
        .worker(worker)
        .build(backing)
        .unwrap()
}

#[derive(Debug, Clone)]
enum Op {
    Out(u64, u8, u64),
    In(u64, bool),
    Free(u64),
    Shrink(usize),
    Worker,
    Compressor(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u64..48, 0u8..4, any::<u64>()).prop_map(|(o, k, s)| Op::Out(o, k, s)),
        4 => (0u64..48, any::<bool>()).prop_map(|(o, e)| Op::In(o, e)),
        1 => (0u64..48).prop_map(Op::Free),
        1 => (1usize..8).prop_map(Op::Shrink),
        1 => Just(Op::Worker),
        1 => (0u8..3).prop_map(Op::Compressor),
    ]
}

fn check_model(zpool: &str, ops: &[Op], tag: &str) {
    let dir = scratch();
    let z = engine(
        &dir,
        &format!("model-{zpool}-{tag}"),
        48,
        6 * PAGE_SIZE as u64,
        zpool,
        // zsmalloc runs with the worker paced along the swap path (as the
        // bench runs it), the others with the synchronous one.
        if zpool == "zsmalloc" {
            ShrinkWorker::Paced(2)
        } else {
            ShrinkWorker::Inline
        },
    );
    let mut model: HashMap<u64, Vec<u8>> = HashMap::new();
    let mut buf = vec![0u8; PAGE_SIZE];
    for op in ops {
        match *op {
            Op::Out(o, k, s) => {
                let p = page(k, s);
                z.swap_out(o, &p).unwrap();
                model.insert(o, p);
            }
            Op::In(o, exclusive) => {
                let src = z.swap_in(o, &mut buf, exclusive).unwrap();
                match model.get(&o) {
                    Some(p) => assert!(&buf == p, "offset {o} corrupted (from {src:?})"),
                    None => {
                        assert_eq!(src, Source::Empty, "offset {o} should be empty");
                        assert!(buf.iter().all(|&b| b == 0));
                    }
                }
                if exclusive {
                    model.remove(&o);
                }
            }
            Op::Free(o) => {
                z.swap_free(o);
                model.remove(&o);
            }
            Op::Shrink(n) => {
                z.shrinker_scan(n);
            }
            Op::Worker => {
                z.run_shrink_worker();
            }
            Op::Compressor(c) => z
                .attr_write("compressor", ["lz4", "lzo", "zstd"][c as usize])
                .unwrap(),
        }
        let st = z.stats();
        assert_eq!(
            st.stored_pages as usize,
            z.lru_len(),
            "stored_pages matches the LRU"
        );
    }
    for (o, p) in &model {
        z.swap_in(*o, &mut buf, false).unwrap();
        assert!(&buf == p, "offset {o} lost at the end");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn no_page_lost_or_corrupted_zsmalloc(ops in prop::collection::vec(op(), 1..200)) {
        check_model("zsmalloc", &ops, "a");
    }
    #[test]
    fn no_page_lost_or_corrupted_zbud(ops in prop::collection::vec(op(), 1..120)) {
        check_model("zbud", &ops, "b");
    }
    #[test]
    fn no_page_lost_or_corrupted_z3fold(ops in prop::collection::vec(op(), 1..120)) {
        check_model("z3fold", &ops, "c");
    }
}

#[test]
fn limit_hit_starts_writeback_and_hysteresis_refuses_until_accept() {
    // 64-page pool, accept at 57 pages; random pages are stored raw (one pool page each).
    let dir = scratch();
    let z = engine(
        &dir,
        "limit",
        512,
        64 * PAGE_SIZE as u64,
        "zsmalloc",
        ShrinkWorker::Manual,
    );
    let (max, accept) = z.limits();
    assert_eq!((max, accept), (64, 57));
    let mut off = 0;
    while z.store(off, &page(3, off)).is_ok() {
        off += 1;
        assert!(off < 512, "the limit must be hit");
    }
    let st = z.stats();
    assert_eq!(st.pool_limit_hit, 1);
    assert!(z.pool_pages() >= max);
    assert_eq!(st.stored_incompressible_pages, st.stored_pages);
    // Invalidate a few: below max but above accept → still refused (hysteresis), no new limit hit.
    for o in 0..3 {
        assert!(z.invalidate(o));
    }
    assert!(
        z.pool_pages() < max && z.pool_pages() > accept,
        "{} pages",
        z.pool_pages()
    );
    assert_eq!(
        z.store(1000 % 512, &page(2, 1)),
        Err(zmem_zswap::StoreReject::Hysteresis)
    );
    assert_eq!(z.stats().pool_limit_hit, 1);
    // Every entry is still referenced (set on store): the first run of the
    // shrink worker only rotates 16 of them and gives up (MAX_RECLAIM_RETRIES).
    let first = z.run_shrink_worker();
    assert_eq!((first.written_back, first.failures), (0, 16), "{first:?}");
    assert!(first.gave_up);
    // Later runs reach entries whose bit was cleared and write back until
    // usage ≤ accept.
    let mut wb = 0;
    for _ in 0..16 {
        wb += z.run_shrink_worker().written_back;
        if z.pool_pages() <= accept {
            break;
        }
    }
    assert!(wb > 0);
    let st = z.stats();
    assert_eq!(st.written_back_pages, wb as u64);
    assert!(
        z.pool_pages() <= accept,
        "{} pages after writeback",
        z.pool_pages()
    );
    assert_eq!(z.backing().used_slots(), wb as u64);
    // Now stores are accepted again.
    z.store(500, &page(2, 7)).unwrap();
    // Written-back pages read back from the file, identical.
    let mut buf = vec![0u8; PAGE_SIZE];
    for o in 3..off {
        let src = z.swap_in(o, &mut buf, false).unwrap();
        assert_eq!(buf, page(3, o), "offset {o} from {src:?}");
    }
    assert_eq!(z.stats().backing_reads, wb as u64);
}

#[test]
fn inline_worker_keeps_pool_under_limit_and_second_chance() {
    let dir = scratch();
    let z = engine(
        &dir,
        "inline",
        1024,
        32 * PAGE_SIZE as u64,
        "zsmalloc",
        ShrinkWorker::Inline,
    );
    for o in 0..400 {
        z.swap_out(o, &page(3, o)).unwrap();
        assert!(z.pool_pages() <= 33);
    }
    let st = z.stats();
    assert!(st.pool_limit_hit > 0 && st.written_back_pages > 0, "{st:?}");
    assert!(st.backing_writes >= st.written_back_pages);
    let mut buf = vec![0u8; PAGE_SIZE];
    for o in 0..400 {
        z.swap_in(o, &mut buf, false).unwrap();
        assert_eq!(buf, page(3, o));
    }
    // Second chance: one pass over the whole LRU clears the bits set on store
    // and writes back the entries already cleared; non-exclusive loads of all
    // that is left do not set the bit again (mm/zswap.c sets it only in
    // zswap_store_page), so the next pass writes back every one of them.
    let stored: Vec<u64> = (0..400).filter(|o| z.contains(*o)).collect();
    assert!(stored.len() > 4);
    z.shrinker_scan(stored.len());
    let left: Vec<u64> = stored.into_iter().filter(|o| z.contains(*o)).collect();
    assert!(!left.is_empty(), "entries referenced since their store");
    for o in &left {
        z.swap_in(*o, &mut buf, false).unwrap();
    }
    assert_eq!(z.shrinker_scan(left.len()), left.len());
    assert_eq!(z.lru_len(), 0);
}

#[test]
fn zero_pages_go_to_the_zeromap_and_incompressible_modes() {
    let dir = scratch();
    let z = engine(&dir, "zero", 16, 1 << 20, "zsmalloc", ShrinkWorker::Inline);
    assert_eq!(z.swap_out(0, &page(0, 0)).unwrap(), Source::Zero);
    assert_eq!(
        z.swap_out(1, &page(1, 5)).unwrap(),
        Source::Pool,
        "non-zero same-filled is compressed"
    );
    assert_eq!(z.stats().zero_pages, 1);
    assert_eq!(z.stats().stored_pages, 1);
    // 6.18: raw.
    assert_eq!(z.swap_out(2, &page(3, 9)).unwrap(), Source::Pool);
    assert_eq!(z.stats().stored_incompressible_pages, 1);
    // ≤ 6.17: reject.
    z.attr_write("incompressible", "reject").unwrap();
    assert_eq!(z.params().incompressible, Incompressible::Reject);
    assert_eq!(z.swap_out(3, &page(3, 10)).unwrap(), Source::Backing);
    assert_eq!(z.stats().reject_compress_poor, 1);
    let mut buf = vec![0u8; PAGE_SIZE];
    assert_eq!(z.swap_in(3, &mut buf, true).unwrap(), Source::Backing);
    assert_eq!(buf, page(3, 10));
    assert_eq!(z.swap_in(2, &mut buf, true).unwrap(), Source::Pool);
    assert_eq!(buf, page(3, 9));
    assert_eq!(
        z.stats().stored_incompressible_pages,
        0,
        "exclusive load freed the entry"
    );
    // zbud cannot hold a raw page: reject_compress_poor.
    let zb = engine(&dir, "zero-zbud", 16, 1 << 20, "zbud", ShrinkWorker::Inline);
    assert_eq!(zb.swap_out(0, &page(3, 1)).unwrap(), Source::Backing);
    assert_eq!(zb.stats().reject_compress_poor, 1);
    // Disabled: stores go to the backing file, loads keep working.
    z.swap_out(5, &page(2, 3)).unwrap();
    z.attr_write("enabled", "N").unwrap();
    assert_eq!(z.swap_out(6, &page(2, 4)).unwrap(), Source::Backing);
    assert_eq!(z.swap_in(5, &mut buf, false).unwrap(), Source::Pool);
    assert_eq!(buf, page(2, 3));
    assert!(z.attr_read("meminfo").unwrap().starts_with("Zswap:"));
    // Wrong buffer sizes are errors, not panics.
    assert!(z.swap_out(7, &[1u8; 100]).is_err());
    assert!(z.swap_in(5, &mut [0u8; 100], false).is_err());
    assert!(z.load(5, &mut [0u8; 8192], false).is_err());
    assert_eq!(
        z.store(7, &[1u8; 100]),
        Err(zmem_zswap::StoreReject::BadPage)
    );
}

#[test]
fn bad_parameter_values_are_einval_style() {
    let dir = scratch();
    let z = engine(
        &dir,
        "params",
        16,
        1 << 20,
        "zsmalloc",
        ShrinkWorker::Inline,
    );
    let cases = [
        ("enabled", "maybe", Errno::EINVAL),
        ("shrinker_enabled", "", Errno::EINVAL),
        ("max_pool_percent", "-3", Errno::EINVAL),
        ("max_pool_percent", "4294967296", Errno::ERANGE),
        ("accept_threshold_percent", "4294967296", Errno::ERANGE),
        ("accept_threshold_percent", "x", Errno::EINVAL),
        ("compressor", "lz5", Errno::ENOENT),
        ("zpool", "zfoo", Errno::ENOENT),
        ("max_pool_bytes", "12Q", Errno::EINVAL),
        ("incompressible", "drop", Errno::EINVAL),
        ("stored_pages", "1", Errno::EACCES),
        ("nope", "1", Errno::ENOENT),
    ];
    let before = z.params();
    for (name, v, errno) in cases {
        let e = z.attr_write(name, v).unwrap_err();
        assert_eq!(e.errno, errno, "{name}={v:?}: {e}");
        assert!(!e.message.is_empty());
    }
    assert_eq!(z.params(), before, "failed writes change nothing");
    // A plain uint in 6.18, as this machine's kernel shows: 150 is taken.
    z.attr_write("accept_threshold_percent", "150\n").unwrap();
    assert_eq!(z.attr_read("accept_threshold_percent").unwrap(), "150\n");
    z.attr_write("enabled", "t").unwrap();
    assert_eq!(z.attr_read("enabled").unwrap(), "Y\n");
    z.attr_write("max_pool_percent", "0x20").unwrap();
    assert_eq!(z.attr_read("max_pool_percent").unwrap(), "32\n");
    z.attr_write("zpool", "z3fold").unwrap();
    z.swap_out(0, &page(2, 1)).unwrap();
    assert_eq!(
        z.attr_write("zpool", "zbud").unwrap_err().errno,
        Errno::EBUSY
    );
    for name in z.attr_names() {
        z.attr_read(name).unwrap();
    }
    let backing = Backing::create(dir.join("params2"), 4).unwrap();
    assert_eq!(
        Zswap::builder()
            .compressor("nope")
            .build(backing)
            .unwrap_err()
            .errno,
        Errno::ENOENT
    );
}

#[test]
fn backing_file_errors_keep_pool_pages_readable() {
    // Cannot be created.
    let e = Backing::create("/nonexistent-dir/zmem/backing", 4)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cannot create backing file") && e.contains("/nonexistent-dir"),
        "{e}"
    );
    let e = ZswapDevice::create("/nonexistent-dir/x", 1 << 20, Zswap::builder(), false)
        .err()
        .unwrap();
    assert!(e.contains("/nonexistent-dir/x"), "{e}");
    // Full: /dev/full fails every write with ENOSPC.
    if !std::path::Path::new("/dev/full").exists() {
        zmem_files::testutil::skip(
            "SKIP backing_file_errors_keep_pool_pages_readable (full part): no /dev/full",
        );
        return;
    }
    let backing = Backing::open("/dev/full", 256, true).unwrap();
    let z = Zswap::builder()
        .compressor("lz4")
        .max_pool_bytes(16 * PAGE_SIZE as u64)
        .worker(ShrinkWorker::Inline)
        .build(backing)
        .unwrap();
    let dev = ZswapDevice::new(z);
    let mut stored = Vec::new();
    let mut full_err = None;
    for o in 0..64u64 {
        match dev.write_at(o * PAGE_SIZE as u64, &page(3, o)) {
            Ok(()) => stored.push(o),
            Err(e) => {
                full_err = Some(e);
                break;
            }
        }
    }
    let e = full_err.expect("the pool fills and the full backing file refuses the page");
    assert_eq!(e.errno(), Errno::ENOSPC, "{e}");
    assert!(e.to_string().contains("full"), "{e}");
    // The run started by the refused store only rotated entries still
    // referenced since their store; the next run tries to write them back.
    let run = dev.zswap().run_shrink_worker();
    assert_eq!(run.written_back, 0);
    let st = dev.zswap().stats();
    assert!(
        st.reject_reclaim_fail > 0,
        "writeback to the full file failed: {st:?}"
    );
    assert_eq!(st.written_back_pages, 0);
    let mut buf = vec![0u8; PAGE_SIZE];
    for o in &stored {
        dev.read_at(o * PAGE_SIZE as u64, &mut buf).unwrap();
        assert_eq!(buf, page(3, *o), "pool page {o} still readable");
    }
}

#[test]
fn block_view_data_survives_eviction() {
    let dir = scratch();
    let path = dir.join("blockdev");
    let dev = ZswapDevice::create(
        &path,
        256 * PAGE_SIZE as u64,
        Zswap::builder()
            .compressor("lzo")
            .max_pool_bytes(24 * PAGE_SIZE as u64),
        false,
    )
    .unwrap();
    assert_eq!(dev.size(), 256 * PAGE_SIZE as u64);
    let mut expect = vec![0u8; 256 * PAGE_SIZE];
    for o in 0..256u64 {
        let p = page((o % 4) as u8, o);
        dev.write_at(o * PAGE_SIZE as u64, &p).unwrap();
        expect[o as usize * PAGE_SIZE..(o as usize + 1) * PAGE_SIZE].copy_from_slice(&p);
    }
    // Partial, sector-aligned writes across page boundaries.
    let patch = vec![0xabu8; 3 * 512];
    dev.write_at(5 * PAGE_SIZE as u64 + 3072, &patch).unwrap();
    expect[5 * PAGE_SIZE + 3072..5 * PAGE_SIZE + 3072 + 1536].copy_from_slice(&patch);
    dev.discard(10 * PAGE_SIZE as u64, PAGE_SIZE as u64)
        .unwrap();
    expect[10 * PAGE_SIZE..11 * PAGE_SIZE].fill(0);
    let st = dev.zswap().stats();
    assert!(st.written_back_pages > 0, "eviction happened: {st:?}");
    let mut got = vec![0u8; 256 * PAGE_SIZE];
    dev.read_at(0, &mut got).unwrap();
    assert!(got == expect, "device contents differ after eviction");
    assert_eq!(
        dev.read_at(1, &mut got[..512]).unwrap_err().errno(),
        Errno::EINVAL
    );
    assert_eq!(
        dev.read_at(256 * PAGE_SIZE as u64, &mut got[..512])
            .unwrap_err()
            .errno(),
        Errno::EINVAL
    );
    assert_eq!(
        dev.attr_read("written_back_pages").unwrap(),
        format!("{}\n", dev.zswap().stats().written_back_pages)
    );
}

#[test]
fn percent_limit_of_ram_and_shrinker_count() {
    let dir = scratch();
    let backing = Backing::create(dir.join("percent"), 64).unwrap();
    let z = Zswap::builder()
        .compressor("lz4")
        .ram_size(1000 * PAGE_SIZE as u64)
        .max_pool_percent(10)
        .accept_threshold_percent(90)
        .build(backing)
        .unwrap();
    assert_eq!(z.limits(), (100, 90));
    z.attr_write("max_pool_percent", "20").unwrap();
    assert_eq!(z.limits(), (200, 180));
    z.attr_write("max_pool_bytes", "40K").unwrap();
    assert_eq!(z.limits(), (10, 9), "a byte limit overrides the percent");
    for o in 0..8 {
        z.swap_out(o, &page(3, o)).unwrap();
    }
    assert_eq!(z.shrinker_count(), 0, "shrinker_enabled is off by default");
    assert_eq!(z.shrinker_scan(8), 0);
    z.attr_write("shrinker_enabled", "Y").unwrap();
    assert_eq!(z.shrinker_count(), 8, "8 raw entries in 8 pool pages");
    // Disk swap-ins protect that many entries from the next count.
    z.attr_write("incompressible", "reject").unwrap();
    z.swap_out(20, &page(3, 20)).unwrap();
    let mut buf = vec![0u8; PAGE_SIZE];
    assert_eq!(z.swap_in(20, &mut buf, true).unwrap(), Source::Backing);
    assert_eq!(z.shrinker_count(), 7);
    assert_eq!(z.shrinker_count(), 8, "the protection is consumed");
    let st = z.stats();
    assert_eq!(st.zswapped_bytes(), 8 * PAGE_SIZE as u64);
    assert_eq!(st.zswap_bytes(), st.pool_total_size);
}

/// An existing backing file is never truncated: one that holds data, a
/// filesystem or swap signature, or is too small is refused with the reason
/// and left byte for byte as it was; `force` uses it (extending, never
/// shrinking); an all-zero file of the right size is used as is.
#[test]
fn existing_backing_file_is_never_destroyed() {
    let dir = scratch();
    let path = dir.join("existing");
    let data = b"root:x:0:0:root:/root:/bin/bash\n".repeat(4096);
    std::fs::write(&path, &data).unwrap();
    let e = Backing::open(&path, 8, false).unwrap_err().to_string();
    assert!(e.contains("holds data") && e.contains("--force"), "{e}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        data,
        "refused file unchanged"
    );
    let e = ZswapDevice::create(&path, 1 << 20, Zswap::builder(), false)
        .err()
        .unwrap();
    assert!(e.contains("holds data"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), data);

    let mut swap = vec![0u8; 64 * PAGE_SIZE];
    swap[4086..4096].copy_from_slice(b"SWAPSPACE2");
    std::fs::write(&path, &swap).unwrap();
    let e = Backing::open(&path, 8, false).unwrap_err().to_string();
    assert!(e.contains("swap signature"), "{e}");

    std::fs::write(&path, vec![0u8; 4 * PAGE_SIZE]).unwrap();
    let e = Backing::open(&path, 8, false).unwrap_err().to_string();
    assert!(e.contains("too small") && e.contains("16384 bytes"), "{e}");

    std::fs::write(&path, vec![0u8; 8 * PAGE_SIZE]).unwrap();
    let b = Backing::open(&path, 8, false).expect("an all-zero file of the right size");
    drop(b);

    std::fs::write(&path, &data).unwrap();
    let b = Backing::open(&path, 1024, true).expect("--force");
    assert_eq!(b.slots(), 1024);
    let md = std::fs::metadata(&path).unwrap();
    assert_eq!(md.len(), 1024 * PAGE_SIZE as u64, "extended, not truncated");
    let mut head = vec![0u8; 32];
    std::os::unix::fs::FileExt::read_exact_at(&std::fs::File::open(&path).unwrap(), &mut head, 0)
        .unwrap();
    assert_eq!(
        &head[..],
        &data[..32],
        "--force keeps the bytes until zswap writes a slot"
    );
}

#[test]
fn new_backing_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch();
    let path = dir.join("mode");
    let b = Backing::create(&path, 4).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode & 0o077, 0, "mode {mode:o}");
    drop(b);
}
