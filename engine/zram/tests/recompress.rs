//! Multi-algorithm recompression and idle tracking (zram_drv.c: `recompress_store`, `idle_store`): every
//! attribute with the kernel's syntax and errors, including its quirks, the
//! statistics effects, the largest-first order, and data integrity.

mod common;

use std::collections::HashMap;

use common::{dev_with, errno, page, Rng};
use proptest::prelude::*;
use zmem_device::BlockDevice;
use zmem_kernel::Errno;
use zmem_zram::{RecompressParams, Zram, PAGE_SIZE};

const MB: u64 = 1 << 20;

/// Bytes from a 16-symbol alphabet: lz4 finds no matches (stored HUGE),
/// zstd's entropy coder halves it.
fn low_entropy(seed: u64) -> Vec<u8> {
    let mut r = Rng(seed | 1);
    (0..PAGE_SIZE)
        .map(|_| b"abcdefghijklmnop"[r.below(16) as usize])
        .collect()
}

fn text(seed: u64) -> Vec<u8> {
    page(2, seed)
}

fn random(seed: u64) -> Vec<u8> {
    page(3, seed)
}

fn read(dev: &Zram, i: usize) -> Vec<u8> {
    let mut b = vec![0u8; PAGE_SIZE];
    dev.read_page(i, &mut b).expect("read");
    b
}

// ---------------------------------------------------------------- recomp_algorithm

#[test]
fn recomp_algorithm_store_and_show() {
    let dev = Zram::new();
    assert_eq!(
        dev.attr_read("recomp_algorithm").unwrap(),
        "",
        "nothing configured"
    );
    dev.attr_write("recomp_algorithm", "algo=zstd").unwrap();
    let list = |sel: &str| dev.backends().available_show(Some(sel));
    assert_eq!(
        dev.attr_read("recomp_algorithm").unwrap(),
        format!("#1: {}", list("zstd"))
    );
    assert!(dev
        .attr_read("recomp_algorithm")
        .unwrap()
        .contains("[zstd] "));
    // Unknown keys are ignored; the newline-terminated form works too.
    dev.attr_write("recomp_algorithm", "foo=bar algo=deflate priority=3\n")
        .unwrap();
    assert_eq!(
        dev.attr_read("recomp_algorithm").unwrap(),
        format!("#1: {}#3: {}", list("zstd"), list("deflate"))
    );
    // Re-configuring a priority replaces it.
    dev.attr_write("recomp_algorithm", "algo=lz4hc priority=1")
        .unwrap();
    assert!(dev
        .attr_read("recomp_algorithm")
        .unwrap()
        .starts_with("#1: lzo-rle lzo lz4 [lz4hc] "));
    // comp_algorithm is unaffected.
    assert!(dev
        .attr_read("comp_algorithm")
        .unwrap()
        .contains("[lzo-rle]"));
}

#[test]
fn recomp_algorithm_errors() {
    let dev = Zram::new();
    for (input, want) in [
        ("", Errno::EINVAL),                      // no algo
        ("priority=2", Errno::EINVAL),            // no algo
        ("algo", Errno::EINVAL),                  // token without value
        ("algo=", Errno::EINVAL),                 // empty value
        ("algo=zstd priority=0", Errno::EINVAL),  // primary is not a secondary
        ("algo=zstd priority=4", Errno::EINVAL),  // beyond 3
        ("algo=zstd priority=-1", Errno::EINVAL), // negative
        ("algo=zstd priority=x", Errno::EINVAL),  // not an int
        ("algo=zstd priority=99999999999", Errno::ERANGE),
        ("algo=nope", Errno::EINVAL), // unknown algorithm
    ] {
        assert_eq!(
            errno(dev.attr_write("recomp_algorithm", input)),
            want,
            "{input:?}"
        );
    }
    let long = format!("algo={}", "z".repeat(128));
    assert_eq!(
        errno(dev.attr_write("recomp_algorithm", &long)),
        Errno::E2BIG
    );
    assert_eq!(
        dev.attr_read("recomp_algorithm").unwrap(),
        "",
        "failed writes configure nothing"
    );
    dev.attr_write("recomp_algorithm", "algo=zstd").unwrap();
    dev.attr_write("disksize", "1M").unwrap();
    assert_eq!(
        errno(dev.attr_write("recomp_algorithm", "algo=deflate priority=2")),
        Errno::EBUSY
    );
    // Name errors come before the initstate check, as in __comp_algorithm_store.
    assert_eq!(
        errno(dev.attr_write("recomp_algorithm", "algo=nope")),
        Errno::EINVAL
    );
    dev.attr_write("reset", "1").unwrap();
    assert_eq!(
        dev.attr_read("recomp_algorithm").unwrap(),
        "",
        "reset clears the secondary algorithms"
    );
}

#[test]
fn algorithm_params_per_priority() {
    let dev = Zram::new();
    dev.attr_write("comp_algorithm", "lz4").unwrap();
    dev.attr_write("recomp_algorithm", "algo=zstd").unwrap();
    dev.attr_write("recomp_algorithm", "algo=deflate priority=3")
        .unwrap();
    dev.attr_write("algorithm_params", "algo=zstd level=19")
        .unwrap();
    dev.attr_write("algorithm_params", "priority=3 level=9")
        .unwrap();
    dev.attr_write("algorithm_params", "algo=lz4 level=2")
        .unwrap();
    let cfg = dev.config();
    assert_eq!(cfg.params[0].level, Some(2));
    assert_eq!(cfg.params[1].level, Some(19));
    assert_eq!(cfg.params[3].level, Some(9));
    assert_eq!(
        errno(dev.attr_write("algorithm_params", "algo=lz4hc level=3")),
        Errno::EINVAL,
        "not configured"
    );
    assert_eq!(
        errno(dev.attr_write("algorithm_params", "priority=4 level=3")),
        Errno::EINVAL
    );
    // algo= takes precedence over priority=.
    dev.attr_write("algorithm_params", "priority=0 algo=deflate level=1")
        .unwrap();
    assert_eq!(dev.config().params[3].level, Some(1));
    assert_eq!(dev.config().params[0].level, Some(2));
    dev.attr_write("disksize", "1M").unwrap();
    // Secondary compressors work with their params: recompress and read back.
    dev.write_page(0, &text(1)).unwrap();
    dev.attr_write("recompress", "").unwrap();
    assert_eq!(dev.slot_info(0).unwrap().priority, 1);
    assert_eq!(read(&dev, 0), text(1));
}

// ---------------------------------------------------------------- recompress syntax

#[test]
fn recompress_parse_rules() {
    let p = RecompressParams::parse("").unwrap();
    assert_eq!(p, RecompressParams::new());
    assert_eq!(
        (p.prio, p.prio_max, p.max_pages, p.threshold),
        (1, 4, u64::MAX, 0)
    );
    let p = RecompressParams::parse("type=idle").unwrap();
    assert!(p.idle && !p.huge);
    let p = RecompressParams::parse("type=huge").unwrap();
    assert!(!p.idle && p.huge);
    let p = RecompressParams::parse("type=huge_idle\n").unwrap();
    assert!(p.idle && p.huge);
    // Other values leave the mode as it was: no error, no filter.
    let p = RecompressParams::parse("type=bogus").unwrap();
    assert!(!p.idle && !p.huge);
    let p = RecompressParams::parse("type=idle type=bogus").unwrap();
    assert!(p.idle, "an unknown type does not clear an earlier one");
    // priority=0 is turned into 1; range [P, P+1).
    let p = RecompressParams::parse("priority=0").unwrap();
    assert_eq!((p.prio, p.prio_max), (1, 2));
    let p = RecompressParams::parse("priority=3").unwrap();
    assert_eq!((p.prio, p.prio_max), (3, 4));
    let p = RecompressParams::parse("max_pages=7 threshold=1000 algo=zstd unknown=1").unwrap();
    assert_eq!(
        (p.max_pages, p.threshold, p.algo.as_deref()),
        (7, 1000, Some("zstd"))
    );
    for (input, want) in [
        ("type", Errno::EINVAL),
        ("type=", Errno::EINVAL),
        ("max_pages=", Errno::EINVAL),
        ("max_pages=x", Errno::EINVAL),
        ("max_pages=-1", Errno::EINVAL),
        ("max_pages=0x10", Errno::EINVAL), // base 10 only
        ("max_pages=18446744073709551616", Errno::ERANGE),
        ("threshold=4294967296", Errno::ERANGE),
        ("threshold=1k", Errno::EINVAL),
        ("priority=-1", Errno::EINVAL),
        ("priority=4294967296", Errno::ERANGE),
        ("algo", Errno::EINVAL),
    ] {
        assert_eq!(
            RecompressParams::parse(input).expect_err(input).errno,
            want,
            "{input:?}"
        );
    }
}

// ---------------------------------------------------------------- recompress effects

/// Slots: 0 text, 1 random (huge, stays huge), 2 low-entropy (huge under lz4,
/// not under zstd), 3 same-filled, 4 text (left non-idle).
fn mixed(dev: &Zram) -> Vec<Vec<u8>> {
    let pages = vec![text(10), random(11), low_entropy(12), page(1, 13), text(14)];
    for (i, p) in pages.iter().enumerate() {
        dev.write_page(i, p).unwrap();
    }
    pages
}

#[test]
fn recompress_idle_stats_and_flags() {
    let dev = dev_with(&[(1, "zstd")], MB);
    let pages = mixed(&dev);
    let before: Vec<_> = (0..5).map(|i| dev.slot_info(i).unwrap()).collect();
    assert!(
        before[1].huge && before[2].huge && !before[0].huge,
        "{before:?}"
    );
    dev.attr_write("idle", "all").unwrap();
    assert!(!dev.slot_info(3).unwrap().idle, "SAME slots are never idle");
    let _ = read(&dev, 4); // access clears IDLE
    let mm0 = dev.mm_stat();
    let rep = dev.recompress(&RecompressParams::new().idle()).unwrap();
    assert_eq!(rep.candidates, 3, "{rep:?}");
    assert_eq!(rep.attempted, 3);
    assert_eq!(rep.recompressed, 2, "text and low-entropy pages");
    assert_eq!(
        rep.incompressible, 1,
        "the random page, after the last algorithm"
    );
    let after: Vec<_> = (0..5).map(|i| dev.slot_info(i).unwrap()).collect();
    // Text: recompressed with priority 1 into a smaller class.
    assert_eq!(after[0].priority, 1);
    assert!(after[0].size < before[0].size);
    assert!(!after[0].idle && !after[0].huge && !after[0].pp_slot);
    assert_eq!(after[0].ac_time_ns, 0, "slot_free resets ac_time");
    // Random: untouched except IDLE cleared and INCOMPRESSIBLE set.
    assert!(after[1].incompressible && after[1].huge && !after[1].idle);
    assert_eq!((after[1].priority, after[1].size), (0, PAGE_SIZE));
    // Low entropy: huge before, a normal zstd object now, never HUGE.
    assert!(!after[2].huge && after[2].priority == 1 && after[2].size < dev.huge_class_size());
    // SAME and the accessed slot: untouched.
    assert_eq!(after[3], before[3]);
    assert!(after[4].priority == 0 && after[4].size == before[4].size);
    let mm1 = dev.mm_stat();
    let saved = (before[0].size - after[0].size + before[2].size - after[2].size) as u64;
    assert_eq!(mm0.compr_data_size - mm1.compr_data_size, saved);
    assert_eq!(rep.bytes_before - rep.bytes_after, saved);
    assert_eq!(mm1.orig_data_size, mm0.orig_data_size);
    assert_eq!(
        mm1.huge_pages,
        mm0.huge_pages - 1,
        "the low-entropy page is no longer huge"
    );
    assert_eq!(
        mm1.huge_pages_since, mm0.huge_pages_since,
        "huge_pages_since does not change"
    );
    assert_eq!(mm1.same_pages, mm0.same_pages);
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&read(&dev, i), p, "slot {i} reads back identical");
    }
    // Second pass: recompressed (priority 1 == prio_max-1) and incompressible slots are no candidates.
    dev.attr_write("idle", "all").unwrap();
    let rep = dev.recompress(&RecompressParams::new()).unwrap();
    assert_eq!(rep.candidates, 1, "only slot 4 (text, priority 0): {rep:?}");
    assert_eq!(dev.slot_info(4).unwrap().priority, 1);
}

#[test]
fn recompress_type_filters() {
    let dev = dev_with(&[(1, "zstd")], MB);
    mixed(&dev);
    dev.write_page(5, &low_entropy(99)).unwrap();
    dev.attr_write("idle", "all").unwrap();
    let _ = read(&dev, 5); // huge but not idle
                           // huge_idle: huge AND idle → slots 1 and 2.
    let rep = dev
        .recompress(&RecompressParams::parse("type=huge_idle").unwrap())
        .unwrap();
    assert_eq!(rep.candidates, 2, "{rep:?}");
    assert_eq!(dev.slot_info(5).unwrap().priority, 0);
    // huge: slot 5 (slot 1 is INCOMPRESSIBLE now, slot 2 recompressed).
    let rep = dev
        .recompress(&RecompressParams::parse("type=huge").unwrap())
        .unwrap();
    assert_eq!((rep.candidates, rep.recompressed), (1, 1), "{rep:?}");
    // idle: slot 0 only (slot 4 was still idle too) → 0 and 4.
    let rep = dev
        .recompress(&RecompressParams::parse("type=idle").unwrap())
        .unwrap();
    assert_eq!(rep.candidates, 2, "{rep:?}");
    // A bogus type is unfiltered: nothing left.
    dev.attr_write("recompress", "type=bogus").unwrap();
    assert!(dev
        .block_state()
        .iter()
        .all(|s| s.same || s.priority == 1 || s.incompressible));
}

#[test]
fn recompress_threshold_and_max_pages() {
    let dev = dev_with(&[(1, "zstd")], MB);
    mixed(&dev);
    let small = dev.slot_info(0).unwrap().size;
    // Threshold above the text size: text slots are skipped and consume no budget.
    let t = small as u32 + 1;
    let rep = dev
        .recompress(&RecompressParams::new().threshold(t).max_pages(1))
        .unwrap();
    assert_eq!(rep.attempted, 1, "{rep:?}");
    assert_eq!(dev.slot_info(0).unwrap().priority, 0);
    // The budget went to the largest candidate: one of the huge ones (random slot 1 is
    // index-lower, low-entropy slot 2 inserted later in the same bucket → first: LIFO).
    // (zstd's ~2.1 KB result is above the threshold, so it was refused, and
    // zstd being the last algorithm, the slot is INCOMPRESSIBLE.)
    let s2 = dev.slot_info(2).unwrap();
    assert!(
        s2.incompressible && s2.priority == 0,
        "LIFO within bucket 64: slot 2 before slot 1: {s2:?}"
    );
    assert!(
        !dev.slot_info(1).unwrap().incompressible,
        "slot 1 not attempted"
    );
    // max_pages=0 does nothing.
    let rep = dev
        .recompress(&RecompressParams::new().max_pages(0))
        .unwrap();
    assert_eq!(rep.attempted, 0);
    assert!(
        dev.block_state().iter().all(|s| !s.pp_slot),
        "PP_SLOT released after the pass"
    );
    // The result must land below the threshold: a threshold just above the zstd size of
    // the text page accepts, one at or below it refuses (no INCOMPRESSIBLE either? it is:
    // the last algorithm was tried).
    let dev2 = dev_with(&[(1, "zstd")], MB);
    dev2.write_page(0, &text(10)).unwrap();
    let lz4_size = dev2.slot_info(0).unwrap().size as u32;
    let rep = dev2
        .recompress(&RecompressParams::new().threshold(lz4_size.min(100)))
        .unwrap();
    assert_eq!(
        (rep.recompressed, rep.incompressible),
        (0, 1),
        "zstd result ≥ 100 bytes is refused: {rep:?}"
    );
    assert!(dev2.slot_info(0).unwrap().incompressible);
}

#[test]
fn largest_first_order_via_max_pages_one() {
    let dev = dev_with(&[(1, "zstd")], 4 * MB);
    // Pages of increasing compressed size: text with a growing random tail.
    let mut pages = Vec::new();
    for i in 0..8u64 {
        let mut p = text(100 + i);
        let mut r = Rng(7 + i);
        let tail = (i as usize) * 256;
        for b in p[PAGE_SIZE - tail..].iter_mut() {
            *b = b"abcdefghijklmnop"[r.below(16) as usize];
        }
        pages.push(p);
    }
    // Write them in a shuffled order so index order ≠ size order.
    let order = [3usize, 6, 0, 7, 2, 5, 1, 4];
    for (slot, &k) in order.iter().enumerate() {
        dev.write_page(slot, &pages[k]).unwrap();
    }
    let mut sizes: Vec<(usize, usize)> = (0..8)
        .map(|s| (dev.slot_info(s).unwrap().size, s))
        .collect();
    // Expected: by bucket (size/64) descending, then higher index first (LIFO).
    sizes.sort_by_key(|&(sz, s)| std::cmp::Reverse((sz / 64, s)));
    let mut seen = Vec::new();
    for _ in 0..8 {
        let rep = dev
            .recompress(&RecompressParams::new().max_pages(1))
            .unwrap();
        assert_eq!(rep.attempted, 1);
        let done: Vec<usize> = (0..8)
            .filter(|&s| !seen.contains(&s))
            .filter(|&s| {
                let i = dev.slot_info(s).unwrap();
                i.priority != 0 || i.incompressible
            })
            .collect();
        assert_eq!(done.len(), 1, "exactly one slot per pass: {done:?}");
        seen.push(done[0]);
    }
    let want: Vec<usize> = sizes.iter().map(|&(_, s)| s).collect();
    assert_eq!(
        seen, want,
        "largest first, LIFO within a bucket (sizes {sizes:?})"
    );
    for (slot, &k) in order.iter().enumerate() {
        assert_eq!(read(&dev, slot), pages[k]);
    }
}

#[test]
fn incompressible_only_after_the_last_algorithm() {
    let dev = dev_with(&[(1, "lz4hc"), (2, "zstd")], MB);
    dev.write_page(0, &random(1)).unwrap();
    // Range restricted to priority 1 (< num_active_comps = 3): no flag.
    dev.attr_write("recompress", "priority=1").unwrap();
    assert!(!dev.slot_info(0).unwrap().incompressible);
    dev.attr_write("recompress", "algo=lz4hc").unwrap();
    assert!(!dev.slot_info(0).unwrap().incompressible);
    // The last algorithm: flagged.
    dev.attr_write("recompress", "algo=zstd").unwrap();
    assert!(dev.slot_info(0).unwrap().incompressible);
    // A slot recompressed with priority 1 stays a candidate for priority 2.
    dev.write_page(1, &text(5)).unwrap();
    dev.attr_write("recompress", "priority=1").unwrap();
    let p1 = dev.slot_info(1).unwrap();
    assert_eq!(p1.priority, 1);
    let rep = dev.recompress(&RecompressParams::new()).unwrap();
    assert_eq!(rep.candidates, 1, "slot 1 (priority 1 + 1 < 3): {rep:?}");
    let p2 = dev.slot_info(1).unwrap();
    assert!(p2.priority == 2 || p2.incompressible, "{p2:?}");
    assert_eq!(read(&dev, 1), text(5));
}

#[test]
fn gap_quirk_only_priority_two() {
    // Only priority 2 configured → num_active_comps = 2 → default range [1, 2):
    // zstd is never tried and every candidate becomes INCOMPRESSIBLE.
    let dev = dev_with(&[(2, "zstd")], MB);
    dev.write_page(0, &text(3)).unwrap();
    let size = dev.slot_info(0).unwrap().size;
    let rep = dev.recompress(&RecompressParams::new()).unwrap();
    assert_eq!((rep.recompressed, rep.incompressible), (0, 1), "{rep:?}");
    let s = dev.slot_info(0).unwrap();
    assert!(s.incompressible && s.priority == 0 && s.size == size);
    // And priority 2 cannot be reached explicitly either.
    assert_eq!(
        errno(dev.attr_write("recompress", "priority=2")),
        Errno::EINVAL
    );
    assert_eq!(
        errno(dev.attr_write("recompress", "algo=zstd")),
        Errno::EINVAL
    );
    assert_eq!(read(&dev, 0), text(3));
}

#[test]
fn overwrite_clears_recompression_state() {
    let dev = dev_with(&[(1, "zstd")], MB);
    dev.write_page(0, &text(1)).unwrap();
    dev.write_page(1, &random(2)).unwrap();
    dev.attr_write("recompress", "").unwrap();
    assert_eq!(dev.slot_info(0).unwrap().priority, 1);
    assert!(dev.slot_info(1).unwrap().incompressible);
    dev.write_page(0, &text(7)).unwrap();
    dev.write_page(1, &random(8)).unwrap();
    let (a, b) = (dev.slot_info(0).unwrap(), dev.slot_info(1).unwrap());
    assert_eq!(a.priority, 0, "a new write uses the primary");
    assert!(!b.incompressible, "freeing clears INCOMPRESSIBLE");
}

// ---------------------------------------------------------------- idle

#[test]
fn idle_syntax() {
    let uninit = Zram::new();
    assert_eq!(errno(uninit.attr_write("idle", "all")), Errno::EINVAL);
    let dev = dev_with(&[], MB);
    for bad in [
        "",
        "al",
        "all all",
        "-1",
        "1s",
        "18446744073709551616",
        "0x",
    ] {
        assert_eq!(errno(dev.attr_write("idle", bad)), Errno::EINVAL, "{bad:?}");
    }
    // kstrtoull as in 6.18: ages beyond u32 are taken.
    for ok in [
        "all",
        "all\n",
        "0",
        "10\n",
        "0x10",
        "010",
        "4294967295",
        "4294967296",
    ] {
        dev.attr_write("idle", ok)
            .unwrap_or_else(|e| panic!("{ok:?}: {e}"));
    }
    let untracked = Zram::builder()
        .track_access_time(false)
        .disksize(MB)
        .build()
        .unwrap();
    untracked.attr_write("idle", "all").unwrap();
    assert_eq!(
        errno(untracked.attr_write("idle", "10")),
        Errno::EINVAL,
        "age needs access-time tracking"
    );
}

#[test]
fn idle_by_age_marks_and_unmarks() {
    let dev = dev_with(&[(1, "zstd")], MB);
    dev.write_page(0, &text(1)).unwrap();
    dev.write_page(1, &page(1, 5)).unwrap(); // SAME
    dev.write_page(2, &text(2)).unwrap();
    // Age 0: cutoff = now, every earlier access is strictly older.
    dev.attr_write("idle", "0").unwrap();
    assert!(dev.slot_info(0).unwrap().idle && dev.slot_info(2).unwrap().idle);
    assert!(!dev.slot_info(1).unwrap().idle, "SAME is never idle");
    // A huge age: nothing is that old, and marking by age un-idles younger slots.
    dev.attr_write("idle", "4000000000").unwrap();
    assert!(!dev.slot_info(0).unwrap().idle && !dev.slot_info(2).unwrap().idle);
    dev.attr_write("idle", "all").unwrap();
    assert!(dev.slot_info(0).unwrap().idle);
    dev.attr_write("idle", "4000000000").unwrap();
    assert!(!dev.slot_info(0).unwrap().idle);
    // A recompressed slot has ac_time 0: idle for any age that reaches the device epoch.
    dev.attr_write("recompress", "").unwrap();
    assert_eq!(dev.slot_info(0).unwrap().ac_time_ns, 0);
    dev.attr_write("idle", "0").unwrap();
    assert!(dev.slot_info(0).unwrap().idle);
}

// ---------------------------------------------------------------- block_state

#[test]
fn block_state_format() {
    let uninit = Zram::new();
    assert_eq!(uninit.attr_read("block_state").unwrap(), "");
    let dev = dev_with(&[(1, "zstd")], MB);
    mixed(&dev);
    dev.attr_write("idle", "all").unwrap();
    dev.attr_write("recompress", "type=huge").unwrap();
    let _ = read(&dev, 4);
    let out = dev.attr_read("block_state").unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "one line per allocated slot:\n{out}");
    for (i, l) in lines.iter().enumerate() {
        // "%12zd %12lld.%06lu %c%c%c%c%c%c"
        assert_eq!(l.len(), 12 + 1 + 12 + 1 + 6 + 1 + 6, "{l:?}");
        assert_eq!(l[..12].trim_start(), i.to_string());
        assert_eq!(&l[12..13], " ");
        assert!(l[13..25].trim_start().chars().all(|c| c.is_ascii_digit()));
        assert_eq!(&l[25..26], ".");
        assert!(l[26..32].chars().all(|c| c.is_ascii_digit()));
        assert_eq!(&l[32..33], " ");
    }
    let flags: Vec<&str> = lines.iter().map(|l| &l[33..]).collect();
    assert_eq!(flags[0], "...i..", "text: idle");
    assert_eq!(
        flags[1], "..h..n",
        "random: huge, tried, incompressible (IDLE cleared)"
    );
    assert_eq!(flags[2], "....r.", "low entropy: recompressed");
    assert_eq!(flags[3], "s.....", "same-filled");
    assert_eq!(flags[4], "......", "read: not idle");
    // Recompressed slot: ac_time 0.
    assert!(lines[2][13..32].trim_start() == "0.000000", "{}", lines[2]);
    // block_state is not a sysfs attribute: not in the readable list.
    assert!(!dev.attr_names().contains(&"block_state"));
    assert!(dev.attr_names().contains(&"recomp_algorithm"));
}

// ---------------------------------------------------------------- integrity

#[derive(Debug, Clone)]
enum Op {
    Write(usize, u64, u64),
    Read(usize),
    IdleAll,
    IdleAge(u32),
    Recompress(String),
    Discard(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let kind = prop_oneof![
        Just(0u64),
        Just(1),
        Just(2),
        Just(3),
        Just(4),
        Just(5),
        Just(6)
    ];
    let rec = (
        0..5u8,
        prop::option::of(0..4u64),
        prop::option::of(0..3000u32),
        0..5u8,
    )
        .prop_map(|(t, mp, th, pr)| {
            let mut s = String::new();
            s.push_str(["", "type=idle ", "type=huge ", "type=huge_idle ", "type=x "][t as usize]);
            if let Some(m) = mp {
                s.push_str(&format!("max_pages={m} "));
            }
            if let Some(t) = th {
                s.push_str(&format!("threshold={t} "));
            }
            s.push_str(["", "priority=1", "priority=2", "algo=zstd", "algo=deflate"][pr as usize]);
            s
        });
    prop_oneof![
        4 => (0..32usize, kind, any::<u64>()).prop_map(|(i, k, s)| Op::Write(i, k, s)),
        2 => (0..32usize).prop_map(Op::Read),
        1 => Just(Op::IdleAll),
        1 => (0..3u32).prop_map(Op::IdleAge),
        2 => rec.prop_map(Op::Recompress),
        1 => (0..32usize).prop_map(Op::Discard),
    ]
}

fn make(kind: u64, seed: u64) -> Vec<u8> {
    if kind == 6 {
        low_entropy(seed)
    } else {
        page(kind, seed)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn reads_match_reference_through_recompression(ops in prop::collection::vec(op(), 1..60)) {
        let dev = dev_with(&[(1, "zstd"), (2, "deflate")], 32 * PAGE_SIZE as u64);
        let mut reference: HashMap<usize, Vec<u8>> = HashMap::new();
        for op in ops {
            match op {
                Op::Write(i, k, s) => {
                    let p = make(k, s);
                    dev.write_page(i, &p).unwrap();
                    reference.insert(i, p);
                }
                Op::Read(i) => {
                    let want = reference.get(&i).cloned().unwrap_or_else(|| vec![0u8; PAGE_SIZE]);
                    prop_assert_eq!(read(&dev, i), want);
                }
                Op::IdleAll => dev.attr_write("idle", "all").unwrap(),
                Op::IdleAge(a) => dev.attr_write("idle", &a.to_string()).unwrap(),
                Op::Recompress(s) => {
                    let before = dev.mm_stat();
                    match dev.attr_write("recompress", &s) {
                        Ok(()) => {}
                        // priority=2 + algo=zstd etc. can be refused; never anything but EINVAL.
                        Err(e) => prop_assert_eq!(e.errno, Errno::EINVAL, "{}: {}", s, e),
                    }
                    let after = dev.mm_stat();
                    prop_assert!(after.compr_data_size <= before.compr_data_size);
                    prop_assert_eq!(after.orig_data_size, before.orig_data_size);
                    prop_assert!(after.huge_pages <= before.huge_pages);
                    prop_assert_eq!(after.huge_pages_since, before.huge_pages_since);
                    prop_assert!(dev.block_state().iter().all(|b| !b.pp_slot && (b.priority == 0 || !b.huge)));
                }
                Op::Discard(i) => {
                    dev.discard(i as u64 * PAGE_SIZE as u64, PAGE_SIZE as u64).unwrap();
                    reference.remove(&i);
                }
            }
        }
        for i in 0..32 {
            let want = reference.get(&i).cloned().unwrap_or_else(|| vec![0u8; PAGE_SIZE]);
            prop_assert_eq!(read(&dev, i), want, "slot {}", i);
        }
    }
}
