//! Random and mutated attribute input never panics, and a refused write
//! leaves the device as it was.
mod common;
use proptest::prelude::*;
use zmem_device::BlockDevice;
use zmem_zram::Zram;

const NAMES: [&str; 15] = [
    "disksize",
    "comp_algorithm",
    "algorithm_params",
    "mem_limit",
    "mem_used_max",
    "compact",
    "idle",
    "allocator",
    "reset",
    "mm_stat",
    "initstate",
    "nope",
    "fast_algorithm",
    "fast_path",
    "recompress",
];

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,40}",
        "(0x|0)?[0-9a-fA-F]{0,20}[kKmMgGtTpPeE]?\n?",
        "(priority|algo|level|dict|deflate.winbits)=\"?[-a-z0-9/ ]{0,12}\"?( [a-z]+=?[0-9]*){0,3}",
        "(all|lz4|lzo-rle|zstd|zsmalloc|zbud)\n?",
        "(mode|limit_pct|rate|algo|from|type|max_pages|threshold)=[-a-z0-9%]{0,10}( [a-z_]+=?[0-9a-z]*){0,3}\n?",
        "(off|always|pressure)( limit_pct=[0-9]{1,3})?( rate=[0-9]{1,6})?",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
    #[test]
    fn attribute_writes_never_panic(ops in proptest::collection::vec((0..NAMES.len(), value()), 1..12)) {
        let dev = Zram::builder()
            .disksize(64 << 10)
            .algorithm("lz4", Default::default())
            .fast_algorithm("lz4m")
            .build()
            .unwrap();
        dev.write_page(1, &common::page(2, 5)).unwrap();
        for (n, v) in ops {
            // The slot table is allocated eagerly (as vzalloc): keep random
            // disksizes small so a test never commits gigabytes.
            if NAMES[n] == "disksize" && zmem_kernel::memparse(&v).0 > (64 << 20) {
                continue;
            }
            let before_init = dev.attr_read("initstate").unwrap();
            let before_alg = dev.attr_read("comp_algorithm").unwrap();
            match dev.attr_write(NAMES[n], &v) {
                Ok(()) => {}
                Err(e) => {
                    prop_assert!(!e.message.is_empty());
                    prop_assert_eq!(dev.attr_read("initstate").unwrap(), before_init);
                    prop_assert_eq!(dev.attr_read("comp_algorithm").unwrap(), before_alg);
                }
            }
            let _ = dev.attr_read(NAMES[n]);
            let m = dev.attr_read("mm_stat").unwrap();
            prop_assert!(zmem_kernel::MmStat::parse(&m).is_some());
        }
        // If still initialised and the algorithm unchanged, the page is intact.
        if dev.size() >= 8192 {
            let mut b = vec![0u8; 4096];
            dev.read_page(1, &mut b).unwrap();
            prop_assert_eq!(b, common::page(2, 5));
        }
    }
}
