//! Attribute behaviour case by case: syntax, errors, ordering, kernel quirks
//! and the spec's §12 test vectors.
mod common;
use common::*;
use zmem_device::BlockDevice;
use zmem_files::testutil::ScratchDir;
use zmem_kernel::Errno;
use zmem_zram::{Zram, PAGE_SIZE};

fn errno(r: Result<(), zmem_kernel::AttrError>) -> Errno {
    let e = r.expect_err("expected an error");
    assert!(!e.message.is_empty());
    e.errno
}

#[test]
fn fresh_device_reads_like_the_kernel() {
    let d = Zram::new();
    assert_eq!(d.attr_read("initstate").unwrap(), "0\n");
    assert_eq!(d.attr_read("disksize").unwrap(), "0\n");
    assert_eq!(
        d.attr_read("mm_stat").unwrap(),
        "       0        0        0        0        0        0        0        0        0\n"
    );
    assert_eq!(
        d.attr_read("io_stat").unwrap(),
        "       0        0 0        0\n"
    );
    assert_eq!(
        d.attr_read("debug_stat").unwrap(),
        "version: 1\n0        0\n"
    );
    assert_eq!(
        d.attr_read("comp_algorithm").unwrap(),
        "[lzo-rle] lzo lz4 lz4hc zstd deflate 842 lz4m wkdm \n",
        "registry order, default lzo-rle, each name followed by a space"
    );
    assert_eq!(
        d.attr_read("mem_limit").unwrap_err().errno,
        Errno::EACCES,
        "write-only"
    );
    assert_eq!(d.attr_read("nope").unwrap_err().errno, Errno::ENOENT);
    assert_eq!(
        errno(d.attr_write("mm_stat", "1")),
        Errno::EACCES,
        "read-only"
    );
}

#[test]
fn comp_algorithm_rules() {
    let d = Zram::new();
    d.attr_write("comp_algorithm", "lz4\n").unwrap();
    assert_eq!(
        d.attr_read("comp_algorithm").unwrap(),
        "lzo-rle lzo [lz4] lz4hc zstd deflate 842 lz4m wkdm \n"
    );
    assert_eq!(errno(d.attr_write("comp_algorithm", "lz5")), Errno::EINVAL);
    assert_eq!(
        errno(d.attr_write("comp_algorithm", &"x".repeat(128))),
        Errno::E2BIG
    );
    assert_eq!(
        errno(d.attr_write("comp_algorithm", &format!("{}\n", "x".repeat(127)))),
        Errno::E2BIG,
        "length is checked before the newline is stripped"
    );
    assert_eq!(
        errno(d.attr_write("comp_algorithm", "lz4\n\n")),
        Errno::EINVAL,
        "only one newline is stripped"
    );
    d.attr_write("disksize", "1M").unwrap();
    assert_eq!(
        errno(d.attr_write("comp_algorithm", "lzo")),
        Errno::EBUSY,
        "after disksize"
    );
    assert_eq!(
        errno(d.attr_write("comp_algorithm", "lz5")),
        Errno::EINVAL,
        "name checked before initstate"
    );
}

#[test]
fn disksize_rules() {
    let d = Zram::new();
    assert_eq!(errno(d.attr_write("disksize", "0")), Errno::EINVAL);
    assert_eq!(errno(d.attr_write("disksize", "abc")), Errno::EINVAL);
    assert_eq!(errno(d.attr_write("disksize", "")), Errno::EINVAL);
    d.attr_write("comp_algorithm", "lz4").unwrap();
    d.attr_write("disksize", "1").unwrap();
    assert_eq!(
        d.attr_read("disksize").unwrap(),
        "4096\n",
        "rounded up to a page"
    );
    assert_eq!(d.attr_read("initstate").unwrap(), "1\n");
    assert_eq!(errno(d.attr_write("disksize", "8192")), Errno::EBUSY);
    let d = Zram::new();
    d.attr_write("comp_algorithm", "lz4").unwrap();
    d.attr_write("disksize", "0x10k\n").unwrap();
    assert_eq!(d.size(), 16 << 10);
    let d = Zram::new();
    d.attr_write("comp_algorithm", "lz4").unwrap();
    d.attr_write("disksize", "1G trailing garbage").unwrap();
    assert_eq!(d.size(), 1 << 30);
}

#[test]
fn disksize_fails_on_a_bad_compressor_and_leaves_the_device_uninitialised() {
    let d = Zram::new();
    d.attr_write("comp_algorithm", "lz4").unwrap();
    d.attr_write("algorithm_params", "level=-99999999").unwrap();
    let e = d.attr_write("disksize", "1M").unwrap_err();
    assert_eq!(e.errno, Errno::EINVAL, "{e}");
    assert_eq!(d.attr_read("initstate").unwrap(), "0\n");
    d.attr_write("algorithm_params", "level=1").unwrap();
    d.attr_write("disksize", "1M").unwrap();
}

#[test]
fn algorithm_params_rules() {
    let d = Zram::new();
    d.attr_write("comp_algorithm", "lz4").unwrap();
    d.attr_write("algorithm_params", "level=3").unwrap();
    assert_eq!(d.config().params[0].level, Some(3));
    d.attr_write("algorithm_params", "  algo=lz4 level=-2 unknown=7\n")
        .unwrap();
    assert_eq!(
        d.config().params[0].level,
        Some(-2),
        "unknown keys are ignored, negative levels allowed"
    );
    d.attr_write("algorithm_params", "priority=0").unwrap();
    assert_eq!(
        d.config().params[0].level,
        None,
        "params of the priority are reset first"
    );
    assert_eq!(
        errno(d.attr_write("algorithm_params", "level")),
        Errno::EINVAL,
        "token without value"
    );
    assert_eq!(
        errno(d.attr_write("algorithm_params", "level=")),
        Errno::EINVAL,
        "empty value"
    );
    assert_eq!(
        errno(d.attr_write("algorithm_params", "level=x")),
        Errno::EINVAL
    );
    assert_eq!(
        errno(d.attr_write("algorithm_params", "level=99999999999")),
        Errno::ERANGE
    );
    assert_eq!(
        errno(d.attr_write("algorithm_params", "priority=4")),
        Errno::EINVAL
    );
    assert_eq!(
        errno(d.attr_write("algorithm_params", "priority=-1")),
        Errno::EINVAL
    );
    assert_eq!(
        errno(d.attr_write("algorithm_params", "algo=zstd level=3")),
        Errno::EINVAL,
        "algo not configured"
    );
    assert_eq!(
        errno(d.attr_write("algorithm_params", "dict=/nonexistent/zmem-dict")),
        Errno::EINVAL
    );
    let scratch = ScratchDir::new("zram-dict");
    let dict = scratch.join("dict");
    std::fs::write(&dict, b"dictionary bytes").unwrap();
    d.attr_write(
        "algorithm_params",
        &format!("dict=\"{}\" level=1", dict.display()),
    )
    .unwrap();
    let cfg = d.config();
    assert_eq!(
        cfg.params[0].dict.as_deref().map(|v| v.as_slice()),
        Some(&b"dictionary bytes"[..])
    );
    std::fs::write(&dict, b"").unwrap();
    assert_eq!(
        errno(d.attr_write("algorithm_params", &format!("dict={}", dict.display()))),
        Errno::EINVAL
    );
    drop(scratch); // the dictionary file is gone for the rest of the test
    d.attr_write("algorithm_params", "deflate.winbits=12")
        .unwrap();
    assert_eq!(d.config().params[0].deflate_winbits, Some(12));
    // The kernel does not check initstate here.
    d.attr_write("algorithm_params", "priority=0").unwrap();
    d.attr_write("disksize", "1M").unwrap();
    d.attr_write("algorithm_params", "level=1").unwrap();
}

#[test]
fn reset_rules() {
    let d = device(1 << 20);
    assert_eq!(errno(d.attr_write("reset", "0")), Errno::EINVAL);
    assert_eq!(errno(d.attr_write("reset", "x")), Errno::EINVAL);
    assert_eq!(errno(d.attr_write("reset", "65536")), Errno::ERANGE);
    {
        let _open = d.open();
        assert_eq!(
            errno(d.attr_write("reset", "1")),
            Errno::EBUSY,
            "opened device"
        );
    }
    d.attr_write("mem_limit", "1M").unwrap();
    d.write_at(0, &page(2, 1)).unwrap();
    d.attr_write("reset", "1\n").unwrap();
    assert_eq!(d.attr_read("initstate").unwrap(), "0\n");
    assert_eq!(d.attr_read("disksize").unwrap(), "0\n");
    assert!(
        d.attr_read("comp_algorithm")
            .unwrap()
            .starts_with("[lzo-rle] "),
        "default algorithm restored"
    );
    assert_eq!(d.mm_stat(), Default::default(), "stats and limit zeroed");
}

#[test]
fn mem_limit_and_mem_used_max() {
    let d = Zram::new();
    d.attr_write("mem_limit", "1M").unwrap();
    assert_eq!(d.mm_stat().mem_limit, 1 << 20, "works before init");
    d.attr_write("mem_limit", "5000").unwrap();
    assert_eq!(d.mm_stat().mem_limit, 8192, "rounded up to pages");
    assert_eq!(errno(d.attr_write("mem_limit", "abc")), Errno::EINVAL);
    assert_eq!(errno(d.attr_write("mem_limit", "")), Errno::EINVAL);
    d.attr_write("mem_limit", "K").unwrap();
    assert_eq!(
        d.mm_stat().mem_limit,
        0,
        "kernel quirk: a bare suffix parses as 0"
    );
    assert_eq!(errno(d.attr_write("mem_used_max", "1")), Errno::EINVAL);
    assert_eq!(errno(d.attr_write("mem_used_max", "x")), Errno::EINVAL);
    d.attr_write("mem_used_max", "0\n").unwrap();
    let d = device(1 << 20);
    for i in 0..64 {
        d.write_page(i, &page(3, i as u64 + 1)).unwrap();
    }
    for i in 0..64 {
        d.attr_write("reset", "0").unwrap_err();
        d.write_at(i * 4096, &[0u8; 4096]).unwrap();
    }
    let m = d.mm_stat();
    assert_eq!(m.mem_used_max, 64 * 4096);
    assert_eq!(m.mem_used_total, 0);
    d.attr_write("mem_used_max", "0").unwrap();
    assert_eq!(d.mm_stat().mem_used_max, 0, "reset to the current total");
}

#[test]
fn compact_and_idle_need_init() {
    let d = Zram::new();
    assert_eq!(errno(d.attr_write("compact", "1")), Errno::EINVAL);
    assert_eq!(errno(d.attr_write("idle", "all")), Errno::EINVAL);
    let d = device(1 << 20);
    d.attr_write("compact", "anything").unwrap();
    assert_eq!(errno(d.attr_write("idle", "some")), Errno::EINVAL);
    assert_eq!(errno(d.attr_write("idle", "-1")), Errno::EINVAL);
}

#[test]
fn idle_marking_all_and_by_age() {
    let d = device(1 << 20);
    d.write_page(0, &page(2, 1)).unwrap(); // compressed
    d.write_page(1, &page(1, 2)).unwrap(); // same-filled
    d.write_page(2, &page(3, 3)).unwrap(); // huge
    d.attr_write("idle", "all\n").unwrap();
    let idle = |i| d.slot_info(i).unwrap().idle;
    assert!(
        idle(0) && !idle(1) && idle(2) && !idle(3),
        "SAME and empty slots are never idle"
    );
    let mut b = vec![0u8; PAGE_SIZE];
    d.read_page(0, &mut b).unwrap();
    assert!(!idle(0), "a read clears IDLE");
    assert!(d.slot_info(0).unwrap().ac_time_ns > 0);
    // An age far larger than the process's life: nothing is older, so IDLE is cleared.
    d.attr_write("idle", "0x7fffffff").unwrap();
    assert!(!idle(2), "age marking also un-idles younger slots");
    // Age 0: every slot accessed before now is idle.
    d.attr_write("idle", "0").unwrap();
    assert!(idle(0) && idle(2));
    d.write_page(0, &page(2, 9)).unwrap();
    assert!(!idle(0), "a write clears IDLE");
    let no_track = Zram::builder()
        .algorithm(ALGO, Default::default())
        .track_access_time(false)
        .disksize(1 << 20)
        .build()
        .unwrap();
    no_track.write_page(0, &page(2, 1)).unwrap();
    assert_eq!(
        errno(no_track.attr_write("idle", "10")),
        Errno::EINVAL,
        "age needs access-time tracking"
    );
    no_track.attr_write("idle", "all").unwrap();
    assert!(no_track.slot_info(0).unwrap().idle);
}

#[test]
fn spec_section_12_vectors() {
    let d = device(1 << 20);
    let before = d.mm_stat();
    let mut p = vec![0u8; PAGE_SIZE];
    zmem_codec::fill_page(&mut p, 0xDEAD_BEEF_DEAD_BEEF);
    d.write_page(3, &p).unwrap();
    let m = d.mm_stat();
    assert_eq!(m.same_pages, before.same_pages + 1);
    assert_eq!(
        (m.compr_data_size, m.mem_used_total),
        (before.compr_data_size, before.mem_used_total)
    );
    let mut b = vec![0u8; PAGE_SIZE];
    d.read_page(3, &mut b).unwrap();
    assert_eq!(b, p);
    d.discard(3 * 4096, 4096).unwrap();
    assert_eq!(d.mm_stat().same_pages, before.same_pages);
    d.read_page(3, &mut b).unwrap();
    assert!(b.iter().all(|&x| x == 0));
    // Random pages: huge, +4096 compressed and +4096 pool memory each.
    let m0 = d.mm_stat();
    d.write_page(4, &page(3, 11)).unwrap();
    let m1 = d.mm_stat();
    assert_eq!(m1.huge_pages, m0.huge_pages + 1);
    assert_eq!(m1.huge_pages_since, m0.huge_pages_since + 1);
    assert_eq!(m1.compr_data_size, m0.compr_data_size + 4096);
    assert_eq!(m1.mem_used_total, m0.mem_used_total + 4096);
    assert_eq!(d.huge_class_size(), 3625, "zsmalloc chain 8");
    // Overwrite a huge page with a same-filled one: huge_pages drops, huge_pages_since stays.
    d.write_page(4, &vec![0u8; PAGE_SIZE]).unwrap();
    let m2 = d.mm_stat();
    assert_eq!(
        (m2.huge_pages, m2.huge_pages_since),
        (m0.huge_pages, m1.huge_pages_since)
    );
    assert_eq!(m2.compr_data_size, m0.compr_data_size);
    let info = d.slot_info(4).unwrap();
    assert!(info.same && !info.huge);
    assert_eq!(info.flag_chars(), "s.....");
    // block_state lists only allocated slots.
    assert_eq!(
        d.block_state().iter().map(|s| s.index).collect::<Vec<_>>(),
        vec![4]
    );
}

#[test]
fn discard_follows_the_kernel_and_write_zeroes_zeroes() {
    let d = device(64 << 10);
    for i in 0..16 {
        d.write_page(i, &page(2, i as u64 + 5)).unwrap();
    }
    // Leading partial page skipped; a range that does not reach the next page boundary does nothing.
    d.discard(512, 4096 - 512).unwrap();
    assert_eq!(d.io_stat().notify_free, 0);
    d.discard(512, 4096 + 4096).unwrap(); // frees page 1 only; trailing partial page 2 ignored
    assert_eq!(d.io_stat().notify_free, 1);
    assert!(!d.slot_info(0).unwrap().same && d.slot_info(0).unwrap().size > 0);
    assert_eq!(d.slot_info(1).unwrap().size, 0);
    assert!(d.slot_info(2).unwrap().size > 0);
    // write_zeroes zeroes exactly the range, partial pages included.
    let orig5 = page(2, 5 + 5);
    d.write_zeroes(5 * 4096 + 1024, 4096 * 2).unwrap();
    let mut b = vec![0u8; 3 * 4096];
    d.read_at(5 * 4096, &mut b).unwrap();
    assert_eq!(&b[..1024], &orig5[..1024]);
    assert!(b[1024..1024 + 8192].iter().all(|&x| x == 0));
    assert_eq!(&b[1024 + 8192..], &page(2, 7 + 5)[1024..]);
    // Freed slots read back as zeros and count in notify_free; empty slots still count.
    d.discard(10 * 4096, 2 * 4096).unwrap();
    d.discard(10 * 4096, 4096).unwrap();
    assert_eq!(d.io_stat().notify_free, 1 + 1 + 2 + 1);
    d.write_page(11, &page(2, 77)).unwrap();
    assert!(d.slot_free_notify(11), "an unlocked slot is freed");
    assert_eq!(d.slot_info(11).unwrap().size, 0);
    assert_eq!(d.io_stat().notify_free, 6);
    assert_eq!(
        d.attr_read("debug_stat").unwrap(),
        "version: 1\n0        0\n"
    );
}

#[test]
fn bad_io_is_refused_and_leaves_data_intact() {
    let d = device(64 << 10);
    let p = page(2, 42);
    d.write_at(0, &p).unwrap();
    let err = d.write_at(100, &[1u8; 512]).unwrap_err();
    assert_eq!(err.errno(), Errno::EINVAL);
    assert!(matches!(err, zmem_device::IoError::Unaligned { .. }));
    assert!(matches!(
        d.write_at(64 << 10, &[1u8; 512]).unwrap_err(),
        zmem_device::IoError::OutOfRange { .. }
    ));
    assert!(matches!(
        d.write_at((64 << 10) - 512, &[1u8; 1024]).unwrap_err(),
        zmem_device::IoError::OutOfRange { .. }
    ));
    assert!(matches!(
        d.read_at(u64::MAX - 511, &mut [0u8; 512]).unwrap_err(),
        zmem_device::IoError::OutOfRange { .. }
    ));
    assert!(d.discard(3, 512).is_err());
    assert!(d.write_zeroes(0, 100).is_err());
    assert!(d.write_page(16, &p).is_err());
    assert!(d.write_page(0, &p[..100]).is_err());
    let mut b = vec![0u8; PAGE_SIZE];
    d.read_at(0, &mut b).unwrap();
    assert_eq!(b, p);
    assert!(
        Zram::new().read_at(0, &mut b).is_err(),
        "uninitialised device has size 0"
    );
    // Partial writes read-modify-write.
    d.write_at(512, &[9u8; 1024]).unwrap();
    d.read_at(0, &mut b).unwrap();
    assert_eq!(&b[..512], &p[..512]);
    assert!(b[512..1536].iter().all(|&x| x == 9));
    assert_eq!(&b[1536..], &p[1536..]);
}

#[test]
fn mem_limit_gives_no_space_and_keeps_stored_data() {
    let d = device(4 << 20);
    d.attr_write("mem_limit", "64K").unwrap();
    let mut stored = Vec::new();
    let mut failed = None;
    for i in 0..200usize {
        let p = page(3, i as u64 + 100);
        match d.write_page(i, &p) {
            Ok(()) => stored.push((i, p)),
            Err(e) => {
                assert_eq!(e.errno(), Errno::ENOSPC, "{e}");
                assert!(e.to_string().contains("mem_limit"), "{e}");
                failed = Some(i);
                break;
            }
        }
    }
    let failed = failed.expect("the limit must stop random pages");
    assert_eq!(stored.len(), 16, "16 huge pages fit into 64 KiB");
    let m = d.mm_stat();
    assert!(
        m.mem_used_max > m.mem_limit,
        "the peak includes the failed attempt"
    );
    assert_eq!(d.io_stat().failed_writes, 1);
    // Overwriting a stored page fails too, and keeps the old data.
    assert!(d.write_page(0, &page(3, 999)).is_err());
    // Same-filled pages need no allocation and still succeed.
    d.write_page(failed, &vec![0u8; PAGE_SIZE]).unwrap();
    let mut b = vec![0u8; PAGE_SIZE];
    for (i, p) in &stored {
        d.read_page(*i, &mut b).unwrap();
        assert_eq!(&b, p, "page {i} intact");
    }
    d.attr_write("mem_limit", "0").unwrap();
    d.write_page(0, &page(3, 999)).unwrap();
}
