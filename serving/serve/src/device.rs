//! The engine device of `zmem serve`, configured through its attributes in the
//! kernel's order (everything before disksize), and its maintenance worker.
//! The backing device or file is checked and claimed first
//! (`zmem_host::backing`: never mounted, swapped on, shared or holding data
//! without `--force`), and the claim is held while the device lives.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context};
use zmem_device::BlockDevice;
use zmem_host::backing::Claimed;
use zmem_kernel::attr;
use zmem_kernel::Errno;
use zmem_policy::{Maintained, Policy};
use zmem_zram::Zram;

/// What the device is: the flags of `zmem serve` that shape the engine.
#[derive(Debug, Clone)]
pub struct EngineSpec {
    /// `zram`, or `zswap` (a compressed cache in front of `backing_dev`).
    pub mode: String,
    /// disksize in bytes.
    pub size: u64,
    /// comp_algorithm (zswap's compressor).
    pub algo: String,
    /// algorithm_params of the primary algorithm.
    pub params: Option<String>,
    /// recomp_algorithm, priority 1, 2, 3 in order.
    pub recomp: Vec<String>,
    /// zsmalloc, zbud or z3fold.
    pub allocator: String,
    /// mem_limit (zswap's max_pool_bytes).
    pub mem_limit: Option<u64>,
    /// backing_dev (zram), or the swap device zswap caches.
    pub backing_dev: Option<PathBuf>,
    /// Use a backing device or file that holds data (zswap: or is too small).
    pub force: bool,
    /// fast_algorithm.
    pub fast: Option<String>,
    /// When writes use the fast path: off, always or pressure[:N%][,RATE/s].
    pub fast_when: String,
    /// The maintenance policy (`--maint[=POLICY]`), if any.
    pub maint: Option<String>,
    /// The kernel version whose zram the device behaves as (`--kernel`;
    /// `None`: the newest zmem models). zram only.
    pub kernel: Option<zmem_kernel::KernelModel>,
}

impl EngineSpec {
    /// The kernel version the engine behaves as: `--kernel`'s, else the newest
    /// modeled (a served device is compared with no running kernel).
    fn model(&self) -> zmem_kernel::KernelModel {
        self.kernel.unwrap_or_else(zmem_kernel::KernelModel::newest)
    }
}

/// Under a memory cgroup whose limit is below `--size`, a pool without `--mem-limit` grows until
/// the OOM killer ends the server, and the device with it, without a word. The pool is bounded
/// instead, at three quarters of the limit (the rest for the slot table, buffers and the
/// process), so a write past it answers ENOSPC as it does with `--mem-limit`; the line says so.
/// `limit` is the tightest cgroup limit on this process and the cgroup that sets it.
pub(crate) fn within_cgroup(
    s: &EngineSpec,
    limit: Option<(String, u64)>,
) -> (EngineSpec, Option<String>) {
    let mut e = s.clone();
    let Some((cgroup, max)) = limit else {
        return (e, None);
    };
    let bound = max / 4 * 3 / 4096 * 4096;
    match s.mem_limit {
        None if s.size > bound => {
            e.mem_limit = Some(bound);
            let line = format!(
                "zmem serve: the memory cgroup {cgroup} limits this process to {max} bytes, below --size {}, \
                 and no --mem-limit was given: the pool is bounded at mem_limit {bound} (a write past it gets \
                 ENOSPC instead of an OOM kill of the server); --mem-limit sets another bound",
                s.size
            );
            (e, Some(line))
        }
        Some(m) if m > max => {
            let line = format!(
                "zmem serve: --mem-limit {m} is above the memory cgroup {cgroup}'s limit {max}: the kernel may \
                 OOM-kill the server before the pool reaches it; a --mem-limit of at most {bound} is safe"
            );
            (e, Some(line))
        }
        _ => (e, None),
    }
}

/// The served device: zswap's block view, or a zram device (with its
/// maintenance worker under `--maint`, which then answers `maint` too).
pub(crate) struct Device {
    pub zram: Option<Arc<Zram>>,
    pub dev: Arc<dyn BlockDevice>,
    pub maintained: Option<Arc<Maintained>>,
    /// The backing device or file, claimed while the device lives.
    pub claim: Option<Claimed>,
}

/// The backing device or file checked and claimed; `None` without one, or
/// for a zswap backing file that does not exist yet (zswap creates it).
fn claim_backing(s: &EngineSpec) -> anyhow::Result<Option<Claimed>> {
    let Some(p) = &s.backing_dev else {
        return Ok(None);
    };
    if s.mode == "zswap" && std::fs::symlink_metadata(p).is_err() {
        return Ok(None);
    }
    let c =
        zmem_host::backing::claim(p, s.force).map_err(|e| anyhow::anyhow!("--backing-dev {e}"))?;
    eprintln!("zmem serve: backing device {}", c.describe());
    Ok(Some(c))
}

fn attr(dev: &Zram, name: &str, value: &str, what: &str) -> anyhow::Result<()> {
    dev.attr_write(name, &format!("{value}\n")).map_err(|e| {
        // ENOENT is also what opening a missing backing file gives: only an
        // unknown attribute name gets the "no attribute" message.
        if e.errno == Errno::ENOENT && !zmem_zram::WRITABLE.contains(&name) {
            anyhow::anyhow!(
                "{what}: this engine has no `{name}` attribute yet ({})",
                e.message
            )
        } else {
            anyhow::anyhow!("{what}: {name} {value:?}: {}: {}", e.errno, e.message)
        }
    })
}

/// Configure a device the way a script configures /sys/block/zramN, in the
/// kernel's order (everything before disksize).
fn build_zram(
    s: &EngineSpec,
    name: &str,
    backing: Option<&Claimed>,
    recoverable: bool,
) -> anyhow::Result<Zram> {
    let dev = Zram::for_kernel(s.model())
        .name(name.to_string())
        .recoverable(recoverable)
        .build()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    attr(&dev, attr::ALLOCATOR, &s.allocator, "--allocator")?;
    attr(&dev, attr::COMP_ALGORITHM, &s.algo, "--algo")?;
    if let Some(p) = &s.params {
        attr(&dev, attr::ALGORITHM_PARAMS, p, "--params")?;
    }
    if s.recomp.len() > 3 {
        bail!("--recomp: at most 3 recompression algorithms (priorities 1..3)");
    }
    for (i, alg) in s.recomp.iter().enumerate() {
        attr(
            &dev,
            attr::RECOMP_ALGORITHM,
            &format!("algo={alg} priority={}", i + 1),
            "--recomp",
        )?;
    }
    if let Some(m) = &s.mem_limit {
        attr(&dev, attr::MEM_LIMIT, &m.to_string(), "--mem-limit")?;
    }
    if let Some(b) = backing.map(|c| &c.path) {
        attr(
            &dev,
            attr::BACKING_DEV,
            &b.display().to_string(),
            "--backing-dev",
        )?;
    }
    if let Some(f) = &s.fast {
        attr(&dev, attr::FAST_ALGORITHM, &format!("algo={f}"), "--fast")?;
    }
    attr(&dev, attr::DISKSIZE, &s.size.to_string(), "--size")?;
    if s.fast.is_some() {
        let when = fast_when(&s.fast_when)?;
        attr(&dev, attr::FAST_PATH, &when, "--fast-when")?;
        if when.starts_with("mode=pressure") && s.mem_limit.is_none() && !when.contains("rate=") {
            eprintln!("zmem serve: --fast-when {}: without --mem-limit or a rate, the fast path stays off", s.fast_when);
        }
    }
    Ok(dev)
}

/// `off`, `always`, `pressure[:N%][,RATE/s]` → the `fast_path` attribute value.
pub fn fast_when(s: &str) -> anyhow::Result<String> {
    let bad = || {
        anyhow::anyhow!("--fast-when {s:?}: expected off, always or pressure[:N%][,RATE/s] (e.g. pressure:80%,20000/s)")
    };
    let (mode, rest) = s.split_once(':').unwrap_or((s, ""));
    match mode {
        "off" | "always" if rest.is_empty() => return Ok(format!("mode={mode}")),
        "pressure" => {}
        _ => return Err(bad()),
    }
    let mut v = "mode=pressure".to_string();
    for c in rest.split(',').filter(|c| !c.is_empty()) {
        if let Some(p) = c.strip_suffix('%') {
            let p: u32 = p.parse().ok().filter(|&p| p <= 100).ok_or_else(bad)?;
            v.push_str(&format!(" limit_pct={p}"));
        } else if let Some(r) = c.strip_suffix("/s") {
            let r: u64 = r.parse().map_err(|_| bad())?;
            v.push_str(&format!(" rate={r}"));
        } else {
            return Err(bad());
        }
    }
    Ok(v)
}

/// zswap's block view over the backing file.
fn build_zswap(
    s: &EngineSpec,
    backing: Option<&Claimed>,
) -> anyhow::Result<zmem_zswap::ZswapDevice> {
    let Some(file) = backing.map(|c| &c.path).or(s.backing_dev.as_ref()) else {
        bail!("--mode zswap needs --backing-dev FILE (the swap device zswap caches)")
    };
    if !s.recomp.is_empty() || s.params.is_some() || s.fast.is_some() || s.maint.is_some() {
        bail!("--recomp/--params/--fast/--maint: zram options, not available with --mode zswap");
    }
    let mut b = zmem_zswap::Zswap::for_kernel(s.model())
        .compressor(s.algo.clone())
        .zpool(s.allocator.clone());
    if let Some(m) = &s.mem_limit {
        b = b.max_pool_bytes(*m);
    }
    zmem_zswap::ZswapDevice::create(file, s.size, b, s.force)
        .map_err(|e| anyhow::anyhow!("--mode zswap: {e}"))
}

/// The device `name` (`serve:EXPORT`) as the spec says, maintained under
/// `--maint`; a zram device's store in memfds when `recoverable`.
pub(crate) fn build(s: &EngineSpec, name: &str, recoverable: bool) -> anyhow::Result<Device> {
    let policy = match &s.maint {
        Some(spec) => Some(
            Policy::default()
                .with_spec(spec)
                .map_err(|e| anyhow::anyhow!("--maint: {e}"))?,
        ),
        None => None,
    };
    let claim = claim_backing(s)?;
    if s.mode == "zswap" {
        let dev = Arc::new(build_zswap(s, claim.as_ref())?);
        let claim = match (claim, &s.backing_dev) {
            // zswap created it just now: locked as any other.
            (None, Some(p)) => zmem_host::backing::claim(p, true).ok(),
            (c, _) => c,
        };
        return Ok(Device {
            zram: None,
            dev,
            maintained: None,
            claim,
        });
    }
    let z = Arc::new(build_zram(s, name, claim.as_ref(), recoverable)?);
    let Some(p) = policy else {
        return Ok(Device {
            zram: Some(z.clone()),
            dev: z,
            maintained: None,
            claim,
        });
    };
    eprintln!(
        "zmem serve: maintenance every {} s",
        p.interval.as_secs_f64()
    );
    let m = Maintained::start(name, z.clone(), p)
        .context("--maint: cannot start the maintenance thread")?;
    let m = Arc::new(m);
    Ok(Device {
        zram: Some(z),
        dev: m.clone(),
        maintained: Some(m),
        claim,
    })
}

#[cfg(test)]
mod tests {
    use super::fast_when;
    use super::*;

    fn spec(size: u64, mem_limit: Option<u64>) -> EngineSpec {
        EngineSpec {
            mode: "zram".into(),
            size,
            algo: "lz4".into(),
            params: None,
            recomp: Vec::new(),
            allocator: "zsmalloc".into(),
            mem_limit,
            backing_dev: None,
            force: false,
            fast: None,
            fast_when: "off".into(),
            maint: None,
            kernel: None,
        }
    }

    #[test]
    fn a_cgroup_below_size_bounds_the_pool_and_says_so() {
        let cg = Some(("/sys/fs/cgroup/memory/box".to_string(), 64 << 20));
        let (e, line) = within_cgroup(&spec(256 << 20, None), cg.clone());
        assert_eq!(e.mem_limit, Some(48 << 20));
        assert!(line.unwrap().contains("no --mem-limit was given"));
        let (e, line) = within_cgroup(&spec(256 << 20, Some(32 << 20)), cg.clone());
        assert_eq!((e.mem_limit, line), (Some(32 << 20), None));
        let (e, line) = within_cgroup(&spec(256 << 20, Some(128 << 20)), cg.clone());
        assert_eq!(e.mem_limit, Some(128 << 20));
        assert!(line.unwrap().contains("may OOM-kill"));
        let (e, line) = within_cgroup(&spec(16 << 20, None), cg);
        assert_eq!((e.mem_limit, line), (None, None));
        let (e, line) = within_cgroup(&spec(256 << 20, None), None);
        assert_eq!((e.mem_limit, line), (None, None));
    }

    #[test]
    fn fast_when_syntax() {
        assert_eq!(fast_when("off").unwrap(), "mode=off");
        assert_eq!(fast_when("always").unwrap(), "mode=always");
        assert_eq!(fast_when("pressure").unwrap(), "mode=pressure");
        assert_eq!(
            fast_when("pressure:90%").unwrap(),
            "mode=pressure limit_pct=90"
        );
        assert_eq!(
            fast_when("pressure:90%,20000/s").unwrap(),
            "mode=pressure limit_pct=90 rate=20000"
        );
        assert_eq!(
            fast_when("pressure:20000/s").unwrap(),
            "mode=pressure rate=20000"
        );
        for bad in [
            "",
            "on",
            "always:80%",
            "pressure:101%",
            "pressure:x%",
            "pressure:80",
            "pressure:-1/s",
            "pressure:80%;1/s",
        ] {
            assert!(fast_when(bad).is_err(), "{bad:?}");
        }
    }
}
