//! The targets of `zmem bench transport`: where a request goes. The
//! engine in process (the zram device `zmem serve` serves, called directly),
//! a kernel zram device hot-added for the run, an NBD server on a Unix
//! socket reached with zmem's own client (one connection per queue slot),
//! or any block device (`/dev/ublkbN` of `zmem serve --ublk`, `/dev/nbdN`
//! of the kernel's nbd-client), read and written with O_DIRECT.
//!
//! A block device is claimed as a backing device is (never mounted or swapped on, exclusive, refused while it holds data
//! unless `--force`, `zmem_host::backing::claim`), because the run overwrites it.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use zmem_codec::{Params, PAGE_SIZE};
use zmem_device::BlockDevice;
use zmem_host::backing::{claim, Claimed};
use zmem_host::HotDevice;
use zmem_kernel::KernelModel;
use zmem_nbd::Client;
use zmem_zram::Zram;

use super::super::device_rows;
use super::super::kernel::configured_device;

/// A target as the user names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    /// `engine`: zmem's zram device in this process.
    Engine,
    /// `kernel`: a kernel zram device hot-added for the run.
    Kernel,
    /// `nbd+unix:///EXPORT?socket=PATH`: an NBD server on a Unix socket.
    Nbd { socket: PathBuf, export: String },
    /// `/dev/X`: a block device, O_DIRECT.
    Block(PathBuf),
}

impl Spec {
    /// Parse `engine`, `kernel`, an `nbd+unix://` URI (as nbdcopy and qemu
    /// write it) or an absolute block device path.
    pub fn parse(s: &str) -> Result<Spec, String> {
        match s {
            "engine" => return Ok(Spec::Engine),
            "kernel" => return Ok(Spec::Kernel),
            _ => {}
        }
        if let Some(rest) = s.strip_prefix("nbd+unix://") {
            let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
            let export = path.strip_prefix('/').unwrap_or(path).to_string();
            let socket = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("socket="))
                .filter(|p| p.starts_with('/'))
                .ok_or_else(|| format!("{s:?}: an NBD URI needs ?socket=/ABSOLUTE/PATH"))?;
            return Ok(Spec::Nbd {
                socket: socket.into(),
                export,
            });
        }
        if s.starts_with('/') {
            return Ok(Spec::Block(s.into()));
        }
        Err(format!(
            "target {s:?}: give engine, kernel, nbd+unix:///EXPORT?socket=PATH or a block device path (/dev/…)"
        ))
    }

    /// The transport's name in the rows: `engine`, `kernel`, `nbd`, or for
    /// a block device what its name says it is (`ublk`, `nbd-client`,
    /// `zram`, else `block`).
    pub fn kind(&self) -> &'static str {
        match self {
            Spec::Engine => "engine",
            Spec::Kernel => "kernel",
            Spec::Nbd { .. } => "nbd",
            Spec::Block(p) => {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if name.starts_with("ublkb") {
                    "ublk"
                } else if name.starts_with("nbd") {
                    "nbd-client"
                } else if name.starts_with("zram") {
                    "zram"
                } else {
                    "block"
                }
            }
        }
    }
}

/// What the engine and kernel targets are built with.
pub struct Build<'a> {
    pub algo: &'a str,
    pub params: &'a Params,
    pub kernel_model: KernelModel,
    /// Device size: the corpus's pages.
    pub pages: usize,
    /// `--force`: a block device holding data may be overwritten.
    pub force: bool,
}

/// An open target: requests of whole pages at page offsets.
/// (Fields drop in order: the open file before the device or claim it is on.)
pub enum Target {
    Engine(Box<Zram>),
    Kernel { file: File, dev: HotDevice },
    Nbd(Mutex<Vec<Client>>),
    Block { file: File, _claim: Claimed },
}

fn direct(path: &Path) -> Result<File, String> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| format!("open {}: {e}", path.display()))
}

impl Target {
    /// Open (or create) a target with `conns` NBD connections for NBD.
    pub fn open(spec: &Spec, b: &Build, conns: usize) -> Result<Target, String> {
        let bytes = (b.pages * PAGE_SIZE) as u64;
        match spec {
            Spec::Engine => Zram::for_kernel(b.kernel_model)
                .name("zram-transport")
                .algorithm(b.algo, b.params.clone())
                .disksize(bytes)
                .build()
                .map(|z| Target::Engine(Box::new(z)))
                .map_err(|e| e.message),
            Spec::Kernel => {
                let opts = device_rows::Options {
                    params: b.params.clone(),
                    ..Default::default()
                };
                let dev = configured_device(b.algo, b.pages, &opts)?;
                let file = direct(dev.dev_path())?;
                Ok(Target::Kernel { file, dev })
            }
            Spec::Nbd { socket, export } => {
                let clients = (0..conns.max(1))
                    .map(|_| Client::connect(socket, export))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| format!("NBD {}: {e}", socket.display()))?;
                Ok(Target::Nbd(Mutex::new(clients)))
            }
            Spec::Block(path) => {
                let claim = claim(path, b.force)
                    .map_err(|e| format!("{e} (zmem bench transport overwrites it)"))?;
                if claim.bytes < bytes {
                    return Err(format!(
                        "{} holds {} bytes; the corpus needs {bytes}",
                        path.display(),
                        claim.bytes
                    ));
                }
                let file = direct(&claim.path)?;
                Ok(Target::Block {
                    file,
                    _claim: claim,
                })
            }
        }
    }

    fn client<T>(
        pool: &Mutex<Vec<Client>>,
        f: impl FnOnce(&mut Client) -> Result<T, String>,
    ) -> Result<T, String> {
        let mut c = pool
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .ok_or("more requests in flight than NBD connections")?;
        let r = f(&mut c);
        pool.lock().unwrap_or_else(|e| e.into_inner()).push(c);
        r
    }

    /// Read `buf.len()` bytes at page `index`.
    pub fn read(&self, index: usize, buf: &mut [u8]) -> Result<(), String> {
        let off = (index * PAGE_SIZE) as u64;
        match self {
            Target::Engine(z) => z.read_at(off, buf).map_err(|e| e.to_string()),
            Target::Kernel { file, .. } | Target::Block { file, .. } => {
                file.read_exact_at(buf, off).map_err(|e| e.to_string())
            }
            Target::Nbd(pool) => Self::client(pool, |c| {
                match c.read(off, buf.len() as u32).map_err(|e| e.to_string())? {
                    Ok(data) if data.len() == buf.len() => {
                        buf.copy_from_slice(&data);
                        Ok(())
                    }
                    Ok(_) => Err("short NBD read".into()),
                    Err(errno) => Err(format!("NBD read error {errno}")),
                }
            }),
        }
    }

    /// Write `data` at page `index`.
    pub fn write(&self, index: usize, data: &[u8]) -> Result<(), String> {
        let off = (index * PAGE_SIZE) as u64;
        match self {
            Target::Engine(z) => z.write_at(off, data).map_err(|e| e.to_string()),
            Target::Kernel { file, .. } | Target::Block { file, .. } => {
                file.write_all_at(data, off).map_err(|e| e.to_string())
            }
            Target::Nbd(pool) => Self::client(pool, |c| {
                match c.write(off, data).map_err(|e| e.to_string())? {
                    0 => Ok(()),
                    errno => Err(format!("NBD write error {errno}")),
                }
            }),
        }
    }

    /// The device path or socket the requests go to, for the rows.
    pub fn address(spec: &Spec, t: &Target) -> Option<String> {
        match (spec, t) {
            (_, Target::Kernel { dev, .. }) => Some(dev.dev_path().display().to_string()),
            (Spec::Nbd { socket, export }, _) => {
                Some(format!("nbd+unix:///{export}?socket={}", socket.display()))
            }
            (Spec::Block(p), _) => Some(p.display().to_string()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_as_users_write_them() {
        assert_eq!(Spec::parse("engine"), Ok(Spec::Engine));
        assert_eq!(Spec::parse("kernel"), Ok(Spec::Kernel));
        assert_eq!(
            Spec::parse("nbd+unix:///vm1?socket=/run/zmem/vm1.sock"),
            Ok(Spec::Nbd {
                socket: "/run/zmem/vm1.sock".into(),
                export: "vm1".into()
            })
        );
        assert_eq!(
            Spec::parse("nbd+unix://?socket=/s").map(|s| s.kind()),
            Ok("nbd")
        );
        assert!(Spec::parse("nbd+unix:///x").is_err());
        assert!(Spec::parse("nbd+unix:///x?socket=relative").is_err());
        assert!(Spec::parse("dev/sda").is_err());
        for (p, k) in [
            ("/dev/ublkb0", "ublk"),
            ("/dev/nbd3", "nbd-client"),
            ("/dev/zram1", "zram"),
            ("/dev/vdb", "block"),
        ] {
            assert_eq!(Spec::parse(p).unwrap().kind(), k);
        }
    }

    #[test]
    fn a_block_target_holding_data_is_refused() {
        let dir = zmem_files::testutil::ScratchDir::new("transport-claim");
        let f = dir.path().join("img");
        std::fs::write(&f, vec![7u8; 1 << 20]).unwrap();
        let b = Build {
            algo: "lz4",
            params: &Params::default(),
            kernel_model: KernelModel::newest(),
            pages: 16,
            force: false,
        };
        let e = Target::open(&Spec::Block(f.clone()), &b, 1).err().unwrap();
        assert!(e.contains("overwrites"), "{e}");
    }
}
