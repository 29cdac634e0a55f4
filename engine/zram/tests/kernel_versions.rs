//! A device behaving as a chosen kernel version's zram (`ZramBuilder::kernel`):
//! the attributes it lists and answers, zsmalloc's huge_class_size and
//! mem_used_total, and algorithm_params' keys, per version.

use zmem_codec::Params;
use zmem_device::BlockDevice;
use zmem_kernel::{Errno, KernelModel, MmStat};
use zmem_zram::{Zram, PAGE_SIZE};

fn dev(version: &str) -> Zram {
    Zram::builder()
        .kernel(KernelModel::parse(version).unwrap())
        .algorithm("lzo", Params::default())
        .disksize(64 * PAGE_SIZE as u64)
        .build()
        .unwrap()
}

#[test]
fn attributes_follow_the_version() {
    let old = dev("6.18");
    let new = Zram::new();
    assert_eq!(new.kernel(), KernelModel::newest());
    assert!(new.attr_names().contains(&"writeback_batch_size"));
    assert!(!old.attr_names().contains(&"writeback_batch_size"));
    assert!(!old.attr_writable().contains(&"compressed_writeback"));
    let e = old.attr_read("writeback_batch_size").unwrap_err();
    assert_eq!(e.errno, Errno::ENOENT);
    assert!(
        e.message.contains("6.18") && e.message.contains("6.19+"),
        "{}",
        e.message
    );
    assert_eq!(new.attr_read("writeback_batch_size").unwrap(), "32\n");
    // 6.1: no algorithm_params, no recompression; max_comp_streams is not
    // served by the engine under any version.
    let d61 = dev("6.1");
    for name in ["algorithm_params", "recompress", "recomp_algorithm"] {
        assert!(!d61.attr_writable().contains(&name), "{name}");
        assert_eq!(
            d61.attr_write(name, "x").unwrap_err().errno,
            Errno::ENOENT,
            "{name}"
        );
    }
    // zmem's own extensions stay.
    assert!(d61.attr_names().contains(&"allocator"));
    assert!(old.attr_names().contains(&"mm_stat"));
}

/// 6.1's zsmalloc chains at most 4 pages, so its huge class starts lower
/// (3257 bytes against 3625) and an object of 3300 bytes is stored raw.
#[test]
fn huge_class_size_by_version() {
    assert_eq!(dev("6.1").huge_class_size(), 3257);
    assert_eq!(dev("6.2").huge_class_size(), 3257);
    assert_eq!(dev("6.3").huge_class_size(), 3625);
    let newest = Zram::builder().disksize(PAGE_SIZE as u64).build().unwrap();
    assert_eq!(newest.huge_class_size(), 3625);
}

/// deflate.winbits is an algorithm_params key from 6.16; before, it is an
/// unknown key, ignored as the kernel ignores any.
#[test]
fn algorithm_params_keys_by_version() {
    for (version, winbits) in [("6.12", None), ("6.16", Some(-10)), ("7.3", Some(-10))] {
        let d = Zram::builder()
            .kernel(KernelModel::parse(version).unwrap())
            .build()
            .unwrap();
        d.attr_write("algorithm_params", "priority=0 level=3 deflate.winbits=-10")
            .unwrap();
        let p = &d.config().params[0];
        assert_eq!(
            (p.level, p.deflate_winbits),
            (Some(3), winbits),
            "{version}"
        );
    }
}

/// The same pages in a 6.1 device and a 7.3 device: the compressed bytes are
/// equal, 6.1's pool differs (shorter chains).
#[test]
fn mem_used_differs_only_in_the_pool() {
    let pages: Vec<Vec<u8>> = (0..64u32)
        .map(|i| {
            let mut p = vec![0u8; PAGE_SIZE];
            for (j, b) in p.iter_mut().enumerate() {
                *b = ((j as u32 * (i + 3)) % (17 + i)) as u8;
            }
            p
        })
        .collect();
    let stat = |d: &Zram| {
        for (i, p) in pages.iter().enumerate() {
            d.write_page(i, p).unwrap();
        }
        MmStat::parse(&d.attr_read("mm_stat").unwrap()).unwrap()
    };
    let (old, new) = (stat(&dev("6.1")), stat(&dev("7.3")));
    assert_eq!(old.compr_data_size, new.compr_data_size);
    assert_eq!(old.orig_data_size, new.orig_data_size);
    assert_ne!(old.mem_used_total, new.mem_used_total);
}
