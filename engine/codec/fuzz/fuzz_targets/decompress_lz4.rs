#![no_main]
// Arbitrary bytes into the lz4 decoder: never a panic, an overrun or a hang.
libfuzzer_sys::fuzz_target!(|data: &[u8]| zmem_codec_fuzz::decompress("lz4", data));
