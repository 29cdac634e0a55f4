//! zram's device attributes, declared once: each file under /sys/block/zramN
//! with its mode, the kernel versions that have it and whether zmem's engine
//! implements it. Every list of attribute names elsewhere (the engine's
//! readable and writable sets, the host's filter of a zram directory, the
//! attributes `zmem ctl` parses with memparse) is derived from [`ZRAM_ATTRS`].
//!
//! Versions: `since` is the first mainline release whose
//! drivers/block/zram/zram_drv.c registers the attribute (for attributes older
//! than zram's move out of staging, 3.14, the first mainline zram). Checked
//! against the sources: 6.1's attribute set (zram_drv.c of that release);
//! `writeback_batch_size` (6.19: kstrtouint base 10, 0 refused, default 32,
//! kept by `reset`) and `compressed_writeback` (7.0; kstrtobool, EBUSY once
//! initialised, kept by `reset`) in the zram_drv.c of the writeback-batching
//! and compressed-writeback series, and both in Debian's 7.3.4 build (its
//! zram.ko registers them, and a device there takes and refuses exactly what
//! docs/writeback.md shows). `writeback_compressed` is the name the
//! compressed-writeback patches used in development trees before 7.0; no
//! release registers it (7.3.4's zram.ko has no such string), so the engine
//! does not serve it. The other versions come from the kernel's git history as
//! recorded in the commit subjects (e.g. "zram: remove max_comp_streams device
//! attr", 6.15) and are marked `// history` below: check them against the
//! release tags before relying on an exact minor version.
//!
//! Attributes removed before 4.11 (the per-counter files `orig_data_size`,
//! `num_reads`, … that mm_stat and io_stat replaced) are not listed.

use crate::version::KernelSpan;

/// Who may read or write an attribute (the kernel's `DEVICE_ATTR_RO/WO/RW`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Ro,
    Wo,
    Rw,
}

impl Mode {
    pub fn readable(self) -> bool {
        matches!(self, Mode::Ro | Mode::Rw)
    }
    pub fn writable(self) -> bool {
        matches!(self, Mode::Wo | Mode::Rw)
    }
}

/// Which kernels have an attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernels {
    /// Released kernels in this span.
    Released(KernelSpan),
    /// A name used only in patches before a release (none has it).
    PreRelease,
    /// zmem's own: no kernel has it.
    None,
}

/// One zram device attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZramAttr {
    /// The file name under /sys/block/zramN.
    pub name: &'static str,
    pub mode: Mode,
    pub kernels: Kernels,
    /// In the kernel a debugfs file (/sys/kernel/debug/zram/zramN/NAME), not sysfs.
    pub debugfs: bool,
    /// The value is parsed with `memparse` (suffixes K..E, trailing junk ignored).
    pub memparse: bool,
    /// zmem's engine (zmem-zram) implements it.
    pub engine: bool,
    /// For a name no release has: the name released kernels use instead.
    pub renamed: Option<&'static str>,
}

impl ZramAttr {
    /// A file of the kernel's /sys/block/zramN in some kernel (released or not).
    pub fn in_kernel_sysfs(&self) -> bool {
        !self.debugfs && self.kernels != Kernels::None
    }
}

const fn attr(name: &'static str, mode: Mode, kernels: Kernels, engine: bool) -> ZramAttr {
    ZramAttr {
        name,
        mode,
        kernels,
        debugfs: false,
        memparse: false,
        engine,
        renamed: None,
    }
}

const fn since(major: u16, minor: u16) -> Kernels {
    Kernels::Released(KernelSpan::since(major, minor))
}

use Mode::{Ro, Rw, Wo};

/// Every zram attribute zmem knows, in the order the engine lists them.
pub const ZRAM_ATTRS: &[ZramAttr] = &[
    ZramAttr {
        memparse: true,
        ..attr("disksize", Rw, since(3, 14), true)
    },
    attr("initstate", Ro, since(3, 14), true),
    attr("reset", Wo, since(3, 14), true),
    // history: zcomp with lzo and lz4 (3.15).
    attr("comp_algorithm", Rw, since(3, 15), true),
    // history: with zram's own backends (6.12).
    attr("algorithm_params", Wo, since(6, 12), true),
    // history: mm_stat and io_stat replaced the per-counter files (4.2).
    attr("mm_stat", Ro, since(4, 2), true),
    attr("io_stat", Ro, since(4, 2), true),
    // history
    attr("debug_stat", Ro, since(4, 11), true),
    // history: mem_limit and mem_used_max (3.18).
    ZramAttr {
        memparse: true,
        ..attr("mem_limit", Wo, since(3, 18), true)
    },
    attr("mem_used_max", Wo, since(3, 18), true),
    // history: zsmalloc compaction (4.1).
    attr("compact", Wo, since(4, 1), true),
    // history: idle page writeback (5.0).
    attr("idle", Wo, since(5, 0), true),
    // zmem only: zsmalloc/zbud/z3fold (the kernel's zram always uses zsmalloc).
    attr("allocator", Rw, Kernels::None, true),
    // CONFIG_ZRAM_MULTI_COMP (6.2).
    attr("recomp_algorithm", Rw, since(6, 2), true),
    attr("recompress", Wo, since(6, 2), true),
    // CONFIG_ZRAM_WRITEBACK. history: backing_dev (4.14), writeback and
    // bd_stat (5.0), writeback_limit[_enable] (5.1).
    attr("backing_dev", Rw, since(4, 14), true),
    attr("bd_stat", Ro, since(5, 0), true),
    attr("writeback", Wo, since(5, 0), true),
    attr("writeback_limit", Rw, since(5, 1), true),
    attr("writeback_limit_enable", Rw, since(5, 1), true),
    // 6.19: how many writeback requests a pass keeps in flight (default 32).
    attr("writeback_batch_size", Rw, since(6, 19), true),
    // 7.0: write back the compressed object instead of the page.
    attr("compressed_writeback", Rw, since(7, 0), true),
    // The development-tree name of compressed_writeback: in no release, not
    // served by the engine (ENOENT names the released name).
    ZramAttr {
        renamed: Some("compressed_writeback"),
        ..attr("writeback_compressed", Rw, Kernels::PreRelease, false)
    },
    // zmem only: the fast path (docs/recompress.md).
    attr("fast_algorithm", Rw, Kernels::None, true),
    attr("fast_path", Rw, Kernels::None, true),
    // history: a no-op since per-CPU streams (4.7), removed in 6.15.
    attr(
        "max_comp_streams",
        Rw,
        Kernels::Released(KernelSpan::between((3, 15), (6, 15))),
        false,
    ),
    // CONFIG_ZRAM_MEMORY_TRACKING's debugfs file (history: 4.14); the engine
    // offers it as a readable attribute but does not list it.
    ZramAttr {
        debugfs: true,
        ..attr("block_state", Ro, since(4, 14), true)
    },
];

/// Generic block-device files in a zram device's directory that zmem reads
/// as attributes (`/sys/block/zramN/size` in sectors, `stat`).
pub const BLOCK_ATTRS: &[&str] = &["stat", "size"];

/// The attribute called `name`.
pub fn zram_attr(name: &str) -> Option<&'static ZramAttr> {
    ZRAM_ATTRS.iter().find(|a| a.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KernelVersion;

    #[test]
    fn names_are_unique_and_well_formed() {
        for (i, a) in ZRAM_ATTRS.iter().enumerate() {
            assert!(
                a.name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{}",
                a.name
            );
            assert!(
                ZRAM_ATTRS[i + 1..].iter().all(|b| b.name != a.name),
                "{} twice",
                a.name
            );
            assert!(!BLOCK_ATTRS.contains(&a.name));
        }
    }

    #[test]
    fn kernel_spans() {
        let v = |a, b| KernelVersion::new(a, b);
        let has = |name: &str, k: KernelVersion| match zram_attr(name).unwrap().kernels {
            Kernels::Released(s) => s.contains(k),
            _ => false,
        };
        assert!(has("recompress", v(6, 18)) && !has("recompress", v(6, 1)));
        assert!(has("max_comp_streams", v(6, 1)) && !has("max_comp_streams", v(6, 18)));
        assert!(!has("writeback_compressed", v(7, 0)) && has("compressed_writeback", v(7, 0)));
        assert!(has("writeback_batch_size", v(6, 19)) && !has("writeback_batch_size", v(6, 18)));
        assert!(!has("compressed_writeback", v(6, 19)) && has("compressed_writeback", v(7, 3)));
        assert!(zram_attr("compressed_writeback").unwrap().engine);
        let old = zram_attr("writeback_compressed").unwrap();
        assert!(!old.engine && old.renamed == Some("compressed_writeback"));
        assert!(zram_attr("allocator").unwrap().engine);
        assert!(!zram_attr("allocator").unwrap().in_kernel_sysfs());
        assert!(!zram_attr("block_state").unwrap().in_kernel_sysfs());
        assert!(zram_attr("nope").is_none());
    }
}
