//! `zmem ctl TARGET [ATTR [VALUE]]`: read and write zram attributes of a
//! `zmem serve` device (through its control socket) or a kernel zram device
//! (through /sys/block/zramN), with the same names, syntax and errors.

use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use zmem_device::{AttrTarget, CtlClient};

use zmem_host::{Sys, SysfsDevice};

use zmem_kernel::{memparse, Errno};

/// Arguments of `zmem ctl`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A control socket path, a served device's name (/run/zmem/NAME.ctl),
    /// a kernel device (zram0) or its sysfs directory (/sys/block/zram0)
    pub target: String,
    /// Attribute name, as in /sys/block/zramN/ (omit to print every readable one)
    pub attr: Option<String>,
    /// Value to write (omit to read); several words are joined with spaces
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub value: Vec<String>,
    /// Directory of served devices' control sockets
    #[arg(long, default_value = "/run/zmem")]
    pub run_dir: PathBuf,
    /// How long to wait for a served device's reply [default: 10s for reads, 600s for writes,
    /// which run their operation (writeback, recompress) before answering]
    #[arg(long, value_name = "DURATION", value_parser = crate::args::duration)]
    pub timeout: Option<std::time::Duration>,
}

/// A control socket's client, with `--timeout` if given.
fn client(p: &Path, timeout: Option<std::time::Duration>) -> CtlClient {
    let c = CtlClient::new(p);
    match timeout {
        Some(t) => c.with_timeout(t),
        None => c,
    }
}

fn is_socket(p: &Path) -> bool {
    std::fs::metadata(p)
        .map(|m| m.file_type().is_socket())
        .unwrap_or(false)
}

fn is_zram_name(s: &str) -> bool {
    s.strip_prefix("zram")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Resolve TARGET to an attribute target.
fn resolve(
    target: &str,
    run_dir: &Path,
    timeout: Option<std::time::Duration>,
) -> anyhow::Result<Box<dyn AttrTarget>> {
    let p = Path::new(target);
    if is_socket(p) {
        return Ok(Box::new(client(p, timeout)));
    }
    let base = p.file_name().and_then(|s| s.to_str()).unwrap_or("");
    if (target.starts_with("/sys/") || !target.contains('/')) && is_zram_name(base) {
        if !Path::new("/sys/block").join(base).is_dir() {
            anyhow::bail!("{target}: ENODEV: no kernel device /sys/block/{base}");
        }
        return Ok(Box::new(SysfsDevice::new(&Sys::real(), base)));
    }
    if !target.contains('/') {
        let name = target.strip_suffix(".ctl").unwrap_or(target);
        let sock = run_dir.join(format!("{name}.ctl"));
        if is_socket(&sock) {
            return Ok(Box::new(client(&sock, timeout)));
        }
        anyhow::bail!(
            "{target}: ENOENT: no control socket {} and no kernel device of that name",
            sock.display()
        );
    }
    anyhow::bail!("{target}: ENOENT: not a control socket, a zram device or a served device's name")
}

/// What to tell the user when the kernel would read less of `value` than
/// they wrote (`mem_limit 12Q` sets 12 bytes). `ctl` still writes the value
/// unchanged: it speaks the kernel's syntax on purpose.
fn memparse_warning(attr: &str, value: &str) -> Option<String> {
    // Attributes the kernel parses with `memparse`, which stops at the first
    // character it does not know and ignores the rest.
    if !zmem_kernel::zram_attr(attr).is_some_and(|a| a.memparse) {
        return None;
    }
    let body = value.trim_end_matches('\n');
    let (v, used) = memparse(body);
    (used > 0 && used < body.len()).then(|| {
        format!(
            "the kernel reads {attr} {body:?} as {v} bytes and ignores {:?}",
            &body[used..]
        )
    })
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let t = resolve(&a.target, &a.run_dir, a.timeout)?;
    let Some(attr) = a.attr else {
        // Every readable attribute, as `grep . /sys/block/zram0/*` would show.
        let names = t
            .list_attrs()
            .map_err(|e| anyhow::anyhow!("{}: list: {e}", t.label()))?;
        let mut out = std::io::stdout().lock();
        for n in names {
            match t.read_attr(&n) {
                Ok(v) => {
                    let mut lines = v.lines();
                    let mut text = format!("{n}: {}\n", lines.next().unwrap_or(""));
                    for l in lines {
                        text.push_str(&format!("{:width$}  {l}\n", "", width = n.len()));
                    }
                    // A closed pipe (`| head`) ends the listing quietly.
                    if out.write_all(text.as_bytes()).is_err() {
                        return Ok(());
                    }
                }
                // Write-only attributes (reset, compact, idle, …).
                Err(e) if matches!(e.errno, Errno::EACCES | Errno::EPERM | Errno::EIO) => {}
                Err(e) => eprintln!("zmem ctl: {n}: {e}"),
            }
        }
        return Ok(());
    };
    if a.value.is_empty() {
        let v = t
            .read_attr(&attr)
            .map_err(|e| anyhow::anyhow!("{}: {attr}: {e}", t.label()))?;
        let _ = writeln!(std::io::stdout(), "{v}");
    } else {
        let value = a.value.join(" ");
        if let Some(w) = memparse_warning(&attr, &value) {
            eprintln!("zmem ctl: warning: {w}");
        }
        t.write_attr(&attr, &value)
            .map_err(|e| anyhow::anyhow!("{}: {attr}: {e}", t.label()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::memparse_warning;

    #[test]
    fn warns_when_the_kernel_ignores_trailing_text() {
        let w = memparse_warning("mem_limit", "12Q").unwrap();
        assert!(w.contains("as 12 bytes") && w.contains("\"Q\""), "{w}");
        assert!(memparse_warning("disksize", "1.5G")
            .unwrap()
            .contains("as 1 bytes"));
        assert_eq!(memparse_warning("mem_limit", "64M"), None);
        assert_eq!(
            memparse_warning("mem_limit", "x"),
            None,
            "nothing parsed: the kernel refuses it"
        );
        assert_eq!(memparse_warning("comp_algorithm", "lz4x"), None);
    }
}
