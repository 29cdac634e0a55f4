//! The fast path (`fast_algorithm`, `fast_path`, `Zram::write_page_fast`)
//! and precise recompression (`recompress from=ALGO`): attribute syntax and
//! errors, which algorithm stored each slot, the pressure switch, and that
//! precise recompression moves exactly the selected slots back to the
//! primary with statistics that match the slot table.

mod common;

use common::{page, phrases, Rng};
use zmem_codec::Params;
use zmem_device::BlockDevice;
use zmem_kernel::Errno;
use zmem_zram::{FastMode, RecompressParams, Zram, PAGE_SIZE};

fn errno(r: Result<(), zmem_kernel::AttrError>) -> Errno {
    r.expect_err("must be refused").errno
}

fn text(seed: u64) -> Vec<u8> {
    page(2, seed)
}

fn random(seed: u64) -> Vec<u8> {
    page(3, seed)
}

/// Byte runs of 3..8 at any offset: lz4m stores it huge, lz4 compresses it.
fn odd_runs(seed: u64) -> Vec<u8> {
    let mut r = Rng(seed.wrapping_mul(2) | 1);
    let mut p = vec![0u8; PAGE_SIZE];
    let mut i = 0;
    while i < PAGE_SIZE {
        let b = r.next() as u8;
        let n = (3 + r.below(6) as usize).min(PAGE_SIZE - i);
        p[i..i + n].fill(b);
        i += n;
    }
    p
}

fn read(dev: &Zram, i: usize) -> Vec<u8> {
    let mut b = vec![0u8; PAGE_SIZE];
    dev.read_page(i, &mut b).expect("read");
    b
}

/// lz4 primary, lz4m fast algorithm, optional zstd at priority 1.
fn fast_dev(pages: usize, zstd: bool) -> Zram {
    let mut b = Zram::builder()
        .algorithm("lz4", Params::default())
        .fast_algorithm("lz4m");
    if zstd {
        b = b.secondary(1, "zstd", Params::default());
    }
    b.disksize((pages * PAGE_SIZE) as u64)
        .build()
        .expect("device")
}

/// mm_stat agrees with the slot table.
fn check_stats(dev: &Zram) {
    let m = dev.mm_stat();
    let slots = dev.block_state();
    let compr: u64 = slots
        .iter()
        .filter(|s| !s.same)
        .map(|s| s.size as u64)
        .sum();
    assert_eq!(m.compr_data_size, compr, "compr_data_size");
    assert_eq!(
        m.huge_pages,
        slots.iter().filter(|s| s.huge).count() as u64,
        "huge_pages"
    );
    assert_eq!(
        m.same_pages,
        slots.iter().filter(|s| s.same).count() as u64,
        "same_pages"
    );
    assert_eq!(
        m.orig_data_size,
        slots.len() as u64 * PAGE_SIZE as u64,
        "orig_data_size"
    );
    assert!(slots.iter().all(|s| !s.pp_slot), "PP_SLOT released");
    assert!(
        slots.iter().all(|s| !(s.fast && s.priority != 0)),
        "FAST slots keep priority 0"
    );
}

#[test]
fn fast_algorithm_attribute() {
    let dev = Zram::new();
    assert_eq!(
        dev.attr_read("fast_algorithm").unwrap(),
        "",
        "none by default"
    );
    dev.attr_write("fast_algorithm", "algo=lz4m\n").unwrap();
    assert_eq!(
        dev.attr_read("fast_algorithm").unwrap(),
        dev.backends().available_show(Some("lz4m"))
    );
    // Unknown keys ignored, as the kernel's key=value attributes do.
    dev.attr_write("fast_algorithm", "foo=1 algo=wkdm").unwrap();
    assert!(dev.attr_read("fast_algorithm").unwrap().contains("[wkdm] "));
    for (input, want) in [
        ("", Errno::EINVAL),
        ("algo", Errno::EINVAL),
        ("algo=", Errno::EINVAL),
        ("foo=bar", Errno::EINVAL),
        ("algo=nope", Errno::EINVAL),
    ] {
        assert_eq!(
            errno(dev.attr_write("fast_algorithm", input)),
            want,
            "{input:?}"
        );
    }
    let e = dev.attr_write("fast_algorithm", "algo=nope").unwrap_err();
    assert!(
        e.message.contains("lz4m") && e.message.contains("lzo-rle"),
        "lists the algorithms: {}",
        e.message
    );
    let long = format!("algo={}", "x".repeat(128));
    assert_eq!(errno(dev.attr_write("fast_algorithm", &long)), Errno::E2BIG);
    // Still wkdm after the failures.
    assert!(dev.attr_read("fast_algorithm").unwrap().contains("[wkdm] "));
    dev.attr_write("disksize", "1M").unwrap();
    assert_eq!(
        errno(dev.attr_write("fast_algorithm", "algo=lz4m")),
        Errno::EBUSY
    );
    // Name checks come first, as in comp_algorithm.
    assert_eq!(
        errno(dev.attr_write("fast_algorithm", "algo=nope")),
        Errno::EINVAL
    );
    assert_eq!(dev.fast_algorithm(), Some("wkdm"));
    dev.attr_write("reset", "1").unwrap();
    assert_eq!(
        dev.attr_read("fast_algorithm").unwrap(),
        "",
        "reset clears it"
    );
    assert!(
        dev.attr_names().contains(&"fast_algorithm") && dev.attr_names().contains(&"fast_path")
    );
}

#[test]
fn fast_path_attribute() {
    let dev = Zram::new();
    assert_eq!(
        dev.attr_read("fast_path").unwrap(),
        "mode=off limit_pct=80 rate=0 active=0 writes=0\n"
    );
    // Before disksize any mode is accepted (the fast algorithm may come later).
    dev.attr_write("fast_path", "mode=pressure limit_pct=50 rate=1000")
        .unwrap();
    assert_eq!(
        dev.attr_read("fast_path").unwrap(),
        "mode=pressure limit_pct=50 rate=1000 active=0 writes=0\n"
    );
    // Keys not given keep their value; a bare mode word is accepted.
    dev.attr_write("fast_path", "always").unwrap();
    assert!(dev
        .attr_read("fast_path")
        .unwrap()
        .starts_with("mode=always limit_pct=50 rate=1000 "));
    for (input, want) in [
        ("", Errno::EINVAL),
        ("mode", Errno::EINVAL),
        ("mode=fast", Errno::EINVAL),
        ("limit_pct=101", Errno::EINVAL),
        ("limit_pct=-1", Errno::EINVAL),
        ("rate=abc", Errno::EINVAL),
        ("rate=99999999999999999999999", Errno::ERANGE),
        ("speed=1", Errno::EINVAL),
    ] {
        assert_eq!(errno(dev.attr_write("fast_path", input)), want, "{input:?}");
    }
    assert!(
        dev.attr_read("fast_path")
            .unwrap()
            .starts_with("mode=always limit_pct=50 rate=1000 "),
        "unchanged"
    );
    // Initialised without a fast algorithm: only off is accepted.
    dev.attr_write("disksize", "1M").unwrap();
    assert_eq!(
        errno(dev.attr_write("fast_path", "mode=always")),
        Errno::EINVAL
    );
    assert_eq!(
        errno(dev.attr_write("fast_path", "mode=pressure")),
        Errno::EINVAL
    );
    dev.attr_write("fast_path", "mode=off").unwrap();
    dev.attr_write("reset", "1").unwrap();
    assert!(
        dev.attr_read("fast_path")
            .unwrap()
            .starts_with("mode=off limit_pct=80 rate=0 "),
        "reset: off"
    );
}

#[test]
fn fast_writes_are_flagged_and_read_back() {
    let dev = fast_dev(64, false);
    dev.write_page_fast(0, &text(1)).unwrap();
    dev.write_page(1, &text(2)).unwrap();
    dev.write_page_fast(2, &random(3)).unwrap();
    dev.write_page_fast(3, &[0u8; PAGE_SIZE]).unwrap();
    let s0 = dev.slot_info(0).unwrap();
    assert!(s0.fast && s0.priority == 0 && !s0.huge, "{s0:?}");
    assert_eq!(dev.slot_algorithm(0), Some("lz4m"));
    assert_eq!(dev.slot_algorithm(1), Some("lz4"));
    assert!(!dev.slot_info(1).unwrap().fast);
    // An incompressible page written on the fast path is huge and FAST.
    let s2 = dev.slot_info(2).unwrap();
    assert!(s2.fast && s2.huge, "{s2:?}");
    assert_eq!(dev.slot_algorithm(2), Some("lz4m"));
    // Same-filled pages store no object: no algorithm.
    assert!(!dev.slot_info(3).unwrap().fast && dev.slot_info(3).unwrap().same);
    assert_eq!(dev.slot_algorithm(3), None);
    assert_eq!(read(&dev, 0), text(1));
    assert_eq!(read(&dev, 1), text(2));
    assert_eq!(read(&dev, 2), random(3));
    assert_eq!(read(&dev, 3), vec![0u8; PAGE_SIZE]);
    assert!(
        dev.attr_read("fast_path").unwrap().ends_with("writes=2\n"),
        "{}",
        dev.attr_read("fast_path").unwrap()
    );
    // An overwrite with the primary clears FAST.
    dev.write_page(0, &text(4)).unwrap();
    assert!(!dev.slot_info(0).unwrap().fast);
    assert_eq!(read(&dev, 0), text(4));
    check_stats(&dev);
    // Without a fast algorithm, write_page_fast uses the primary.
    let plain = common::device(4 * PAGE_SIZE as u64);
    plain.write_page_fast(0, &text(1)).unwrap();
    assert!(!plain.slot_info(0).unwrap().fast);
    assert_eq!(read(&plain, 0), text(1));
}

#[test]
fn always_mode_covers_block_io() {
    let dev = fast_dev(16, false);
    dev.attr_write("fast_path", "mode=always").unwrap();
    assert!(dev.attr_read("fast_path").unwrap().contains("active=1"));
    dev.write_page(0, &text(1)).unwrap();
    dev.write_at(PAGE_SIZE as u64, &text(2)).unwrap();
    // A partial write (read-modify-write) goes through the decision too.
    dev.write_at(2 * PAGE_SIZE as u64 + 512, &text(3)[..512])
        .unwrap();
    dev.write_page_primary(3, &text(4)).unwrap();
    let fast: Vec<bool> = (0..4).map(|i| dev.slot_info(i).unwrap().fast).collect();
    assert_eq!(fast, [true, true, true, false]);
    assert_eq!(read(&dev, 1), text(2));
    let mut want = vec![0u8; PAGE_SIZE];
    want[512..1024].copy_from_slice(&text(3)[..512]);
    assert_eq!(read(&dev, 2), want);
    dev.attr_write("fast_path", "mode=off").unwrap();
    dev.write_page(0, &text(5)).unwrap();
    assert!(!dev.slot_info(0).unwrap().fast);
    check_stats(&dev);
}

#[test]
fn pressure_mode_switches_at_the_threshold() {
    // Random pages are huge: one allocator page each.
    let limit_pages = 20u64;
    let dev = Zram::builder()
        .algorithm("lz4", Params::default())
        .fast_algorithm("lz4m")
        .mem_limit(limit_pages * PAGE_SIZE as u64)
        .fast_path(FastMode::Pressure, 50, 0)
        .disksize(64 * PAGE_SIZE as u64)
        .build()
        .unwrap();
    let expect =
        |dev: &Zram| dev.mm_stat().mem_used_total / PAGE_SIZE as u64 * 100 >= limit_pages * 50;
    let (mut saw_fast, mut saw_primary) = (false, false);
    for i in 0..16 {
        let want = expect(&dev);
        assert_eq!(
            dev.attr_read("fast_path").unwrap().contains("active=1"),
            want,
            "page {i}"
        );
        dev.write_page(i, &random(i as u64)).unwrap();
        assert_eq!(
            dev.slot_info(i).unwrap().fast,
            want,
            "page {i}: pool {}",
            dev.mm_stat().mem_used_total
        );
        saw_fast |= want;
        saw_primary |= !want;
    }
    assert!(saw_fast && saw_primary, "crossed the threshold");
    // Freeing pages brings the pool below the threshold: primary again.
    dev.discard(0, 16 * PAGE_SIZE as u64).unwrap();
    dev.attr_write("compact", "1").unwrap();
    assert!(!expect(&dev));
    assert!(dev.attr_read("fast_path").unwrap().contains("active=0"));
    dev.write_page(0, &random(100)).unwrap();
    assert!(!dev.slot_info(0).unwrap().fast);
    // Without mem_limit the usage criterion is off.
    dev.attr_write("mem_limit", "0").unwrap();
    for i in 1..30 {
        dev.write_page(i, &random(200 + i as u64)).unwrap();
        assert!(!dev.slot_info(i).unwrap().fast, "page {i}");
    }
    // limit_pct=0: always above the threshold once a limit is set.
    dev.attr_write("mem_limit", "1G").unwrap();
    dev.attr_write("fast_path", "limit_pct=0").unwrap();
    dev.write_page(40, &text(1)).unwrap();
    assert!(dev.slot_info(40).unwrap().fast);
    check_stats(&dev);
}

#[test]
fn precise_recompress_moves_only_the_chosen_algorithm_to_the_primary() {
    let dev = fast_dev(64, true);
    let want = |i: usize| match i {
        0..=31 => phrases(i as u64),
        32 => random(1),
        _ => text(i as u64),
    };
    for i in 0..32 {
        if i % 2 == 0 {
            dev.write_page_fast(i, &want(i)).unwrap();
        } else {
            dev.write_page(i, &want(i)).unwrap();
        }
    }
    // Huge either way, and two pages lz4m compresses better than lz4.
    for i in 32..35 {
        dev.write_page_fast(i, &want(i)).unwrap();
    }
    let lz4m_better: Vec<usize> = (33..35).collect();
    check_stats(&dev);
    let before: Vec<_> = (0..35).map(|i| dev.slot_info(i).unwrap()).collect();
    let rep = dev
        .recompress(&RecompressParams::new().from("lz4m"))
        .unwrap();
    assert_eq!(rep.candidates, 19, "16 + 1 + 2 fast pages: {rep:?}");
    assert_eq!(rep.attempted, 19);
    assert_eq!(rep.recompressed, 17, "{rep:?}");
    for (i, b) in before.iter().enumerate() {
        let a = dev.slot_info(i).unwrap();
        assert_eq!(a.priority, 0, "slot {i}: never zstd");
        if !b.fast {
            assert_eq!(a, *b, "slot {i}: not stored by lz4m, untouched");
        } else if lz4m_better.contains(&i) {
            assert!(
                a.fast && a.size == b.size,
                "slot {i}: lz4 would take a larger class: kept"
            );
        } else {
            assert!(!a.fast, "slot {i} left the fast algorithm");
            assert_eq!(a.ac_time_ns, b.ac_time_ns, "slot {i}: access time kept");
        }
        assert_eq!(read(&dev, i), want(i));
    }
    assert!(
        dev.slot_info(32).unwrap().huge,
        "still huge: relabelled in place"
    );
    // The slots lz4 cannot shrink are UNMOVED: the next pass skips them (they
    // would otherwise be retried, largest first, every round) until rewritten.
    for i in 0..35 {
        assert_eq!(
            dev.slot_info(i).unwrap().unmoved,
            lz4m_better.contains(&i),
            "slot {i}"
        );
    }
    let again = dev
        .recompress(&RecompressParams::new().from("lz4m"))
        .unwrap();
    assert_eq!((again.candidates, again.attempted), (0, 0), "{again:?}");
    dev.write_page_fast(33, &want(33)).unwrap();
    assert!(
        !dev.slot_info(33).unwrap().unmoved,
        "a rewrite clears UNMOVED"
    );
    assert_eq!(
        dev.recompress(&RecompressParams::new().from("lz4m"))
            .unwrap()
            .candidates,
        1
    );
    assert!(dev.slot_info(33).unwrap().unmoved);
    // Same sizes as a primary write of the same page.
    let primary = fast_dev(64, false);
    for i in (0..32).step_by(2) {
        primary.write_page(i, &want(i)).unwrap();
        assert_eq!(
            dev.slot_info(i).unwrap().size,
            primary.slot_info(i).unwrap().size,
            "slot {i}"
        );
    }
    check_stats(&dev);
    // Only the two lz4m-better slots are left with lz4m, and both are UNMOVED.
    assert_eq!(dev.block_state().iter().filter(|s| s.fast).count(), 2);
    let rep = dev
        .recompress(&RecompressParams::new().from("lz4m"))
        .unwrap();
    assert_eq!((rep.candidates, rep.recompressed), (0, 0));
    // Precise to a secondary: from=lz4 algo=zstd.
    let rep = dev
        .recompress(
            &RecompressParams::new()
                .from("lz4")
                .algo("zstd")
                .max_pages(5),
        )
        .unwrap();
    assert_eq!(rep.attempted, 5, "max_pages: {rep:?}");
    assert_eq!(
        dev.block_state().iter().filter(|s| s.priority == 1).count() as u64,
        rep.recompressed
    );
    assert!(rep.recompressed > 0);
    check_stats(&dev);
    for i in 0..35 {
        assert_eq!(read(&dev, i), want(i));
    }
}

#[test]
fn precise_recompress_of_huge_fast_slots_and_idle_filter() {
    let dev = fast_dev(16, false);
    dev.write_page_fast(0, &odd_runs(0)).unwrap();
    dev.write_page_fast(1, &phrases(1)).unwrap();
    dev.write_page_fast(2, &phrases(2)).unwrap();
    assert!(dev.slot_info(0).unwrap().huge, "lz4m stores it raw");
    dev.write_page_primary(3, &odd_runs(0)).unwrap();
    assert!(!dev.slot_info(3).unwrap().huge, "lz4 compresses it");
    let m0 = dev.mm_stat();
    // type=idle: only idle slots of lz4m.
    dev.attr_write("idle", "all").unwrap();
    dev.write_page_fast(2, &phrases(3)).unwrap(); // accessed: no longer idle
    dev.attr_write("recompress", "type=idle from=lz4m").unwrap();
    assert!(!dev.slot_info(0).unwrap().fast && !dev.slot_info(1).unwrap().fast);
    assert!(dev.slot_info(2).unwrap().fast, "not idle: untouched");
    assert!(!dev.slot_info(0).unwrap().huge);
    assert_eq!(
        dev.slot_info(0).unwrap().size,
        dev.slot_info(3).unwrap().size,
        "as a primary write stores it"
    );
    let m1 = dev.mm_stat();
    assert_eq!(m0.huge_pages - m1.huge_pages, 1);
    assert_eq!(
        m1.huge_pages_since, m0.huge_pages_since,
        "huge_pages_since unchanged"
    );
    assert!(m1.compr_data_size < m0.compr_data_size);
    assert_eq!(read(&dev, 0), odd_runs(0));
    assert_eq!(read(&dev, 2), phrases(3));
    check_stats(&dev);
    // threshold: slots below it are skipped without consuming max_pages.
    let rep = dev
        .recompress(
            &RecompressParams::new()
                .from("lz4m")
                .threshold(3000)
                .max_pages(1),
        )
        .unwrap();
    assert_eq!(
        (rep.candidates, rep.attempted, rep.recompressed),
        (1, 0, 0),
        "{rep:?}"
    );
}

#[test]
fn precise_recompress_errors() {
    let dev = fast_dev(16, true);
    dev.write_page_fast(0, &text(1)).unwrap();
    for (input, why) in [
        ("from=nope", "unknown source"),
        ("from=lz4", "lz4 to the primary lz4: same algorithm"),
        ("from=lz4m algo=nope", "unknown target"),
        ("from=lz4m algo=lz4m", "the fast algorithm is not a target"),
        ("from=lz4m priority=1", "priority= is for the kernel syntax"),
        ("from=lz4m priority=0", "priority= is for the kernel syntax"),
        ("from", "no value"),
        ("from=lz4m threshold=100000", "threshold >= huge_class_size"),
    ] {
        assert_eq!(
            errno(dev.attr_write("recompress", input)),
            Errno::EINVAL,
            "{input}: {why}"
        );
    }
    assert!(dev.slot_info(0).unwrap().fast, "nothing happened");
    dev.attr_write("recompress", "from=lz4m algo=zstd").unwrap();
    assert_eq!(
        dev.slot_info(0).unwrap().priority,
        1,
        "precise to a secondary"
    );
    // A device without a fast algorithm: from= must name a configured one.
    let plain = common::device(4 * PAGE_SIZE as u64);
    assert_eq!(
        errno(plain.attr_write("recompress", "from=lz4m")),
        Errno::EINVAL
    );
    let uninit = Zram::new();
    assert_eq!(
        errno(uninit.attr_write("recompress", "from=lzo-rle")),
        Errno::EINVAL
    );
}

#[test]
fn kernel_syntax_recompresses_fast_slots_with_secondaries() {
    let dev = fast_dev(16, true);
    dev.write_page_fast(0, &text(1)).unwrap();
    dev.write_page_fast(1, &random(1)).unwrap();
    dev.write_page(2, &text(2)).unwrap();
    let rep = dev.recompress(&RecompressParams::new()).unwrap();
    assert_eq!(rep.candidates, 3);
    let s0 = dev.slot_info(0).unwrap();
    assert!(!s0.fast && s0.priority == 1, "{s0:?}");
    let s1 = dev.slot_info(1).unwrap();
    assert!(
        s1.fast && s1.incompressible && s1.huge,
        "no progress with the last algorithm: {s1:?}"
    );
    assert_eq!(read(&dev, 0), text(1));
    assert_eq!(read(&dev, 1), random(1));
    // INCOMPRESSIBLE does not stop the precise pass back to the primary.
    let rep = dev
        .recompress(&RecompressParams::new().from("lz4m"))
        .unwrap();
    assert_eq!((rep.candidates, rep.recompressed), (1, 1), "{rep:?}");
    let s1 = dev.slot_info(1).unwrap();
    assert!(!s1.fast && s1.huge, "{s1:?}");
    assert_eq!(read(&dev, 1), random(1));
    check_stats(&dev);
}

#[test]
fn precise_recompress_moves_exactly_when_the_class_is_not_larger() {
    // Many pages of several kinds: lz4 sometimes smaller, sometimes larger
    // than lz4m, sometimes in the same size class.
    let pages: Vec<Vec<u8>> = (0..120u64)
        .map(|i| match i % 4 {
            0 => phrases(i),
            1 => text(i),
            2 => page(4, i),
            _ => page(5, i),
        })
        .collect();
    let n = pages.len();
    let dev = fast_dev(n, false);
    let reference = fast_dev(n, false);
    for (i, p) in pages.iter().enumerate() {
        dev.write_page_fast(i, p).unwrap();
        reference.write_page_primary(i, p).unwrap();
    }
    let before: Vec<_> = (0..n).map(|i| dev.slot_info(i).unwrap()).collect();
    dev.recompress(&RecompressParams::new().from("lz4m"))
        .unwrap();
    let class = |len: usize| dev.size_class(len).unwrap();
    let (mut same_class_moved, mut larger_kept, mut smaller_moved) = (0, 0, 0);
    for i in 0..n {
        let (b, a, r) = (
            before[i],
            dev.slot_info(i).unwrap(),
            reference.slot_info(i).unwrap(),
        );
        if b.same || b.huge || r.huge {
            continue;
        }
        let (cf, cp) = (class(b.size), class(r.size));
        if cp <= cf {
            assert!(
                !a.fast && a.size == r.size,
                "slot {i}: class {cp} <= {cf} must move: {a:?}"
            );
            if cp == cf && r.size != b.size {
                same_class_moved += 1;
            }
            if cp < cf {
                smaller_moved += 1;
            }
        } else {
            assert!(
                a.fast && a.size == b.size,
                "slot {i}: class {cp} > {cf} must stay: {a:?}"
            );
            larger_kept += 1;
        }
        assert_eq!(read(&dev, i), pages[i]);
    }
    assert!(
        same_class_moved > 0 && larger_kept > 0 && smaller_moved > 0,
        "{same_class_moved} {larger_kept} {smaller_moved}"
    );
    check_stats(&dev);
}
