//! The `writeback` parser and the writeback attributes with arbitrary bytes:
//! never a panic, and written-back data always reads back. Run:
//! `cargo +nightly fuzz run writeback` in zram/.
#![no_main]
use libfuzzer_sys::fuzz_target;
use zmem_device::BlockDevice;
use zmem_zram::{WritebackParams, Zram};

const NAMES: [&str; 6] = [
    "writeback",
    "writeback_limit",
    "writeback_limit_enable",
    "compressed_writeback",
    "writeback_batch_size",
    "idle",
];

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let _ = WritebackParams::parse(&text, sel as u64);
    let _ = zmem_kernel::kstrtobool(&text);
    let path = std::env::temp_dir().join(format!("zmem-fuzz-wb-{}", std::process::id()));
    std::fs::File::create(&path)
        .unwrap()
        .set_len(8 * 4096)
        .unwrap();
    let dev = Zram::builder()
        .backing_dev(&path)
        .disksize(16 * 4096)
        .build()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let page: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
    for i in 0..16 {
        dev.write_page(i, &page).unwrap();
    }
    for chunk in rest.split(|&b| b == 0) {
        let v = String::from_utf8_lossy(chunk);
        let _ = dev.attr_write(NAMES[sel as usize % NAMES.len()], &v);
        let _ = dev.attr_read("bd_stat");
    }
    let mut b = vec![0u8; 4096];
    for i in 0..16 {
        dev.read_page(i, &mut b).unwrap();
        assert_eq!(b, page);
    }
});
