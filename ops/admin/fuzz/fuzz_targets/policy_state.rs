#![no_main]
//! `zmem policy`'s state file (`/run/zmem/policy.state`): any text reads as
//! a state without a panic, and what it reads is what it writes: the text of
//! the state reads back as the same state, and writes the same text again.
use libfuzzer_sys::fuzz_target;
use zmem_policy::State;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let st = State::parse(&text);
    let out = st.render();
    let again = State::parse(&out);
    assert_eq!(again, st);
    assert_eq!(again.render(), out);
});
