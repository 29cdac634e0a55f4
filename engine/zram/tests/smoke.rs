mod common;
use common::*;
use zmem_device::BlockDevice;
use zmem_zram::PAGE_SIZE;

#[test]
fn every_page_kind_round_trips_with_kernel_accounting() {
    let dev = device(1 << 20);
    let mut pages = Vec::new();
    for i in 0..60u64 {
        let p = page(i, i * 7 + 1);
        dev.write_at(i * PAGE_SIZE as u64, &p).unwrap();
        pages.push(p);
    }
    for (i, p) in pages.iter().enumerate() {
        let mut b = vec![0u8; PAGE_SIZE];
        dev.read_at(i as u64 * PAGE_SIZE as u64, &mut b).unwrap();
        assert_eq!(&b, p, "page {i}");
    }
    let m = dev.mm_stat();
    println!("{}", dev.attr_read("mm_stat").unwrap());
    assert_eq!(m.orig_data_size, 60 * PAGE_SIZE as u64);
    assert_eq!(m.same_pages, 20);
    assert_eq!(m.huge_pages, 10);
}
