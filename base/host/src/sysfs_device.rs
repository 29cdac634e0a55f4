//! A kernel zram device as an [`AttrTarget`]: `/sys/block/zramN` under a [`Sys`] root.

use zmem_device::{AttrTarget, CtlClient};
use zmem_kernel::{zram_attr, AttrError, Errno, BLOCK_ATTRS};

use crate::sys::Sys;

/// Whether `name` in a zram directory is one of zram's attributes (in some
/// kernel: `zmem_kernel::ZRAM_ATTRS`) or a block-device file zmem reads
/// (`stat`, `size`); used to tell them from the other block-device files.
fn is_zram_attr(name: &str) -> bool {
    BLOCK_ATTRS.contains(&name) || zram_attr(name).is_some_and(|a| a.in_kernel_sysfs())
}

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
        Ok(v.into_iter().filter(|a| is_zram_attr(a)).collect())
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
