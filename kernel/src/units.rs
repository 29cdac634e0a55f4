//! Human-readable units: bytes as KiB/MiB/GiB with the unit written out, counts with separators.

/// `1.50 GiB`, `512 B`.
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

/// `1,234,567`.
#[allow(clippy::manual_is_multiple_of)] // is_multiple_of needs Rust 1.87; the workspace supports 1.80
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `3.07:1`, or `-` when unknown.
pub fn ratio(r: Option<f64>) -> String {
    match r {
        Some(r) => format!("{r:.2}:1"),
        None => "-".into(),
    }
}

/// `1h 30min`, `45 s`.
#[allow(clippy::manual_is_multiple_of)] // as above
pub fn duration(secs: u64) -> String {
    if secs < 60 {
        format!("{secs} s")
    } else if secs < 3600 {
        format!("{} min", secs / 60)
    } else if secs % 3600 == 0 {
        format!("{} h", secs / 3600)
    } else {
        format!("{}h {}min", secs / 3600, secs % 3600 / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn units() {
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
