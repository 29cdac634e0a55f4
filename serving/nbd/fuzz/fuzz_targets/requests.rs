#![no_main]
//! Request headers: parse and check against an export; refusals drain
//! exactly a WRITE's payload, accepted I/O lies inside the export.
use libfuzzer_sys::fuzz_target;
use zmem_nbd::proto::*;
use zmem_nbd::{decode_request as decode, Command};

fuzz_target!(|data: &[u8]| {
    for chunk in data.chunks_exact(REQUEST_LEN) {
        let Some(r) = parse_request(chunk.try_into().unwrap()) else {
            continue;
        };
        match decode(&r, 1 << 30, 1 << 25) {
            Ok(Command::Read { offset, len }) | Ok(Command::Write { offset, len, .. }) => {
                assert!(offset + len as u64 <= 1 << 30 && len <= 1 << 25)
            }
            Ok(_) => {}
            Err(e) => assert_eq!(
                e.drain,
                if r.command == CMD_WRITE {
                    r.length as u64
                } else {
                    0
                }
            ),
        }
    }
});
