#![no_main]
// Any page through zstd as Linux 6.1's zram writes it (lib/zstd 1.4.10's
// double-fast match finder at the crypto API's parameters, ours, feeding
// libzstd's entropy stage) into any destination size: libzstd decodes it back
// to the page, or a clean DstTooSmall.
libfuzzer_sys::fuzz_target!(|data: &[u8]| zmem_codec_fuzz::compress_zstd_6_1(data));
