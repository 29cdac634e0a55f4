//! `zmem bench zswap [CORPUS...]`: the corpus through zswap and through
//! zram + disk swap at the same RAM budget, with a hot/cold access pattern
//! (`zmem_measure::zswap`); as root with zswap, also through the kernel's
//! zswap unless `--no-kernel`, with its swap file in `--swap-dir` (checked
//! before the run: a filesystem that cannot hold a swap file is an error naming it).

use std::path::PathBuf;

use zmem_measure::zswap::{self, KernelOptions, Options};

use crate::output::{Format, Table};

/// zswap against zram + disk swap at the same RAM budget, with a hot/cold access pattern
#[derive(clap::Args, Debug)]
pub(super) struct Args {
    /// Corpus files of raw 4 KiB pages; without any, a synthetic corpus
    corpus: Vec<PathBuf>,
    /// Algorithms to run (comma-separated kernel names)
    #[arg(long, value_delimiter = ',')]
    algo: Vec<String>,
    /// Share of the pages that is hot
    #[arg(long, value_name = "SHARE", default_value_t = 0.2)]
    hot: f64,
    /// Share of the accesses that go to the hot pages
    #[arg(long, value_name = "SHARE", default_value_t = 0.8)]
    hot_access: f64,
    /// RAM budget (zswap pool limit = zram mem_limit): a share of the corpus or a size (64M)
    #[arg(long, value_name = "SHARE|SIZE", default_value = "0.1")]
    budget: String,
    /// Swap-ins after every page was swapped out once
    #[arg(long, default_value_t = 50_000)]
    accesses: usize,
    /// zswap allocator (zsmalloc, zbud, z3fold)
    #[arg(long, default_value = "zsmalloc")]
    zpool: String,
    /// Run the kernel rows even if other swap areas are active or zswap is enabled
    #[arg(long)]
    force: bool,
    /// When the engine's shrink worker runs: `paced:N` (queued by a refused store, then N steps
    /// of its loop per later store or load, as the kernel's workqueue) or `inline` (to the end,
    /// right after the refused store)
    #[arg(long, value_name = "inline|paced:N", default_value = "paced:4")]
    worker: String,
    /// Directory for the kernel rows' swap file, on a filesystem that can hold one (not
    /// tmpfs, 9p or overlayfs; checked before anything is set up), as trial's and tune's
    /// --swap-dir
    #[arg(long, value_name = "DIR", default_value = "/var/tmp")]
    swap_dir: PathBuf,
    /// Skip the kernel rows
    #[arg(long)]
    no_kernel: bool,
}

/// `--budget`: a share of the corpus (0 < x ≤ 1, e.g. 0.1) or a size with a suffix (64M).
fn budget(s: &str) -> anyhow::Result<(Option<u64>, f64)> {
    if let Ok(f) = s.parse::<f64>() {
        if f > 0.0 && f <= 1.0 {
            return Ok((None, f));
        }
    }
    let v = zmem_conf::parse_size(s).unwrap_or(0);
    if v == 0 {
        anyhow::bail!(
            "--budget {s:?}: give a share of the corpus in (0, 1] (e.g. 0.1) or a size (e.g. 64M)"
        );
    }
    Ok((Some(v), 0.0))
}

/// The kernel rows' swap file fits in `dir` and the filesystem can hold one:
/// refused before anything is set up (in a VM, /tmp on 9p or tmpfs cannot).
fn swap_dir_usable(dir: &std::path::Path, corpora: &[zmem_corpus::Corpus]) -> anyhow::Result<()> {
    let pages = corpora.iter().map(|c| c.page_count()).max().unwrap_or(0);
    let bytes = (pages * zmem_codec::PAGE_SIZE) as u64 + (16 << 20);
    match zmem_host::swap_dir_refusal(dir, bytes, 0, "--swap-dir") {
        Some(why) => anyhow::bail!("the kernel rows need a swap file: {why} (or --no-kernel)"),
        None => Ok(()),
    }
}

pub(super) fn run(args: &Args, format: Format) -> anyhow::Result<()> {
    let (budget_bytes, budget_fraction) = budget(&args.budget)?;
    let algos = if args.algo.is_empty() {
        vec![zmem_codec::ZSWAP_DEFAULT.name.to_string()]
    } else {
        args.algo.clone()
    };
    let base = Options {
        zpool: args.zpool.clone(),
        budget_bytes,
        budget_fraction: if budget_bytes.is_some() {
            1.0
        } else {
            budget_fraction
        },
        hot: args.hot,
        hot_access: args.hot_access,
        accesses: args.accesses,
        worker: zswap::parse_worker(&args.worker)?,
        ..Options::default()
    };
    // Bad options fail before the corpus is built.
    for a in &algos {
        Options {
            algorithm: a.clone(),
            ..base.clone()
        }
        .validate()?;
    }
    let corpora = zmem_corpus::files_or_default(&args.corpus)?;
    if !args.no_kernel && zmem_files::euid_is_root() {
        swap_dir_usable(&args.swap_dir, &corpora)?;
    }
    let kernel = KernelOptions {
        force: args.force,
        dir: args.swap_dir.clone(),
    };
    let kernel = (!args.no_kernel).then_some(&kernel);
    let (rows, notes) = zswap::run_all(&corpora, &algos, &base, kernel)?;
    for n in &notes {
        eprintln!("zmem bench: no kernel rows: {n}");
    }
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
        Format::Csv | Format::Table => {
            let mut t = Table::new(&zmem_report::ZSWAP_COLUMNS);
            for r in &rows {
                t.push(zmem_report::zswap_cells(r));
            }
            if format == Format::Csv {
                print!("{}", crate::output::csv_of(&rows));
                return Ok(());
            }
            print!("{}", t.render_table());
            print!(
                "{}",
                zmem_report::zswap_notes(&corpora, args.hot, args.hot_access, args.accesses)
            );
        }
    }
    Ok(())
}
