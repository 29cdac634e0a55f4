//! `zmem bench`: with no arguments the main job, the verdict on this machine's memory; every
//! other mode is a subcommand with only its own flags (`zmem bench device CORPUS`, `codecs`,
//! `floor`, `full`, `recomp`, `fastpath`, `writeback`, `zswap`, `transport`, `verdict`). The mode flags of
//! before (`zmem bench --codecs …`, `zmem bench CORPUS`) still work for one release and print
//! a note naming the subcommand. Each mode's measurement lives in `zmem_measure`; a
//! subcommand's flags become the [`Args`] its body reads.
//!
//! A new mode is its measurement in `lab/measure/src/modes/` (its file, its `mod` line and re-export) and,
//! here, its flags struct, a [`Mode`] variant and the body it runs.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use crate::output::{Format, Table};

mod device;
mod transport;
pub(crate) mod verdict;
mod zswap;

// Defaults, shared by the subcommands and the old mode flags.
const ROUND_BUDGET: &str = "60s";
const REQUESTS: usize = 20_000;
const THREADS: usize = 1;
const MIN_TIME_MS: u64 = 200;
const PASSES: usize = 8;
const HOT: f64 = 0.2;
const HOT_ACCESS: f64 = 0.8;
const BUDGET: &str = "0.1";
const ACCESSES: usize = 50_000;
const ZPOOL: &str = "zsmalloc";
const WORKER: &str = "paced:4";
/// Where `bench zswap`'s kernel rows put their swap file (as trial's and tune's --swap-dir).
const SWAP_DIR: &str = "/var/tmp";
const WB_TYPE: &str = "idle";

/// `zmem bench`: a mode, or the main job with its flags (and the old mode flags).
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Bench {
    #[command(subcommand)]
    mode: Option<Mode>,
    #[command(flatten)]
    args: Args,
}

/// The modes of `zmem bench`, one subcommand each.
#[derive(clap::Subcommand, Debug)]
enum Mode {
    /// The verdict (what `zmem bench` runs) on corpus files: every candidate in interleaved
    /// rounds, the decision on the median score and its interval, and the config file
    Verdict(VerdictArgs),
    /// The device table per algorithm on corpus files: the engine's zram beside the kernel's
    /// (write, random read per page-cluster, ratio, memory)
    Device(DeviceArgs),
    /// The device table plus `codec` rows, the floor under any engine: the codec alone on the
    /// same pages and random requests, with codec/kernel ratios beside engine/kernel
    Floor(DeviceArgs),
    /// Codec level only: ratio, compress/decompress/reclaim MB/s and per-page latency
    Codecs(CodecsArgs),
    /// The complete table: codec and device figures for every algorithm plus zstd with a
    /// trained dictionary, page-cluster 0..3, weighted score and the recommendation
    Full(FullArgs),
    /// Recompression: the corpus written with the primary, all marked idle and recompressed
    /// with ALGO; ratio and memory before and after, against ALGO alone
    Recomp(RecompArgs),
    /// Fast path: writes with the fast ALGO beside the primary (mean, p50, p99), then the
    /// fast-path slots recompressed back to the primary
    Fastpath(FastpathArgs),
    /// Writeback: idle pages written back to a backing file; memory and ratio before and
    /// after, bd_stat, every page read back and compared; kernel rows where the running
    /// kernel's zram has backing_dev (with --backing-dev /dev/X)
    Writeback(WritebackArgs),
    /// zswap against zram + disk swap at the same RAM budget, with a hot/cold access pattern
    Zswap(ZswapArgs),
    /// Transports side by side: the same pages through the engine in process, kernel zram,
    /// `zmem serve` over NBD and block devices (/dev/ublkbN, /dev/nbdN); random 4 KiB reads
    /// and writes per queue depth, 1 MiB sequential, interleaved rounds
    Transport(transport::TransportArgs),
}

/// `zmem bench verdict`.
#[derive(clap::Args, Debug)]
struct VerdictArgs {
    /// Corpus files of raw 4 KiB pages; without any, this machine's memory plus synthetic pages
    corpus: Vec<PathBuf>,
    /// Algorithms to run (comma-separated kernel names); default: all
    #[arg(long, value_delimiter = ',')]
    algo: Vec<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Time for the interleaved rounds: they go on until the decision is settled or this
    /// is spent (e.g. 60s, 2m)
    #[arg(long, value_name = "DURATION", default_value = ROUND_BUDGET)]
    budget: String,
    /// At most this many interleaved rounds (every candidate once per round); default: until
    /// settled or the budget is spent
    #[arg(long)]
    rounds: Option<usize>,
    /// Write the recommended configuration as DIR/zmem.conf [default: a new private file in
    /// your state directory: /var/lib/zmem for root, else ~/.local/state/zmem]
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Replace an existing DIR/zmem.conf that zmem did not write (never a link or another
    /// user's file)
    #[arg(long)]
    overwrite: bool,
    /// Random-read requests per page-cluster value
    #[arg(long, default_value_t = REQUESTS)]
    requests: usize,
    /// Skip the kernel rows
    #[arg(long)]
    no_kernel: bool,
    /// Score weights, e.g. latency=0.4,ratio=0.4,throughput=0.2 (the default)
    #[arg(long, value_name = "latency=W,ratio=W,throughput=W")]
    weights: Option<String>,
    /// RAM size for the recommendation (default: this machine's MemTotal)
    #[arg(long, value_name = "SIZE")]
    ram: Option<String>,
    /// Filesystem random 4 KiB read speed in MiB/s for vm.swappiness (default: measured)
    #[arg(long, value_name = "MIB_S")]
    fs_read: Option<f64>,
}

/// `zmem bench device` and `zmem bench floor`.
#[derive(clap::Args, Debug)]
struct DeviceArgs {
    /// Corpus files of raw 4 KiB pages (e.g. `dd if=/dev/zram0 of=pages.bin`); without any, a
    /// synthetic corpus
    corpus: Vec<PathBuf>,
    /// Algorithms to run (comma-separated kernel names); default: all
    #[arg(long, value_delimiter = ',')]
    algo: Vec<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// `level` for every algorithm run (as zram's algorithm_params level=)
    #[arg(long, allow_negative_numbers = true)]
    level: Option<i32>,
    /// Reader threads for the random-read phase
    #[arg(long, default_value_t = THREADS)]
    threads: usize,
    /// Random-read requests per page-cluster value
    #[arg(long, default_value_t = REQUESTS)]
    requests: usize,
    /// Skip the kernel rows
    #[arg(long)]
    no_kernel: bool,
    /// The engine rows behave as this kernel version's zram (6.1 to 7.3) [default: the running
    /// kernel's when kernel rows are measured, else the newest modeled]
    #[arg(long, value_name = "VERSION", value_parser = crate::args::kernel)]
    kernel: Option<zmem_kernel::KernelModel>,
}

/// `zmem bench codecs`.
#[derive(clap::Args, Debug)]
struct CodecsArgs {
    /// Corpus files of raw 4 KiB pages; without any, a synthetic corpus
    corpus: Vec<PathBuf>,
    /// Algorithms to run (comma-separated kernel names); default: all
    #[arg(long, value_delimiter = ',')]
    algo: Vec<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// `level` for every algorithm run (as zram's algorithm_params level=)
    #[arg(long, allow_negative_numbers = true)]
    level: Option<i32>,
    /// Dictionary file for every algorithm run (lz4, lz4hc, zstd take one)
    #[arg(long, value_name = "FILE")]
    dict: Option<PathBuf>,
    /// Minimum milliseconds of each throughput measurement
    #[arg(long, value_name = "MS", default_value_t = MIN_TIME_MS)]
    min_time_ms: u64,
}

/// `zmem bench full`.
#[derive(clap::Args, Debug)]
struct FullArgs {
    /// Corpus files of raw 4 KiB pages; without any, this machine's memory (at most 16 MiB)
    /// plus 4 MiB of synthetic pages
    corpus: Vec<PathBuf>,
    /// Algorithms to run (comma-separated kernel names); default: all
    #[arg(long, value_delimiter = ',')]
    algo: Vec<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Also write a self-contained HTML report with charts
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
    /// Replace an existing --report file that zmem did not write (never a link or another
    /// user's file)
    #[arg(long)]
    overwrite: bool,
    /// Score weights, e.g. latency=0.4,ratio=0.4,throughput=0.2 (the default)
    #[arg(long, value_name = "latency=W,ratio=W,throughput=W")]
    weights: Option<String>,
    /// RAM size for the recommendation (default: this machine's MemTotal)
    #[arg(long, value_name = "SIZE")]
    ram: Option<String>,
    /// Filesystem random 4 KiB read speed in MiB/s for vm.swappiness (default: measured)
    #[arg(long, value_name = "MIB_S")]
    fs_read: Option<f64>,
    /// Dictionary file for every algorithm run (lz4, lz4hc, zstd take one)
    #[arg(long, value_name = "FILE")]
    dict: Option<PathBuf>,
    /// Minimum milliseconds of each throughput measurement
    #[arg(long, value_name = "MS", default_value_t = MIN_TIME_MS)]
    min_time_ms: u64,
    /// Random-read requests per page-cluster value
    #[arg(long, default_value_t = REQUESTS)]
    requests: usize,
    /// Skip the kernel rows
    #[arg(long)]
    no_kernel: bool,
    /// The verdict's rounds on the same pages (it picks the algorithm): they go on until the
    /// decision is settled or this is spent (e.g. 60s, 2m)
    #[arg(long, value_name = "DURATION", default_value = ROUND_BUDGET)]
    budget: String,
    /// At most this many verdict rounds; default: until settled or the budget is spent
    #[arg(long)]
    rounds: Option<usize>,
}

/// `zmem bench recomp`.
#[derive(clap::Args, Debug)]
struct RecompArgs {
    /// The recompression algorithm
    #[arg(value_name = "ALGO")]
    with: String,
    /// Corpus files of raw 4 KiB pages; without any, a heap-like corpus
    corpus: Vec<PathBuf>,
    /// The primary algorithm the corpus is written with
    #[arg(long, value_name = "ALGO", default_value = zmem_codec::backend::lz4::INFO.name)]
    primary: String,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

/// `zmem bench fastpath`.
#[derive(clap::Args, Debug)]
struct FastpathArgs {
    /// The fast algorithm
    #[arg(value_name = "ALGO")]
    fast: String,
    /// Corpus files of raw 4 KiB pages; without any, a heap-like corpus
    corpus: Vec<PathBuf>,
    /// The primary algorithm the fast-path slots are recompressed back to
    #[arg(long, value_name = "ALGO", default_value = zmem_codec::backend::lz4::INFO.name)]
    primary: String,
    /// Write passes into fresh devices (latencies pooled over all passes)
    #[arg(long, value_name = "N", default_value_t = PASSES)]
    passes: usize,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

/// `zmem bench writeback`.
#[derive(clap::Args, Debug)]
struct WritebackArgs {
    /// Corpus files of raw 4 KiB pages; without any, a synthetic corpus
    corpus: Vec<PathBuf>,
    /// The algorithm the corpus is written with
    #[arg(long, value_name = "ALGO", default_value = zmem_codec::backend::lz4::INFO.name)]
    algo: String,
    /// The pages written back (idle, huge, huge_idle, incompressible, all)
    #[arg(long, value_name = "TYPE", default_value = WB_TYPE)]
    wb_type: String,
    /// Write the compressed objects (compressed_writeback=1)
    #[arg(long)]
    wb_compressed: bool,
    /// Backing file or block device (an existing one is used as is and kept; a new file is
    /// created and removed) [default: a temporary file]. A block device is also the kernel
    /// rows' backing_dev; it is refused while mounted or swapped on, and when it holds a
    /// filesystem, swap area or data (unless --force)
    #[arg(long, value_name = "FILE|/dev/X")]
    backing_dev: Option<PathBuf>,
    /// Use a --backing-dev block device that holds a signature or data (overwritten)
    #[arg(long)]
    force: bool,
    /// writeback_batch_size on the engine's devices and, where it has it (6.19+), the kernel's
    #[arg(long, value_name = "N")]
    wb_batch_size: Option<u32>,
    /// Skip the kernel rows
    #[arg(long)]
    no_kernel: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

/// `zmem bench zswap`.
#[derive(clap::Args, Debug)]
struct ZswapArgs {
    /// Corpus files of raw 4 KiB pages; without any, a synthetic corpus
    corpus: Vec<PathBuf>,
    /// Algorithms to run (comma-separated kernel names)
    #[arg(long, value_delimiter = ',')]
    algo: Vec<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Share of the pages that is hot
    #[arg(long, value_name = "SHARE", default_value_t = HOT)]
    hot: f64,
    /// Share of the accesses that go to the hot pages
    #[arg(long, value_name = "SHARE", default_value_t = HOT_ACCESS)]
    hot_access: f64,
    /// RAM budget (zswap pool limit = zram mem_limit): a share of the corpus or a size (64M)
    #[arg(long, value_name = "SHARE|SIZE", default_value = BUDGET)]
    budget: String,
    /// Swap-ins after every page was swapped out once
    #[arg(long, default_value_t = ACCESSES)]
    accesses: usize,
    /// zswap allocator (zsmalloc, zbud, z3fold)
    #[arg(long, default_value = ZPOOL)]
    zpool: String,
    /// Run the kernel rows even if other swap areas are active or zswap is enabled
    #[arg(long)]
    force: bool,
    /// When the engine's shrink worker runs: `paced:N` (queued by a refused store, then N steps
    /// of its loop per later store or load, as the kernel's workqueue) or `inline` (to the end,
    /// right after the refused store)
    #[arg(long, value_name = "inline|paced:N", default_value = WORKER)]
    worker: String,
    /// Directory for the kernel rows' swap file, on a filesystem that can hold one (not
    /// tmpfs, 9p or overlayfs; checked before anything is set up)
    #[arg(long, value_name = "DIR", default_value = SWAP_DIR)]
    swap_dir: PathBuf,
    /// Skip the kernel rows
    #[arg(long)]
    no_kernel: bool,
}

/// Which body runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Verdict,
    Device,
    Codecs,
    Full,
    Recomp,
    Fastpath,
    Writeback,
    Zswap,
}

impl Mode {
    /// The body to run and the flags it reads; what a subcommand does not set keeps the
    /// default of `zmem bench`.
    fn resolve(self) -> (Kind, Args) {
        let mut a = Args::defaults();
        let kind = match self {
            Mode::Verdict(m) => {
                (a.corpus, a.algo, a.format, a.rounds) = (m.corpus, m.algo, m.format, m.rounds);
                a.budget = Some(m.budget);
                (a.out_dir, a.requests, a.no_kernel) = (m.out_dir, m.requests, m.no_kernel);
                a.overwrite = m.overwrite;
                (a.weights, a.ram, a.fs_read) = (m.weights, m.ram, m.fs_read);
                Kind::Verdict
            }
            Mode::Device(m) => {
                a.device(m);
                Kind::Device
            }
            Mode::Floor(m) => {
                a.device(m);
                a.floor = true;
                Kind::Device
            }
            Mode::Codecs(m) => {
                (a.corpus, a.algo, a.format, a.level) = (m.corpus, m.algo, m.format, m.level);
                (a.dict, a.min_time_ms) = (m.dict, m.min_time_ms);
                Kind::Codecs
            }
            Mode::Full(m) => {
                (a.corpus, a.algo, a.format, a.report) = (m.corpus, m.algo, m.format, m.report);
                a.overwrite = m.overwrite;
                (a.weights, a.ram, a.fs_read, a.dict) = (m.weights, m.ram, m.fs_read, m.dict);
                (a.min_time_ms, a.requests, a.no_kernel) = (m.min_time_ms, m.requests, m.no_kernel);
                (a.budget, a.rounds) = (Some(m.budget), m.rounds);
                Kind::Full
            }
            Mode::Recomp(m) => {
                (a.corpus, a.algo, a.format) = (m.corpus, vec![m.primary], m.format);
                a.recomp = Some(m.with);
                Kind::Recomp
            }
            Mode::Fastpath(m) => {
                (a.corpus, a.algo, a.format) = (m.corpus, vec![m.primary], m.format);
                (a.fastpath, a.passes) = (Some(m.fast), m.passes);
                Kind::Fastpath
            }
            Mode::Writeback(m) => {
                (a.corpus, a.algo, a.format) = (m.corpus, vec![m.algo], m.format);
                (a.wb_type, a.wb_compressed) = (m.wb_type, m.wb_compressed);
                (a.backing_dev, a.force, a.no_kernel) = (m.backing_dev, m.force, m.no_kernel);
                a.wb_batch_size = m.wb_batch_size;
                Kind::Writeback
            }
            Mode::Transport(_) => unreachable!("bench transport runs on its own flags"),
            Mode::Zswap(m) => {
                (a.corpus, a.algo, a.format, a.hot) = (m.corpus, m.algo, m.format, m.hot);
                (a.hot_access, a.budget, a.accesses) = (m.hot_access, Some(m.budget), m.accesses);
                (a.zpool, a.force, a.worker) = (m.zpool, m.force, m.worker);
                (a.no_kernel, a.swap_dir) = (m.no_kernel, m.swap_dir);
                Kind::Zswap
            }
        };
        (kind, a)
    }
}

/// The flags every body reads: the main job's (shown in `zmem bench --help`), and the old
/// spellings of the modes (hidden; they work for one release, with a note).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Corpus files of raw 4 KiB pages (e.g. `dd if=/dev/zram0 of=pages.bin`): the device
    /// table per algorithm. With none (and no mode flag), the main job: up to 64 MiB of this
    /// machine's memory plus synthetic pages, every candidate in interleaved rounds until the
    /// decision is settled or --budget is spent, and the verdict with the config file to apply
    /// (docs/lab.md)
    #[arg(hide = true)]
    pub corpus: Vec<PathBuf>,
    /// Remove what a bench killed with SIGKILL (or crashed) left behind (its kernel zram
    /// devices), from its crash journal, and exit: `zmem trial --recover`
    #[arg(long)]
    pub recover: bool,
    /// Codec level only: ratio, compress/decompress/reclaim MB/s and per-page latency
    #[arg(hide = true, long)]
    pub codecs: bool,
    /// Algorithms to run (comma-separated kernel names); default: all
    #[arg(long, value_delimiter = ',')]
    pub algo: Vec<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Codecs mode: `level` for every algorithm run (as zram's algorithm_params level=)
    #[arg(hide = true, long, allow_negative_numbers = true)]
    pub level: Option<i32>,
    /// Codecs mode: dictionary file for every algorithm run (lz4, lz4hc, zstd take one)
    #[arg(hide = true, long, value_name = "FILE")]
    pub dict: Option<PathBuf>,
    /// Codecs mode: minimum milliseconds of each throughput measurement
    #[arg(hide = true, long, value_name = "MS", default_value_t = MIN_TIME_MS)]
    pub min_time_ms: u64,
    /// At most this many interleaved rounds (every candidate once per round); default: until
    /// the decision is settled or --budget is spent
    #[arg(long)]
    pub rounds: Option<usize>,
    /// The verdict on the given corpus files (without files it is the default)
    #[arg(hide = true, long)]
    pub verdict: bool,
    /// Write the recommended configuration as DIR/zmem.conf [default: a new private file in
    /// your state directory: /var/lib/zmem for root, else ~/.local/state/zmem]
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Replace an existing --out-dir or --report file that zmem did not write (never a link or
    /// another user's file)
    #[arg(long)]
    pub overwrite: bool,
    /// Device mode: reader threads for the random-read phase
    #[arg(hide = true, long, default_value_t = THREADS)]
    pub threads: usize,
    /// Random-read requests per page-cluster value
    #[arg(long, default_value_t = REQUESTS)]
    pub requests: usize,
    /// Skip the kernel rows
    #[arg(long)]
    pub no_kernel: bool,
    /// Device mode: the kernel version whose zram the engine rows behave as
    #[arg(hide = true, long, value_name = "VERSION", value_parser = crate::args::kernel)]
    pub kernel: Option<zmem_kernel::KernelModel>,
    /// Device mode: add `codec` rows, the floor under any engine: the codec alone on the same
    /// pages and the same random requests (no slot table, allocator or locks), with the
    /// codec/kernel ratios beside engine/kernel (docs/lab.md, "The codec floor")
    #[arg(hide = true, long, conflicts_with_all = [
        "codecs", "zswap", "recomp", "fastpath", "writeback", "verdict", "full", "report", "weights",
    ])]
    pub floor: bool,
    /// The complete table: codec and device figures for every algorithm plus zstd with a
    /// dictionary trained on the corpus, page-cluster 0..3, weighted score, best-for lines and
    /// the recommendation (implied by --report and --weights)
    #[arg(hide = true, long)]
    pub full: bool,
    /// Full mode: also write a self-contained HTML report with charts
    #[arg(hide = true, long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// Full mode: score weights, e.g. latency=0.4,ratio=0.4,throughput=0.2 (the default)
    #[arg(hide = true, long, value_name = "latency=W,ratio=W,throughput=W")]
    pub weights: Option<String>,
    /// RAM size for the recommendation (default: this machine's MemTotal)
    #[arg(long, value_name = "SIZE")]
    pub ram: Option<String>,
    /// Filesystem random 4 KiB read speed in MiB/s for vm.swappiness (default: measured)
    #[arg(long, value_name = "MIB_S")]
    pub fs_read: Option<f64>,
    /// zswap mode: the corpus through zswap and through zram + disk swap at the same RAM budget,
    /// with a hot/cold access pattern (hit rate, writeback, RAM, load latency, backing I/O)
    #[arg(hide = true, long)]
    pub zswap: bool,
    /// zswap mode: share of the pages that is hot
    #[arg(hide = true, long, value_name = "SHARE", default_value_t = HOT)]
    pub hot: f64,
    /// zswap mode: share of the accesses that go to the hot pages
    #[arg(hide = true, long, value_name = "SHARE", default_value_t = HOT_ACCESS)]
    pub hot_access: f64,
    /// Time for the interleaved rounds: they go on until the decision is settled or this is
    /// spent (e.g. 60s, 2m) [default: 60s]. (With the old `--zswap` spelling: its RAM budget.)
    #[arg(long, value_name = "DURATION")]
    pub budget: Option<String>,
    /// zswap mode: swap-ins after every page was swapped out once
    #[arg(hide = true, long, default_value_t = ACCESSES)]
    pub accesses: usize,
    /// zswap mode: zswap allocator (zsmalloc, zbud, z3fold)
    #[arg(hide = true, long, default_value = ZPOOL)]
    pub zpool: String,
    /// zswap mode: run the kernel rows even if other swap areas are active or zswap is enabled
    #[arg(hide = true, long)]
    pub force: bool,
    /// zswap mode: when the engine's shrink worker runs: `paced:N` (queued by a refused store,
    /// then N steps of its loop per later store or load, as the kernel's workqueue) or `inline`
    /// (to the end, right after the refused store)
    #[arg(
        hide = true,
        long,
        value_name = "inline|paced:N",
        default_value = WORKER
    )]
    pub worker: String,
    /// zswap mode: directory for the kernel rows' swap file (not tmpfs, 9p or overlayfs)
    #[arg(hide = true, long, value_name = "DIR", default_value = SWAP_DIR)]
    pub swap_dir: PathBuf,
    /// Recompression: write the corpus with the primary (first --algo, default lz4), mark
    /// all idle, recompress with ALGO; ratio and mem_used_total before/after, against ALGO
    /// alone. Without corpus files, a heap-like corpus is used
    #[arg(hide = true, long, value_name = "ALGO")]
    pub recomp: Option<String>,
    /// Fast path: write the corpus with the fast algorithm ALGO and with the primary (first
    /// --algo, default lz4) side by side, timing every write (mean, p50, p99); then recompress
    /// the fast-path slots back to the primary (`recompress type=idle from=ALGO`) and compare
    /// the effective ratio with the primary alone. Without corpus files, a heap-like corpus is used
    #[arg(hide = true, long, value_name = "ALGO", conflicts_with = "recomp")]
    pub fastpath: Option<String>,
    /// Fast-path mode: write passes into fresh devices (latencies pooled over all passes)
    #[arg(hide = true, long, value_name = "N", default_value_t = PASSES)]
    pub passes: usize,
    /// Writeback: write the corpus (default corpus without files) with the first --algo
    /// (default lz4) on a device with a backing file, mark all idle, write back --wb-type;
    /// mem_used_total/orig/compr and effective ratio before/after, pages written back,
    /// bd_stat, times; every page read back and compared
    #[arg(hide = true, long, conflicts_with_all = ["recomp", "fastpath"])]
    pub writeback: bool,
    /// Writeback mode: the pages written back (idle, huge, huge_idle, incompressible, all)
    #[arg(hide = true, long, value_name = "TYPE", default_value = WB_TYPE)]
    pub wb_type: String,
    /// Writeback mode: write the compressed objects (compressed_writeback=1)
    #[arg(hide = true, long)]
    pub wb_compressed: bool,
    /// Writeback mode: backing file (an existing one is used as is and kept; a new one is
    /// created and removed) [default: a temporary file]
    #[arg(hide = true, long, value_name = "FILE")]
    pub backing_dev: Option<PathBuf>,
    /// Writeback mode: writeback_batch_size (engine, and the kernel where it has it)
    #[arg(hide = true, long, value_name = "N")]
    pub wb_batch_size: Option<u32>,
}

impl Args {
    /// The flags of `zmem bench` alone.
    fn defaults() -> Args {
        use clap::FromArgMatches;
        let cmd = <Args as clap::Args>::augment_args(clap::Command::new("bench"));
        Args::from_arg_matches(&cmd.get_matches_from(["bench"])).expect("the defaults parse")
    }

    fn device(&mut self, m: DeviceArgs) {
        (self.corpus, self.algo, self.format) = (m.corpus, m.algo, m.format);
        (self.level, self.threads, self.requests) = (m.level, m.threads, m.requests);
        (self.no_kernel, self.kernel) = (m.no_kernel, m.kernel);
    }

    /// The mode the old flags choose (in the order they always took precedence), and the
    /// subcommand that is its new spelling; `None` for the main job.
    fn old_mode(&self) -> (Kind, Option<&'static str>) {
        if self.zswap {
            (Kind::Zswap, Some("--zswap` is now `zmem bench zswap"))
        } else if self.recomp.is_some() {
            (
                Kind::Recomp,
                Some("--recomp ALGO` is now `zmem bench recomp ALGO"),
            )
        } else if self.fastpath.is_some() {
            (
                Kind::Fastpath,
                Some("--fastpath ALGO` is now `zmem bench fastpath ALGO"),
            )
        } else if self.writeback {
            (
                Kind::Writeback,
                Some("--writeback` is now `zmem bench writeback"),
            )
        } else if self.codecs {
            (Kind::Codecs, Some("--codecs` is now `zmem bench codecs"))
        } else if self.verdict {
            (Kind::Verdict, Some("--verdict` is now `zmem bench verdict"))
        } else if self.full || self.report.is_some() || self.weights.is_some() {
            (
                Kind::Full,
                Some("--full` (--report, --weights) is now `zmem bench full"),
            )
        } else if self.corpus.is_empty() && self.threads == 1 && !self.floor {
            // The main job: this machine's memory, the verdict.
            (Kind::Verdict, None)
        } else if self.floor {
            (
                Kind::Device,
                Some("--floor CORPUS` is now `zmem bench floor CORPUS"),
            )
        } else {
            (
                Kind::Device,
                Some("CORPUS` is now `zmem bench device CORPUS"),
            )
        }
    }
}

pub fn run(bench: Bench) -> anyhow::Result<()> {
    if bench.args.recover {
        return super::trial::run_recover();
    }
    let (kind, args) = match bench.mode {
        Some(Mode::Transport(t)) => return transport::run(t),
        Some(mode) => mode.resolve(),
        None => {
            let (kind, note) = bench.args.old_mode();
            if let Some(note) = note {
                eprintln!(
                    "zmem: note: `zmem bench {note}`; the old spelling goes in the next release"
                );
            }
            (kind, bench.args)
        }
    };
    // Every mode but zswap (which checks for them between its steps) never checks for
    // Ctrl-C, SIGTERM or SIGHUP: they remove the kernel rows' devices and exit.
    let _signals = match kind {
        Kind::Zswap => None,
        _ => Some(zmem_host::SignalWatch::install_undoing().context("installing signal handlers")?),
    };
    match kind {
        Kind::Verdict => verdict::run(&args),
        Kind::Device => device::run(&args),
        Kind::Codecs => run_codecs(args),
        Kind::Full => run_full(&args),
        Kind::Recomp => run_recomp(&args, args.recomp.as_deref().unwrap_or_default()),
        Kind::Fastpath => run_fastpath(&args, args.fastpath.as_deref().unwrap_or_default()),
        Kind::Writeback => run_writeback(&args),
        Kind::Zswap => zswap::run(&args),
    }
}

fn run_codecs(args: Args) -> anyhow::Result<()> {
    use zmem_corpus as corpus;
    use zmem_measure::codecs;

    let mut params = zmem_codec::Params {
        level: args.level,
        ..Default::default()
    };
    if let Some(d) = &args.dict {
        params = params.dict_file(d)?;
    }
    let opts = codecs::Options {
        algorithms: args.algo.clone(),
        params,
        min_time: Duration::from_millis(args.min_time_ms),
        ..Default::default()
    };
    // Check the algorithm names before loading anything.
    codecs::select(&opts.algorithms)?;
    let corpora = if args.corpus.is_empty() {
        vec![corpus::default_corpus()]
    } else {
        corpus::load_all(&args.corpus)?
    };

    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .context("progress bar template")?
            .progress_chars("=> "),
    );
    let rows = codecs::run(&corpora, &opts, &mut |p| {
        bar.set_length(p.total as u64);
        bar.set_position(p.done as u64);
        bar.set_message(format!("{} on {}", p.algorithm, p.corpus));
    })?;
    bar.finish_and_clear();

    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
        Format::Csv | Format::Table => {
            let mut t = Table::new(&zmem_report::CODECS_COLUMNS);
            for r in &rows {
                t.push(zmem_report::codec_cells(r));
            }
            if args.format == Format::Csv {
                print!("{}", crate::output::csv_of(&rows));
            } else {
                print!("{}", t.render_table());
                print!("{}", zmem_report::corpus_lines(&corpora));
                println!(
                    "MB/s = 10^6 bytes of pages per second, same-filled pages excluded (zram stores only \
                     their word); reclaim = compress MB/s x (1 - 1/ratio); latency in microseconds per page"
                );
            }
        }
    }
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| r.status == codecs::Status::Failed)
        .map(|r| {
            format!(
                "{} on {}: {}",
                r.algorithm,
                r.corpus,
                r.reason.as_deref().unwrap_or("")
            )
        })
        .collect();
    if !failed.is_empty() {
        anyhow::bail!("round-trip verification failed: {}", failed.join("; "));
    }
    Ok(())
}

fn run_full(args: &Args) -> anyhow::Result<()> {
    use super::lab_run as full;
    if let Some(w) = &args.weights {
        // Bad weights fail before anything is measured.
        w.parse::<zmem_verdict::Weights>()?;
    }
    if let Some(r) = &args.report {
        full::check_report(r, args.overwrite)?; // refused before measuring, not after
    }
    let budget = verdict::rounds_budget(args.budget.as_deref(), args.rounds)?;
    let (t, ranking) = full::table(&full::Run {
        corpus: &args.corpus,
        algo: &args.algo,
        weights: args.weights.as_deref(),
        min_time_ms: args.min_time_ms,
        requests: args.requests,
        kernel: !args.no_kernel,
        dict: args.dict.as_deref(),
        rounds: args.rounds,
        budget,
    })?;
    let rec = ranking
        .as_ref()
        .map_err(|e| anyhow::anyhow!("{e:#}"))
        .and_then(|r| {
            full::inputs(args.ram.as_deref(), args.fs_read, &full::fs_dir(), r)
                .and_then(|i| zmem_verdict::recommend_ranked(&t, &i, r))
        });
    full::print(
        &t,
        ranking.as_ref().ok(),
        &rec,
        args.format,
        args.report.as_deref().map(|r| (r, args.overwrite)),
    )
}

fn run_writeback(args: &Args) -> anyhow::Result<()> {
    use zmem_measure::writeback;
    let opts = writeback::Options {
        algo: args
            .algo
            .first()
            .cloned()
            .unwrap_or_else(|| zmem_codec::backend::lz4::INFO.name.into()),
        wb_type: args.wb_type.clone(),
        compressed: args.wb_compressed,
        backing_dev: args.backing_dev.clone(),
        kernel: !args.no_kernel,
        force: args.force,
        batch_size: args.wb_batch_size,
        ..Default::default()
    };
    let default = || anyhow::Ok(zmem_corpus::default_corpus());
    per_corpus(
        args,
        default,
        |c| writeback::run(c, &opts),
        zmem_report::writeback_text,
    )
}

fn run_recomp(args: &Args, algo: &str) -> anyhow::Result<()> {
    use zmem_measure::recomp;
    let primary = args
        .algo
        .first()
        .map(String::as_str)
        .unwrap_or(zmem_codec::backend::lz4::INFO.name);
    per_corpus(
        args,
        || recomp::heap_corpus(8),
        |c| recomp::run(c, primary, algo),
        zmem_report::recomp_text,
    )
}

fn run_fastpath(args: &Args, algo: &str) -> anyhow::Result<()> {
    use zmem_measure::{fastpath, recomp};
    let primary = args
        .algo
        .first()
        .map(String::as_str)
        .unwrap_or(zmem_codec::backend::lz4::INFO.name);
    per_corpus(
        args,
        || recomp::heap_corpus(8),
        |c| fastpath::run(c, primary, algo, args.passes),
        zmem_report::fastpath_text,
    )
}

/// The one-measurement-per-corpus modes (`--recomp`, `--fastpath`,
/// `--writeback`): run on each CORPUS (or on `default` without files) and
/// print the results as JSON or as their text rendering.
fn per_corpus<R: serde::Serialize, E: Into<anyhow::Error>, F: Into<anyhow::Error>>(
    args: &Args,
    default: impl FnOnce() -> Result<zmem_corpus::Corpus, F>,
    run: impl Fn(&zmem_corpus::Corpus) -> Result<R, E>,
    render: impl Fn(&R) -> String,
) -> anyhow::Result<()> {
    let corpora = if args.corpus.is_empty() {
        vec![default().map_err(Into::into)?]
    } else {
        zmem_corpus::load_all(&args.corpus)?
    };
    let results = corpora
        .iter()
        .map(|c| run(c).map_err(Into::into))
        .collect::<anyhow::Result<Vec<R>>>()?;
    let text = match args.format {
        Format::Json => format!("{}\n", serde_json::to_string_pretty(&results)?),
        Format::Csv | Format::Table => results.iter().map(render).collect(),
    };
    print_quietly(&text)
}

fn print_quietly(text: &str) -> anyhow::Result<()> {
    // A closed pipe (`| head`) ends quietly instead of panicking.
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    match o.write_all(text.as_bytes()).and_then(|_| o.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
