//! Attributes by their sysfs names: the "attribute target" ([`AttrTarget`]) (errors are
//! `zmem_kernel::AttrError`), implemented by a kernel zram
//! directory (`zmem_host::SysfsDevice`), by the client of a `zmem serve` control socket
//! ([`CtlClient`](crate::CtlClient), protocol in docs/ctl-protocol.md) and by
//! every engine device ([`BlockDevice`](crate::BlockDevice)), so the policy
//! engine, `zmem ctl` and the exporter drive all of them the same way.

use std::sync::Arc;

use zmem_kernel::AttrError;

use crate::BlockDevice;

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
