#![no_main]
//! A whole connection from the client's bytes: handshake (with a valid
//! NBD_OPT_GO prefix when the first byte is odd, so requests get exercised),
//! then requests run on a 64 KiB lzo-rle device (small and cheap to build per
//! run: the protocol is under test here, the codecs have targets of their
//! own). Never panics.
use libfuzzer_sys::fuzz_target;
use zmem_nbd::proto::*;
use zmem_nbd::{serve_bytes, Options};

fuzz_target!(|data: &[u8]| {
    let dev = zmem_zram::Zram::builder()
        .algorithm("lzo-rle", Default::default())
        .disksize(64 << 10)
        .build()
        .expect("device");
    let mut input = Vec::new();
    if data.first().is_some_and(|b| b & 1 == 1) {
        input.extend_from_slice(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes());
        input.extend_from_slice(&IHAVEOPT.to_be_bytes());
        input.extend_from_slice(&OPT_GO.to_be_bytes());
        input.extend_from_slice(&6u32.to_be_bytes());
        input.extend_from_slice(&[0; 6]);
        input.extend_from_slice(&data[1..]);
    } else {
        input.extend_from_slice(data);
    }
    let out = serve_bytes(&dev, &Options::default(), &input);
    assert!(out.starts_with(&greeting()));
});
