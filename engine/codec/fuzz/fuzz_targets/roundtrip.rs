#![no_main]
// Any page through any algorithm (first byte) into any destination size
// (second byte): decodes back to the page, or a clean DstTooSmall.
libfuzzer_sys::fuzz_target!(|data: &[u8]| zmem_codec_fuzz::roundtrip(data));
