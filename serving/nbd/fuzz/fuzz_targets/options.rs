#![no_main]
//! Handshake option data (NBD_OPT_INFO/GO bodies) and option headers.
use libfuzzer_sys::fuzz_target;
use zmem_nbd::proto::*;

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = parse_info_request(data) {
        assert!(
            r.name.len() <= MAX_STRING && 4 + r.name.len() + 2 + 2 * r.requests.len() == data.len()
        );
    }
    if data.len() >= OPTION_LEN {
        let _ = parse_option_header(data[..OPTION_LEN].try_into().unwrap());
    }
});
