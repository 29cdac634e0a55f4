//! zram's device attributes, declared once: each file under /sys/block/zramN
//! with its mode, the kernel versions that have it and whether zmem's engine
//! implements it. Every list of attribute names elsewhere (the engine's
//! readable and writable sets, the host's filter of a zram directory, the
//! attributes `zmem ctl` parses with memparse) is derived from [`ZRAM_ATTRS`].
//!
//! Each attribute's name is a constant in [`attr`] (`attr::MM_STAT`), the
//! one place the string is written; a row also says whether writes fail with
//! EBUSY once the device is initialised (`init_only`), which build option or
//! engine part provides it ([`Feature`]) and how what it takes changed by
//! version ([`Syntax`]).
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

use std::fmt;

use crate::version::{KernelSpan, KernelVersion};

/// Every attribute's name, to be used by constant wherever zmem reads or
/// writes one (`attr::MM_STAT`): the string is written here only.
pub mod attr {
    pub const DISKSIZE: &str = "disksize";
    pub const INITSTATE: &str = "initstate";
    pub const RESET: &str = "reset";
    pub const COMP_ALGORITHM: &str = "comp_algorithm";
    pub const ALGORITHM_PARAMS: &str = "algorithm_params";
    pub const MM_STAT: &str = "mm_stat";
    pub const IO_STAT: &str = "io_stat";
    pub const DEBUG_STAT: &str = "debug_stat";
    pub const MEM_LIMIT: &str = "mem_limit";
    pub const MEM_USED_MAX: &str = "mem_used_max";
    pub const COMPACT: &str = "compact";
    pub const IDLE: &str = "idle";
    pub const ALLOCATOR: &str = "allocator";
    pub const RECOMP_ALGORITHM: &str = "recomp_algorithm";
    pub const RECOMPRESS: &str = "recompress";
    pub const BACKING_DEV: &str = "backing_dev";
    pub const BD_STAT: &str = "bd_stat";
    pub const WRITEBACK: &str = "writeback";
    pub const WRITEBACK_LIMIT: &str = "writeback_limit";
    pub const WRITEBACK_LIMIT_ENABLE: &str = "writeback_limit_enable";
    pub const WRITEBACK_BATCH_SIZE: &str = "writeback_batch_size";
    pub const COMPRESSED_WRITEBACK: &str = "compressed_writeback";
    pub const WRITEBACK_COMPRESSED: &str = "writeback_compressed";
    pub const FAST_ALGORITHM: &str = "fast_algorithm";
    pub const FAST_PATH: &str = "fast_path";
    pub const MAX_COMP_STREAMS: &str = "max_comp_streams";
    pub const BLOCK_STATE: &str = "block_state";
}

/// The page types `writeback` and `recompress` select (`type=NAME`, or
/// writeback's mode word before 6.16), as zram_drv.c spells them.
pub mod page_type {
    pub const IDLE: &str = "idle";
    pub const HUGE: &str = "huge";
    pub const HUGE_IDLE: &str = "huge_idle";
    /// Writeback only (6.2): pages recompression could not shrink.
    pub const INCOMPRESSIBLE: &str = "incompressible";
    /// What `recompress type=` takes.
    pub const RECOMPRESS: [&str; 3] = [IDLE, HUGE, HUGE_IDLE];
    /// What `writeback` takes (6.2+; 6.1 lacks `incompressible`).
    pub const WRITEBACK: [&str; 4] = [IDLE, HUGE, HUGE_IDLE, INCOMPRESSIBLE];
}

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

impl fmt::Display for Kernels {
    /// `6.19+`, `3.15..6.15`, or who has it when no release does.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kernels::Released(span) => span.fmt(f),
            Kernels::PreRelease => f.write_str("no released kernel"),
            Kernels::None => f.write_str("zmem only"),
        }
    }
}

/// The build option (or zmem part) that provides an attribute: in the kernel
/// a Kconfig option, in the engine the module that serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// Every zram build; the engine's device (`device.rs`, `attrs.rs`).
    Core,
    /// CONFIG_ZRAM_WRITEBACK; the engine's `writeback.rs` and `backing.rs`.
    Writeback,
    /// CONFIG_ZRAM_MULTI_COMP; the engine's `recompress.rs`.
    MultiComp,
    /// CONFIG_ZRAM_MEMORY_TRACKING (a debugfs file); the engine's `slot.rs`.
    MemoryTracking,
    /// zmem's own: the allocator choice (`pool.rs`) and the fast path (`fastpath.rs`).
    Zmem,
}

impl Feature {
    /// The kernel's build option, if one gates it.
    pub fn kconfig(self) -> Option<&'static str> {
        match self {
            Feature::Writeback => Some("CONFIG_ZRAM_WRITEBACK"),
            Feature::MultiComp => Some("CONFIG_ZRAM_MULTI_COMP"),
            Feature::MemoryTracking => Some("CONFIG_ZRAM_MEMORY_TRACKING"),
            Feature::Core | Feature::Zmem => None,
        }
    }
}

/// A change in what an attribute takes, from a kernel version on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// `writeback` takes the `incompressible` mode (with recompression's flag).
    IncompressibleWriteback,
    /// `writeback` takes `key=value` tokens (`type=`, `page_indexes=`) instead
    /// of one mode word or `page_index=N`.
    KeyedWriteback,
    /// `algorithm_params` takes `deflate.winbits=`.
    DeflateWinbits,
    /// `recompress` takes `max_pages=`.
    RecompressMaxPages,
    /// `recompress` tries one priority per pass: `priority=` must be 1..3 and
    /// have an algorithm, `algo=` with `priority=` must be that priority's,
    /// an unknown `type=` is EINVAL; slots of that priority or above are no
    /// candidates; INCOMPRESSIBLE when no algorithm is configured above it.
    /// Before: every configured priority from `priority=` up, 0 taken as 1.
    RecompressOnePriority,
    /// `algorithm_params` with `algo=` and `priority=` refuses an `algo=` that
    /// is not that priority's algorithm (before, `algo=` wins).
    ParamsAlgoMatchesPriority,
    /// Access times are whole seconds (`ac_time` a u32 of boot time): `idle`
    /// takes a u32 age, an age of the uptime or more changes nothing, and
    /// `block_state` prints `.000000`. Before: nanoseconds, a u64 age.
    IdleAgeSeconds,
}

/// One row of an attribute's [`ZramAttr::changes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    pub syntax: Syntax,
    pub since: KernelVersion,
}

impl Syntax {
    /// The attribute and the first release with this syntax (from [`ZRAM_ATTRS`]).
    pub fn since(self) -> KernelVersion {
        ZRAM_ATTRS
            .iter()
            .flat_map(|a| a.changes)
            .find(|c| c.syntax == self)
            .map(|c| c.since)
            .expect("every Syntax has a row in ZRAM_ATTRS (tested)")
    }
}

/// One zram device attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZramAttr {
    /// The file name under /sys/block/zramN (an [`attr`] constant).
    pub name: &'static str,
    pub mode: Mode,
    pub kernels: Kernels,
    /// What provides it: a Kconfig option in the kernel, a module in the engine.
    pub feature: Feature,
    /// Writes fail with EBUSY once the device is initialised (disksize set).
    pub init_only: bool,
    /// What it takes that changed after it appeared, by version.
    pub changes: &'static [Change],
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

    /// The row of `name`, which must be one of the [`attr`] constants (a
    /// test checks that each has a row); use [`zram_attr`] for names read
    /// from outside.
    pub fn of(name: &str) -> &'static ZramAttr {
        zram_attr(name).expect("every attr:: constant has a row in ZRAM_ATTRS (tested)")
    }

    /// "NAME (6.19+)": the attribute with the kernels that have it, for messages.
    pub fn with_kernels(&self) -> String {
        format!("{} ({})", self.name, self.kernels)
    }
}

const fn row(name: &'static str, mode: Mode, kernels: Kernels, feature: Feature) -> ZramAttr {
    ZramAttr {
        name,
        mode,
        kernels,
        feature,
        init_only: false,
        changes: &[],
        debugfs: false,
        memparse: false,
        engine: true,
        renamed: None,
    }
}

const fn since(major: u16, minor: u16) -> Kernels {
    Kernels::Released(KernelSpan::since(major, minor))
}

const fn change(syntax: Syntax, major: u16, minor: u16) -> Change {
    Change {
        syntax,
        since: KernelVersion::new(major, minor),
    }
}

use attr::*;
use Feature::{Core, MultiComp, Writeback, Zmem};
use Mode::{Ro, Rw, Wo};

/// Every zram attribute zmem knows, in the order the engine lists them.
/// `init_only` follows each store's `init_done` check in zram_drv.c (6.18;
/// `compressed_writeback` in 7.3's); `algorithm_params` has none.
pub const ZRAM_ATTRS: &[ZramAttr] = &[
    ZramAttr {
        memparse: true,
        init_only: true,
        ..row(DISKSIZE, Rw, since(3, 14), Core)
    },
    row(INITSTATE, Ro, since(3, 14), Core),
    row(RESET, Wo, since(3, 14), Core),
    // history: zcomp with lzo and lz4 (3.15).
    ZramAttr {
        init_only: true,
        ..row(COMP_ALGORITHM, Rw, since(3, 15), Core)
    },
    // history: with zram's own backends (6.12); deflate.winbits (history: 6.16;
    // in Debian's 7.3 zram.ko, not in its 6.12).
    // `algo=` checked against `priority=` (7.3's zram_drv.c, and the kernel
    // built from it in the VM lab: engine/zram/tests/kernel_recompress.rs;
    // 6.18's lets `algo=` win; the versions between are not checked).
    ZramAttr {
        changes: &[
            change(Syntax::DeflateWinbits, 6, 16),
            change(Syntax::ParamsAlgoMatchesPriority, 7, 3),
        ],
        ..row(ALGORITHM_PARAMS, Wo, since(6, 12), Core)
    },
    // history: mm_stat and io_stat replaced the per-counter files (4.2).
    row(MM_STAT, Ro, since(4, 2), Core),
    row(IO_STAT, Ro, since(4, 2), Core),
    // history
    row(DEBUG_STAT, Ro, since(4, 11), Core),
    // history: mem_limit and mem_used_max (3.18).
    ZramAttr {
        memparse: true,
        ..row(MEM_LIMIT, Wo, since(3, 18), Core)
    },
    row(MEM_USED_MAX, Wo, since(3, 18), Core),
    // history: zsmalloc compaction (4.1).
    row(COMPACT, Wo, since(4, 1), Core),
    // history: idle page writeback (5.0). Whole-second access times: 7.3's
    // zram_drv.c and the VM lab's 7.3 kernel (6.18's are nanoseconds; the
    // versions between are not checked).
    ZramAttr {
        changes: &[change(Syntax::IdleAgeSeconds, 7, 3)],
        ..row(IDLE, Wo, since(5, 0), Core)
    },
    // zmem only: zsmalloc/zbud/z3fold (the kernel's zram always uses zsmalloc).
    ZramAttr {
        init_only: true,
        ..row(ALLOCATOR, Rw, Kernels::None, Zmem)
    },
    // CONFIG_ZRAM_MULTI_COMP (6.2).
    ZramAttr {
        init_only: true,
        ..row(RECOMP_ALGORITHM, Rw, since(6, 2), MultiComp)
    },
    // history: max_pages= (6.10). One priority per pass: 7.3's zram_drv.c and
    // the VM lab's 7.3 kernel, step by step (engine/zram/tests/
    // kernel_recompress.rs); 6.18 tries a range; the versions between are
    // not checked.
    ZramAttr {
        changes: &[
            change(Syntax::RecompressMaxPages, 6, 10),
            change(Syntax::RecompressOnePriority, 7, 3),
        ],
        ..row(RECOMPRESS, Wo, since(6, 2), MultiComp)
    },
    // CONFIG_ZRAM_WRITEBACK. history: backing_dev (4.14), writeback and
    // bd_stat (5.0), writeback_limit[_enable] (5.1).
    ZramAttr {
        init_only: true,
        ..row(BACKING_DEV, Rw, since(4, 14), Writeback)
    },
    row(BD_STAT, Ro, since(5, 0), Writeback),
    // `incompressible` (6.2; Debian's 6.1 zram.ko has no such mode word, its
    // 6.12 has); `key=value` tokens (history: 6.16; Debian's 7.3 zram.ko has
    // `type=` and `page_indexes=`, its 6.12 neither).
    ZramAttr {
        changes: &[
            change(Syntax::IncompressibleWriteback, 6, 2),
            change(Syntax::KeyedWriteback, 6, 16),
        ],
        ..row(WRITEBACK, Wo, since(5, 0), Writeback)
    },
    row(WRITEBACK_LIMIT, Rw, since(5, 1), Writeback),
    row(WRITEBACK_LIMIT_ENABLE, Rw, since(5, 1), Writeback),
    // 6.19: how many writeback requests a pass keeps in flight (default 32);
    // the pass is batched from this version on.
    row(WRITEBACK_BATCH_SIZE, Rw, since(6, 19), Writeback),
    // 7.0: write back the compressed object instead of the page.
    ZramAttr {
        init_only: true,
        ..row(COMPRESSED_WRITEBACK, Rw, since(7, 0), Writeback)
    },
    // The development-tree name of compressed_writeback: in no release, not
    // served by the engine (ENOENT names the released name).
    ZramAttr {
        renamed: Some(COMPRESSED_WRITEBACK),
        engine: false,
        ..row(WRITEBACK_COMPRESSED, Rw, Kernels::PreRelease, Writeback)
    },
    // zmem only: the fast path (docs/recompress.md).
    row(FAST_ALGORITHM, Rw, Kernels::None, Zmem),
    row(FAST_PATH, Rw, Kernels::None, Zmem),
    // history: a no-op since per-CPU streams (4.7), removed in 6.15.
    ZramAttr {
        engine: false,
        ..row(
            MAX_COMP_STREAMS,
            Rw,
            Kernels::Released(KernelSpan::between((3, 15), (6, 15))),
            Core,
        )
    },
    // CONFIG_ZRAM_MEMORY_TRACKING's debugfs file (history: 4.14); the engine
    // offers it as a readable attribute but does not list it.
    ZramAttr {
        debugfs: true,
        ..row(BLOCK_STATE, Ro, since(4, 14), Feature::MemoryTracking)
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

    /// Each `attr::` constant has its row, and each row's name is a constant.
    #[test]
    fn constants_and_rows_agree() {
        let consts = [
            DISKSIZE,
            INITSTATE,
            RESET,
            COMP_ALGORITHM,
            ALGORITHM_PARAMS,
            MM_STAT,
            IO_STAT,
            DEBUG_STAT,
            MEM_LIMIT,
            MEM_USED_MAX,
            COMPACT,
            IDLE,
            ALLOCATOR,
            RECOMP_ALGORITHM,
            RECOMPRESS,
            BACKING_DEV,
            BD_STAT,
            WRITEBACK,
            WRITEBACK_LIMIT,
            WRITEBACK_LIMIT_ENABLE,
            WRITEBACK_BATCH_SIZE,
            COMPRESSED_WRITEBACK,
            WRITEBACK_COMPRESSED,
            FAST_ALGORITHM,
            FAST_PATH,
            MAX_COMP_STREAMS,
            BLOCK_STATE,
        ];
        assert_eq!(consts.len(), ZRAM_ATTRS.len());
        for (c, a) in consts.iter().zip(ZRAM_ATTRS) {
            assert_eq!(ZramAttr::of(c).name, *c);
            assert_eq!(a.name, *c, "ZRAM_ATTRS order");
        }
    }

    /// The kernel's EBUSY-once-initialised stores, each syntax change once,
    /// and the build options.
    #[test]
    fn init_only_changes_and_features() {
        let busy: Vec<&str> = ZRAM_ATTRS
            .iter()
            .filter(|a| a.init_only)
            .map(|a| a.name)
            .collect();
        assert_eq!(
            busy,
            [
                "disksize",
                "comp_algorithm",
                "allocator",
                "recomp_algorithm",
                "backing_dev",
                "compressed_writeback"
            ]
        );
        use Syntax::*;
        for s in [
            IncompressibleWriteback,
            KeyedWriteback,
            DeflateWinbits,
            RecompressMaxPages,
            RecompressOnePriority,
            ParamsAlgoMatchesPriority,
            IdleAgeSeconds,
        ] {
            let rows = ZRAM_ATTRS
                .iter()
                .flat_map(|a| a.changes)
                .filter(|c| c.syntax == s);
            assert_eq!(rows.count(), 1, "{s:?}");
        }
        assert_eq!(KeyedWriteback.since(), KernelVersion::new(6, 16));
        assert_eq!(IncompressibleWriteback.since(), KernelVersion::new(6, 2));
        assert_eq!(
            ZramAttr::of(BD_STAT).feature.kconfig(),
            Some("CONFIG_ZRAM_WRITEBACK")
        );
        assert_eq!(
            ZramAttr::of(RECOMPRESS).feature.kconfig(),
            Some("CONFIG_ZRAM_MULTI_COMP")
        );
        assert_eq!(
            ZramAttr::of(WRITEBACK_BATCH_SIZE).with_kernels(),
            "writeback_batch_size (6.19+)"
        );
        assert_eq!(
            ZramAttr::of(ALLOCATOR).with_kernels(),
            "allocator (zmem only)"
        );
    }
}
