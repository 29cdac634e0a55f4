//! `zmem serve`: a zram engine device served over NBD, with a control socket.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use anyhow::{bail, Context};
use zmem_device::{AttrTarget, BlockDevice, DeviceTarget};
use zmem_kernel::Errno;
use zmem_nbd::{Control, CtlServer, Listen, Listener, Options, Server};
use zmem_ops::policy::{Maintained, Policy};
use zmem_zram::Zram;

/// Arguments of `zmem serve`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Device size: bytes with an optional K, M, G or T suffix (64M, 1.5G, 2GiB)
    #[arg(long, value_parser = crate::args::size)]
    pub size: u64,
    /// Primary compression algorithm (comp_algorithm)
    #[arg(long, default_value = zmem_codec::ZRAM_DEFAULT.name)]
    pub algo: String,
    /// algorithm_params for the primary algorithm, e.g. "level=3"
    #[arg(long)]
    pub params: Option<String>,
    /// Recompression algorithm (recomp_algorithm), repeatable: priority 1, 2, 3 in order
    #[arg(long)]
    pub recomp: Vec<String>,
    /// Allocator: zsmalloc, zbud or z3fold
    #[arg(long, default_value = "zsmalloc")]
    pub allocator: String,
    /// mem_limit: writes fail with ENOSPC once the pool uses this much (a size, as --size)
    #[arg(long, value_parser = crate::args::size)]
    pub mem_limit: Option<u64>,
    /// backing_dev: a file for writeback of idle/huge pages (zram), or the swap device zswap
    /// caches (--mode zswap: created if missing; an existing one that holds data or is too
    /// small is refused unless --force)
    #[arg(long)]
    pub backing_dev: Option<PathBuf>,
    /// Use an existing --mode zswap backing file even if it holds data (overwritten) or is
    /// too small (extended)
    #[arg(long)]
    pub force: bool,
    /// Fast path: the fast algorithm (fast_algorithm), e.g. lz4m or wkdm
    #[arg(long, value_name = "ALGO")]
    pub fast: Option<String>,
    /// Fast path: when writes use it: off, always, or pressure[:N%][,RATE/s] (pool above N% of
    /// --mem-limit, default 80%, or a write rate above RATE pages/s over 100 ms)
    #[arg(
        long,
        value_name = "WHEN",
        default_value = "pressure",
        requires = "fast"
    )]
    pub fast_when: String,
    /// Maintenance worker: the rounds of `zmem policy` on this device (fast-path slots back to
    /// the primary, recompression with --recomp, writeback with --backing-dev); optional policy
    /// in the [policy] keys of docs/ops.md, e.g.
    /// --maint=interval=10min,fast-idle=60s,recompress-idle-min=1h,writeback-max-per-round=300M.
    /// `zmem ctl SOCKET maint` shows the last round, `zmem ctl SOCKET maint run` runs one now
    #[arg(long, value_name = "POLICY", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub maint: Option<String>,
    /// Engine: zram, or zswap (a compressed cache in front of --backing-dev FILE;
    /// --mem-limit is then zswap's max_pool_bytes)
    #[arg(long, default_value = "zram")]
    pub mode: String,
    /// Export name (clients may also ask for the default, empty, name)
    #[arg(long, default_value = "zmem")]
    pub export: String,
    /// unix:PATH or tcp:HOST:PORT (TCP only on loopback unless --allow-remote)
    #[arg(long)]
    pub listen: String,
    /// Control socket path [default: /run/zmem/EXPORT.ctl]
    #[arg(long)]
    pub ctl: Option<PathBuf>,
    /// Do not open a control socket
    #[arg(long, conflicts_with = "ctl")]
    pub no_ctl: bool,
    /// Lock the server's memory (mlockall), for use as swap on the same host
    #[arg(long)]
    pub mlock: bool,
    /// Allow listening on a non-loopback TCP address
    #[arg(long)]
    pub allow_remote: bool,
    /// Threads per connection (requests of one connection served at once) [default: number of CPUs]
    #[arg(long)]
    pub threads: Option<usize>,
    /// Log connections on stderr
    #[arg(long, short)]
    pub verbose: bool,
    /// Mode of the Unix sockets (NBD and control), octal; created 0600 first in any case
    #[arg(long, value_name = "OCTAL", default_value = "0600", value_parser = socket_mode)]
    pub socket_mode: u32,
    /// Group of the Unix sockets (a name from /etc/group or a GID), to share them with
    /// --socket-mode 0660
    #[arg(long, value_name = "GROUP")]
    pub socket_group: Option<String>,
    /// Connections served at once; more are closed at once
    #[arg(long, default_value_t = zmem_nbd::Limits::default().max_connections)]
    pub max_connections: usize,
    /// Bytes of replies (and write payloads) one connection may have in flight before the
    /// server stops reading its requests
    #[arg(long, value_name = "SIZE", default_value = "32M", value_parser = crate::args::size)]
    pub max_inflight: u64,
    /// The whole handshake must finish within this time
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::args::duration)]
    pub handshake_timeout: std::time::Duration,
    /// A request must arrive whole (header and payload) within this time of its first byte
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::args::duration)]
    pub request_timeout: std::time::Duration,
    /// A reply must be taken by the client within this time
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::args::duration)]
    pub reply_timeout: std::time::Duration,
    /// Close a connection idle (no request) this long [default: never: an idle VM keeps its
    /// disk]
    #[arg(long, value_name = "DURATION", value_parser = crate::args::duration)]
    pub idle_timeout: Option<std::time::Duration>,
}

/// `--socket-mode`: an octal mode of at most 0777 that leaves the owner able
/// to read and write.
fn socket_mode(s: &str) -> Result<u32, String> {
    let m = u32::from_str_radix(s.trim_start_matches("0o"), 8)
        .map_err(|_| format!("{s:?} is not an octal mode such as 0600 or 0660"))?;
    if m > 0o777 || m & 0o600 != 0o600 {
        return Err(format!(
            "{s:?}: a socket mode is at most 0777 and includes 0600 (the owner)"
        ));
    }
    Ok(m)
}

/// A group name from /etc/group, or a numeric GID.
fn group_id(g: &str) -> anyhow::Result<u32> {
    if let Ok(n) = g.parse::<u32>() {
        return Ok(n);
    }
    let groups = std::fs::read_to_string("/etc/group").context("reading /etc/group")?;
    groups
        .lines()
        .find_map(|l| {
            let mut f = l.split(':');
            (f.next() == Some(g)).then(|| f.nth(1)?.parse().ok())?
        })
        .with_context(|| format!("--socket-group: no group {g:?} in /etc/group"))
}

/// The sockets' permissions from the flags.
fn socket_perms(a: &Args) -> anyhow::Result<zmem_nbd::SocketPerms> {
    Ok(zmem_nbd::SocketPerms {
        mode: a.socket_mode,
        group: a.socket_group.as_deref().map(group_id).transpose()?,
    })
}

fn attr(dev: &Zram, name: &str, value: &str, what: &str) -> anyhow::Result<()> {
    dev.attr_write(name, &format!("{value}\n")).map_err(|e| {
        // ENOENT is also what opening a missing backing file gives: only an
        // unknown attribute name gets the "no attribute" message.
        if e.errno == Errno::ENOENT && !zmem_zram::attrs::WRITABLE.contains(&name) {
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
fn build_device(a: &Args) -> anyhow::Result<Zram> {
    let dev = Zram::builder()
        .name(format!("serve:{}", a.export))
        .build()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    attr(&dev, "allocator", &a.allocator, "--allocator")?;
    attr(&dev, "comp_algorithm", &a.algo, "--algo")?;
    if let Some(p) = &a.params {
        attr(&dev, "algorithm_params", p, "--params")?;
    }
    if a.recomp.len() > 3 {
        bail!("--recomp: at most 3 recompression algorithms (priorities 1..3)");
    }
    for (i, alg) in a.recomp.iter().enumerate() {
        attr(
            &dev,
            "recomp_algorithm",
            &format!("algo={alg} priority={}", i + 1),
            "--recomp",
        )?;
    }
    if let Some(m) = &a.mem_limit {
        attr(&dev, "mem_limit", &m.to_string(), "--mem-limit")?;
    }
    if let Some(b) = &a.backing_dev {
        attr(
            &dev,
            "backing_dev",
            &b.display().to_string(),
            "--backing-dev",
        )?;
    }
    if let Some(f) = &a.fast {
        attr(&dev, "fast_algorithm", &format!("algo={f}"), "--fast")?;
    }
    attr(&dev, "disksize", &a.size.to_string(), "--size")?;
    if a.fast.is_some() {
        let when = fast_when(&a.fast_when)?;
        attr(&dev, "fast_path", &when, "--fast-when")?;
        if when.starts_with("mode=pressure") && a.mem_limit.is_none() && !when.contains("rate=") {
            eprintln!("zmem serve: --fast-when {}: without --mem-limit or a rate, the fast path stays off", a.fast_when);
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
fn build_zswap(a: &Args) -> anyhow::Result<zmem_zswap::ZswapDevice> {
    let Some(file) = &a.backing_dev else {
        bail!("--mode zswap needs --backing-dev FILE (the swap device zswap caches)")
    };
    if !a.recomp.is_empty() || a.params.is_some() || a.fast.is_some() || a.maint.is_some() {
        bail!("--recomp/--params/--fast/--maint: zram options, not available with --mode zswap");
    }
    let size = a.size;
    let mut b = zmem_zswap::Zswap::builder()
        .compressor(a.algo.clone())
        .zpool(a.allocator.clone());
    if let Some(m) = &a.mem_limit {
        b = b.max_pool_bytes(*m);
    }
    zmem_zswap::ZswapDevice::create(file, size, b, a.force)
        .map_err(|e| anyhow::anyhow!("--mode zswap: {e}"))
}

/// The listen address, checked: TCP only on loopback unless `--allow-remote`.
fn listen_address(a: &Args) -> anyhow::Result<Listen> {
    if !matches!(a.mode.as_str(), "zram" | "zswap") {
        bail!("--mode {:?}: expected zram or zswap", a.mode);
    }
    if a.export.len() > 4096 {
        bail!("--export: names are at most 4096 bytes");
    }
    let listen = Listen::parse(&a.listen).map_err(|e| anyhow::anyhow!("--listen {e}"))?;
    if let Listen::Tcp(addr) = &listen {
        if !addr.ip().is_loopback() && !a.allow_remote {
            bail!("--listen {addr}: not a loopback address; NBD has no authentication here, pass --allow-remote to serve other hosts");
        }
    }
    Ok(listen)
}

/// The served device: zswap's block view, or a zram device (with its
/// maintenance worker under `--maint`, which then answers `maint` too).
struct Device {
    zram: Option<Arc<Zram>>,
    dev: Arc<dyn BlockDevice>,
    maintained: Option<Arc<Maintained>>,
}

fn build(a: &Args) -> anyhow::Result<Device> {
    let policy = match &a.maint {
        Some(spec) => Some(
            Policy::default()
                .with_spec(spec)
                .map_err(|e| anyhow::anyhow!("--maint: {e}"))?,
        ),
        None => None,
    };
    if a.mode == "zswap" {
        return Ok(Device {
            zram: None,
            dev: Arc::new(build_zswap(a)?),
            maintained: None,
        });
    }
    let z = Arc::new(build_device(a)?);
    let Some(p) = policy else {
        return Ok(Device {
            zram: Some(z.clone()),
            dev: z,
            maintained: None,
        });
    };
    eprintln!(
        "zmem serve: maintenance every {} s",
        p.interval.as_secs_f64()
    );
    let m = Maintained::start(&format!("serve:{}", a.export), z.clone(), p)
        .context("--maint: cannot start the maintenance thread")?;
    let m = Arc::new(m);
    Ok(Device {
        zram: Some(z),
        dev: m.clone(),
        maintained: Some(m),
    })
}

/// The control socket, listing every attribute the device has.
fn control_socket(a: &Args, dev: &Arc<dyn BlockDevice>) -> anyhow::Result<Option<CtlServer>> {
    if a.no_ctl {
        return Ok(None);
    }
    let path = a
        .ctl
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("/run/zmem/{}.ctl", a.export)));
    let names = DeviceTarget::new("", dev.clone())
        .list_attrs()
        .unwrap_or_default();
    let server = CtlServer::start(
        &path,
        Control {
            dev: dev.clone(),
            names,
        },
        socket_perms(a)?,
    )
    .with_context(|| format!("control socket {}", path.display()))?;
    Ok(Some(server))
}

/// The last words: why serving stopped and the device's final statistics
/// (zram's mm_stat; zswap's pool size and stored pages).
fn report_stop(dev: &dyn BlockDevice, by_signal: bool) {
    let final_stats: Vec<String> = ["mm_stat", "pool_total_size", "stored_pages"]
        .iter()
        .filter_map(|n| {
            dev.attr_read(n)
                .ok()
                .map(|v| format!("{n}: {}", v.trim_end()))
        })
        .collect();
    let why = if by_signal { "signal" } else { "done" };
    eprintln!(
        "zmem serve: stopped ({why}); final {}",
        final_stats.join(", ")
    );
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let listen = listen_address(&a)?;
    let Device {
        zram,
        dev,
        maintained,
    } = build(&a)?;
    if a.mlock {
        zmem_nbd::server::mlock_all()
            .context("--mlock: mlockall (needs root or RLIMIT_MEMLOCK)")?;
    }
    // Served devices are open: `reset` answers EBUSY, as the kernel's does
    // for a mounted or swapped-on zram.
    let _open = zram.as_ref().map(|z| z.open());
    let ctl = control_socket(&a, &dev)?;
    let listener =
        Listener::bind(&listen, socket_perms(&a)?).with_context(|| format!("--listen {listen}"))?;
    let mut opts = Options {
        export_name: a.export.clone(),
        verbose: a.verbose,
        limits: zmem_nbd::Limits {
            max_connections: a.max_connections.max(1),
            max_inflight: a.max_inflight,
            handshake_timeout: a.handshake_timeout,
            request_timeout: a.request_timeout,
            reply_timeout: a.reply_timeout,
            idle_timeout: a.idle_timeout,
            ..zmem_nbd::Limits::default()
        },
        ..Options::default()
    };
    if let Some(t) = a.threads {
        opts.threads = t.clamp(1, 256);
    }
    let stop =
        zmem_nbd::server::stop_on_signals().context("installing SIGINT/SIGTERM/SIGHUP handlers")?;
    let fast = a
        .fast
        .as_ref()
        .map(|f| format!(" (fast path {f}, {})", a.fast_when))
        .unwrap_or_default();
    let ctl_note = ctl
        .as_ref()
        .map(|c| format!(", control socket {}", c.path().display()))
        .unwrap_or_default();
    eprintln!(
        "zmem serve: export {:?}: {} bytes, {}{fast} on {}, {} threads per connection{ctl_note}",
        a.export,
        dev.size(),
        a.algo,
        a.allocator,
        opts.threads,
    );
    println!("listening on {}", listener.local());
    let server = Server::new(dev.clone(), listener, opts);
    let failed = server.run(&stop).context("serving")?;
    drop(ctl);
    if let Some(m) = &maintained {
        m.stop();
    }
    report_stop(dev.as_ref(), stop.load(Ordering::Relaxed));
    eprintln!("zmem serve: {failed}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::fast_when;

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
