#![no_main]
//! zram-size expressions on their own: any text gives a value or an error
//! naming the expression, never a panic or a stack overflow (nesting and
//! length are bounded), and an accepted size is the MiB value truncated to
//! bytes as zram-generator writes it (the kernel rounds disksize up to whole
//! pages), no larger than 256 × ram.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(e) = zmem_conf::SizeExpr::parse(text, 1) else {
        return;
    };
    for ram in [0.0, 1.0, 782.0, 8192.0, 1e9] {
        let mib = e.eval_mib(ram);
        if let Ok(b) = e.eval_bytes(ram) {
            assert_eq!(b, (mib.unwrap() * 1048576.0) as u64);
            assert!(b as f64 <= ram.max(1.0) * 256.0 * 1048576.0);
        }
    }
});
