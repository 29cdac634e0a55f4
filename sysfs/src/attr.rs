//! Attributes by their sysfs names: the one error type ([`AttrError`]) and
//! the "attribute target" ([`AttrTarget`]), implemented by a kernel zram
//! directory ([`SysfsDevice`]), by the client of a `zmem serve` control socket
//! ([`CtlClient`](crate::CtlClient), protocol in docs/ctl-protocol.md) and by
//! every engine device ([`BlockDevice`](crate::BlockDevice)), so the policy
//! engine, `zmem ctl` and the exporter drive all of them the same way.

use std::sync::Arc;

use crate::sys::Sys;
use crate::{BlockDevice, Errno};

/// An attribute read or write that failed: the kernel's errno plus a message
/// that says why in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{errno}: {message}")]
pub struct AttrError {
    pub errno: Errno,
    pub message: String,
}

impl AttrError {
    pub fn new(errno: Errno, message: impl Into<String>) -> Self {
        AttrError {
            errno,
            message: message.into(),
        }
    }

    /// A failed read or write of a file: its errno, and `what` with the error in words.
    pub fn io(e: &std::io::Error, what: impl std::fmt::Display) -> Self {
        AttrError {
            errno: Errno::from_io(e),
            message: format!("{what}: {e}"),
        }
    }
}

/// Something with zram attributes.
pub trait AttrTarget {
    /// A name for logs and metric labels (`zram0`, `serve:vm1`).
    fn label(&self) -> String;
    /// Read an attribute (trailing newline removed).
    fn read_attr(&self, name: &str) -> Result<String, AttrError>;
    /// Write an attribute.
    fn write_attr(&self, name: &str, value: &str) -> Result<(), AttrError>;
    /// The attribute names there are.
    fn list_attrs(&self) -> Result<Vec<String>, AttrError>;
    /// Whether an attribute exists.
    fn has_attr(&self, name: &str) -> bool {
        self.list_attrs()
            .map(|v| v.iter().any(|a| a == name))
            .unwrap_or(false)
    }
}

/// Wraps a target so writes are only logged by the caller (`--dry-run`).
pub struct DryRun<'a>(pub &'a dyn AttrTarget);

impl AttrTarget for DryRun<'_> {
    fn label(&self) -> String {
        self.0.label()
    }
    fn read_attr(&self, name: &str) -> Result<String, AttrError> {
        self.0.read_attr(name)
    }
    fn write_attr(&self, _name: &str, _value: &str) -> Result<(), AttrError> {
        Ok(())
    }
    fn list_attrs(&self) -> Result<Vec<String>, AttrError> {
        self.0.list_attrs()
    }
}

/// An engine device in this process (a zram device, zswap's block view) as an
/// attribute target: what the control socket would answer, without a socket.
pub struct DeviceTarget<D: ?Sized> {
    label: String,
    dev: Arc<D>,
}

impl<D: BlockDevice + ?Sized> DeviceTarget<D> {
    pub fn new(label: impl Into<String>, dev: Arc<D>) -> Self {
        DeviceTarget {
            label: label.into(),
            dev,
        }
    }
}

impl<D: BlockDevice + ?Sized> AttrTarget for DeviceTarget<D> {
    fn label(&self) -> String {
        self.label.clone()
    }
    fn read_attr(&self, name: &str) -> Result<String, AttrError> {
        let s = self.dev.attr_read(name)?;
        Ok(s.strip_suffix('\n').unwrap_or(&s).to_string())
    }
    fn write_attr(&self, name: &str, value: &str) -> Result<(), AttrError> {
        // As `echo VALUE > ATTR` (and the control socket): the value ends with a newline.
        self.dev.attr_write(name, &format!("{value}\n"))
    }
    /// Readable and writable names, once each (a sysfs directory's files).
    fn list_attrs(&self) -> Result<Vec<String>, AttrError> {
        let mut v: Vec<String> = self
            .dev
            .attr_names()
            .into_iter()
            .map(str::to_string)
            .collect();
        for w in self.dev.attr_writable() {
            if !v.iter().any(|n| n == w) {
                v.push(w.to_string());
            }
        }
        v.sort();
        Ok(v)
    }
}

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
