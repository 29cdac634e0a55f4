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

/// Undo the octal escapes of `/proc/mounts` and `/proc/swaps` (space, tab, newline, backslash).
pub fn unescape_mount(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let m = parse_meminfo("MemTotal:       16384 kB\nHugePages_Total:       0\n");
        assert_eq!(
            m,
            [
                ("MemTotal".to_string(), 16 << 20),
                ("HugePages_Total".to_string(), 0)
            ]
        );
        let m = parse_mounts("/dev/zram1 /mnt/a\\040b ext4 rw 0 0\n");
        assert_eq!(m, [("/dev/zram1".into(), "/mnt/a b".into(), "ext4".into())]);
    }
}
