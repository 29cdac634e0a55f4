#![no_main]
//! Control-socket request lines (docs/ctl-protocol.md).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = zmem_device::ctl::parse_request(data);
});
