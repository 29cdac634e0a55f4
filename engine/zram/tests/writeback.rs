//! Writeback to a backing file (zram_drv.c: `writeback_store`, `bd_stat_show`, `zram_free_page`, `idle_store`): every attribute
//! case by case with the kernel's syntax and errnos, the statistics effects,
//! both data formats (plain and compressed_writeback), and that no error ever
//! loses a page.

mod common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use common::page;
use zmem_codec::Params;
use zmem_device::BlockDevice;
use zmem_files::testutil::ScratchDir;
use zmem_kernel::{BdStat, Errno};
use zmem_zram::{BdOp, WritebackParams, Zram, PAGE_SIZE};

/// A backing file of `pages` pages in a private scratch directory of its
/// own, removed (with the directory) on drop.
struct TmpFile {
    path: PathBuf,
    _dir: ScratchDir,
}

impl TmpFile {
    fn new(pages: u64) -> TmpFile {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = ScratchDir::new("wb-test");
        // Each file has a name of its own (tests tell files apart by name).
        let path = dir.join(&format!(
            "zmem-wb-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(pages * PAGE_SIZE as u64).unwrap();
        TmpFile { path, _dir: dir }
    }
    fn s(&self) -> String {
        self.path.display().to_string()
    }
}

const PAGES: u64 = 64;

/// lz4 device of PAGES pages with a backing file of `bpages` pages.
fn dev_with(bpages: u64, compressed: bool) -> (Zram, TmpFile) {
    let f = TmpFile::new(bpages);
    let d = Zram::builder()
        .algorithm("lz4", Params::default())
        .backing_dev(&f.path)
        .compressed_writeback(compressed)
        .disksize(PAGES * PAGE_SIZE as u64)
        .build()
        .unwrap();
    (d, f)
}

fn errno(r: Result<(), zmem_kernel::AttrError>) -> Errno {
    r.expect_err("the kernel refuses this").errno
}

fn read(dev: &Zram, i: usize) -> Vec<u8> {
    let mut b = vec![0u8; PAGE_SIZE];
    dev.read_page(i, &mut b).expect("read");
    b
}

fn bd(dev: &Zram) -> BdStat {
    BdStat::parse(&dev.attr_read("bd_stat").unwrap()).unwrap()
}

/// Pages 0..n: text (compressed), random (huge), same-filled, by index % 4.
fn fill(dev: &Zram, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let p = page([2, 3, 1, 5][i % 4], i as u64 + 1);
            dev.write_page(i, &p).unwrap();
            p
        })
        .collect()
}

// ------------------------------------------------------------------ backing_dev

#[test]
fn backing_dev_store_and_show() {
    let dev = Zram::new();
    assert_eq!(dev.attr_read("backing_dev").unwrap(), "none\n");
    let f = TmpFile::new(8);
    dev.attr_write("backing_dev", &format!("{}\n", f.s()))
        .unwrap();
    let canon = std::fs::canonicalize(&f.path).unwrap();
    assert_eq!(
        dev.attr_read("backing_dev").unwrap(),
        format!("{}\n", canon.display())
    );
    // Errors name the file; a failed store keeps the previous device.
    let e = dev
        .attr_write("backing_dev", "/nonexistent/zmem-backing")
        .unwrap_err();
    assert_eq!(e.errno, Errno::ENOENT);
    assert!(
        e.message.contains("/nonexistent/zmem-backing"),
        "{}",
        e.message
    );
    assert_eq!(errno(dev.attr_write("backing_dev", "")), Errno::ENOENT);
    assert_eq!(errno(dev.attr_write("backing_dev", "\n")), Errno::ENOENT);
    let small = TmpFile::new(1);
    let e = dev.attr_write("backing_dev", &small.s()).unwrap_err();
    assert_eq!(
        e.errno,
        Errno::EINVAL,
        "one page holds nothing: block 0 is never used"
    );
    assert!(e.message.contains(&small.s()));
    assert_eq!(
        errno(dev.attr_write("backing_dev", &TmpFile::new(0).s())),
        Errno::EINVAL
    );
    assert_ne!(
        dev.attr_write("backing_dev", "/dev/null")
            .unwrap_err()
            .errno,
        Errno::EBUSY,
        "char device refused"
    );
    assert_eq!(
        errno(dev.attr_write("backing_dev", "/dev/null")),
        Errno::ENOTBLK
    );
    assert_eq!(
        dev.attr_read("backing_dev").unwrap(),
        format!("{}\n", canon.display())
    );
    // Replaced by a later store.
    let g = TmpFile::new(4);
    dev.attr_write("backing_dev", &g.s()).unwrap();
    assert!(dev
        .attr_read("backing_dev")
        .unwrap()
        .contains(g.path.file_name().unwrap().to_str().unwrap()));
    assert_eq!(dev.backing_dev().unwrap().nr_pages(), 4);
    // Only before init.
    dev.attr_write("disksize", "256K").unwrap();
    assert_eq!(errno(dev.attr_write("backing_dev", &f.s())), Errno::EBUSY);
    assert_eq!(
        errno(dev.attr_write("backing_dev", "/nonexistent")),
        Errno::EBUSY,
        "EBUSY is checked first"
    );
    // reset releases it (reset_bdev).
    dev.attr_write("reset", "1").unwrap();
    assert_eq!(dev.attr_read("backing_dev").unwrap(), "none\n");
    dev.attr_write("backing_dev", &f.s()).unwrap();
}

#[test]
fn builder_checks_like_the_attribute() {
    let e = Zram::builder()
        .backing_dev("/nonexistent/x")
        .disksize(1 << 20)
        .build()
        .unwrap_err();
    assert_eq!(e.errno, Errno::ENOENT);
    let small = TmpFile::new(1);
    assert_eq!(
        Zram::builder()
            .backing_dev(&small.path)
            .build()
            .unwrap_err()
            .errno,
        Errno::EINVAL
    );
    let (dev, _f) = dev_with(8, true);
    assert_eq!(dev.attr_read("compressed_writeback").unwrap(), "1\n");
    assert_eq!(dev.backing_dev().unwrap().nr_pages(), 8);
}

// ------------------------------------------------------------------ writeback syntax

#[test]
fn writeback_checks_in_kernel_order() {
    let dev = Zram::new();
    assert_eq!(
        errno(dev.attr_write("writeback", "idle")),
        Errno::EINVAL,
        "not initialised"
    );
    dev.attr_write("disksize", "256K").unwrap();
    assert_eq!(
        errno(dev.attr_write("writeback", "idle")),
        Errno::ENODEV,
        "no backing device"
    );
    assert_eq!(
        errno(dev.attr_write("writeback", "bogus")),
        Errno::ENODEV,
        "checked before parsing"
    );
    assert_eq!(
        dev.writeback(&WritebackParams::new().idle())
            .unwrap_err()
            .errno,
        Errno::ENODEV
    );
}

#[test]
fn writeback_syntax_and_errnos() {
    let (dev, _f) = dev_with(PAGES, false);
    let n = PAGES; // nr_pages
    for bad in [
        "bogus",
        "type=bogus",
        "type=",
        "type",
        "page_index",
        "page_index=abc",
        "page_index=-1",
        "page_index=0x10",
        "page_indexes=5",
        "page_indexes=a-5",
        "page_indexes=1-b",
        "IDLE",
    ] {
        assert_eq!(
            errno(dev.attr_write("writeback", bad)),
            Errno::EINVAL,
            "{bad:?}"
        );
    }
    for bad in [
        format!("page_index={n}"),
        format!("page_indexes=0-{n}"),
        format!("page_indexes={n}-{}", n + 1),
        "page_indexes=5-3".to_string(),
        "page_index=99999999999999999999".to_string(),
        // Parsing goes left to right: a good range before a bad one is no help.
        format!("page_index=1 page_index={n}"),
    ] {
        assert_eq!(
            errno(dev.attr_write("writeback", &bad)),
            Errno::ERANGE,
            "{bad:?}"
        );
    }
    // Accepted, nothing to write: empty device.
    for ok in [
        "",
        "\n",
        "idle",
        "huge\n",
        "huge_idle",
        "incompressible",
        "type=idle",
        "type=huge_idle",
        "type=incompressible",
        "page_index=42",
        "page_indexes=1-10 page_indexes=20-30",
        "page_index=42 page_index=63 page_indexes=10-20 page_indexes=50-60",
        "unknown=1 page_index=3",
        // type= ends parsing: what follows is never looked at.
        "type=huge page_index=99999",
        // A key with an empty value is read as a legacy mode word.
        "idle=",
        "idle page_indexes=9-1",
    ] {
        dev.attr_write("writeback", ok)
            .unwrap_or_else(|e| panic!("{ok:?}: {e}"));
    }
    assert_eq!(bd(&dev), BdStat::default());
    // An error after a scan writes nothing back.
    dev.write_page(3, &page(2, 1)).unwrap();
    assert_eq!(
        errno(dev.attr_write("writeback", "page_index=3 page_index=9999")),
        Errno::ERANGE
    );
    assert!(!dev.slot_info(3).unwrap().wb && !dev.slot_info(3).unwrap().pp_slot);
    // The engine API checks ranges too.
    assert_eq!(
        dev.writeback(&WritebackParams::new().page_index(n))
            .unwrap_err()
            .errno,
        Errno::ERANGE
    );
    assert_eq!(
        dev.writeback(&WritebackParams::new().page_indexes(5, 3))
            .unwrap_err()
            .errno,
        Errno::ERANGE
    );
}

#[test]
fn page_index_and_ranges_select_exactly_those_pages() {
    let (dev, _f) = dev_with(PAGES, false);
    let pages = fill(&dev, 40);
    dev.attr_write(
        "writeback",
        "page_index=0 page_indexes=4-5 page_indexes=8-8",
    )
    .unwrap();
    let wb: Vec<usize> = dev
        .block_state()
        .iter()
        .filter(|s| s.wb)
        .map(|s| s.index)
        .collect();
    assert_eq!(
        wb,
        vec![0, 4, 5, 8],
        "SAME page 6 (kind 1) and other pages untouched"
    );
    // page_indexes then type=: re-scan the last range with the mode.
    dev.attr_write("writeback", "page_indexes=20-23 type=huge")
        .unwrap();
    let wb: Vec<usize> = dev
        .block_state()
        .iter()
        .filter(|s| s.wb)
        .map(|s| s.index)
        .collect();
    assert_eq!(
        wb,
        vec![0, 4, 5, 8, 20, 21, 23],
        "20..23 unfiltered first, then huge of it again (duplicates harmless)"
    );
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&read(&dev, i), p, "page {i}");
    }
}

// ------------------------------------------------------------------ limits and bd_stat

#[test]
fn writeback_limit_semantics() {
    let (dev, _f) = dev_with(PAGES, false);
    assert_eq!(dev.attr_read("writeback_limit_enable").unwrap(), "0\n");
    assert_eq!(dev.attr_read("writeback_limit").unwrap(), "0\n");
    for bad in ["", "x", "-1", "1.5", "99999999999999999999", " 1"] {
        assert_eq!(
            errno(dev.attr_write("writeback_limit", bad)),
            Errno::EINVAL,
            "{bad:?}"
        );
        assert_eq!(
            errno(dev.attr_write("writeback_limit_enable", bad)),
            Errno::EINVAL,
            "{bad:?}"
        );
    }
    let pages = fill(&dev, 8);
    dev.attr_write("writeback_limit_enable", "1\n").unwrap();
    assert_eq!(dev.attr_read("writeback_limit_enable").unwrap(), "1\n");
    // enable=1, limit=0: nothing is written, EIO.
    assert_eq!(
        errno(dev.attr_write("writeback", "page_indexes=0-7")),
        Errno::EIO
    );
    assert_eq!(bd(&dev), BdStat::default());
    // A budget of 2 (4 KiB units): two pages, then EIO; the budget reads 0.
    dev.attr_write("writeback_limit", "2").unwrap();
    assert_eq!(
        errno(dev.attr_write("writeback", "page_indexes=0-7")),
        Errno::EIO
    );
    assert_eq!(dev.attr_read("writeback_limit").unwrap(), "0\n");
    assert_eq!(
        bd(&dev),
        BdStat {
            bd_count: 2,
            bd_reads: 0,
            bd_writes: 2
        }
    );
    // Any non-zero value enables; 0 disables and the limit no longer applies.
    dev.attr_write("writeback_limit_enable", "0").unwrap();
    dev.attr_write("writeback", "page_indexes=0-7").unwrap();
    assert_eq!(bd(&dev).bd_count, 6, "8 pages minus 2 SAME");
    assert_eq!(
        dev.attr_read("writeback_limit").unwrap(),
        "0\n",
        "not consumed while disabled"
    );
    dev.attr_write("writeback_limit_enable", "7").unwrap();
    assert_eq!(dev.attr_read("writeback_limit_enable").unwrap(), "1\n");
    dev.attr_write("writeback_limit", "100").unwrap();
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&read(&dev, i), p);
    }
    // Decision: limit and enable survive reset (the kernel's code does not touch them).
    dev.attr_write("reset", "1").unwrap();
    assert_eq!(dev.attr_read("writeback_limit").unwrap(), "100\n");
    assert_eq!(dev.attr_read("writeback_limit_enable").unwrap(), "1\n");
}

#[test]
fn bd_stat_text() {
    let dev = Zram::new();
    assert_eq!(
        dev.attr_read("bd_stat").unwrap(),
        "       0        0        0\n",
        "readable uninitialised"
    );
    let (dev, _f) = dev_with(PAGES, false);
    fill(&dev, 4);
    dev.attr_write("writeback", "page_indexes=0-3").unwrap();
    read(&dev, 0);
    read(&dev, 0);
    read(&dev, 1);
    assert_eq!(
        dev.attr_read("bd_stat").unwrap(),
        "       3        3        3\n"
    );
    assert_eq!(errno(dev.attr_write("bd_stat", "0")), Errno::EACCES);
    assert!(dev.attr_names().contains(&"bd_stat") && dev.attr_names().contains(&"backing_dev"));
}

#[test]
fn compressed_writeback_attribute() {
    let dev = Zram::new();
    assert_eq!(dev.attr_read("compressed_writeback").unwrap(), "0\n");
    for (v, want) in [
        ("yes", "1\n"),
        ("0", "0\n"),
        ("on\n", "1\n"),
        ("off", "0\n"),
        ("Y", "1\n"),
    ] {
        dev.attr_write("compressed_writeback", v).unwrap();
        assert_eq!(dev.attr_read("compressed_writeback").unwrap(), want, "{v}");
    }
    for bad in ["", "2", "maybe", "o"] {
        assert_eq!(
            errno(dev.attr_write("compressed_writeback", bad)),
            Errno::EINVAL,
            "{bad:?}"
        );
    }
    dev.attr_write("compressed_writeback", "1").unwrap();
    dev.attr_write("disksize", "1M").unwrap();
    assert_eq!(
        errno(dev.attr_write("compressed_writeback", "0")),
        Errno::EBUSY
    );
    assert_eq!(
        errno(dev.attr_write("compressed_writeback", "bad")),
        Errno::EINVAL,
        "parse error first"
    );
}

// ------------------------------------------------------------------ data and statistics

#[test]
fn writeback_batch_size_attribute() {
    // What Debian's 7.3.4 zram takes and refuses (docs/writeback.md).
    let (dev, _f) = dev_with(PAGES, false);
    assert_eq!(dev.attr_read("writeback_batch_size").unwrap(), "32\n");
    for (v, want) in [
        ("1", "1\n"),
        ("+5", "5\n"),
        ("010", "10\n"),
        ("64\n", "64\n"),
        ("4294967295", "4294967295\n"),
    ] {
        dev.attr_write("writeback_batch_size", v).unwrap();
        assert_eq!(
            dev.attr_read("writeback_batch_size").unwrap(),
            want,
            "{v:?}"
        );
    }
    dev.attr_write("writeback_batch_size", "7").unwrap();
    for bad in [
        "0",
        "0\n",
        "-1",
        " 7",
        "8 ",
        "abc",
        "12abc",
        "0x10",
        "4294967296",
        "99999999999999999999",
        "\n",
        "3\n\n",
        "",
    ] {
        assert_eq!(
            errno(dev.attr_write("writeback_batch_size", bad)),
            Errno::EINVAL,
            "{bad:?}"
        );
        assert_eq!(dev.attr_read("writeback_batch_size").unwrap(), "7\n");
    }
    // Initialised or not, and kept by reset.
    dev.attr_write("reset", "1").unwrap();
    assert_eq!(dev.attr_read("writeback_batch_size").unwrap(), "7\n");
}

#[test]
fn writeback_is_submitted_in_batches_of_writeback_batch_size() {
    for (size, want) in [(1u32, 48u64), (5, 10), (32, 2), (48, 1), (4294967295, 1)] {
        let (dev, _f) = dev_with(PAGES, false);
        let pages = fill(&dev, 64); // 48 pages that are not same-filled
        dev.attr_write("writeback_batch_size", &size.to_string())
            .unwrap();
        let rep = dev.writeback(&WritebackParams::new().all()).unwrap();
        assert_eq!((rep.written, rep.batches), (48, want), "batch {size}");
        assert_eq!(bd(&dev).bd_writes, 48);
        for (i, p) in pages.iter().enumerate() {
            assert_eq!(&read(&dev, i), p, "batch {size}, page {i}");
        }
    }
}

#[test]
fn a_batch_is_read_and_charged_before_it_is_written() {
    let f = TmpFile::new(PAGES);
    let (dev, in_rx, go_tx) = paused_device(&f);
    let pages = fill(&dev, 8); // 6 candidates
    dev.attr_write("writeback_batch_size", "4").unwrap();
    dev.attr_write("writeback_limit_enable", "1").unwrap();
    dev.attr_write("writeback_limit", "100").unwrap();
    let d = dev.clone();
    let t = std::thread::spawn(move || d.attr_write("writeback", "page_indexes=0-7"));
    in_rx.recv().unwrap(); // the first block of the first batch is being written
    assert_eq!(
        dev.attr_read("writeback_limit").unwrap(),
        "96\n",
        "four requests submitted, charged at submission"
    );
    assert_eq!(bd(&dev).bd_count, 4, "four blocks reserved");
    assert_eq!(bd(&dev).bd_writes, 0, "none completed yet");
    go_tx.send(()).unwrap();
    t.join().unwrap().unwrap();
    assert_eq!(dev.attr_read("writeback_limit").unwrap(), "94\n");
    assert_eq!(
        bd(&dev),
        BdStat {
            bd_count: 6,
            bd_reads: 0,
            bd_writes: 6
        }
    );
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&read(&dev, i), p);
    }
}

#[test]
fn a_failed_write_gives_back_its_limit_charge() {
    let f = TmpFile::new(PAGES);
    let dev = Zram::builder()
        .algorithm("lz4", Params::default())
        .backing_dev(&f.path)
        .backing_fault(Arc::new(|op, _blk| op == BdOp::Write))
        .disksize(PAGES * PAGE_SIZE as u64)
        .build()
        .unwrap();
    let pages = fill(&dev, 8);
    dev.attr_write("writeback_limit_enable", "1").unwrap();
    dev.attr_write("writeback_limit", "10").unwrap();
    assert_eq!(errno(dev.attr_write("writeback", "all")), Errno::EINVAL);
    assert_eq!(
        errno(dev.attr_write("writeback", "page_indexes=0-7")),
        Errno::EIO
    );
    assert_eq!(dev.attr_read("writeback_limit").unwrap(), "10\n");
    assert_eq!(bd(&dev), BdStat::default(), "every block released");
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&read(&dev, i), p);
    }
}

fn roundtrip(compressed: bool) {
    let (dev, _f) = dev_with(PAGES, compressed);
    let pages = fill(&dev, 48);
    dev.attr_write("compact", "1").unwrap();
    let before = dev.mm_stat();
    assert_eq!(before.huge_pages, 12);
    dev.attr_write("idle", "all").unwrap();
    let rep = dev.writeback(&WritebackParams::new().idle()).unwrap();
    assert_eq!(
        (rep.candidates, rep.written, rep.io_errors),
        (36, 36, 0),
        "{rep:?}"
    );
    let after = dev.mm_stat();
    assert_eq!(
        after.orig_data_size, before.orig_data_size,
        "WB pages stay counted"
    );
    assert_eq!(after.compr_data_size, 0, "every object left RAM");
    assert_eq!(rep.bytes_freed, before.compr_data_size);
    assert_eq!(
        after.huge_pages, 0,
        "huge pages written back are no longer huge_pages"
    );
    assert_eq!(after.huge_pages_since, before.huge_pages_since);
    assert_eq!(after.same_pages, 12);
    dev.attr_write("compact", "1").unwrap();
    assert_eq!(
        dev.mm_stat().mem_used_total,
        0,
        "nothing left in the allocator"
    );
    assert_eq!(
        bd(&dev),
        BdStat {
            bd_count: 36,
            bd_reads: 0,
            bd_writes: 36
        }
    );
    // block_state shows w; idle never marks WB slots.
    dev.attr_write("idle", "all").unwrap();
    let bs = dev.attr_read("block_state").unwrap();
    let line = bs
        .lines()
        .find(|l| l.trim_start().starts_with("0 "))
        .unwrap();
    assert!(line.ends_with(".w...."), "{line}");
    let huge_line = bs
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap();
    assert!(
        huge_line.ends_with(if compressed { ".wh..." } else { ".w...." }),
        "{huge_line}"
    );
    assert!(dev.block_state().iter().all(|s| !(s.wb && s.idle)));
    // Every page reads back identical, from the file or from RAM.
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&read(&dev, i), p, "page {i}");
    }
    assert_eq!(bd(&dev).bd_reads, 36);
    assert!(dev.slot_info(0).unwrap().wb, "stays WB after a read");
    assert!(
        dev.slot_info(0).unwrap().ac_time_ns > 0,
        "read marks it accessed"
    );
    // Byte-range reads (partial pages) of WB slots work too.
    let mut b = vec![0u8; 512];
    dev.read_at(PAGE_SIZE as u64 + 1024, &mut b).unwrap();
    assert_eq!(&b[..], &pages[1][1024..1536]);
    // A second pass finds nothing: WB slots are not candidates.
    assert_eq!(
        dev.writeback(&WritebackParams::new().all())
            .unwrap()
            .candidates,
        0
    );
    // Partial write of a WB slot: read-modify-write brings it back to RAM.
    dev.write_at(1024, &[9u8; 512]).unwrap();
    let mut want = pages[0].clone();
    want[1024..1536].fill(9);
    assert_eq!(read(&dev, 0), want);
    assert!(!dev.slot_info(0).unwrap().wb);
    assert_eq!(bd(&dev).bd_count, 35);
}

#[test]
fn write_idle_writeback_read_back_plain() {
    roundtrip(false);
}

#[test]
fn write_idle_writeback_read_back_compressed() {
    roundtrip(true);
}

#[test]
fn compressed_mode_writes_the_object() {
    let (dev, f) = dev_with(8, true);
    let p = page(2, 7);
    dev.write_page(0, &p).unwrap();
    let size = dev.slot_info(0).unwrap().size;
    assert!(size > 0 && size < PAGE_SIZE / 2);
    dev.attr_write("writeback", "page_index=0").unwrap();
    let s = dev.slot_info(0).unwrap();
    assert!(s.wb && s.size == size && s.priority == 0, "{s:?}");
    // Block 1 (block 0 is never used) holds the lz4 object, zero padded.
    let raw = std::fs::read(&f.path).unwrap();
    let block = &raw[PAGE_SIZE..2 * PAGE_SIZE];
    assert!(block[size..].iter().all(|&b| b == 0));
    let mut out = vec![0u8; PAGE_SIZE];
    let codec = zmem_codec::registry::find("lz4").unwrap();
    codec
        .new_stream(&Params::default())
        .unwrap()
        .decompress(&block[..size], &mut out)
        .unwrap();
    assert_eq!(out, p);
    assert!(raw[..PAGE_SIZE].iter().all(|&b| b == 0), "block 0 unused");
    assert_eq!(read(&dev, 0), p);
    // mm_stat: compr_data_size excludes the WB slot although it keeps its size.
    assert_eq!(dev.mm_stat().compr_data_size, 0);
}

#[test]
fn plain_mode_writes_the_page() {
    let (dev, f) = dev_with(8, false);
    let p = page(2, 7);
    dev.write_page(5, &p).unwrap();
    dev.attr_write("writeback", "page_index=5").unwrap();
    let raw = std::fs::read(&f.path).unwrap();
    assert_eq!(&raw[PAGE_SIZE..2 * PAGE_SIZE], &p[..]);
    assert_eq!(dev.slot_info(5).unwrap().size, 0);
}

#[test]
fn huge_and_huge_idle_modes() {
    let (dev, _f) = dev_with(PAGES, false);
    let pages = fill(&dev, 16);
    dev.attr_write("idle", "all").unwrap();
    dev.write_page(1, &pages[1]).unwrap(); // huge page 1 accessed: no longer idle
    dev.attr_write("writeback", "huge_idle").unwrap();
    let wb: Vec<usize> = dev
        .block_state()
        .iter()
        .filter(|s| s.wb)
        .map(|s| s.index)
        .collect();
    assert_eq!(wb, vec![5, 9, 13]);
    dev.attr_write("writeback", "type=huge").unwrap();
    let wb: Vec<usize> = dev
        .block_state()
        .iter()
        .filter(|s| s.wb)
        .map(|s| s.index)
        .collect();
    assert_eq!(wb, vec![1, 5, 9, 13]);
    assert_eq!(dev.mm_stat().huge_pages, 0);
    // incompressible: only slots recompression flagged; none here.
    dev.attr_write("writeback", "incompressible").unwrap();
    assert_eq!(bd(&dev).bd_count, 4);
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&read(&dev, i), p);
    }
}

#[test]
fn largest_first_order() {
    // 3 usable blocks: the three largest objects go first.
    let (dev, _f) = dev_with(4, false);
    let sparse = page(5, 1); // small object
    let text = page(2, 1); // medium
    let random = page(3, 1); // huge
    dev.write_page(0, &sparse).unwrap();
    dev.write_page(1, &text).unwrap();
    dev.write_page(2, &random).unwrap();
    dev.write_page(3, &page(2, 2)).unwrap();
    assert_eq!(
        errno(dev.attr_write("writeback", "page_indexes=0-3")),
        Errno::ENOSPC
    );
    let wb: Vec<usize> = dev
        .block_state()
        .iter()
        .filter(|s| s.wb)
        .map(|s| s.index)
        .collect();
    assert_eq!(wb, vec![1, 2, 3], "the sparse page (smallest object) stays");
}

#[test]
fn overwrite_and_discard_release_blocks() {
    let (dev, _f) = dev_with(PAGES, false);
    fill(&dev, 8);
    dev.attr_write("writeback", "page_indexes=0-7").unwrap();
    assert_eq!(bd(&dev).bd_count, 6);
    let m = dev.mm_stat();
    dev.write_page(0, &page(2, 99)).unwrap(); // overwrite
    assert_eq!(bd(&dev).bd_count, 5);
    assert_eq!(dev.mm_stat().orig_data_size, m.orig_data_size);
    dev.write_page(1, &[0u8; PAGE_SIZE]).unwrap(); // overwrite with a SAME page
    assert_eq!(bd(&dev).bd_count, 4);
    dev.discard(3 * PAGE_SIZE as u64, 2 * PAGE_SIZE as u64)
        .unwrap(); // 3 WB, 4 WB
    assert_eq!(bd(&dev).bd_count, 2);
    assert_eq!(read(&dev, 4), vec![0u8; PAGE_SIZE]);
    assert!(dev.slot_free_notify(5));
    assert_eq!(bd(&dev).bd_count, 1);
    assert_eq!(
        dev.mm_stat().orig_data_size,
        m.orig_data_size - 3 * PAGE_SIZE as u64,
        "page 1 is SAME now"
    );
    // Freed blocks are reused (block 1 first).
    dev.attr_write("writeback", "page_index=0").unwrap();
    assert_eq!(bd(&dev).bd_count, 2);
    assert_eq!(read(&dev, 0), page(2, 99));
    // reset releases everything.
    dev.attr_write("reset", "1").unwrap();
    assert_eq!(bd(&dev), BdStat::default());
}

// ------------------------------------------------------------------ errors lose nothing

#[test]
fn full_backing_file_is_enospc_and_nothing_is_lost() {
    let (dev, _f) = dev_with(4, false); // 3 usable blocks
    let pages = fill(&dev, 20);
    let before = dev.mm_stat();
    assert_eq!(
        errno(dev.attr_write("writeback", "page_indexes=0-19")),
        Errno::ENOSPC
    );
    assert_eq!(
        bd(&dev),
        BdStat {
            bd_count: 3,
            bd_reads: 0,
            bd_writes: 3
        }
    );
    assert_eq!(dev.mm_stat().orig_data_size, before.orig_data_size);
    assert!(
        dev.block_state().iter().all(|s| !s.pp_slot),
        "every PP_SLOT released"
    );
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&read(&dev, i), p, "page {i}");
    }
    assert_eq!(
        errno(dev.attr_write("writeback", "page_indexes=0-19")),
        Errno::ENOSPC
    );
    assert_eq!(bd(&dev).bd_writes, 3, "no block, no write");
}

#[test]
fn write_io_error_keeps_the_page_in_ram() {
    let f = TmpFile::new(PAGES);
    let fail_writes = Arc::new(AtomicU64::new(1)); // fail the first block write
    let fw = fail_writes.clone();
    let fail_reads = Arc::new(AtomicBool::new(false));
    let fr = fail_reads.clone();
    let dev = Zram::builder()
        .algorithm("lz4", Params::default())
        .backing_dev(&f.path)
        .backing_fault(Arc::new(move |op, _blk| match op {
            BdOp::Write => fw
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok(),
            BdOp::Read => fr.load(Ordering::Relaxed),
        }))
        .disksize(PAGES * PAGE_SIZE as u64)
        .build()
        .unwrap();
    let pages = fill(&dev, 8);
    let e = dev.attr_write("writeback", "page_indexes=0-7").unwrap_err();
    assert_eq!(e.errno, Errno::EIO, "{e}");
    // The first candidate (largest: a huge page) failed and stays in RAM; the rest went on.
    let wb = dev.block_state().iter().filter(|s| s.wb).count();
    assert_eq!(wb, 5);
    assert_eq!(
        bd(&dev),
        BdStat {
            bd_count: 5,
            bd_reads: 0,
            bd_writes: 5
        },
        "the failed write's block was released (6.19+ completion)"
    );
    assert!(dev.block_state().iter().all(|s| !s.pp_slot));
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&read(&dev, i), p, "page {i}");
    }
    // A failing block read is EIO, no panic; the slot is intact.
    fail_reads.store(true, Ordering::Relaxed);
    let wb_index = dev.block_state().iter().find(|s| s.wb).unwrap().index;
    let mut b = vec![0u8; PAGE_SIZE];
    let e = dev.read_page(wb_index, &mut b).unwrap_err();
    assert_eq!(e.errno(), Errno::EIO);
    assert_eq!(dev.io_stat().failed_reads, 1);
    fail_reads.store(false, Ordering::Relaxed);
    assert_eq!(read(&dev, wb_index), pages[wb_index]);
    fail_writes.store(u64::MAX, Ordering::Relaxed);
    let wb_before = bd(&dev);
    assert_eq!(
        dev.writeback(&WritebackParams::new().all())
            .unwrap_err()
            .errno,
        Errno::EIO
    );
    assert_eq!(
        bd(&dev).bd_count,
        wb_before.bd_count,
        "the reserved block is released at the end"
    );
}

#[test]
fn truncated_backing_file_read_is_eio() {
    let (dev, f) = dev_with(8, false);
    dev.write_page(0, &page(2, 3)).unwrap();
    dev.attr_write("writeback", "page_index=0").unwrap();
    // Someone truncates the file under us: the block read fails cleanly.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&f.path)
        .unwrap()
        .set_len(PAGE_SIZE as u64)
        .unwrap();
    let mut b = vec![0u8; PAGE_SIZE];
    assert_eq!(dev.read_page(0, &mut b).unwrap_err().errno(), Errno::EIO);
}

// ------------------------------------------------------------------ concurrency

/// A device whose first block write blocks until released, to observe a pass in flight.
fn paused_device(f: &TmpFile) -> (Arc<Zram>, mpsc::Receiver<u64>, mpsc::SyncSender<()>) {
    let (in_tx, in_rx) = mpsc::sync_channel::<u64>(1);
    let (go_tx, go_rx) = mpsc::sync_channel::<()>(1);
    let state = Arc::new(Mutex::new(Some((in_tx, go_rx))));
    let dev = Zram::builder()
        .algorithm("lz4", Params::default())
        .secondary(1, "zstd", Params::default())
        .backing_dev(&f.path)
        .backing_fault(Arc::new(move |op, blk| {
            if op == BdOp::Write {
                if let Some((tx, rx)) = state.lock().unwrap().take() {
                    tx.send(blk).unwrap();
                    rx.recv().unwrap();
                }
            }
            false
        }))
        .disksize(PAGES * PAGE_SIZE as u64)
        .build()
        .unwrap();
    (Arc::new(dev), in_rx, go_tx)
}

#[test]
fn concurrent_pass_is_eagain() {
    let f = TmpFile::new(PAGES);
    let (dev, in_rx, go_tx) = paused_device(&f);
    let pages = fill(&dev, 4);
    let d = dev.clone();
    let t = std::thread::spawn(move || d.attr_write("writeback", "page_indexes=0-3"));
    in_rx.recv().unwrap(); // the pass is writing its first block
    assert_eq!(errno(dev.attr_write("writeback", "huge")), Errno::EAGAIN);
    assert_eq!(
        errno(dev.attr_write("recompress", "type=idle")),
        Errno::EAGAIN
    );
    go_tx.send(()).unwrap();
    t.join().unwrap().unwrap();
    assert_eq!(bd(&dev).bd_count, 3);
    dev.attr_write("recompress", "").unwrap(); // released after the pass
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&read(&dev, i), p);
    }
}

#[test]
fn slot_rewritten_during_the_write_is_skipped() {
    let f = TmpFile::new(PAGES);
    let (dev, in_rx, go_tx) = paused_device(&f);
    let old = page(3, 1); // the only candidate
    dev.write_page(7, &old).unwrap();
    let d = dev.clone();
    let t = std::thread::spawn(move || d.attr_write("writeback", "page_index=7"));
    in_rx.recv().unwrap();
    let new = page(2, 5);
    dev.write_page(7, &new).unwrap(); // PP_SLOT cleared while the block is written
    go_tx.send(()).unwrap();
    t.join().unwrap().unwrap();
    let s = dev.slot_info(7).unwrap();
    assert!(!s.wb && !s.pp_slot, "{s:?}");
    assert_eq!(read(&dev, 7), new);
    assert_eq!(
        bd(&dev),
        BdStat {
            bd_count: 0,
            bd_reads: 0,
            bd_writes: 1
        },
        "written, then released"
    );
}

// ------------------------------------------------------------------ random input

mod random_input {
    use super::*;
    use proptest::prelude::*;

    const NAMES: [&str; 7] = [
        "writeback",
        "writeback_limit",
        "writeback_limit_enable",
        "compressed_writeback",
        "writeback_batch_size",
        "backing_dev",
        "idle",
    ];

    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            ".{0,40}",
            "((type|page_index|page_indexes|foo)=?[-a-z0-9_]{0,12} ?){0,4}\n?",
            "(idle|huge|huge_idle|incompressible|all|[0-9]{1,22})\n?",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        /// Random and mutated input never panics; a refused write gives a
        /// message; whatever was written back, every page reads back.
        #[test]
        fn writeback_attributes_never_panic_or_lose_data(ops in proptest::collection::vec((0..NAMES.len(), value()), 1..12)) {
            let (dev, _f) = dev_with(8, false);
            let pages = fill(&dev, 16);
            for (n, v) in ops {
                if let Err(e) = dev.attr_write(NAMES[n], &v) {
                    prop_assert!(!e.message.is_empty());
                }
                let _ = dev.attr_read(NAMES[n]);
                prop_assert!(BdStat::parse(&dev.attr_read("bd_stat").unwrap()).is_some());
                let _ = WritebackParams::parse(&v, 16);
            }
            prop_assert!(dev.block_state().iter().filter(|s| s.wb).count() <= 7);
            for (i, p) in pages.iter().enumerate() {
                prop_assert_eq!(&read(&dev, i), p);
            }
        }
    }
}

// ------------------------------------------------------------------ with the fast path

/// A slot stored by the fast algorithm and written back compressed keeps
/// FAST, so the read path decompresses the block with the fast algorithm (the
/// primary cannot read an lz4m stream); plain writeback stores the page.
#[test]
fn fast_path_slots_written_back_read_back_in_both_modes() {
    for compressed in [false, true] {
        let f = TmpFile::new(PAGES);
        let dev = Zram::builder()
            .algorithm("lz4", Params::default())
            .fast_algorithm("lz4m")
            .backing_dev(&f.path)
            .compressed_writeback(compressed)
            .disksize(PAGES * PAGE_SIZE as u64)
            .build()
            .unwrap();
        let pages: Vec<Vec<u8>> = (0..16).map(|i| page([2, 3][i % 2], i as u64 + 7)).collect();
        for (i, p) in pages.iter().enumerate() {
            if i < 8 {
                dev.write_page_fast(i, p).unwrap();
            } else {
                dev.write_page(i, p).unwrap();
            }
        }
        assert!(dev.slot_info(0).unwrap().fast);
        dev.attr_write("idle", "all").unwrap();
        let rep = dev.writeback(&WritebackParams::new().idle()).unwrap();
        assert_eq!(rep.written, 16, "compressed={compressed}: {rep:?}");
        for (i, p) in pages.iter().enumerate() {
            let s = dev.slot_info(i).unwrap();
            assert!(s.wb, "page {i}");
            assert_eq!(
                s.fast,
                compressed && i < 8,
                "compressed={compressed} page {i}: {s:?}"
            );
            assert_eq!(&read(&dev, i), p, "compressed={compressed} page {i}");
        }
        // Freeing a WB slot clears FAST with everything else.
        dev.discard(0, PAGE_SIZE as u64).unwrap();
        let s = dev.slot_info(0).unwrap();
        assert!(!s.wb && !s.fast);
    }
}

/// An lz4 device of PAGES pages behaving as kernel `version`, with a backing
/// file of PAGES pages.
fn dev_of(version: &str) -> (Zram, TmpFile) {
    let f = TmpFile::new(PAGES);
    let d = Zram::builder()
        .kernel(zmem_kernel::KernelModel::parse(version).unwrap())
        .algorithm("lz4", Params::default())
        .backing_dev(&f.path)
        .disksize(PAGES * PAGE_SIZE as u64)
        .build()
        .unwrap();
    (d, f)
}

/// Before 6.19 a pass writes one page at a time and there is no
/// writeback_batch_size; from 6.19 the default batch (32) is used.
#[test]
fn writeback_is_one_page_at_a_time_before_6_19() {
    for (version, want) in [("6.18", 48u64), ("6.12", 48), ("6.19", 2), ("7.3", 2)] {
        let (dev, _f) = dev_of(version);
        let pages = fill(&dev, 64);
        let rep = dev.writeback(&WritebackParams::new().all()).unwrap();
        assert_eq!((rep.written, rep.batches), (48, want), "{version}");
        for (i, p) in pages.iter().enumerate() {
            assert_eq!(&read(&dev, i), p, "{version}, page {i}");
        }
    }
    let (old, _f) = dev_of("6.18");
    assert_eq!(
        errno(old.attr_write("writeback_batch_size", "4")),
        Errno::ENOENT
    );
}

/// The writeback syntax of each version: 6.1 has one mode word or
/// page_index=N (no incompressible, which came with recompression in 6.2);
/// key=value tokens (type=, page_indexes=) from 6.16.
#[test]
fn writeback_syntax_by_version() {
    let (d61, _a) = dev_of("6.1");
    fill(&d61, 8);
    assert_eq!(
        errno(d61.attr_write("writeback", "incompressible")),
        Errno::EINVAL
    );
    assert_eq!(
        errno(d61.attr_write("writeback", "type=huge")),
        Errno::EINVAL
    );
    assert_eq!(
        errno(d61.attr_write("writeback", "page_indexes=0-3")),
        Errno::EINVAL
    );
    // An index beyond the device is EINVAL there (ERANGE from 6.16).
    assert_eq!(
        errno(d61.attr_write("writeback", "page_index=64")),
        Errno::EINVAL
    );
    d61.attr_write("writeback", "page_index=0\n").unwrap();
    d61.attr_write("writeback", "huge\n").unwrap();
    assert_eq!(bd(&d61).bd_writes, 3, "page 0 and the two huge pages");
    let (d612, _b) = dev_of("6.12");
    fill(&d612, 8);
    d612.attr_write("writeback", "incompressible").unwrap();
    assert_eq!(
        errno(d612.attr_write("writeback", "type=huge")),
        Errno::EINVAL
    );
    let (d73, _c) = dev_of("7.3");
    fill(&d73, 8);
    d73.attr_write("writeback", "type=huge").unwrap();
    assert_eq!(
        errno(d73.attr_write("writeback", "page_index=64")),
        Errno::ERANGE
    );
    d73.attr_write("writeback", "page_indexes=0-3").unwrap();
}

/// compressed_writeback is 7.0's: a 6.19 device has no such attribute and
/// its builder refuses the option.
#[test]
fn compressed_writeback_only_from_7_0() {
    let (d619, _f) = dev_of("6.19");
    assert_eq!(
        errno(d619.attr_write("compressed_writeback", "1")),
        Errno::ENOENT
    );
    let f = TmpFile::new(PAGES);
    let e = Zram::builder()
        .kernel(zmem_kernel::KernelModel::parse("6.19").unwrap())
        .backing_dev(&f.path)
        .compressed_writeback(true)
        .disksize(PAGES * PAGE_SIZE as u64)
        .build()
        .unwrap_err();
    assert!(e.message.contains("7.0"), "{}", e.message);
}
