//! A kernel zram device as an [`AttrTarget`]: `/sys/block/zramN` under a [`Sys`] root.

use zmem_device::{AttrTarget, CtlClient};
use zmem_kernel::{AttrError, Errno};

use crate::sys::Sys;

/// Attributes every zram device has; used to tell a zram directory's attributes
/// from the generic block-device files beside them.
const ZRAM_ATTRS: [&str; 24] = [
    "algorithm_params",
    "backing_dev",
    "bd_stat",
    "comp_algorithm",
    "compact",
    "debug_stat",
    "disksize",
    "idle",
    "initstate",
    "io_stat",
    "max_comp_streams",
    "mem_limit",
    "mem_used_max",
    "mm_stat",
    "recomp_algorithm",
    "recompress",
    "reset",
    "writeback",
    "writeback_batch_size",
    "writeback_compressed",
    "writeback_limit",
    "writeback_limit_enable",
    "stat",
    "size",
];

/// A kernel zram device: `/sys/block/zramN` (under a [`Sys`] root).
#[derive(Debug, Clone)]
pub struct SysfsDevice {
    sys: Sys,
    name: String,
}

impl SysfsDevice {
    pub fn new(sys: &Sys, name: &str) -> SysfsDevice {
        SysfsDevice {
            sys: sys.clone(),
            name: name.to_string(),
        }
    }
    fn path(&self, attr: &str) -> Result<String, AttrError> {
        if attr.is_empty() || attr.contains('/') || attr.starts_with('.') {
            return Err(AttrError::new(
                Errno::EINVAL,
                format!("bad attribute name {attr:?}"),
            ));
        }
        Ok(format!("/sys/block/{}/{}", self.name, attr))
    }
}

impl AttrTarget for SysfsDevice {
    fn label(&self) -> String {
        self.name.clone()
    }
    fn read_attr(&self, name: &str) -> Result<String, AttrError> {
        let p = self.path(name)?;
        self.sys
            .read(&p)
            .map_err(|e| AttrError::io(&e, format!("read {p}")))
    }
    fn write_attr(&self, name: &str, value: &str) -> Result<(), AttrError> {
        let p = self.path(name)?;
        self.sys
            .write(&p, value)
            .map_err(|e| AttrError::io(&e, format!("write {value:?} to {p}")))
    }
    fn list_attrs(&self) -> Result<Vec<String>, AttrError> {
        let dir = format!("/sys/block/{}", self.name);
        let v = self
            .sys
            .list(&dir)
            .map_err(|e| AttrError::io(&e, format!("list {dir}")))?;
        Ok(v.into_iter()
            .filter(|a| ZRAM_ATTRS.contains(&a.as_str()))
            .collect())
    }
}

/// Control sockets of running `zmem serve` instances: `*.ctl` in `dir` (default /run/zmem).
pub fn find_ctl_sockets(sys: &Sys, dir: &str) -> Vec<CtlClient> {
    sys.list(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.ends_with(".ctl"))
        .map(|n| CtlClient::new(sys.path(&format!("{dir}/{n}"))))
        .collect()
}
