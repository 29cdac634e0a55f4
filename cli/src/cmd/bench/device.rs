//! `zmem bench device [CORPUS...]` and `zmem bench floor`: the device-level benchmark
//! (engine zram device per algorithm, kernel zram beside it where possible).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use zmem_corpus::Corpus;
use zmem_measure::device::{self, Options, Report, Row};

use crate::output::{Format, Table};

/// The device table per algorithm on corpus files: the engine's zram beside the kernel's
/// (write, random read per page-cluster, ratio, memory)
#[derive(clap::Args, Debug)]
pub(super) struct Args {
    /// Corpus files of raw 4 KiB pages (e.g. `dd if=/dev/zram0 of=pages.bin`); without any, a
    /// synthetic corpus
    corpus: Vec<PathBuf>,
    /// Algorithms to run (comma-separated kernel names); default: all
    #[arg(long, value_delimiter = ',')]
    algo: Vec<String>,
    /// `level` for every algorithm run (as zram's algorithm_params level=)
    #[arg(long, allow_negative_numbers = true)]
    level: Option<i32>,
    /// Reader threads for the random-read phase
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Random-read requests per page-cluster value
    #[arg(long, default_value_t = super::REQUESTS)]
    requests: usize,
    /// Skip the kernel rows
    #[arg(long)]
    no_kernel: bool,
    /// The engine rows behave as this kernel version's zram (6.1 to 7.3) [default: the running
    /// kernel's when kernel rows are measured, else the newest modeled]
    #[arg(long, value_name = "VERSION", value_parser = crate::args::kernel)]
    kernel: Option<zmem_kernel::KernelModel>,
    /// The page size of the kernel the engine rows model: 4K, 16K (arm64 16 KiB kernels:
    /// Raspberry Pi 5, Asahi, Android) or 64K (ppc64el, RHEL aarch64). The corpus is cut into
    /// such pages; kernel rows need a running kernel with that page size (docs/page-size.md)
    #[arg(long, value_name = "SIZE", value_parser = crate::args::page_size)]
    page_size: Option<usize>,
}

/// The device table plus `codec` rows, the floor under any engine: the codec alone on the
/// same pages and random requests, with codec/kernel ratios beside engine/kernel
#[derive(clap::Args, Debug)]
pub(super) struct Floor {
    #[command(flatten)]
    pub device: Args,
}

/// A one-line progress bar on stderr (only when stderr is a terminal).
struct Bar {
    on: bool,
}

impl Bar {
    fn show(&self, p: &device::Progress) {
        if !self.on {
            return;
        }
        let w = 30;
        let filled = (p.done.min(p.total) * w).checked_div(p.total).unwrap_or(0);
        let mut e = std::io::stderr().lock();
        let _ = write!(
            e,
            "\r\x1b[2K[{}{}] {}/{} {}",
            "=".repeat(filled),
            " ".repeat(w - filled),
            p.done,
            p.total,
            p.what
        );
        let _ = e.flush();
    }
    fn clear(&self) {
        if self.on {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

/// The benchmark options from the command line; an unknown algorithm is an error.
fn options(args: &Args, floor: bool) -> anyhow::Result<Options> {
    let params = zmem_codec::Params {
        level: args.level,
        ..Default::default()
    };
    let opts = Options {
        algorithms: args.algo.clone(),
        params,
        threads: args.threads.max(1),
        requests: args.requests,
        kernel: !args.no_kernel,
        floor,
        kernel_model: args.kernel,
        page_size: args.page_size,
        ..Options::default()
    };
    for a in &opts.algorithms {
        if zmem_codec::find(a).is_err() {
            anyhow::bail!(
                "unknown algorithm '{a}'; valid algorithms: {}",
                zmem_codec::names().join(", ")
            );
        }
    }
    Ok(opts)
}

/// The measured rows of every report as a table.
fn measured_table(reports: &[Report]) -> Table {
    let mut t = Table::new(&zmem_report::DEVICE_COLUMNS);
    for r in reports
        .iter()
        .flat_map(|r| &r.rows)
        .filter(|r| r.reason.is_none())
    {
        t.push(zmem_report::device_cells(r));
    }
    t
}

/// The text output: the table, the corpora, what is missing, the
/// comparisons and the legend.
fn print_text(reports: &[Report], corpora: &[Corpus], opts: &Options) {
    print!("{}", measured_table(reports).render_table());
    if let Some(r) = reports.first() {
        println!(
            "engine rows: as kernel {}'s zram ({})",
            r.engine_kernel, r.engine_kernel_why
        );
    }
    print!("{}", zmem_report::device_notes(reports, corpora, opts));
}

pub(super) fn run(args: &Args, floor: bool, format: Format) -> anyhow::Result<()> {
    let opts = options(args, floor)?;
    let corpora = zmem_corpus::files_or_default(&args.corpus)?;
    let bar = Bar {
        on: std::io::stderr().is_terminal(),
    };
    let mut reports = Vec::new();
    for c in &corpora {
        reports.push(device::run(c, &opts, &mut |p| bar.show(&p)));
    }
    bar.clear();
    match format {
        Format::Json => {
            let rows: Vec<&Row> = reports.iter().flat_map(|r| &r.rows).collect();
            println!("{}", serde_json::to_string_pretty(&rows)?);
        }
        Format::Csv => {
            let rows: Vec<&Row> = reports.iter().flat_map(|r| &r.rows).collect();
            print!("{}", crate::output::csv_of(&rows));
        }
        Format::Table => print_text(&reports, &corpora, &opts),
    }
    Ok(())
}
