//! `recompress`'s checks and their order, including the kernel's global
//! `huge_class_size` (drivers/block/zram/zram_drv.c: set once, by the first
//! device initialised in the system, and compared with `threshold=` before
//! the device's own initstate). The global is per process here, so this test
//! has a test binary of its own: no other test initialises a device first.
mod common;

use common::{dev_with, errno};
use zmem_device::BlockDevice;
use zmem_kernel::Errno;
use zmem_zram::{global_huge_class_size, Zram};

const MB: u64 = 1 << 20;

#[test]
fn recompress_check_order_and_errors() {
    let uninit = Zram::new();
    // Not initialised: EINVAL (either via the global huge_class_size check,
    // when no device was initialised yet in this process, or via initstate).
    assert_eq!(errno(uninit.attr_write("recompress", "")), Errno::EINVAL);

    let dev = dev_with(&[(1, "zstd")], MB);
    let hcs = dev.huge_class_size();
    assert!(hcs > 0);
    assert_eq!(
        global_huge_class_size(),
        hcs,
        "set once by the first disksize"
    );
    // threshold >= huge_class_size: EINVAL, checked before initstate.
    assert_eq!(
        errno(dev.attr_write("recompress", &format!("threshold={hcs}"))),
        Errno::EINVAL
    );
    assert_eq!(
        errno(uninit.attr_write("recompress", &format!("threshold={hcs}"))),
        Errno::EINVAL
    );
    dev.attr_write("recompress", &format!("threshold={}", hcs - 1))
        .unwrap();
    // algo= searched among the secondaries only.
    assert_eq!(
        errno(dev.attr_write("recompress", "algo=lz4")),
        Errno::EINVAL,
        "the primary is not searched"
    );
    assert_eq!(
        errno(dev.attr_write("recompress", "algo=deflate")),
        Errno::EINVAL,
        "not configured"
    );
    dev.attr_write("recompress", "algo=zstd").unwrap();
    // algo= searched from priority= upwards.
    assert_eq!(
        errno(dev.attr_write("recompress", "priority=2 algo=zstd")),
        Errno::EINVAL
    );
    dev.attr_write("recompress", "priority=0").unwrap();
    dev.attr_write("recompress", "priority=1").unwrap();
    assert_eq!(
        errno(dev.attr_write("recompress", "priority=2")),
        Errno::EINVAL,
        "beyond num_active_comps"
    );
    assert_eq!(
        errno(dev.attr_write("recompress", "priority=4294967295")),
        Errno::EINVAL
    );
    // Parse errors come first of all.
    assert_eq!(
        errno(uninit.attr_write("recompress", "max_pages=99999999999999999999")),
        Errno::ERANGE
    );
    // No secondary algorithm at all: EINVAL.
    let plain = dev_with(&[], MB);
    assert_eq!(errno(plain.attr_write("recompress", "")), Errno::EINVAL);
    assert_eq!(
        errno(plain.attr_write("recompress", "type=idle")),
        Errno::EINVAL
    );
    // recompress is write-only, recomp_algorithm read-write.
    assert_eq!(
        dev.attr_read("recompress").unwrap_err().errno,
        Errno::EACCES
    );
}
