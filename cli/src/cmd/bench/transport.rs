//! `zmem bench transport CORPUS... --target T...`: the same pages through each way of
//! reaching a compressed RAM device (the engine in process, kernel zram, `zmem serve` over
//! NBD, /dev/ublkbN, /dev/nbdN), interleaved rounds, medians (`zmem_measure::transport`).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::Context;
use zmem_measure::transport::{self, Options, Row, Spec};

use crate::output::{csv_of, Format, Table};

/// Transports side by side: the same pages through the engine in process, kernel zram,
/// `zmem serve` over NBD and block devices (/dev/ublkbN, /dev/nbdN); random 4 KiB reads
/// and writes per queue depth, 1 MiB sequential, interleaved rounds
#[derive(clap::Args, Debug)]
pub(super) struct Args {
    /// Corpus files of raw 4 KiB pages (at least 64 MiB of real memory for a published
    /// figure: `zmem capture`); without any, the synthetic default corpus
    corpus: Vec<PathBuf>,
    /// Where requests go, in this order (repeat the flag): `engine` (zmem's zram in this
    /// process), `kernel` (a kernel zram device hot-added for the run),
    /// `nbd+unix:///EXPORT?socket=PATH` (zmem serve or any NBD server), or a block device
    /// such as /dev/ublkb0 or /dev/nbd0 (overwritten: claimed, refused while it holds data
    /// unless --force)
    #[arg(long = "target", value_name = "TARGET", default_values_t = ["engine".to_string(), "kernel".to_string()])]
    targets: Vec<String>,
    /// Algorithm of the engine and kernel targets (a served device has its server's)
    #[arg(long, default_value = zmem_codec::ZRAM_DEFAULT.name)]
    algo: String,
    /// The kernel version whose zram the engine target behaves as [default: the newest]
    #[arg(long, value_name = "VERSION", value_parser = crate::args::kernel)]
    kernel: Option<zmem_kernel::KernelModel>,
    /// Interleaved rounds (every target once per round); the rows are their medians
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// 4 KiB requests per random phase
    #[arg(long, default_value_t = 20_000)]
    requests: usize,
    /// Queue depths of the random phases (requests in flight: one thread, and one NBD
    /// connection, each)
    #[arg(long, value_delimiter = ',', default_value = "1,16")]
    queue_depth: Vec<usize>,
    /// Overwrite a block device target that holds data
    #[arg(long)]
    force: bool,
}

fn options(a: &Args) -> anyhow::Result<Options> {
    zmem_codec::find(&a.algo).map_err(|e| anyhow::anyhow!("--algo: {e}"))?;
    if a.queue_depth.iter().any(|&q| q == 0 || q > 256) {
        anyhow::bail!("--queue-depth: each depth is 1 to 256");
    }
    if a.rounds == 0 || a.requests == 0 {
        anyhow::bail!("--rounds and --requests must be at least 1");
    }
    let targets = a
        .targets
        .iter()
        .map(|t| Spec::parse(t).map_err(|e| anyhow::anyhow!("--target: {e}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Options {
        targets,
        algo: a.algo.clone(),
        kernel_model: a.kernel.unwrap_or_else(zmem_kernel::KernelModel::newest),
        rounds: a.rounds,
        requests: a.requests,
        queue_depths: a.queue_depth.clone(),
        force: a.force,
        ..Options::default()
    })
}

fn cell(v: Option<f64>, scale: f64, digits: usize) -> String {
    v.map_or("-".into(), |x| format!("{:.*}", digits, x / scale))
}

fn table(rows: &[Row]) -> Table {
    let mut t = Table::new(&[
        "target", "phase", "qd", "req", "IOPS", "low", "high", "MiB/s", "mean µs", "p99 µs",
        "× first", "note",
    ]);
    for r in rows {
        t.push(vec![
            r.target.clone(),
            r.phase.to_string(),
            r.queue_depth.to_string(),
            zmem_conf::format_size(r.request_bytes as u64),
            cell(r.iops, 1.0, 0),
            cell(r.iops_min, 1.0, 0),
            cell(r.iops_max, 1.0, 0),
            cell(r.mibps, 1.0, 1),
            cell(r.lat_mean_ns, 1e3, 1),
            cell(r.lat_p99_ns, 1e3, 1),
            cell(r.to_first, 1.0, 2),
            r.error.clone().unwrap_or_default(),
        ]);
    }
    t
}

pub(super) fn run(a: &Args, format: Format) -> anyhow::Result<()> {
    let opts = options(a)?;
    let corpora = if a.corpus.is_empty() {
        vec![zmem_corpus::default_corpus()]
    } else {
        zmem_corpus::load_all(&a.corpus)?
    };
    // A kernel target's device is removed on Ctrl-C, SIGTERM and SIGHUP as well.
    let _signals =
        zmem_host::SignalWatch::install_undoing().context("installing signal handlers")?;
    let tty = std::io::stderr().is_terminal();
    let mut rows = Vec::new();
    for c in &corpora {
        let r = transport::run(c, &opts, &mut |what| {
            if tty {
                let _ = write!(std::io::stderr(), "\r\x1b[2K{}: {what}", c.name);
            }
        });
        if tty {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
        rows.extend(r.map_err(|e| anyhow::anyhow!("{}: {e}", c.name))?);
    }
    let text = match format {
        Format::Json => format!("{}\n", serde_json::to_string_pretty(&rows)?),
        Format::Csv => csv_of(&rows),
        Format::Table => {
            let mut s = String::new();
            for c in &corpora {
                s += &format!(
                    "corpus {} ({} pages), {} rounds, median per row (lowest, highest round); \
                     × first: median per-round IOPS ratio to the first target\n",
                    c.name,
                    c.page_count(),
                    opts.rounds
                );
            }
            s + &table(&rows).render_table()
        }
    };
    super::print_quietly(&text)
}
