//! `zmem serve`: the flags; zmem-serve builds the device and serves it.

use std::path::PathBuf;

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
    /// backing_dev: a block device or file for writeback of idle/huge pages (zram), or the swap
    /// device zswap caches (--mode zswap: created if missing). Claimed as the kernel claims it: a
    /// mounted, swapped-on or otherwise held one is refused, and one that holds data (or, zswap,
    /// is too small) is refused unless --force; a symbolic link is resolved and said
    #[arg(long)]
    pub backing_dev: Option<PathBuf>,
    /// Use a --backing-dev that holds data (overwritten) or, --mode zswap, is too small (extended)
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
    /// Behave as this kernel version's zram (6.1 to 7.3, e.g. 6.18): its attributes (others are
    /// absent), zsmalloc, writeback pass and parameter rules [default: the newest modeled]
    #[arg(long, value_name = "VERSION", value_parser = crate::args::kernel)]
    pub kernel: Option<zmem_kernel::KernelModel>,
    /// Engine: zram, or zswap (a compressed cache in front of --backing-dev FILE;
    /// --mem-limit is then zswap's max_pool_bytes)
    #[arg(long, default_value = "zram")]
    pub mode: String,
    /// Export name (clients may also ask for the default, empty, name)
    #[arg(long, default_value = "zmem")]
    pub export: String,
    /// unix:PATH (in an existing directory) or tcp:HOST:PORT (only with --allow-tcp; only on
    /// loopback unless --allow-remote)
    #[arg(long, required_unless_present = "ublk")]
    pub listen: Option<String>,
    /// Serve as the kernel block device /dev/ublkbN (the ublk driver: modprobe ublk_drv; root)
    /// instead of NBD; prints `serving /dev/ublkbN` once it is ready
    #[arg(long, conflicts_with = "listen")]
    pub ublk: bool,
    /// --ublk: the device id N of /dev/ublkbN [default: the kernel picks]
    #[arg(long, value_name = "N")]
    pub ublk_id: Option<u32>,
    /// --ublk: hardware queues, one serving thread each [default: one per CPU]
    #[arg(long, value_name = "N")]
    pub queues: Option<u16>,
    /// --ublk: requests in flight per queue [default: 128]
    #[arg(long, value_name = "N")]
    pub queue_depth: Option<u16>,
    /// Serve the store of a server of this export that died (SIGKILL, a crash), kept by its
    /// keeper (EXPORT.keep beside the control socket): the same --size, --algo, --params,
    /// --recomp, --fast, --allocator and --kernel as the dead server (a difference is named and
    /// refused), on the same --listen; refused while that server still runs or when nothing was
    /// kept. With --ublk --ublk-id N: also attach to /dev/ublkbN left by the dead server (its I/O
    /// queued). Every write the dead server acknowledged reads back (docs/serve.md, "Crash
    /// recovery")
    #[arg(long, alias = "ublk-recover", conflicts_with = "no_recover_store")]
    pub recover: bool,
    /// Keep no store for crash recovery: no keeper process, and a server that dies loses the
    /// device's contents [default: a zram device on zsmalloc without --backing-dev is kept]
    #[arg(long)]
    pub no_recover_store: bool,
    /// Control socket path [default: /run/zmem/EXPORT.ctl]
    #[arg(long)]
    pub ctl: Option<PathBuf>,
    /// Do not open a control socket
    #[arg(long, conflicts_with = "ctl")]
    pub no_ctl: bool,
    /// Refuse to start unless swap-safe: PR_SET_IO_FLUSHER (needs CAP_SYS_RESOURCE) and memory
    /// locked on fault (mlockall: CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK). Without --swap or
    /// --block-only the server is swap-safe when it can be and says on stderr which it is
    #[arg(long, alias = "mlock")]
    pub swap: bool,
    /// A block device only, never swapped on: neither IO_FLUSHER nor locked memory
    #[arg(long, conflicts_with = "swap")]
    pub block_only: bool,
    /// Allow listening on a non-loopback TCP address (with --allow-tcp)
    #[arg(long)]
    pub allow_remote: bool,
    /// Allow serving on TCP at all: any local user (with --allow-remote, any host) can then read
    /// and write the device, NBD has no authentication; a unix: socket is guarded by --socket-mode
    #[arg(long)]
    pub allow_tcp: bool,
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
    /// Connections one client (a Unix socket's peer user, a TCP peer's address) may hold at once,
    /// leaving room for others
    #[arg(long, default_value_t = zmem_nbd::Limits::default().max_per_client)]
    pub max_connections_per_client: usize,
    /// Bytes of replies (and write payloads) one connection may have in flight before the
    /// server stops reading its requests
    #[arg(long, value_name = "SIZE", default_value = "32M", value_parser = crate::args::size)]
    pub max_inflight: u64,
    /// Bytes of replies and write payloads all connections together may have in flight; beyond
    /// it requests wait unread until replies drain (a request of up to 1 MiB on a connection
    /// holding nothing else is still admitted)
    #[arg(long, value_name = "SIZE", default_value = "256M", value_parser = crate::args::size)]
    pub max_inflight_total: u64,
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

/// The arguments as the serving crate's spec.
fn spec(a: Args) -> zmem_serve::Spec {
    zmem_serve::Spec {
        engine: zmem_serve::EngineSpec {
            mode: a.mode,
            size: a.size,
            algo: a.algo,
            params: a.params,
            recomp: a.recomp,
            allocator: a.allocator,
            mem_limit: a.mem_limit,
            backing_dev: a.backing_dev,
            force: a.force,
            fast: a.fast,
            fast_when: a.fast_when,
            maint: a.maint,
            kernel: a.kernel,
        },
        export: a.export,
        listen: a.listen.unwrap_or_default(),
        ctl: a.ctl,
        no_ctl: a.no_ctl,
        swap: match (a.swap, a.block_only) {
            (true, _) => zmem_serve::SwapUse::Swap,
            (_, true) => zmem_serve::SwapUse::BlockOnly,
            _ => zmem_serve::SwapUse::Auto,
        },
        allow_remote: a.allow_remote,
        allow_tcp: a.allow_tcp,
        threads: a.threads,
        verbose: a.verbose,
        socket_mode: a.socket_mode,
        socket_group: a.socket_group,
        limits: zmem_nbd::Limits {
            max_connections: a.max_connections.max(1),
            max_per_client: a.max_connections_per_client.max(1),
            max_inflight: a.max_inflight,
            max_inflight_total: a.max_inflight_total,
            handshake_timeout: a.handshake_timeout,
            request_timeout: a.request_timeout,
            reply_timeout: a.reply_timeout,
            idle_timeout: a.idle_timeout,
            ..zmem_nbd::Limits::default()
        },
        ublk: a.ublk.then_some(zmem_ublk::Options {
            id: a.ublk_id,
            queues: a.queues,
            depth: a.queue_depth.unwrap_or(zmem_ublk::DEFAULT_DEPTH),
            recover: a.recover,
        }),
        recovery: match (a.recover, a.no_recover_store) {
            (true, _) => zmem_serve::Recovery::Recover,
            (_, true) => zmem_serve::Recovery::Off,
            _ => zmem_serve::Recovery::Keep,
        },
    }
}

/// The ublk flags mean nothing without `--ublk` (clap's `requires` cannot
/// name a switch: it is always present, as false).
fn check_ublk_flags(a: &Args) -> anyhow::Result<()> {
    let given = [
        ("--ublk-id", a.ublk_id.is_some()),
        ("--queues", a.queues.is_some()),
        ("--queue-depth", a.queue_depth.is_some()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, g)| *g).filter(|_| !a.ublk) {
        anyhow::bail!("{flag} applies to --ublk (serving /dev/ublkbN), not to --listen");
    }
    if a.ublk && a.recover && a.ublk_id.is_none() {
        anyhow::bail!("--ublk --recover needs --ublk-id N: the /dev/ublkbN the dead server left");
    }
    Ok(())
}

pub fn run(a: Args) -> anyhow::Result<()> {
    check_ublk_flags(&a)?;
    if a.kernel.is_some() && a.mode != "zram" {
        anyhow::bail!(
            "--kernel applies to --mode zram (a kernel version's zram), not --mode {}",
            a.mode
        );
    }
    zmem_serve::run(spec(a))
}
