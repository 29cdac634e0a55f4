//! One kernel's zram, by version: what the engine must do to behave as the
//! zram of kernel `major.minor` ([`KernelModel`]) — which attributes exist
//! (from [`ZRAM_ATTRS`], not a second list), zsmalloc's zspage chain and how
//! it picks a class's pages per zspage, the writeback pass and its syntax,
//! compressed writeback, recompression and `algorithm_params`' keys; and
//! that version's zswap: same-filled pages ([`SameFilled`]), pages that do
//! not compress, `zswap_header`, the allocators, parameters and debugfs
//! statistics ([`ZSWAP_STATS`]).
//!
//! Versions zmem models: 6.1 (Debian 12's kernel) up to 7.3 (the newest
//! Debian ships, trixie-backports). Each rule below names where it was
//! checked: a Debian kernel's own build (`zram.ko` strings, `/boot/config-*`,
//! a device in the VM lab, docs/vm.md), the kernel's source of that version
//! (mm/zsmalloc.c, zram_drv.c), or — marked `history` — the kernel's commit
//! history only.

use std::fmt;

use crate::attrs::{attr, Kernels, Syntax, ZramAttr, ZRAM_ATTRS};
use crate::version::{KernelSpan, KernelVersion};

/// How zsmalloc picks a size class's pages per zspage (`zs_create_pool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainRule {
    /// 6.3+ (`calculate_zspage_chain_size`): the chain length whose tail
    /// waste, in bytes, is least; a power-of-two size takes one page.
    LeastWaste,
    /// Before 6.3 (`get_pages_per_zspage`): the chain length whose used share,
    /// in whole percent, is highest; the shortest wins a tie.
    MostUsedPercent,
}

/// Why a version cannot be modeled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("'{0}' is not a kernel version (MAJOR.MINOR, e.g. 6.12, or a release such as 6.1.0-56-amd64)")]
    Unparsable(String),
    #[error("zmem does not model kernel {0}: it models {oldest} to {newest}", oldest = KernelModel::OLDEST, newest = KernelModel::NEWEST)]
    Unmodeled(KernelVersion),
    #[error("zmem does not model a {0}-byte page: it models 4 KiB, 16 KiB and 64 KiB pages (PAGE_SHIFT 12, 14, 16)")]
    PageSize(usize),
}

/// The page sizes zmem models, by `PAGE_SHIFT`: 4 KiB (x86-64, most arm64),
/// 16 KiB (arm64 `CONFIG_ARM64_16K_PAGES`: Debian's arm64-16k, Raspberry Pi 5,
/// Asahi, Android) and 64 KiB (ppc64el `CONFIG_PPC_64K_PAGES`, RHEL's aarch64).
pub const PAGE_SHIFTS: [u32; 3] = [12, 14, 16];

/// The zram of one kernel version, as the engine serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelModel {
    version: KernelVersion,
    /// `PAGE_SHIFT`: one of [`PAGE_SHIFTS`] (12 by default).
    page_shift: u32,
}

const fn v(major: u16, minor: u16) -> KernelVersion {
    KernelVersion::new(major, minor)
}

/// zsmalloc's chain rule and configurable chain size (6.3, "zsmalloc: make
/// zspage chain size configurable" and its series; mm/zsmalloc.c of 6.1 has
/// `ZS_MAX_ZSPAGE_ORDER` 2 and `get_pages_per_zspage`). Debian's 6.12 config
/// has CONFIG_ZSMALLOC_CHAIN_SIZE=8, the Kconfig default.
const CONFIGURABLE_CHAIN: KernelVersion = v(6, 3);
impl KernelModel {
    /// The oldest version zmem models (Debian 12's 6.1).
    pub const OLDEST: KernelVersion = v(6, 1);
    /// The newest version zmem models, and the default.
    pub const NEWEST: KernelVersion = v(7, 3);

    /// The model of kernel `version`; versions outside
    /// [`OLDEST`](Self::OLDEST)..=[`NEWEST`](Self::NEWEST) are refused.
    pub fn new(version: KernelVersion) -> Result<KernelModel, ModelError> {
        if version < Self::OLDEST || version > Self::NEWEST {
            return Err(ModelError::Unmodeled(version));
        }
        Ok(KernelModel {
            version,
            page_shift: 12,
        })
    }

    /// The newest version modeled (the engine's default).
    pub const fn newest() -> KernelModel {
        KernelModel {
            version: Self::NEWEST,
            page_shift: 12,
        }
    }

    /// This model on a kernel with `bytes`-byte pages (4096, 16384 or
    /// 65536: [`PAGE_SHIFTS`]); other sizes are refused.
    pub fn with_page_size(self, bytes: usize) -> Result<KernelModel, ModelError> {
        let shift = PAGE_SHIFTS
            .into_iter()
            .find(|&s| 1usize << s == bytes)
            .ok_or(ModelError::PageSize(bytes))?;
        Ok(KernelModel {
            page_shift: shift,
            ..self
        })
    }

    /// `PAGE_SIZE`: the bytes of one page, which zram stores per slot.
    pub const fn page_size(&self) -> usize {
        1 << self.page_shift
    }

    /// `PAGE_SHIFT`.
    pub const fn page_shift(&self) -> u32 {
        self.page_shift
    }

    /// A version as a user types it (`6.18`) or as `uname -r` prints it
    /// (`6.1.0-56-amd64`).
    pub fn parse(text: &str) -> Result<KernelModel, ModelError> {
        let t = text.trim();
        let ok = t.chars().next().is_some_and(|c| c.is_ascii_digit());
        let version = KernelVersion::parse(t)
            .filter(|_| ok)
            .ok_or_else(|| ModelError::Unparsable(t.to_string()))?;
        Self::new(version)
    }

    pub fn version(&self) -> KernelVersion {
        self.version
    }

    fn since(&self, first: KernelVersion) -> bool {
        self.version >= first
    }

    /// Whether this kernel's zram has `attr` (zmem's own extensions, which
    /// no kernel has, are offered under every version).
    pub fn has_attr(&self, attr: &ZramAttr) -> bool {
        match attr.kernels {
            Kernels::Released(span) => span.contains(self.version),
            Kernels::PreRelease => false,
            Kernels::None => true,
        }
    }

    /// Whether the attribute called `name` exists under this version
    /// (false for a name [`ZRAM_ATTRS`] does not know).
    pub fn has(&self, name: &str) -> bool {
        crate::attrs::zram_attr(name).is_some_and(|a| self.has_attr(a))
    }

    /// The attributes of this kernel's zram that it lists in sysfs, in
    /// [`ZRAM_ATTRS`] order (zmem's extensions and debugfs files excluded).
    pub fn sysfs_attrs(&self) -> impl Iterator<Item = &'static ZramAttr> + '_ {
        ZRAM_ATTRS
            .iter()
            .filter(|a| a.in_kernel_sysfs() && self.has_attr(a))
    }

    /// Whether this kernel's zram takes `syntax` (its attribute exists and
    /// the change is in this version; [`ZRAM_ATTRS`]' `changes`).
    pub fn takes(&self, syntax: Syntax) -> bool {
        self.since(syntax.since())
    }

    /// zsmalloc's longest zspage chain: 4 pages before 6.3
    /// (`ZS_MAX_PAGES_PER_ZSPAGE`), then CONFIG_ZSMALLOC_CHAIN_SIZE (8).
    pub fn zspage_chain_size(&self) -> usize {
        if self.since(CONFIGURABLE_CHAIN) {
            8
        } else {
            4
        }
    }

    /// How zsmalloc picks a class's pages per zspage.
    pub fn zspage_chain_rule(&self) -> ChainRule {
        if self.since(CONFIGURABLE_CHAIN) {
            ChainRule::LeastWaste
        } else {
            ChainRule::MostUsedPercent
        }
    }

    /// The writeback pass keeps `writeback_batch_size` requests in flight
    /// (6.19); before, it writes one page at a time.
    pub fn batched_writeback(&self) -> bool {
        self.has(attr::WRITEBACK_BATCH_SIZE)
    }

    /// `compressed_writeback` exists (7.0).
    pub fn compressed_writeback(&self) -> bool {
        self.has(attr::COMPRESSED_WRITEBACK)
    }

    /// `recompress` tries exactly one priority per pass (7.3,
    /// [`Syntax::RecompressOnePriority`]); before, every configured priority
    /// of a range, and INCOMPRESSIBLE after the last one.
    pub fn one_priority_recompress(&self) -> bool {
        self.takes(Syntax::RecompressOnePriority)
    }

    /// `algorithm_params` refuses `algo=` with a `priority=` of another
    /// algorithm (7.3, [`Syntax::ParamsAlgoMatchesPriority`]).
    pub fn params_algo_matches_priority(&self) -> bool {
        self.takes(Syntax::ParamsAlgoMatchesPriority)
    }

    /// Access times are whole seconds of boot time (7.3,
    /// [`Syntax::IdleAgeSeconds`]): `idle` takes a u32 age and ignores one
    /// of the uptime or more; before, nanoseconds.
    pub fn seconds_ac_time(&self) -> bool {
        self.takes(Syntax::IdleAgeSeconds)
    }

    /// Writeback's completion keeps the slot's object size, algorithm
    /// priority, HUGE and INCOMPRESSIBLE flags and access time (7.0, with
    /// `compressed_writeback`: "keeps ZRAM_HUGE flag for deferred
    /// decompression path", zram_drv.c; checked on 7.3: block_state shows
    /// `.wh..n` and `.w..r.` on written-back slots); before, it frees the
    /// slot (`zram_free_page`) and sets WB alone.
    pub fn writeback_keeps_slot(&self) -> bool {
        self.compressed_writeback()
    }

    /// `writeback` takes the `incompressible` mode (6.2).
    pub fn incompressible_writeback(&self) -> bool {
        self.takes(Syntax::IncompressibleWriteback)
    }

    /// `writeback` takes `key=value` tokens (`type=`, `page_indexes=`); before
    /// 6.16 it takes one mode word or `page_index=N`.
    pub fn keyed_writeback(&self) -> bool {
        self.takes(Syntax::KeyedWriteback)
    }

    /// Recompression's attributes exist (`recomp_algorithm`, `recompress`;
    /// 6.2, with CONFIG_ZRAM_MULTI_COMP).
    pub fn recompression(&self) -> bool {
        self.has(attr::RECOMPRESS)
    }

    /// The keys `algorithm_params` acts on (none before the attribute, 6.12).
    pub fn algorithm_params_keys(&self) -> &'static [&'static str] {
        if !self.has(attr::ALGORITHM_PARAMS) {
            &[]
        } else if self.takes(Syntax::DeflateWinbits) {
            &["priority", "algo", "level", "dict", "deflate.winbits"]
        } else {
            &["priority", "algo", "level", "dict"]
        }
    }
}

/// How a kernel's zswap treats a same-filled page (one machine word repeated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SameFilled {
    /// Before 6.10: a page of any repeated word is an entry with no pool
    /// object (`same_filled_pages`; parameters `same_filled_pages_enabled`
    /// and `non_same_filled_pages_enabled`, both Y). Debian's 6.1 has them.
    AnyWord,
    /// 6.10 and 6.11 (history): only a zero-filled page is such an entry;
    /// other same-filled pages are compressed.
    ZeroOnly,
    /// 6.12+: the swap core records a zero-filled page in its zeromap and
    /// zswap never sees it; other same-filled pages are compressed.
    /// Debian's 6.12 has no same-filled parameter and counts no zero page.
    Zeromap,
}

/// zswap's same-filled entries limited to zero pages (history: 6.10, "mm:
/// zswap: remove same_filled module params").
const ZSWAP_ZERO_ONLY: KernelVersion = v(6, 10);
/// The swap core's zeromap; zswap stops handling zero pages (6.12).
const ZSWAP_ZEROMAP: KernelVersion = v(6, 12);
/// zswap stores a page that does not compress as-is (6.18).
const ZSWAP_STORES_INCOMPRESSIBLE: KernelVersion = v(6, 18);
/// `struct zswap_header` (the swap entry, 8 bytes) leads every object of an
/// allocator that can evict (zbud, z3fold) until zswap keeps its own LRU
/// (history: 6.5, "mm: zswap: remove zswap_header").
const ZSWAP_HEADER_GONE: KernelVersion = v(6, 5);
/// zbud and z3fold are removed (6.15); the `zpool` parameter goes (6.18).
const ZSWAP_ONLY_ZSMALLOC: KernelVersion = v(6, 15);
const ZSWAP_NO_ZPOOL_PARAM: KernelVersion = v(6, 18);
/// `shrinker_enabled` (6.8; Debian's 6.12 has it, its 6.1 not).
const ZSWAP_SHRINKER: KernelVersion = v(6, 8);

impl KernelModel {
    /// What zswap does with a same-filled page.
    pub fn zswap_same_filled(&self) -> SameFilled {
        if self.since(ZSWAP_ZEROMAP) {
            SameFilled::Zeromap
        } else if self.since(ZSWAP_ZERO_ONLY) {
            SameFilled::ZeroOnly
        } else {
            SameFilled::AnyWord
        }
    }

    /// Whether zswap stores a page that does not compress (a compressor
    /// error, or a result the allocator cannot hold) as-is, counted in
    /// `stored_incompressible_pages` (6.18); before, it rejects the store
    /// (`reject_compress_poor`, or `reject_compress_fail` from 6.6 on a
    /// compressor error) and the page goes to the swap device.
    pub fn zswap_stores_incompressible(&self) -> bool {
        self.since(ZSWAP_STORES_INCOMPRESSIBLE)
    }

    /// Bytes zswap puts before each compressed object in allocator `zpool`:
    /// the 8-byte `zswap_header` in zbud and z3fold before 6.5, else none.
    pub fn zswap_header_bytes(&self, zpool: &str) -> usize {
        let evictable = matches!(zpool, "zbud" | "z3fold");
        if evictable && !self.since(ZSWAP_HEADER_GONE) {
            8
        } else {
            0
        }
    }

    /// The allocators this kernel's zswap can use: zsmalloc, zbud and z3fold
    /// before 6.15, zsmalloc after.
    pub fn zswap_zpools(&self) -> &'static [&'static str] {
        if self.since(ZSWAP_ONLY_ZSMALLOC) {
            &["zsmalloc"]
        } else {
            &["zsmalloc", "zbud", "z3fold"]
        }
    }

    /// Whether zswap has the `zpool` parameter (before 6.18). Its default is
    /// the build's CONFIG_ZSWAP_ZPOOL_DEFAULT: zbud in Debian's 6.1,
    /// zsmalloc in its 6.12.
    pub fn zswap_zpool_param(&self) -> bool {
        !self.since(ZSWAP_NO_ZPOOL_PARAM)
    }

    /// The parameters under /sys/module/zswap/parameters, sorted.
    pub fn zswap_params(&self) -> Vec<&'static str> {
        let mut p = vec![
            "accept_threshold_percent",
            "compressor",
            "enabled",
            "max_pool_percent",
        ];
        if self.zswap_same_filled() == SameFilled::AnyWord {
            p.extend(["non_same_filled_pages_enabled", "same_filled_pages_enabled"]);
        }
        if self.since(ZSWAP_SHRINKER) {
            p.push("shrinker_enabled");
        }
        if self.zswap_zpool_param() {
            p.push("zpool");
        }
        p.sort_unstable();
        p
    }

    /// The files of /sys/kernel/debug/zswap, in [`ZSWAP_STATS`] order.
    pub fn zswap_stats(&self) -> impl Iterator<Item = &'static str> + '_ {
        ZSWAP_STATS
            .iter()
            .filter(|s| s.1.contains(self.version))
            .map(|s| s.0)
    }
}

/// Every debugfs file of zswap with the versions that have it. Debian's 6.1
/// and 6.12 list exactly the ones it gives them (read in the VM lab); 6.18's
/// are this machine's ([`crate::zswap::DEBUGFS_FILES`]); the versions where a
/// file came or went in between are history (7.3's list is not yet read).
pub const ZSWAP_STATS: &[(&str, KernelSpan)] = &[
    ("pool_limit_hit", KernelSpan::since(6, 1)),
    ("reject_reclaim_fail", KernelSpan::since(6, 1)),
    ("reject_alloc_fail", KernelSpan::since(6, 1)),
    ("reject_kmemcache_fail", KernelSpan::since(6, 1)),
    ("reject_compress_fail", KernelSpan::since(6, 6)),
    ("reject_compress_poor", KernelSpan::since(6, 1)),
    ("decompress_fail", KernelSpan::since(6, 15)),
    ("written_back_pages", KernelSpan::since(6, 1)),
    ("duplicate_entry", KernelSpan::between((6, 1), (6, 10))),
    ("pool_total_size", KernelSpan::since(6, 1)),
    ("stored_pages", KernelSpan::since(6, 1)),
    ("same_filled_pages", KernelSpan::between((6, 1), (6, 12))),
    ("stored_incompressible_pages", KernelSpan::since(6, 18)),
];

impl Default for KernelModel {
    fn default() -> Self {
        KernelModel::newest()
    }
}

impl fmt::Display for KernelModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.version.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(m: KernelModel) -> Vec<&'static str> {
        m.sysfs_attrs().map(|a| a.name).collect()
    }

    fn at(major: u16, minor: u16) -> KernelModel {
        KernelModel::new(v(major, minor)).unwrap()
    }

    /// Every attribute of Debian's 6.1.0-56 zram (the VM lab's attribute list,
    /// docs/vm.md), in ZRAM_ATTRS order.
    #[test]
    fn attrs_6_1() {
        assert_eq!(
            names(at(6, 1)),
            [
                "disksize",
                "initstate",
                "reset",
                "comp_algorithm",
                "mm_stat",
                "io_stat",
                "debug_stat",
                "mem_limit",
                "mem_used_max",
                "compact",
                "idle",
                "backing_dev",
                "bd_stat",
                "writeback",
                "writeback_limit",
                "writeback_limit_enable",
                "max_comp_streams",
            ]
        );
    }

    /// The sysfs attributes of Debian's 6.12.117 and 7.3.4 zram (docs/vm.md's
    /// raw files), plus recompression's two, which those builds leave out
    /// (CONFIG_ZRAM_MULTI_COMP is not set) and the model has.
    #[test]
    fn attrs_6_12_and_7_3_are_debians_plus_recompression() {
        let seen = |m: KernelModel, debian: &str| {
            let mut want: Vec<&str> = debian.split_whitespace().collect();
            want.extend(["recomp_algorithm", "recompress"]);
            want.sort();
            let mut got = names(m);
            got.sort();
            assert_eq!(got, want, "{m}");
        };
        seen(at(6, 12), "algorithm_params backing_dev bd_stat comp_algorithm compact debug_stat disksize idle initstate io_stat max_comp_streams mem_limit mem_used_max mm_stat reset writeback writeback_limit writeback_limit_enable");
        seen(at(7, 3), "algorithm_params backing_dev bd_stat comp_algorithm compact compressed_writeback debug_stat disksize idle initstate io_stat mem_limit mem_used_max mm_stat reset writeback writeback_batch_size writeback_limit writeback_limit_enable");
    }

    #[test]
    fn attrs_by_version() {
        let m612 = names(at(6, 12));
        assert!(m612.contains(&"algorithm_params") && m612.contains(&"recompress"));
        assert!(m612.contains(&"max_comp_streams"));
        assert!(!m612.contains(&"writeback_batch_size"));
        let m618 = names(at(6, 18));
        assert!(!m618.contains(&"max_comp_streams") && !m618.contains(&"writeback_batch_size"));
        assert_eq!(m618.len() + 1, names(at(6, 19)).len());
        assert!(names(at(6, 19)).contains(&"writeback_batch_size"));
        assert!(!names(at(6, 19)).contains(&"compressed_writeback"));
        let m70 = names(at(7, 0));
        assert!(m70.contains(&"compressed_writeback") && m70.contains(&"writeback_batch_size"));
        assert_eq!(names(at(7, 3)), m70);
        assert!(!m70.contains(&"writeback_compressed") && !m70.contains(&"allocator"));
        // zmem's extensions under every version, the pre-release name under none.
        for m in [at(6, 1), at(7, 3)] {
            assert!(m.has("allocator") && m.has("fast_path"));
            assert!(!m.has("writeback_compressed") && !m.has("nope"));
        }
    }

    #[test]
    fn zsmalloc_and_writeback_by_version() {
        let (old, new) = (at(6, 1), at(6, 12));
        assert_eq!(
            (old.zspage_chain_size(), old.zspage_chain_rule()),
            (4, ChainRule::MostUsedPercent)
        );
        assert_eq!(
            (new.zspage_chain_size(), new.zspage_chain_rule()),
            (8, ChainRule::LeastWaste)
        );
        assert!(at(6, 2).zspage_chain_size() == 4 && at(6, 3).zspage_chain_size() == 8);
        assert!(!at(6, 18).batched_writeback() && at(6, 19).batched_writeback());
        assert!(!at(6, 19).compressed_writeback() && at(7, 0).compressed_writeback());
        assert!(!old.incompressible_writeback() && at(6, 2).incompressible_writeback());
        assert!(!at(6, 12).keyed_writeback() && at(7, 3).keyed_writeback());
        assert!(!old.recompression() && at(6, 2).recompression());
        assert!(old.algorithm_params_keys().is_empty());
        assert_eq!(new.algorithm_params_keys().len(), 4);
        assert!(at(7, 3)
            .algorithm_params_keys()
            .contains(&"deflate.winbits"));
    }

    /// Debian's 6.1 and 6.12 zswap as the VM lab read them
    /// (/sys/module/zswap/parameters, /sys/kernel/debug/zswap).
    #[test]
    fn zswap_6_1_and_6_12_are_debians() {
        let (old, new) = (at(6, 1), at(6, 12));
        assert_eq!(
            old.zswap_params(),
            [
                "accept_threshold_percent",
                "compressor",
                "enabled",
                "max_pool_percent",
                "non_same_filled_pages_enabled",
                "same_filled_pages_enabled",
                "zpool"
            ]
        );
        assert_eq!(
            new.zswap_params(),
            [
                "accept_threshold_percent",
                "compressor",
                "enabled",
                "max_pool_percent",
                "shrinker_enabled",
                "zpool"
            ]
        );
        let mut stats: Vec<&str> = old.zswap_stats().collect();
        stats.sort_unstable();
        assert_eq!(
            stats.join(" "),
            "duplicate_entry pool_limit_hit pool_total_size reject_alloc_fail reject_compress_poor \
             reject_kmemcache_fail reject_reclaim_fail same_filled_pages stored_pages written_back_pages"
        );
        assert!(!at(7, 3).zswap_params().contains(&"zpool"));
    }

    #[test]
    fn zswap_by_version() {
        use SameFilled::*;
        let same = |a, b| at(a, b).zswap_same_filled();
        assert_eq!([same(6, 1), same(6, 9)], [AnyWord, AnyWord]);
        assert_eq!([same(6, 10), same(6, 11)], [ZeroOnly, ZeroOnly]);
        assert_eq!([same(6, 12), same(7, 3)], [Zeromap, Zeromap]);
        assert!(!at(6, 17).zswap_stores_incompressible());
        assert!(at(6, 18).zswap_stores_incompressible());
        assert_eq!(at(6, 1).zswap_header_bytes("zbud"), 8);
        assert_eq!(at(6, 4).zswap_header_bytes("z3fold"), 8);
        assert_eq!(at(6, 1).zswap_header_bytes("zsmalloc"), 0);
        assert_eq!(at(6, 5).zswap_header_bytes("zbud"), 0);
        assert_eq!(at(6, 14).zswap_zpools().len(), 3);
        assert_eq!(at(6, 15).zswap_zpools(), ["zsmalloc"]);
        assert!(at(6, 17).zswap_zpool_param() && !at(6, 18).zswap_zpool_param());
        // The 6.18 list is kernel::zswap's (this machine's debugfs).
        let s618: Vec<&str> = at(6, 18).zswap_stats().collect();
        assert_eq!(s618, crate::zswap::DEBUGFS_FILES);
        let s73: Vec<&str> = at(7, 3).zswap_stats().collect();
        assert_eq!(s73, s618);
        // Debian's 6.12 (the VM lab, after a bench run created the directory).
        let mut s612: Vec<&str> = at(6, 12).zswap_stats().collect();
        s612.sort_unstable();
        assert_eq!(
            s612.join(" "),
            "pool_limit_hit pool_total_size reject_alloc_fail reject_compress_fail reject_compress_poor \
             reject_kmemcache_fail reject_reclaim_fail stored_pages written_back_pages"
        );
    }

    #[test]
    fn page_sizes_are_4k_16k_and_64k() {
        let m = KernelModel::default();
        assert_eq!((m.page_size(), m.page_shift()), (4096, 12));
        let m = m.with_page_size(16384).unwrap();
        assert_eq!((m.page_size(), m.page_shift()), (16384, 14));
        assert_eq!(m.with_page_size(65536).unwrap().page_shift(), 16);
        assert_eq!(m.version(), KernelModel::NEWEST, "the version stays");
        let e = m.with_page_size(8192).unwrap_err();
        assert_eq!(e, ModelError::PageSize(8192));
        assert!(e.to_string().contains("16 KiB"), "{e}");
    }

    #[test]
    fn versions_parse_and_unmodeled_ones_are_refused() {
        assert_eq!(KernelModel::parse("6.18").unwrap().version(), v(6, 18));
        assert_eq!(
            KernelModel::parse("6.1.0-56-amd64").unwrap().version(),
            v(6, 1)
        );
        assert_eq!(KernelModel::default().version(), KernelModel::NEWEST);
        assert_eq!(
            KernelModel::parse("5.15"),
            Err(ModelError::Unmodeled(v(5, 15)))
        );
        assert!(KernelModel::parse("7.4").is_err());
        for bad in ["", "six", "6", "v6.1", "-6.1"] {
            assert_eq!(
                KernelModel::parse(bad),
                Err(ModelError::Unparsable(bad.to_string())),
                "{bad}"
            );
        }
        let e = KernelModel::parse("4.19").unwrap_err().to_string();
        assert!(e.contains("6.1 to 7.3"), "{e}");
    }
}
