#![no_main]
// Arbitrary bytes into the deflate decoder: never a panic, an overrun or a hang.
libfuzzer_sys::fuzz_target!(|data: &[u8]| zmem_codec_fuzz::decompress("deflate", data));
