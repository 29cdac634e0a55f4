//! `zmem persist`: the files that make a configuration survive a reboot, written into a root
//! tree: zram-generator.conf for the devices, a sysctl.d file, a tmpfiles.d file for zswap, a
//! swap unit for the disk tier, and a unit running `zmem policy` when there is a [policy].

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use zmem_conf::Config;

pub const MARK: &str = "# Written by `zmem persist`";

/// A file to write: path inside the root tree, contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    pub path: String,
    pub contents: String,
}

/// systemd path escaping (`systemd-escape --path`).
pub fn escape_path(p: &str) -> String {
    let t = p.trim_matches('/');
    if t.is_empty() {
        return "-".into();
    }
    let mut out = String::new();
    for (i, c) in t.chars().enumerate() {
        match c {
            '/' => out.push('-'),
            c if c.is_ascii_alphanumeric() || c == '_' || (c == '.' && i > 0) => out.push(c),
            c => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            }
        }
    }
    out
}

/// The files for a configuration (nothing written yet).
pub fn files(cfg: &Config, zmem_binary: &str) -> Vec<File> {
    let src = cfg.file.display();
    let mut v = Vec::new();
    if !cfg.devices.is_empty() {
        let mut s = format!("{MARK} from {src}; read by systemd's zram-generator at boot.\n");
        for d in &cfg.devices {
            if d.fs_type == "none" {
                s.push_str(&format!(
                    "\n# [{}] has fs-type = none (a zmem extension) and is not created at boot.\n",
                    d.name
                ));
                continue;
            }
            s.push_str(&format!("\n[{}]\n", d.name));
            for (k, val) in &d.raw {
                s.push_str(&format!("{k} = {val}\n"));
            }
        }
        v.push(File {
            path: "/etc/systemd/zram-generator.conf".into(),
            contents: s,
        });
    }
    if !cfg.sysctls.is_empty() {
        let mut s = format!("{MARK} from {src}.\n");
        for e in &cfg.sysctls {
            s.push_str(&format!("{} = {}\n", e.key, e.value));
        }
        v.push(File {
            path: "/etc/sysctl.d/90-zmem.conf".into(),
            contents: s,
        });
    }
    if !cfg.zswap.is_empty() {
        let mut s =
            format!("{MARK} from {src}: zswap parameters, set by systemd-tmpfiles at boot.\n");
        // compressor before enabled, so the first pool is created with the right compressor.
        let mut entries: Vec<_> = cfg.zswap.iter().collect();
        entries.sort_by_key(|e| e.key == "enabled");
        for e in entries {
            s.push_str(&format!(
                "w- /sys/module/zswap/parameters/{} - - - - {}\n",
                e.key, e.value
            ));
        }
        v.push(File {
            path: "/etc/tmpfiles.d/zmem-zswap.conf".into(),
            contents: s,
        });
    }
    if let Some(ds) = &cfg.disk_swap {
        let unit = format!("{}.swap", escape_path(&ds.device));
        let s = format!(
            "{MARK} from {src}: the disk tier below zram.\n[Unit]\nDescription=zmem disk swap tier {}\n\n[Swap]\nWhat={}\nPriority={}\n\n[Install]\nWantedBy=swap.target\n",
            ds.device, ds.device, ds.priority
        );
        v.push(File {
            path: format!("/etc/systemd/system/{unit}"),
            contents: s,
        });
    }
    if !cfg.policy.is_empty() {
        let mut conf = String::new();
        if let Ok(text) = fs::read_to_string(&cfg.file) {
            conf = text;
        }
        v.push(File {
            path: "/etc/zmem/zmem.conf".into(),
            contents: conf,
        });
        let s = format!(
            "{MARK} from {src}.\n[Unit]\nDescription=zmem policy: idle marking, recompression and writeback for zram\nAfter=swap.target\n\n[Service]\nExecStart={zmem_binary} policy --config /etc/zmem/zmem.conf\nRestart=on-failure\nNice=10\nIOSchedulingClass=idle\n\n[Install]\nWantedBy=multi-user.target\n"
        );
        v.push(File {
            path: "/etc/systemd/system/zmem-policy.service".into(),
            contents: s,
        });
    }
    v
}

/// Write the files under `root` (through the host layer: each written whole, atomically).
/// Refuses to replace a file zmem did not write unless `force`.
pub fn write(root: &Path, files: &[File], force: bool) -> io::Result<Vec<PathBuf>> {
    let sys = zmem_host::Sys::new(root);
    let mut written = Vec::new();
    for f in files {
        let p = sys.path(&f.path);
        if let Ok(old) = fs::read_to_string(&p) {
            let ours = old.starts_with(MARK) || f.path == "/etc/zmem/zmem.conf";
            if !ours && !force {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "{} exists and was not written by zmem; use --force to replace it",
                        p.display()
                    ),
                ));
            }
        }
        sys.write_file(&f.path, &f.contents)?;
        written.push(p);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(escape_path("/swapfile"), "swapfile");
        assert_eq!(escape_path("/dev/vdb2"), "dev-vdb2");
        assert_eq!(escape_path("/var/swap-file"), "var-swap\\x2dfile");
    }
}
