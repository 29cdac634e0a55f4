//! Attributes by their /sys/block/zramN names, with the kernel's syntax,
//! ordering rules and errors (zram_drv.c's attribute stores; Documentation/admin-guide/blockdev/zram.rst).
//! The names, modes and versions are declared once in `zmem_kernel::ZRAM_ATTRS`;
//! this file is their implementation: one `show`/`store` arm per attribute.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, LazyLock};

use zmem_codec::Params;
use zmem_kernel::attr;

use crate::device::Zram;
use crate::streams::{MAX_COMPS, PRIMARY};
use zmem_kernel::render_debug_stat;
use zmem_kernel::{kstrtoint, kstrtou16, kstrtoul, kstrtoull, memparse, next_args, sysfs_streq};
use zmem_kernel::{AttrError, Errno, KernelModel, Kernels, ZramAttr, ZRAM_ATTRS};

/// The engine's attributes that can be read (sysfs ones; `block_state` is
/// readable too but, being the kernel's debugfs file, not listed), in
/// [`ZRAM_ATTRS`] order.
pub static READABLE: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| engine_attrs(|a| a.mode.readable()));
/// The engine's attributes that can be written, in [`ZRAM_ATTRS`] order.
pub static WRITABLE: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| engine_attrs(|a| a.mode.writable()));

fn engine_attrs(keep: fn(&ZramAttr) -> bool) -> Vec<&'static str> {
    ZRAM_ATTRS
        .iter()
        .filter(|a| a.engine && !a.debugfs && keep(a))
        .map(|a| a.name)
        .collect()
}

fn no_attr(name: &str) -> AttrError {
    match zmem_kernel::zram_attr(name).and_then(|a| a.renamed) {
        Some(new) => AttrError::new(
            Errno::ENOENT,
            format!("no attribute '{name}' (no released kernel has it: the name is '{new}')"),
        ),
        None => AttrError::new(Errno::ENOENT, format!("no attribute '{name}'")),
    }
}

/// An attribute the engine has but the device's kernel version does not:
/// absent, as in that kernel's sysfs.
fn not_in_version(a: &ZramAttr, kernel: KernelModel) -> AttrError {
    let when = match a.kernels {
        Kernels::Released(span) => format!(" (zram has it in {span})"),
        _ => String::new(),
    };
    AttrError::new(
        Errno::ENOENT,
        format!(
            "no attribute '{}': this device behaves as kernel {kernel}'s zram{when}",
            a.name
        ),
    )
}

/// The largest dictionary the kernel reads (INT_MAX bytes).
const MAX_DICT: u64 = i32::MAX as u64;

impl Zram {
    /// Refuse an attribute the engine has but the device's kernel lacks.
    fn check_version(&self, name: &str) -> Result<(), AttrError> {
        match zmem_kernel::zram_attr(name) {
            Some(a) if a.engine && !self.kernel.has_attr(a) => Err(not_in_version(a, self.kernel)),
            _ => Ok(()),
        }
    }

    /// The readable attributes of this device's kernel version, in
    /// [`ZRAM_ATTRS`] order.
    pub fn readable_attrs(&self) -> Vec<&'static str> {
        self.of_version(&READABLE)
    }

    /// The writable attributes of this device's kernel version.
    pub fn writable_attrs(&self) -> Vec<&'static str> {
        self.of_version(&WRITABLE)
    }

    fn of_version(&self, names: &[&'static str]) -> Vec<&'static str> {
        names
            .iter()
            .copied()
            .filter(|n| self.kernel.has(n))
            .collect()
    }

    /// Read an attribute; the text is what the kernel prints.
    pub fn show(&self, name: &str) -> Result<String, AttrError> {
        self.check_version(name)?;
        match name {
            attr::DISKSIZE => Ok(format!("{}\n", self.disksize())),
            attr::INITSTATE => Ok(format!("{}\n", self.is_initialized() as u32)),
            attr::COMP_ALGORITHM => {
                let cfg = self.lock_config();
                Ok(self
                    .backends()
                    .available_show(cfg.comp_algs[PRIMARY].as_deref()))
            }
            attr::MM_STAT => Ok(self.mm_stat().render()),
            attr::IO_STAT => Ok(self.io_stat().render()),
            attr::DEBUG_STAT => Ok(render_debug_stat(self.miss_free())),
            attr::ALLOCATOR => Ok(format!("{}\n", self.lock_config().allocator)),
            attr::RECOMP_ALGORITHM => Ok(self.recomp_algorithm_show()),
            attr::BACKING_DEV => Ok(self.backing_dev_show()),
            attr::BD_STAT => Ok(self.bd_stat().render()),
            attr::WRITEBACK_LIMIT => Ok(format!("{}\n", self.writeback_limit().remaining)),
            attr::WRITEBACK_LIMIT_ENABLE => {
                Ok(format!("{}\n", self.writeback_limit().enable as u32))
            }
            attr::WRITEBACK_BATCH_SIZE => Ok(format!("{}\n", self.wb_batch_size.load(Relaxed))),
            attr::COMPRESSED_WRITEBACK => {
                Ok(format!("{}\n", self.wb_compressed.load(Relaxed) as u32))
            }
            attr::FAST_ALGORITHM => Ok(self.fast_algorithm_show()),
            attr::FAST_PATH => Ok(self.fast_path_show()),
            // debugfs's file in the kernel, so not listed in READABLE.
            attr::BLOCK_STATE => Ok(self.block_state_show()),
            n if WRITABLE.contains(&n) => Err(AttrError::new(
                Errno::EACCES,
                format!("attribute '{n}' is write-only"),
            )),
            n => Err(no_attr(n)),
        }
    }

    /// Write an attribute, with the kernel's syntax and errors.
    pub fn store(&self, name: &str, value: &str) -> Result<(), AttrError> {
        self.check_version(name)?;
        match name {
            attr::DISKSIZE => self.disksize_store(value),
            attr::RESET => self.reset_store(value),
            attr::COMP_ALGORITHM => self.comp_algorithm_store(PRIMARY, value),
            attr::ALGORITHM_PARAMS => self.algorithm_params_store(value),
            attr::MEM_LIMIT => self.mem_limit_store(value),
            attr::MEM_USED_MAX => self.mem_used_max_store(value),
            attr::COMPACT => self.compact_store(),
            attr::IDLE => self.idle_store(value),
            attr::ALLOCATOR => self.allocator_store(value),
            attr::RECOMP_ALGORITHM => self.recomp_algorithm_store(value),
            attr::RECOMPRESS => self.recompress_store(value),
            attr::BACKING_DEV => self.backing_dev_store(value),
            attr::WRITEBACK => self.writeback_store(value),
            attr::WRITEBACK_LIMIT => self.writeback_limit_store(value),
            attr::WRITEBACK_LIMIT_ENABLE => self.writeback_limit_enable_store(value),
            attr::WRITEBACK_BATCH_SIZE => self.writeback_batch_size_store(value),
            attr::COMPRESSED_WRITEBACK => self.compressed_writeback_store(value),
            attr::FAST_ALGORITHM => self.fast_algorithm_store(value),
            attr::FAST_PATH => self.fast_path_store(value),
            n if READABLE.contains(&n) => Err(AttrError::new(
                Errno::EACCES,
                format!("attribute '{n}' is read-only"),
            )),
            n => Err(no_attr(n)),
        }
    }

    /// `disksize`: memparse; 0 or nothing parsed → EINVAL; initialised → EBUSY.
    fn disksize_store(&self, buf: &str) -> Result<(), AttrError> {
        let (size, _) = memparse(buf);
        if size == 0 {
            return Err(AttrError::new(
                Errno::EINVAL,
                format!(
                    "disksize {:?} is 0 or not a size (bytes, with optional K/M/G/T/P/E)",
                    buf.trim_end()
                ),
            ));
        }
        self.init(size)
    }

    /// `reset`: a non-zero decimal u16.
    fn reset_store(&self, buf: &str) -> Result<(), AttrError> {
        let v = kstrtou16(buf, 10)?;
        if v == 0 {
            return Err(AttrError::new(
                Errno::EINVAL,
                "reset needs a non-zero value",
            ));
        }
        self.reset()
    }

    /// `comp_algorithm` (prio 0) and, later, `recomp_algorithm` (prio 1..3).
    pub(crate) fn comp_algorithm_store(&self, prio: usize, buf: &str) -> Result<(), AttrError> {
        let name = self.check_algorithm_name(buf)?;
        let mut cfg = self.lock_config();
        if self.is_initialized() {
            return Err(AttrError::new(
                Errno::EBUSY,
                "cannot change the algorithm of an initialized device",
            ));
        }
        cfg.comp_algs[prio] = Some(name);
        Ok(())
    }

    /// The priority `algorithm_params` sets: `priority=` (0..3), or the one
    /// whose algorithm is `algo=` (searched from the primary up). Given both,
    /// 6.18 takes `algo=`'s; 7.3 refuses them unless that priority's
    /// algorithm is `algo=` (`validate_algo_priority`).
    fn params_priority(
        &self,
        cfg: &crate::device::Config,
        prio_param: Option<i32>,
        algo: Option<&str>,
    ) -> Result<usize, AttrError> {
        let einval = |m: String| AttrError::new(Errno::EINVAL, m);
        let in_range = |p: i32| {
            if p < 0 || p as usize >= MAX_COMPS {
                Err(einval(format!(
                    "priority {p} is not in 0..{}",
                    MAX_COMPS - 1
                )))
            } else {
                Ok(p as usize)
            }
        };
        let lookup = |a: &str| {
            cfg.comp_algs
                .iter()
                .position(|c| c.as_deref() == Some(a))
                .ok_or_else(|| einval(format!("algorithm '{a}' is not configured on this device")))
        };
        match (algo, prio_param) {
            (Some(a), Some(p)) if self.kernel.params_algo_matches_priority() => {
                let p = in_range(p)?;
                if cfg.comp_algs[p].as_deref() != Some(a) {
                    return Err(einval(format!("priority {p}'s algorithm is not '{a}'")));
                }
                Ok(p)
            }
            (Some(a), _) => lookup(a),
            (None, p) => in_range(p.unwrap_or(PRIMARY as i32)),
        }
    }

    /// `algorithm_params`: `priority= algo= level= dict= deflate.winbits=`
    /// (the keys of the device's kernel version; `deflate.winbits` from
    /// 6.16); unknown keys are ignored, a token without a value is EINVAL.
    fn algorithm_params_store(&self, buf: &str) -> Result<(), AttrError> {
        let keys = self.kernel.algorithm_params_keys();
        let mut prio_param = None;
        let mut level = None;
        let mut winbits = None;
        let mut algo = None;
        let mut dict_path = None;
        for (key, val) in next_args(buf) {
            let val = match val {
                Some(v) if !v.is_empty() => v,
                _ => {
                    return Err(AttrError::new(
                        Errno::EINVAL,
                        format!("'{key}' needs a value (key=value)"),
                    ))
                }
            };
            if !keys.contains(&key.as_str()) {
                continue;
            }
            match key.as_str() {
                "priority" => prio_param = Some(kstrtoint(&val, 10)?),
                "level" => level = Some(kstrtoint(&val, 10)?),
                "algo" => algo = Some(val),
                "dict" => dict_path = Some(val),
                "deflate.winbits" => winbits = Some(kstrtoint(&val, 10)?),
                _ => {}
            }
        }
        let mut cfg = self.lock_config();
        let prio = self.params_priority(&cfg, prio_param, algo.as_deref())?;
        // The params of that priority are reset first (old dictionary dropped).
        let p = &mut cfg.params[prio];
        *p = Params::default();
        if let Some(path) = dict_path {
            let dict = read_dict(&path)?;
            p.dict = Some(Arc::new(dict));
        }
        p.level = level;
        p.deflate_winbits = winbits;
        Ok(())
    }

    /// `mem_limit`: memparse; nothing parsed → EINVAL; stored in pages (rounded up).
    fn mem_limit_store(&self, buf: &str) -> Result<(), AttrError> {
        let (limit, used) = memparse(buf);
        if used == 0 {
            return Err(AttrError::new(
                Errno::EINVAL,
                format!("mem_limit {:?} is not a size", buf.trim_end()),
            ));
        }
        let _cfg = self.lock_config();
        let pages = limit.div_ceil(self.page_size() as u64);
        self.limit_pages.store(pages, Relaxed);
        Ok(())
    }

    /// `mem_used_max`: only "0"; resets the peak to the current pool total.
    fn mem_used_max_store(&self, buf: &str) -> Result<(), AttrError> {
        match kstrtoul(buf, 10) {
            Ok(0) => {}
            _ => {
                return Err(AttrError::new(
                    Errno::EINVAL,
                    "mem_used_max only accepts 0 (reset the peak)",
                ))
            }
        }
        if let Some(m) = self.meta().as_deref() {
            m.stats.max_used_pages.store(m.pool.total_pages(), Relaxed);
        }
        Ok(())
    }

    /// `compact`: any input; runs the allocator's compaction.
    fn compact_store(&self) -> Result<(), AttrError> {
        let g = self.meta();
        let m = g
            .as_deref()
            .ok_or_else(|| AttrError::new(Errno::EINVAL, "device is not initialized"))?;
        m.pool.compact();
        Ok(())
    }

    /// `idle`: `all`, or an age in seconds (base 0) when access times are tracked.
    fn idle_store(&self, buf: &str) -> Result<(), AttrError> {
        let age = if sysfs_streq(buf, "all") {
            None
        } else {
            if !self.tracks_access_time() {
                return Err(AttrError::new(
                    Errno::EINVAL,
                    "idle takes 'all' (age in seconds needs access-time tracking, off on this device)",
                ));
            }
            // 6.18's idle_store parses the age with kstrtoull (u64 seconds); any
            // failure, overflow included, is EINVAL. (The kernel then computes
            // age × NSEC_PER_SEC in u64, which wraps above ~584 years; zmem
            // saturates instead: such an age marks nothing idle.)
            let age = kstrtoull(buf, 0).ok().ok_or_else(|| {
                AttrError::new(
                    Errno::EINVAL,
                    format!(
                        "idle takes 'all' or an age in seconds, not {:?}",
                        buf.trim_end()
                    ),
                )
            })?;
            Some(age)
        };
        self.mark_idle(age).map(|_| ())
    }

    /// `allocator` (zmem extension): zsmalloc, zbud or z3fold, before disksize.
    fn allocator_store(&self, buf: &str) -> Result<(), AttrError> {
        let name = buf.strip_suffix('\n').unwrap_or(buf);
        if !zmem_zpool::NAMES.contains(&name) {
            return Err(AttrError::new(
                Errno::EINVAL,
                format!(
                    "unknown allocator '{name}'; valid allocators: {}",
                    zmem_zpool::NAMES.join(" ")
                ),
            ));
        }
        let mut cfg = self.lock_config();
        if self.is_initialized() {
            return Err(AttrError::new(
                Errno::EBUSY,
                "cannot change the allocator of an initialized device",
            ));
        }
        cfg.allocator = name.to_string();
        Ok(())
    }
}

/// `kernel_read_file_from_path(..., INT_MAX)`: the whole file; unreadable,
/// empty or too large → EINVAL.
fn read_dict(path: &str) -> Result<Vec<u8>, AttrError> {
    let meta = std::fs::metadata(path).map_err(|e| {
        AttrError::new(Errno::EINVAL, format!("cannot read dictionary {path}: {e}"))
    })?;
    if meta.len() == 0 || meta.len() > MAX_DICT {
        return Err(AttrError::new(
            Errno::EINVAL,
            format!(
                "dictionary {path} has {} bytes (must be 1..={MAX_DICT})",
                meta.len()
            ),
        ));
    }
    std::fs::read(path)
        .map_err(|e| AttrError::new(Errno::EINVAL, format!("cannot read dictionary {path}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table and the dispatch agree: every attribute the table gives the
    /// engine has a `show` (readable) or `store` (writable) arm, and no other
    /// name is known.
    #[test]
    fn table_and_dispatch_agree() {
        let unknown = |r: Result<(), AttrError>, name: &str| {
            r.err()
                .is_some_and(|e| e.message.starts_with(&format!("no attribute '{name}'")))
        };
        let dev = Zram::new();
        for a in ZRAM_ATTRS {
            let shown = unknown(dev.show(a.name).map(|_| ()), a.name);
            let stored = unknown(dev.store(a.name, "x"), a.name);
            assert_eq!(shown, !a.engine, "show {}", a.name);
            // block_state (debugfs in the kernel) is only read.
            assert_eq!(stored, !a.engine || a.debugfs, "store {}", a.name);
        }
        assert!(READABLE.contains(&"mm_stat") && !READABLE.contains(&"block_state"));
        assert!(WRITABLE.contains(&"reset") && !READABLE.contains(&"reset"));
        assert!(unknown(dev.show("nope").map(|_| ()), "nope"));
    }

    /// The development-tree name is refused with the released one named.
    #[test]
    fn renamed_attribute_names_its_successor() {
        let dev = Zram::new();
        for e in [
            dev.show("writeback_compressed").unwrap_err(),
            dev.store("writeback_compressed", "1").unwrap_err(),
        ] {
            assert_eq!(e.errno, Errno::ENOENT);
            assert!(
                e.message.contains("'compressed_writeback'"),
                "{}",
                e.message
            );
        }
    }
}
