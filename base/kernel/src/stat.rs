//! zram's statistics lines, `mm_stat`, `io_stat`, `bd_stat` and
//! `debug_stat`, as numbers with their kernel names: parsed from what the
//! kernel (or a served device) prints, and rendered byte for byte as
//! `drivers/block/zram/zram_drv.c` prints them (`mm_stat_show`,
//! `io_stat_show`, `bd_stat_show`, `debug_stat_show`). Also the two
//! algorithm lines, `comp_algorithm` and `recomp_algorithm`.

/// Parse `n` or more whitespace-separated numbers (at most `max`).
fn numbers(s: &str, min: usize, max: usize) -> Option<Vec<u64>> {
    let v: Vec<u64> = s
        .split_whitespace()
        .map(|f| f.parse().ok())
        .collect::<Option<Vec<_>>>()?;
    (min..=max).contains(&v.len()).then_some(v)
}

/// `mm_stat`, nine columns (docs/zram.md; kernel Documentation/admin-guide/blockdev/zram.rst).
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
    /// Huge stores since initialisation (cumulative; absent before Linux 5.15, read as 0).
    pub huge_pages_since: u64,
}

impl MmStat {
    /// Parse the kernel's (or our) line: eight or nine numbers.
    pub fn parse(s: &str) -> Option<MmStat> {
        let v = numbers(s, 8, 9)?;
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

    /// The kernel's line: nine fields of width 8 separated by one space.
    pub fn render(&self) -> String {
        format!(
            "{:8} {:8} {:8} {:8} {:8} {:8} {:8} {:8} {:8}\n",
            self.orig_data_size,
            self.compr_data_size,
            self.mem_used_total,
            self.mem_limit,
            self.mem_used_max,
            self.same_pages,
            self.pages_compacted,
            self.huge_pages,
            self.huge_pages_since
        )
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

/// `io_stat`: failed reads and writes, invalid I/O (always 0 since Linux 6.x:
/// the block layer checks ranges), slot frees notified by swap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoStat {
    pub failed_reads: u64,
    pub failed_writes: u64,
    pub invalid_io: u64,
    pub notify_free: u64,
}

impl IoStat {
    pub fn parse(s: &str) -> Option<IoStat> {
        let v = numbers(s, 4, 4)?;
        Some(IoStat {
            failed_reads: v[0],
            failed_writes: v[1],
            invalid_io: v[2],
            notify_free: v[3],
        })
    }

    /// `%8llu %8llu 0 %8llu\n` (the kernel prints invalid_io as a bare 0 since 6.x).
    pub fn render(&self) -> String {
        format!(
            "{:8} {:8} {} {:8}\n",
            self.failed_reads, self.failed_writes, self.invalid_io, self.notify_free
        )
    }
}

/// `bd_stat`, in 4 KiB blocks: blocks in use on the backing device, pages read
/// from it, pages written to it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BdStat {
    pub bd_count: u64,
    pub bd_reads: u64,
    pub bd_writes: u64,
}

impl BdStat {
    pub fn parse(s: &str) -> Option<BdStat> {
        let v = numbers(s, 3, 3)?;
        Some(BdStat {
            bd_count: v[0],
            bd_reads: v[1],
            bd_writes: v[2],
        })
    }

    /// `%8llu %8llu %8llu\n` (`FOUR_K(x)` is x with 4 KiB pages).
    pub fn render(&self) -> String {
        format!(
            "{:8} {:8} {:8}\n",
            self.bd_count, self.bd_reads, self.bd_writes
        )
    }
}

/// `debug_stat` (6.15+): `version: 1`, then the constant 0 and miss_free.
pub fn render_debug_stat(miss_free: u64) -> String {
    format!("version: 1\n0 {miss_free:8}\n")
}

/// `miss_free` from a `debug_stat` text (the last number of its second line).
pub fn parse_debug_stat_miss_free(s: &str) -> Option<u64> {
    s.lines().nth(1)?.split_whitespace().last()?.parse().ok()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_device_renders_like_the_kernel() {
        let zeros =
            "       0        0        0        0        0        0        0        0        0\n";
        assert_eq!(MmStat::default().render(), zeros);
        assert_eq!(IoStat::default().render(), "       0        0 0        0\n");
        assert_eq!(render_debug_stat(0), "version: 1\n0        0\n");
        assert_eq!(parse_debug_stat_miss_free(&render_debug_stat(17)), Some(17));
        let m = MmStat {
            orig_data_size: 123456789,
            huge_pages: 3,
            ..Default::default()
        };
        assert_eq!(MmStat::parse(&m.render()), Some(m));
        assert!(
            m.render().starts_with("123456789        0"),
            "wide numbers are not cut"
        );
        assert_eq!(BdStat::default().render(), "       0        0        0\n");
        let b = BdStat {
            bd_count: 3,
            bd_reads: 12345678,
            bd_writes: 7,
        };
        assert_eq!(b.render(), "       3 12345678        7\n");
        assert_eq!(BdStat::parse(&b.render()), Some(b));
        let io = IoStat {
            failed_reads: 1,
            failed_writes: 2,
            invalid_io: 0,
            notify_free: 9,
        };
        assert_eq!(IoStat::parse(&io.render()), Some(io));
    }

    #[test]
    fn mm_stat_ratios_and_old_kernels() {
        let m = MmStat::parse("4096000 1024000 1228800 0 1300000 10 0 2 5").unwrap();
        assert_eq!(m.ratio(), Some(4.0));
        assert!((m.effective_ratio().unwrap() - 4096000.0 / 1228800.0).abs() < 1e-9);
        assert_eq!(m.saved(), 4096000 - 1228800);
        assert!(MmStat::parse("1 2 x").is_none());
        let old = MmStat::parse("1 2 3 4 5 6 7 8").unwrap();
        assert_eq!(
            (old.huge_pages, old.huge_pages_since),
            (8, 0),
            "before 5.15 there are eight columns"
        );
        assert!(MmStat::parse("1 2 3 4 5 6 7 8 9 10").is_none());
    }

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
            let _ = (
                crate::proc::parse_swaps(&s),
                crate::proc::parse_mountinfo(&s),
                crate::memparse(&s),
                parse_debug_stat_miss_free(&s),
            );
        }
    }
}
