#![no_main]
//! mm_stat, io_stat, bd_stat, comp_algorithm, recomp_algorithm, /proc/swaps and memparse.
use libfuzzer_sys::fuzz_target;
use zmem_kernel::{parse_comp_algorithm, parse_recomp_algorithm, BdStat, IoStat, MmStat};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Some(m) = MmStat::parse(&text) {
        let _ = (m.ratio(), m.effective_ratio(), m.saved());
    }
    let _ = IoStat::parse(&text);
    let _ = BdStat::parse(&text);
    let _ = parse_comp_algorithm(&text);
    let _ = parse_recomp_algorithm(&text);
    let _ = zmem_kernel::proc::parse_swaps(&text);
    let _ = zmem_kernel::memparse(&text);
});
