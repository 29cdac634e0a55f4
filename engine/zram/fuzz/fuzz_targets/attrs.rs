//! Attribute writes with arbitrary bytes (first byte picks the attribute):
//! never a panic. Run: `cargo +nightly fuzz run attrs` in zram/.
#![no_main]
use libfuzzer_sys::fuzz_target;
use zmem_device::BlockDevice;
use zmem_zram::Zram;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    // Every writable attribute but backing_dev (fuzz input must not name
    // files for the engine to open read-write).
    let names: Vec<&str> = zmem_zram::WRITABLE
        .iter()
        .copied()
        .filter(|n| *n != "backing_dev")
        .collect();
    let dev = Zram::new();
    let _ = dev.attr_write("comp_algorithm", "lz4");
    for chunk in rest.split(|&b| b == 0) {
        let v = String::from_utf8_lossy(chunk);
        let name = names[sel as usize % names.len()];
        // A disksize of terabytes is a legitimate request for a big slot
        // table (32 bytes a page, as the kernel's 16), not a parser bug; it
        // would only map gigabytes of table per input. Parse it, don't build it.
        if name == "disksize" && zmem_kernel::memparse(&v).0 > 1 << 30 {
            continue;
        }
        let _ = dev.attr_write(name, &v);
        let _ = dev.attr_read("mm_stat");
    }
    let _ = zmem_kernel::next_args(&String::from_utf8_lossy(rest));
    let _ = zmem_kernel::memparse(&String::from_utf8_lossy(rest));
});
