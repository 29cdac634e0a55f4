//! The "attribute target": read and write a zram attribute by its sysfs name.
//!
//! Implemented by a kernel zram device directory ([`SysfsDevice`]) and by the
//! control socket of a `zmem serve` device ([`CtlClient`], protocol in
//! docs/ctl-protocol.md), so the policy daemon and the exporter drive both the
//! same way.

use std::fmt;
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sys::{errno_name, Sys};

/// An attribute operation that failed, with the kernel-style errno name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttrError {
    /// `EINVAL`, `EBUSY`, `ENOENT` (no such attribute), `EIO`…
    pub errno: String,
    pub message: String,
}

impl fmt::Display for AttrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.errno, self.message)
    }
}

impl std::error::Error for AttrError {}

impl AttrError {
    pub fn new(errno: &str, message: impl Into<String>) -> AttrError {
        AttrError {
            errno: errno.to_string(),
            message: message.into(),
        }
    }
    fn io(e: &io::Error, what: String) -> AttrError {
        AttrError {
            errno: errno_name(e).to_string(),
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
                "EINVAL",
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

/// Client of a `zmem serve` control socket (docs/ctl-protocol.md).
#[derive(Debug, Clone)]
pub struct CtlClient {
    path: PathBuf,
    timeout: Duration,
}

impl CtlClient {
    pub fn new(path: impl Into<PathBuf>) -> CtlClient {
        CtlClient {
            path: path.into(),
            timeout: Duration::from_secs(10),
        }
    }
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One request, one reply: `Ok(payload)` or the server's error.
    pub fn request(&self, line: &str) -> Result<String, AttrError> {
        if line.contains('\n') {
            return Err(AttrError::new("EINVAL", "request must be one line"));
        }
        let io_err =
            |e: io::Error| AttrError::io(&e, format!("control socket {}", self.path.display()));
        let mut s = UnixStream::connect(&self.path).map_err(io_err)?;
        s.set_read_timeout(Some(self.timeout)).map_err(io_err)?;
        s.set_write_timeout(Some(self.timeout)).map_err(io_err)?;
        s.write_all(format!("{line}\n").as_bytes())
            .map_err(io_err)?;
        s.shutdown(std::net::Shutdown::Write).map_err(io_err)?;
        let mut reply = Vec::new();
        s.take(16 << 20).read_to_end(&mut reply).map_err(io_err)?;
        parse_reply(&reply)
    }
}

/// Parse a reply: `ok\n<payload>` or `err ERRNO_NAME message\n`.
pub fn parse_reply(reply: &[u8]) -> Result<String, AttrError> {
    let text =
        std::str::from_utf8(reply).map_err(|_| AttrError::new("EPROTO", "reply is not UTF-8"))?;
    if let Some(payload) = text.strip_prefix("ok\n") {
        return Ok(payload.strip_suffix('\n').unwrap_or(payload).to_string());
    }
    if text == "ok" {
        return Ok(String::new());
    }
    if let Some(rest) = text.strip_prefix("err ") {
        let rest = rest.trim_end_matches('\n');
        let (errno, msg) = rest.split_once(' ').unwrap_or((rest, ""));
        if !errno.is_empty()
            && errno
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        {
            return Err(AttrError::new(errno, msg));
        }
    }
    let shown: String = text.chars().take(80).collect();
    Err(AttrError::new(
        "EPROTO",
        format!("malformed reply {shown:?}"),
    ))
}

fn check_token(s: &str, what: &str) -> Result<(), AttrError> {
    if s.is_empty() || s.contains(char::is_whitespace) {
        return Err(AttrError::new("EINVAL", format!("bad {what} {s:?}")));
    }
    Ok(())
}

impl AttrTarget for CtlClient {
    fn label(&self) -> String {
        let stem = self
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("serve:{stem}")
    }
    fn read_attr(&self, name: &str) -> Result<String, AttrError> {
        check_token(name, "attribute name")?;
        self.request(&format!("read {name}"))
    }
    fn write_attr(&self, name: &str, value: &str) -> Result<(), AttrError> {
        check_token(name, "attribute name")?;
        if value.contains('\n') {
            return Err(AttrError::new("EINVAL", "value must be one line"));
        }
        self.request(&format!("write {name} {value}")).map(|_| ())
    }
    fn list_attrs(&self) -> Result<Vec<String>, AttrError> {
        Ok(self
            .request("list")?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies() {
        assert_eq!(parse_reply(b"ok\n1 2 3\n").unwrap(), "1 2 3");
        assert_eq!(parse_reply(b"ok\n").unwrap(), "");
        assert_eq!(parse_reply(b"ok\na\nb\n").unwrap(), "a\nb");
        let e = parse_reply(b"err EBUSY device is initialised\n").unwrap_err();
        assert_eq!(
            (e.errno.as_str(), e.message.as_str()),
            ("EBUSY", "device is initialised")
        );
        assert_eq!(parse_reply(b"hello").unwrap_err().errno, "EPROTO");
        assert_eq!(
            parse_reply(b"err lower case\n").unwrap_err().errno,
            "EPROTO"
        );
        assert_eq!(parse_reply(&[0xff, 0xfe]).unwrap_err().errno, "EPROTO");
    }
}
