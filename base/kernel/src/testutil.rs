//! Helpers for unit tests of zmem crates (not part of the API).

/// `count` deterministic pseudo-random strings (xorshift64 from `seed`) of
/// length `0..max_len`, drawn from `alphabet`: input for "never panics" tests
/// of the text parsers.
pub fn random_strings(
    seed: u64,
    alphabet: &[u8],
    max_len: u64,
    count: usize,
) -> impl Iterator<Item = String> + '_ {
    let mut x = seed;
    (0..count).map(move |_| {
        let len = (x % max_len) as usize;
        let mut s = String::with_capacity(len);
        for _ in 0..len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s.push(alphabet[(x % alphabet.len() as u64) as usize] as char);
        }
        // Step the state even after an empty string, which would otherwise
        // repeat forever.
        x = x.wrapping_add(1);
        s
    })
}
