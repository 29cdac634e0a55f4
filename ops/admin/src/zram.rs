//! Reading the kernel's zram devices: `/sys/block/zramN/*`, parsed into named fields.

use std::io;

use zmem_host::Sys;
use zmem_kernel::attr;

use zmem_kernel::{
    parse_comp_algorithm, parse_debug_stat_miss_free, parse_recomp_algorithm, BdStat, IoStat,
    MmStat, SwapEntry,
};

/// Everything zmem reads about one zram device.
#[derive(Debug, Clone)]
pub struct ZramDevice {
    /// `zram0`
    pub name: String,
    pub id: u32,
    pub initialised: bool,
    /// Uncompressed capacity in bytes; 0 when uninitialised.
    pub disksize: u64,
    /// Names the kernel offers in comp_algorithm.
    pub offered: Vec<String>,
    /// Primary algorithm.
    pub algorithm: Option<String>,
    /// `None` when the kernel has no recomp_algorithm (no CONFIG_ZRAM_MULTI_COMP).
    pub recompression: Option<Vec<(u32, String)>>,
    /// `None` when the kernel has no backing_dev (no CONFIG_ZRAM_WRITEBACK);
    /// `Some(None)` when there is none set.
    pub backing_dev: Option<Option<String>>,
    pub mm: MmStat,
    pub io: IoStat,
    pub bd: Option<BdStat>,
    /// Remaining writeback budget in 4 KiB blocks when writeback_limit_enable is on.
    pub writeback_limit: Option<u64>,
    /// debug_stat `miss_free`.
    pub miss_free: Option<u64>,
    /// The /proc/swaps entry when swapped on.
    pub swap: Option<SwapEntry>,
    /// Mount point when mounted.
    pub mount: Option<String>,
}

impl ZramDevice {
    pub fn dir(&self) -> String {
        format!("/sys/block/{}", self.name)
    }
    pub fn dev_path(&self) -> String {
        format!("/dev/{}", self.name)
    }
    pub fn has_multi_comp(&self) -> bool {
        self.recompression.is_some()
    }
    pub fn has_writeback(&self) -> bool {
        self.backing_dev.is_some()
    }
    pub fn in_use(&self) -> bool {
        self.swap.is_some() || self.mount.is_some()
    }
}

/// Names of all zram devices (`zram0`, `zram1`, …) in id order.
pub fn list_devices(sys: &Sys) -> io::Result<Vec<String>> {
    let mut v: Vec<(u32, String)> = sys
        .list("/sys/block")?
        .into_iter()
        .filter_map(|n| Some((n.strip_prefix("zram")?.parse().ok()?, n)))
        .collect();
    v.sort();
    Ok(v.into_iter().map(|(_, n)| n).collect())
}

fn bad(what: &str, name: &str, s: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{name}: cannot parse {what} {s:?}"),
    )
}

/// Read one device.
pub fn read_device(sys: &Sys, name: &str) -> io::Result<ZramDevice> {
    let id: u32 = name
        .strip_prefix("zram")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name} is not a zram device name"),
            )
        })?;
    let dir = format!("/sys/block/{name}");
    if !present(sys, name) {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{dir} does not exist"),
        ));
    }
    let get = |a: &str| sys.read_opt(&format!("{dir}/{a}"));
    let disksize: u64 = get(attr::DISKSIZE)?
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    let initialised = get(attr::INITSTATE)?
        .map(|s| s.trim() == "1")
        .unwrap_or(false)
        || disksize > 0;
    let (offered, algorithm) =
        parse_comp_algorithm(&get(attr::COMP_ALGORITHM)?.unwrap_or_default());
    let recompression = get(attr::RECOMP_ALGORITHM)?.map(|s| parse_recomp_algorithm(&s));
    let backing_dev = get(attr::BACKING_DEV)?.map(|s| {
        let s = s.trim().to_string();
        (s != "none" && !s.is_empty()).then_some(s)
    });
    let mm = match get(attr::MM_STAT)? {
        Some(s) => MmStat::parse(&s).ok_or_else(|| bad(attr::MM_STAT, name, &s))?,
        None => MmStat::default(),
    };
    let io = match get(attr::IO_STAT)? {
        Some(s) => IoStat::parse(&s).ok_or_else(|| bad(attr::IO_STAT, name, &s))?,
        None => IoStat::default(),
    };
    let bd = match get(attr::BD_STAT)? {
        Some(s) => Some(BdStat::parse(&s).ok_or_else(|| bad(attr::BD_STAT, name, &s))?),
        None => None,
    };
    let wb_enabled = get(attr::WRITEBACK_LIMIT_ENABLE)?
        .map(|s| s.trim() == "1")
        .unwrap_or(false);
    let writeback_limit = if wb_enabled {
        get(attr::WRITEBACK_LIMIT)?.and_then(|s| s.trim().parse().ok())
    } else {
        None
    };
    let miss_free = get(attr::DEBUG_STAT)?.and_then(|s| parse_debug_stat_miss_free(&s));
    let dev = format!("/dev/{name}");
    let swap = sys.swaps()?.into_iter().find(|s| s.device == dev);
    let mount = sys.mounts()?.into_iter().find(|m| m.0 == dev).map(|m| m.1);
    Ok(ZramDevice {
        name: name.to_string(),
        id,
        initialised,
        disksize,
        offered,
        algorithm,
        recompression,
        backing_dev,
        mm,
        io,
        bd,
        writeback_limit,
        miss_free,
        swap,
        mount,
    })
}

/// Read every device. A device removed while it is being read (`hot_remove`
/// by another tool, a zram-generator unit stopping) is left out: its
/// directory is gone, and what was read of it is partial.
pub fn read_all(sys: &Sys) -> io::Result<Vec<ZramDevice>> {
    let mut v = Vec::new();
    for name in list_devices(sys)? {
        let read = read_device(sys, &name);
        if !present(sys, &name) {
            continue;
        }
        v.push(read?);
    }
    Ok(v)
}

/// Whether device `name` exists; checked again after reading it, to leave
/// out a device that was removed meanwhile (its figures are partial).
pub fn present(sys: &Sys, name: &str) -> bool {
    sys.exists(&format!("/sys/block/{name}"))
}
