//! Parsers of `/proc` text: meminfo, vmstat, swaps, mounts.

/// One line of `/proc/swaps` (sizes in bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwapEntry {
    pub device: String,
    pub kind: String,
    pub size: u64,
    pub used: u64,
    pub priority: i32,
}

/// `/proc/swaps` (a header line, then one line per swap area; sizes in KiB).
pub fn parse_swaps(s: &str) -> Vec<SwapEntry> {
    s.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 5 {
                return None;
            }
            Some(SwapEntry {
                device: unescape_mount(f[0]),
                kind: f[1].to_string(),
                size: f[2].parse::<u64>().ok()?.checked_mul(1024)?,
                used: f[3].parse::<u64>().ok()?.checked_mul(1024)?,
                priority: f[4].parse().ok()?,
            })
        })
        .collect()
}

/// `/proc/meminfo` as (key, bytes) for the `kB` lines and plain counts otherwise.
pub fn parse_meminfo(s: &str) -> Vec<(String, u64)> {
    s.lines()
        .filter_map(|l| {
            let (k, rest) = l.split_once(':')?;
            let mut it = rest.split_whitespace();
            let n: u64 = it.next()?.parse().ok()?;
            let n = if it.next() == Some("kB") {
                n.checked_mul(1024)?
            } else {
                n
            };
            Some((k.trim().to_string(), n))
        })
        .collect()
}

/// One `/proc/meminfo` value (bytes for the `kB` lines), as [`parse_meminfo`] reads it.
pub fn meminfo_value(s: &str, key: &str) -> Option<u64> {
    parse_meminfo(s)
        .into_iter()
        .find_map(|(k, v)| (k == key).then_some(v))
}

/// `/proc/vmstat` as (key, value).
pub fn parse_vmstat(s: &str) -> Vec<(String, u64)> {
    s.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.parse().ok()?))
        })
        .collect()
}

/// `/proc/mounts` as (device, mount point, fs type).
pub fn parse_mounts(s: &str) -> Vec<(String, String, String)> {
    s.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((
                it.next()?.to_string(),
                unescape_mount(it.next()?),
                it.next()?.to_string(),
            ))
        })
        .collect()
}

/// Undo the octal escapes (`\ooo`) the kernel writes for space, tab, newline
/// and backslash in `/proc/mounts`, `/proc/self/mountinfo` and `/proc/swaps`
/// (`mangle`/`seq_escape` in fs/proc_namespace.c). Anything that is not a
/// `/proc/self/mountinfo` (proc(5)) as (mount root, mount point, fstype,
/// super options) per mount, paths unescaped.
pub fn parse_mountinfo(text: &str) -> Vec<(String, String, String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        let pre: Vec<&str> = pre.split(' ').collect();
        let post: Vec<&str> = post.split(' ').collect();
        if pre.len() < 5 || post.len() < 3 {
            continue;
        }
        out.push((
            unescape_mount(pre[3]),
            unescape_mount(pre[4]),
            post[0].to_string(),
            post[2].to_string(),
        ));
    }
    out
}

/// three-digit octal byte stays as it is.
pub fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = |d: &[u8]| {
            (b'0'..=b'3').contains(&d[0]) && d[1..].iter().all(|c| (b'0'..=b'7').contains(c))
        };
        let value = |d: &[u8]| (d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0');
        match b.get(i + 1..i + 4).filter(|d| b[i] == b'\\' && octal(d)) {
            // A control character (a newline in a file name) stays escaped: printed raw it
            // would forge a line of zmem's output.
            Some(d) if value(d) < 0x20 || value(d) == 0x7f => {
                out.extend_from_slice(&b[i..i + 4]);
                i += 4;
            }
            Some(d) => {
                out.push(value(d));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A /proc file's bytes as text, every byte that is not part of valid UTF-8 written as `\xNN`
/// (a swap file's name is bytes to the kernel; zmem prints it, compares it, never fails on it).
pub fn escape_invalid_utf8(mut b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    loop {
        match std::str::from_utf8(b) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (good, rest) = b.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                let bad = e.error_len().unwrap_or(rest.len());
                for byte in &rest[..bad] {
                    out.push_str(&format!("\\x{byte:02x}"));
                }
                b = &rest[bad..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_names_that_are_not_utf8_or_hold_a_newline_are_kept_escaped() {
        let text = escape_invalid_utf8(
            b"Filename Type Size Used Priority\n/var/tmp/a\\012b\xff\xfe\\040c file 1024 0 -2\n",
        );
        let s = parse_swaps(&text);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].device, r"/var/tmp/a\012b\xff\xfe c");
        assert!(!s[0].device.contains('\n'));
        assert_eq!(escape_invalid_utf8("zram é".as_bytes()), "zram é");
    }

    #[test]
    fn swaps_parse() {
        let s = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/dev/zram0                              partition\t4194300\t\t1024\t\t100\n";
        let v = parse_swaps(s);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].device, "/dev/zram0");
        assert_eq!(v[0].size, 4194300 * 1024);
        assert_eq!(v[0].used, 1024 * 1024);
        assert_eq!(v[0].priority, 100);
    }

    #[test]
    fn meminfo_and_mounts() {
        let text = "MemTotal:       16384 kB\nHugePages_Total:       0\n";
        assert_eq!(meminfo_value(text, "MemTotal"), Some(16384 * 1024));
        assert_eq!(meminfo_value(text, "HugePages_Total"), Some(0));
        assert_eq!(meminfo_value(text, "MemFree"), None);
        let m = parse_meminfo(text);
        assert_eq!(
            m,
            [
                ("MemTotal".to_string(), 16 << 20),
                ("HugePages_Total".to_string(), 0)
            ]
        );
        let m = parse_mounts("/dev/zram1 /mnt/a\\040b ext4 rw 0 0\n");
        assert_eq!(m, [("/dev/zram1".into(), "/mnt/a b".into(), "ext4".into())]);
        assert_eq!(
            unescape_mount(r"/a\011b\012c\134d\040"),
            r"/a\011b\012c\d ",
            "control characters stay escaped, the rest is unescaped"
        );
        assert_eq!(
            unescape_mount(r"\777 \04 \"),
            r"\777 \04 \",
            "not octal bytes: kept"
        );
    }
}
