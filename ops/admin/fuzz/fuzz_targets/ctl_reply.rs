#![no_main]
//! Replies from a `zmem serve` control socket (docs/ctl-protocol.md).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = zmem_device::ctl::parse_reply(data);
});
