//! Sizes as people type them (`16M`, `4GiB`, `4096`) and as we print them.

use anyhow::{bail, Result};

/// Parse a size: a number of bytes with an optional binary suffix
/// `K`, `M`, `G`, `T` (also `KiB`, `KB`, … — all powers of 1024, as the kernel's memparse).
pub fn parse_size(s: &str) -> Result<u64> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    if num.is_empty() {
        bail!("bad size {s:?}: expected a number with an optional suffix K, M, G or T (e.g. 64M)");
    }
    let mult: u64 = match suffix.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        _ => bail!("bad size {s:?}: unknown suffix {suffix:?}; use K, M, G or T (e.g. 64M)"),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| anyhow::anyhow!("bad size {s:?}: {num:?} is not a number"))?;
    let bytes = v * mult as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        bail!("bad size {s:?}: too large");
    }
    Ok(bytes as u64)
}

/// `1.5 GiB`, `12.0 MiB`, `512 B`.
pub fn human_bytes(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", U[i])
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
        assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("1.5g").unwrap(), 3 << 29);
        assert!(parse_size("x").is_err());
        assert!(parse_size("12Q")
            .unwrap_err()
            .to_string()
            .contains("suffix"));
        assert!(parse_size("").is_err());
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }
}
