//! One vocabulary for every JSON and CSV output of the lab (docs/fields.md):
//! the kernel's names where the kernel has one, `algo` for the algorithm,
//! the unit in the name (`_ns`, `_bytes`, `_pages`, `_mibps` = 2^20 B/s,
//! `_mbps` = 10^6 B/s, `_s`), the same unit in JSON and CSV, a missing
//! value `null` in JSON and empty in CSV.
//!
//! Some rows keep microseconds or MiB in their Rust fields (their text
//! tables print those); these serializers put nanoseconds in the output.

use serde::Serializer;

/// Microseconds in the struct, nanoseconds in the output.
pub fn us_as_ns<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(v * 1000.0)
}

/// Optional microseconds in the struct, nanoseconds (or null) in the output.
pub fn opt_us_as_ns<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.serialize_f64(v * 1000.0),
        None => s.serialize_none(),
    }
}
