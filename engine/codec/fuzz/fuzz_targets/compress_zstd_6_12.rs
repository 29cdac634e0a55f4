#![no_main]
// Any page through zstd level 3 as Linux 6.12 writes it (lib/zstd 1.5.2's
// double-fast match finder, ours, feeding libzstd's entropy stage) into any
// destination size: libzstd decodes it back to the page, or a clean DstTooSmall.
libfuzzer_sys::fuzz_target!(|data: &[u8]| zmem_codec_fuzz::compress_zstd_6_12(data));
