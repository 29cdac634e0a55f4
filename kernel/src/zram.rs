//! Reading the kernel's zram devices: `/sys/block/zramN/*`, parsed into named fields.

use std::io;

use crate::sys::{SwapEntry, Sys};

/// `mm_stat`, nine columns (kernel-zram-zswap-spec §2.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MmStat {
    /// Bytes of data stored (pages × 4096), including same-filled and written-back pages.
    pub orig_data_size: u64,
    /// Bytes of compressed objects (huge pages count 4096, same-filled 0).
    pub compr_data_size: u64,
    /// RAM the compressed pool owns now, allocator overhead included.
    pub mem_used_total: u64,
    /// Limit on mem_used_total; 0 = none.
    pub mem_limit: u64,
    /// Peak of mem_used_total since reset (or the last write of 0 to mem_used_max).
    pub mem_used_max: u64,
    /// Pages that are one repeated word (stored without memory).
    pub same_pages: u64,
    /// Pages freed by compaction (cumulative).
    pub pages_compacted: u64,
    /// Pages stored uncompressed because they did not compress.
    pub huge_pages: u64,
    /// Huge stores since initialisation (cumulative).
    pub huge_pages_since: u64,
}

impl MmStat {
    pub fn parse(s: &str) -> Option<MmStat> {
        let v: Vec<u64> = s
            .split_whitespace()
            .map(|f| f.parse().ok())
            .collect::<Option<Vec<_>>>()?;
        if v.len() < 8 {
            return None;
        }
        Some(MmStat {
            orig_data_size: v[0],
            compr_data_size: v[1],
            mem_used_total: v[2],
            mem_limit: v[3],
            mem_used_max: v[4],
            same_pages: v[5],
            pages_compacted: v[6],
            huge_pages: v[7],
            huge_pages_since: v.get(8).copied().unwrap_or(0),
        })
    }

    /// orig / compr (how well the data compressed), None when empty.
    pub fn ratio(&self) -> Option<f64> {
        (self.compr_data_size > 0).then(|| self.orig_data_size as f64 / self.compr_data_size as f64)
    }

    /// orig / mem_used_total (what the RAM actually holds), None when empty.
    pub fn effective_ratio(&self) -> Option<f64> {
        (self.mem_used_total > 0).then(|| self.orig_data_size as f64 / self.mem_used_total as f64)
    }

    /// RAM saved: data stored minus RAM used (0 when negative).
    pub fn saved(&self) -> u64 {
        self.orig_data_size.saturating_sub(self.mem_used_total)
    }
}

/// `io_stat` (§2.2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoStat {
    pub failed_reads: u64,
    pub failed_writes: u64,
    pub invalid_io: u64,
    pub notify_free: u64,
}

impl IoStat {
    pub fn parse(s: &str) -> Option<IoStat> {
        let v: Vec<u64> = s
            .split_whitespace()
            .map(|f| f.parse().ok())
            .collect::<Option<Vec<_>>>()?;
        if v.len() < 4 {
            return None;
        }
        Some(IoStat {
            failed_reads: v[0],
            failed_writes: v[1],
            invalid_io: v[2],
            notify_free: v[3],
        })
    }
}

/// `bd_stat` (§2.4), in 4 KiB blocks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BdStat {
    pub bd_count: u64,
    pub bd_reads: u64,
    pub bd_writes: u64,
}

impl BdStat {
    pub fn parse(s: &str) -> Option<BdStat> {
        let v: Vec<u64> = s
            .split_whitespace()
            .map(|f| f.parse().ok())
            .collect::<Option<Vec<_>>>()?;
        if v.len() < 3 {
            return None;
        }
        Some(BdStat {
            bd_count: v[0],
            bd_reads: v[1],
            bd_writes: v[2],
        })
    }
}

/// Parse a `comp_algorithm` line: (offered names, selected name).
pub fn parse_comp_algorithm(s: &str) -> (Vec<String>, Option<String>) {
    let mut names = Vec::new();
    let mut selected = None;
    for tok in s.split_whitespace() {
        let name = tok.trim_matches(|c| c == '[' || c == ']').to_string();
        if tok.starts_with('[') {
            selected = Some(name.clone());
        }
        names.push(name);
    }
    (names, selected)
}

/// Parse `recomp_algorithm`: (priority, selected name) for each configured priority.
pub fn parse_recomp_algorithm(s: &str) -> Vec<(u32, String)> {
    s.lines()
        .filter_map(|l| {
            let (p, rest) = l.trim().strip_prefix('#')?.split_once(':')?;
            let (_, sel) = parse_comp_algorithm(rest);
            Some((p.trim().parse().ok()?, sel?))
        })
        .collect()
}

/// Everything zmem reads about one zram device.
#[derive(Debug, Clone)]
pub struct ZramDevice {
    /// `zram0`
    pub name: String,
    pub id: u32,
    pub initialised: bool,
    /// Uncompressed capacity in bytes; 0 when uninitialised.
    pub disksize: u64,
    /// Names the kernel offers in comp_algorithm.
    pub offered: Vec<String>,
    /// Primary algorithm.
    pub algorithm: Option<String>,
    /// `None` when the kernel has no recomp_algorithm (no CONFIG_ZRAM_MULTI_COMP).
    pub recompression: Option<Vec<(u32, String)>>,
    /// `None` when the kernel has no backing_dev (no CONFIG_ZRAM_WRITEBACK);
    /// `Some(None)` when there is none set.
    pub backing_dev: Option<Option<String>>,
    pub mm: MmStat,
    pub io: IoStat,
    pub bd: Option<BdStat>,
    /// Remaining writeback budget in 4 KiB blocks when writeback_limit_enable is on.
    pub writeback_limit: Option<u64>,
    /// debug_stat `miss_free`.
    pub miss_free: Option<u64>,
    /// The /proc/swaps entry when swapped on.
    pub swap: Option<SwapEntry>,
    /// Mount point when mounted.
    pub mount: Option<String>,
}

impl ZramDevice {
    pub fn dir(&self) -> String {
        format!("/sys/block/{}", self.name)
    }
    pub fn dev_path(&self) -> String {
        format!("/dev/{}", self.name)
    }
    pub fn has_multi_comp(&self) -> bool {
        self.recompression.is_some()
    }
    pub fn has_writeback(&self) -> bool {
        self.backing_dev.is_some()
    }
    pub fn in_use(&self) -> bool {
        self.swap.is_some() || self.mount.is_some()
    }
}

/// Names of all zram devices (`zram0`, `zram1`, …) in id order.
pub fn list_devices(sys: &Sys) -> io::Result<Vec<String>> {
    let mut v: Vec<(u32, String)> = sys
        .list("/sys/block")?
        .into_iter()
        .filter_map(|n| Some((n.strip_prefix("zram")?.parse().ok()?, n)))
        .collect();
    v.sort();
    Ok(v.into_iter().map(|(_, n)| n).collect())
}

fn bad(what: &str, name: &str, s: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{name}: cannot parse {what} {s:?}"),
    )
}

/// Read one device.
pub fn read_device(sys: &Sys, name: &str) -> io::Result<ZramDevice> {
    let id: u32 = name
        .strip_prefix("zram")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name} is not a zram device name"),
            )
        })?;
    let dir = format!("/sys/block/{name}");
    if !sys.exists(&dir) {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{dir} does not exist"),
        ));
    }
    let get = |a: &str| sys.read_opt(&format!("{dir}/{a}"));
    let disksize: u64 = get("disksize")?
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    let initialised = get("initstate")?.map(|s| s.trim() == "1").unwrap_or(false) || disksize > 0;
    let (offered, algorithm) = parse_comp_algorithm(&get("comp_algorithm")?.unwrap_or_default());
    let recompression = get("recomp_algorithm")?.map(|s| parse_recomp_algorithm(&s));
    let backing_dev = get("backing_dev")?.map(|s| {
        let s = s.trim().to_string();
        (s != "none" && !s.is_empty()).then_some(s)
    });
    let mm = match get("mm_stat")? {
        Some(s) => MmStat::parse(&s).ok_or_else(|| bad("mm_stat", name, &s))?,
        None => MmStat::default(),
    };
    let io = match get("io_stat")? {
        Some(s) => IoStat::parse(&s).ok_or_else(|| bad("io_stat", name, &s))?,
        None => IoStat::default(),
    };
    let bd = match get("bd_stat")? {
        Some(s) => Some(BdStat::parse(&s).ok_or_else(|| bad("bd_stat", name, &s))?),
        None => None,
    };
    let wb_enabled = get("writeback_limit_enable")?
        .map(|s| s.trim() == "1")
        .unwrap_or(false);
    let writeback_limit = if wb_enabled {
        get("writeback_limit")?.and_then(|s| s.trim().parse().ok())
    } else {
        None
    };
    let miss_free = get("debug_stat")?.and_then(|s| {
        s.lines()
            .nth(1)
            .and_then(|l| l.split_whitespace().last()?.parse().ok())
    });
    let dev = format!("/dev/{name}");
    let swap = sys.swaps()?.into_iter().find(|s| s.device == dev);
    let mount = sys.mounts()?.into_iter().find(|m| m.0 == dev).map(|m| m.1);
    Ok(ZramDevice {
        name: name.to_string(),
        id,
        initialised,
        disksize,
        offered,
        algorithm,
        recompression,
        backing_dev,
        mm,
        io,
        bd,
        writeback_limit,
        miss_free,
        swap,
        mount,
    })
}

/// Read every device.
pub fn read_all(sys: &Sys) -> io::Result<Vec<ZramDevice>> {
    list_devices(sys)?
        .iter()
        .map(|n| read_device(sys, n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comp_algorithm_line() {
        let (n, s) = parse_comp_algorithm("[lzo-rle] lzo lz4 ");
        assert_eq!(n, ["lzo-rle", "lzo", "lz4"]);
        assert_eq!(s.as_deref(), Some("lzo-rle"));
    }

    #[test]
    fn recomp_lines() {
        let v = parse_recomp_algorithm("#1: lzo lzo-rle lz4 [zstd] \n#2: [lz4hc] zstd \n");
        assert_eq!(v, [(1, "zstd".to_string()), (2, "lz4hc".to_string())]);
    }

    #[test]
    fn mm_stat_ratios() {
        let m = MmStat::parse("4096000 1024000 1228800 0 1300000 10 0 2 5").unwrap();
        assert_eq!(m.ratio(), Some(4.0));
        assert!((m.effective_ratio().unwrap() - 4096000.0 / 1228800.0).abs() < 1e-9);
        assert_eq!(m.saved(), 4096000 - 1228800);
        assert!(MmStat::parse("1 2 x").is_none());
    }

    #[test]
    fn random_stat_text_never_panics() {
        let alphabet = b"0123456789 \n\t[]#:-xyz";
        for s in crate::testutil::random_strings(0x2545F4914F6CDD1D, alphabet, 90, 5000) {
            if let Some(m) = MmStat::parse(&s) {
                let _ = (m.ratio(), m.effective_ratio(), m.saved());
            }
            let _ = (
                IoStat::parse(&s),
                BdStat::parse(&s),
                parse_comp_algorithm(&s),
                parse_recomp_algorithm(&s),
            );
            let _ = (crate::sys::parse_swaps(&s), crate::sys::memparse(&s));
            let _ = crate::attr::parse_reply(s.as_bytes());
        }
    }
}
