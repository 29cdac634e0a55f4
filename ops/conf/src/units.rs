//! Quantities as people type them on the command line, in
//! configuration files and policies, and as zmem prints them.
//!
//! One parser per quantity, used by every command:
//! * [`parse_size`]: `4096`, `64K`, `256M`, `1.5G`, `2GiB`, `100MB` (all
//!   powers of 1024; fractions allowed when the result is a whole number of
//!   bytes). Anything else is an error that names the accepted forms.
//! * [`parse_duration`]: `600`, `30s`, `250ms`, `10min`, `1.5h`, `1d`.
//! * [`parse_bool`]: `yes`/`no`, `y`/`n`, `true`/`false`, `on`/`off`, `1`/`0`.
//!
//! Attributes written to a zram device keep the kernel's own `memparse`
//! (`zmem_kernel::memparse`): that is the point of writing an attribute.

use std::fmt;
use std::time::Duration;

/// A value that is not in any accepted form; the message says which forms are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

/// The forms [`parse_size`] accepts, for error messages and help texts.
pub const SIZE_FORMS: &str = "bytes with an optional K, M, G or T suffix (also KiB/KB, MiB/MB, …; \
                              powers of 1024), e.g. 4096, 64K, 256M, 1.5G";

/// The forms [`parse_duration`] accepts.
pub const DURATION_FORMS: &str =
    "seconds with an optional unit ms, s, min (or m), h or d, e.g. 600, 30s, 10min, 1.5h";

/// Split `s` into a non-negative decimal number and the unit after it.
fn number_and_unit(s: &str) -> Option<(f64, &str)> {
    let t = s.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    // A number is digits with at most one point and at least one digit.
    if num.is_empty() || num.matches('.').count() > 1 || num == "." {
        return None;
    }
    Some((num.parse().ok()?, unit.trim()))
}

/// `value × mult` as a whole number, or None when it is not whole or too large.
fn whole(value: f64, mult: f64) -> Option<u64> {
    let v = value * mult;
    (v.is_finite() && v < u64::MAX as f64 && v.fract() == 0.0).then_some(v as u64)
}

/// A byte size as people write it: see the crate documentation.
pub fn parse_size(s: &str) -> Result<u64, ParseError> {
    let err = |why: &str| ParseError(format!("{s:?} is not a size{why}; a size is {SIZE_FORMS}"));
    let (n, unit) = number_and_unit(s).ok_or_else(|| err(""))?;
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(err(&format!(" (unknown unit {unit:?})"))),
    };
    match whole(n, (1u64 << shift) as f64) {
        Some(v) => Ok(v),
        None if (n * (1u64 << shift) as f64) < u64::MAX as f64 => {
            Err(err(" (not a whole number of bytes)"))
        }
        None => Err(err(" (too large)")),
    }
}

/// A duration as people write it: see the crate documentation.
pub fn parse_duration(s: &str) -> Result<Duration, ParseError> {
    let err = |why: &str| {
        ParseError(format!(
            "{s:?} is not a duration{why}; a duration is {DURATION_FORMS}"
        ))
    };
    let (n, unit) = number_and_unit(s).ok_or_else(|| err(""))?;
    let ms_per_unit: f64 = match unit {
        "ms" => 1.0,
        "" | "s" | "sec" => 1e3,
        "m" | "min" => 60e3,
        "h" => 3600e3,
        "d" => 86400e3,
        _ => return Err(err(&format!(" (unknown unit {unit:?})"))),
    };
    let ms = whole(n, ms_per_unit).ok_or_else(|| err(" (not a whole number of milliseconds)"))?;
    Ok(Duration::from_millis(ms))
}

/// A switch: `yes`/`no`, `y`/`n`, `true`/`false`, `on`/`off`, `1`/`0` (any case).
pub fn parse_bool(s: &str) -> Result<bool, ParseError> {
    match s.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "1" | "true" | "on" => Ok(true),
        "n" | "no" | "0" | "false" | "off" => Ok(false),
        _ => Err(ParseError(format!(
            "{s:?} is not yes or no (yes/no, true/false, on/off, 1/0)"
        ))),
    }
}

/// A size the way [`parse_size`] reads it back, in the largest exact unit (`256M`, `4097`).
pub fn format_size(v: u64) -> String {
    for (shift, suffix) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if v != 0 && v.trailing_zeros() >= shift {
            return format!("{}{suffix}", v >> shift);
        }
    }
    v.to_string()
}

/// Bytes for people: `1.50 GiB`, `300 MiB`, `512 B`.
pub fn bytes(n: u64) -> String {
    const U: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < U.len() {
        v /= 1024.0;
        i += 1;
    }
    if v >= 100.0 {
        format!("{v:.0} {}", U[i])
    } else if v >= 10.0 {
        format!("{v:.1} {}", U[i])
    } else {
        format!("{v:.2} {}", U[i])
    }
}

/// A count with thousands separators: `1,234,567`.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A compression ratio: `3.07:1`, or `-` when unknown.
pub fn ratio(r: Option<f64>) -> String {
    match r {
        Some(r) => format!("{r:.2}:1"),
        None => "-".into(),
    }
}

/// Seconds for people: `45 s`, `10 min`, `2 h`, `1h 30min`.
pub fn duration(secs: u64) -> String {
    if secs < 60 {
        format!("{secs} s")
    } else if secs < 3600 {
        format!("{} min", secs / 60)
    } else if secs.is_multiple_of(3600) {
        format!("{} h", secs / 3600)
    } else {
        format!("{}h {}min", secs / 3600, secs % 3600 / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("16K").unwrap(), 16384);
        assert_eq!(parse_size("64M").unwrap(), 64 << 20);
        assert_eq!(parse_size("256MiB").unwrap(), 256 << 20);
        assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        assert_eq!(parse_size("1T").unwrap(), 1 << 40);
        assert_eq!(parse_size("100MB").unwrap(), 100 << 20);
        assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_size(" 5 MiB ").unwrap(), 5 << 20);
        assert_eq!(parse_size("0").unwrap(), 0);
        for bad in [
            "",
            "x",
            "M",
            "-5M",
            "12Q",
            "4X",
            "1.5",
            "0.3K",
            "1..5G",
            ".",
            "0x10",
            "1e3",
            "99999999999999999999",
            "20000000T",
        ] {
            let e = parse_size(bad).unwrap_err().to_string();
            assert!(
                e.contains("is not a size") && e.contains("a size is bytes"),
                "{bad:?}: {e}"
            );
        }
        assert!(parse_size("12Q")
            .unwrap_err()
            .to_string()
            .contains("unknown unit \"Q\""));
        assert!(parse_size("20000000T")
            .unwrap_err()
            .to_string()
            .contains("too large"));
        assert!(parse_size("0.3K")
            .unwrap_err()
            .to_string()
            .contains("whole number"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10min").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("20h").unwrap(), Duration::from_secs(72000));
        assert_eq!(parse_duration("45").unwrap(), Duration::from_secs(45));
        assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("5ms").unwrap(), Duration::from_millis(5));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1d").unwrap(), Duration::from_secs(86400));
        for bad in ["1w", "", "h", "-1s", "0.5ms"] {
            assert!(
                parse_duration(bad)
                    .unwrap_err()
                    .to_string()
                    .contains("a duration is"),
                "{bad}"
            );
        }
    }

    #[test]
    fn switches_and_printing() {
        assert!(
            parse_bool("Yes").unwrap() && parse_bool("on").unwrap() && parse_bool("1").unwrap()
        );
        assert!(!parse_bool("no").unwrap() && !parse_bool("OFF").unwrap());
        assert!(parse_bool("maybe").is_err());
        assert_eq!(format_size(256 << 20), "256M");
        assert_eq!(format_size(1536 << 20), "1536M");
        assert_eq!(format_size(4097), "4097");
        for v in [0, 4096, 1536 << 20, 1 << 40, 12345] {
            assert_eq!(parse_size(&format_size(v)).unwrap(), v);
        }
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(bytes(1 << 30), "1.00 GiB");
        assert_eq!(bytes(300 << 20), "300 MiB");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(count(12), "12");
        assert_eq!(ratio(Some(3.0)), "3.00:1");
        assert_eq!(duration(5400), "1h 30min");
    }
}
