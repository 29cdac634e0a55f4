#![no_main]
// Any page through our own lz4hc encoder (the kernel's algorithm) at any level,
// with or without a dictionary, into any destination size: liblz4 decodes it
// back to the page, or the encoder reports a clean DstTooSmall.
libfuzzer_sys::fuzz_target!(|data: &[u8]| zmem_codec_fuzz::compress_levels("lz4hc", data));
