//! The attribute interface in the zram engine's style: parameters under the
//! names of `/sys/module/zswap/parameters/`, statistics under the debugfs
//! names, plus `meminfo` (the Zswap/Zswapped pair).

use std::sync::Arc;

use zmem_codec::{Params as CodecParams, StreamPool};
use zmem_kernel::{AttrError, Errno};

use crate::engine::Zswap;
use crate::params;

/// Writable parameters: the kernel's names, then zmem's extensions.
pub const PARAMS: [&str; 8] = [
    "enabled",
    "compressor",
    "max_pool_percent",
    "accept_threshold_percent",
    "shrinker_enabled",
    "zpool",
    "max_pool_bytes",
    "incompressible",
];

/// Read-only names besides the debugfs ones.
pub const EXTRA_STATS: [&str; 7] = [
    "meminfo",
    "zswpin",
    "zswpout",
    "zswpwb",
    "zero_pages",
    "backing_reads",
    "backing_writes",
];

fn yn(b: bool) -> &'static str {
    if b {
        "Y"
    } else {
        "N"
    }
}

impl Zswap {
    /// Every attribute name: the parameters, the debugfs statistics of the
    /// engine's kernel version, the others.
    pub fn attr_names(&self) -> Vec<&'static str> {
        PARAMS
            .iter()
            .copied()
            .chain(self.kernel.zswap_stats())
            .chain(EXTRA_STATS.iter().copied())
            .collect()
    }

    /// Reads an attribute (a trailing newline, as sysfs shows it).
    pub fn attr_read(&self, name: &str) -> Result<String, AttrError> {
        let p = self.params();
        let v = match name {
            "enabled" => yn(p.enabled).to_string(),
            "compressor" => p.compressor,
            "max_pool_percent" => p.max_pool_percent.to_string(),
            "accept_threshold_percent" => p.accept_threshold_percent.to_string(),
            "shrinker_enabled" => yn(p.shrinker_enabled).to_string(),
            "zpool" => p.zpool,
            "max_pool_bytes" => p.max_pool_bytes.to_string(),
            "incompressible" => p.incompressible.name().to_string(),
            "meminfo" => return Ok(self.stats().meminfo()),
            other => match self.stats().get(other) {
                Some(_) if !self.attr_names().contains(&other) => {
                    return Err(AttrError::new(
                        Errno::ENOENT,
                        format!(
                            "{other}: kernel {}'s zswap has no such statistic",
                            self.kernel
                        ),
                    ))
                }
                Some(v) => v.to_string(),
                None => {
                    return Err(AttrError::new(
                        Errno::ENOENT,
                        format!("no attribute {other:?}"),
                    ))
                }
            },
        };
        Ok(format!("{v}\n"))
    }

    /// Writes a parameter with the kernel setter's checks; a bad value is an
    /// error (EINVAL, ERANGE, ENOENT for an unknown compressor/allocator) and
    /// changes nothing.
    pub fn attr_write(&self, name: &str, value: &str) -> Result<(), AttrError> {
        match name {
            "enabled" => {
                let v = params::param_bool(name, value)?;
                self.set(|p| p.enabled = v);
            }
            "shrinker_enabled" => {
                let v = params::param_bool(name, value)?;
                self.set(|p| p.shrinker_enabled = v);
            }
            "max_pool_percent" => {
                let v = params::parse_uint(name, value)?;
                self.set(|p| p.max_pool_percent = v);
            }
            "accept_threshold_percent" => {
                // A plain `uint` module parameter in 6.18 (150 is accepted), as on
                // the kernel of this machine: only non-numbers and > u32::MAX are refused.
                let v = params::parse_uint(name, value)?;
                self.set(|p| p.accept_threshold_percent = v);
            }
            "max_pool_bytes" => {
                let v = params::param_size(name, value)?;
                self.set(|p| p.max_pool_bytes = v);
            }
            "incompressible" => {
                let v = params::parse_incompressible(value)?;
                self.set(|p| p.incompressible = v);
            }
            "compressor" => self.set_compressor(value)?,
            "zpool" => {
                let z = params::parse_zpool(value)?;
                let mut inner = self.lock();
                if inner.pool.name() != z {
                    if !inner.tree.is_empty() {
                        return Err(AttrError::new(
                            Errno::EBUSY,
                            format!(
                                "zpool: {} entries are stored in {}; switching needs an empty pool",
                                inner.tree.len(),
                                inner.pool.name()
                            ),
                        ));
                    }
                    inner.pool = crate::engine::create_pool(z, &self.kernel)?;
                }
                drop(inner);
                self.set(|p| p.zpool = z.to_string());
            }
            other if self.attr_names().contains(&other) => {
                return Err(AttrError::new(
                    Errno::EACCES,
                    format!("{other} is read-only"),
                ));
            }
            other => {
                return Err(AttrError::new(
                    Errno::ENOENT,
                    format!("no attribute {other:?}"),
                ))
            }
        }
        Ok(())
    }

    fn set(&self, f: impl FnOnce(&mut crate::Params)) {
        f(&mut self.params.write().unwrap_or_else(|e| e.into_inner()));
    }

    /// `compressor`: finds or creates the codec and makes it current; entries
    /// stored with the old one keep decompressing with it.
    fn set_compressor(&self, value: &str) -> Result<(), AttrError> {
        let backend = params::parse_compressor(value)?;
        let mut codecs = self.codecs.write().unwrap_or_else(|e| e.into_inner());
        let i = match codecs
            .iter()
            .position(|c| c.backend().name() == backend.name())
        {
            Some(i) => i,
            None => {
                let sp = StreamPool::new(backend, CodecParams::default())
                    .map_err(|e| AttrError::new(Errno::EINVAL, format!("compressor: {e}")))?;
                codecs.push(Arc::new(sp));
                codecs.len() - 1
            }
        };
        *self
            .current_codec
            .write()
            .unwrap_or_else(|e| e.into_inner()) = i;
        drop(codecs);
        self.set(|p| p.compressor = backend.name().to_string());
        Ok(())
    }
}
