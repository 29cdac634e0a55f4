//! `zmem recommend`: the lab's verdict on a corpus (the default: this
//! machine's memory plus synthetic pages) — interleaved, repeated
//! measurements, ties called — with the arithmetic and the reasons behind
//! every setting, and one config file that `zmem apply` and `zmem persist`
//! take as is.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::bench::verdict::{self, Ask};
use crate::output::Format;

/// Arguments of `zmem recommend`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Corpus files of raw 4 KiB pages; default: this machine's memory plus synthetic pages
    pub corpus: Vec<PathBuf>,
    /// RAM size to plan for (default: this machine's MemTotal), e.g. 16G
    #[arg(long, value_name = "SIZE")]
    pub ram: Option<String>,
    /// Score weights, e.g. latency=0.4,ratio=0.4,throughput=0.2 (the default)
    #[arg(long, value_name = "latency=W,ratio=W,throughput=W")]
    pub weights: Option<String>,
    /// Filesystem random 4 KiB read speed in MiB/s (default: measured in /var/tmp)
    #[arg(long, value_name = "MIB_S")]
    pub fs_read: Option<f64>,
    /// Algorithms to consider (comma-separated kernel names); default: all
    #[arg(long, value_delimiter = ',')]
    pub algo: Vec<String>,
    /// Random 4 KiB reads per candidate per round
    #[arg(long, default_value_t = 20_000)]
    pub requests: usize,
    /// Time for the interleaved rounds: they go on until the decision is settled or this
    /// is spent (e.g. 60s, 2m)
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub budget: String,
    /// At most this many interleaved rounds (every candidate once per round); default: until
    /// settled or the budget is spent
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Skip the kernel zram rows (rank the engine's rows of the kernel's algorithms)
    #[arg(long)]
    pub no_kernel: bool,
    /// Write the configuration as DIR/zmem.conf (zram-generator.conf sections plus [sysctl]),
    /// for `zmem apply DIR/zmem.conf` and `zmem persist DIR/zmem.conf`
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Replace an existing DIR/zmem.conf that zmem did not write (never a link or another
    /// user's file)
    #[arg(long)]
    pub overwrite: bool,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Remove what a recommend killed with SIGKILL (or crashed) left behind (its kernel zram
    /// devices), from its crash journal, and exit: `zmem trial --recover`
    #[arg(long)]
    pub recover: bool,
}

pub fn run(a: Args) -> Result<()> {
    if a.recover {
        return super::trial::run_recover();
    }
    if let Some(w) = &a.weights {
        w.parse::<zmem_verdict::Weights>()?;
    }
    if let Some(o) = &a.out_dir {
        verdict::config_path(Some(o), a.overwrite)?; // refused before measuring, not after
    }
    // The kernel rows' devices go on Ctrl-C, SIGTERM and SIGHUP (the measurement never checks).
    let _signals =
        zmem_host::SignalWatch::install_undoing().context("installing signal handlers")?;
    let d = verdict::decide(&Ask {
        corpus: &a.corpus,
        algo: &a.algo,
        weights: a.weights.as_deref(),
        rounds: a.rounds,
        budget: Some(&a.budget),
        requests: a.requests,
        kernel: !a.no_kernel,
        ram: a.ram.as_deref(),
        fs_read: a.fs_read,
    })?;
    let path = a.out_dir.as_ref().map(|d| d.join("zmem.conf"));
    if let Some(p) = &path {
        verdict::write_config(p, &d.rec.config_file(), a.overwrite)?;
        eprintln!("zmem: wrote {}", p.display());
    }
    match a.format {
        Format::Table => {
            // What was measured, with what the capture read (as the main job prints it).
            println!(
                "corpus: {} pages: {}",
                d.corpus.page_count(),
                d.corpus.source
            );
            for n in &d.notes {
                println!("  {n}");
            }
            println!();
            print!("{}", zmem_report::ranking_text(&d.ranking));
            println!();
            print!("{}", zmem_report::recommendation_text(&d.rec));
        }
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&verdict::json(&d, path.as_deref()))?
        ),
        Format::Csv => {
            println!("key,value");
            let s = d.rec.sizes;
            let dec = &d.ranking.decision;
            for (k, v) in [
                ("use", d.rec.use_.clone()),
                ("algo", d.rec.primary.clone()),
                ("settled", dec.settled.to_string()),
                ("leader", dec.leader.clone()),
                ("equivalent", dec.equivalent.join(" ")),
                ("undecided", dec.undecided.join(" ")),
                ("recompress", d.rec.recompress.clone().unwrap_or_default()),
                ("ram_bytes", (s.ram_mib << 20).to_string()),
                ("effective_ratio", format!("{:.3}", s.ratio)),
                ("disksize_bytes", (s.disksize_mib << 20).to_string()),
                ("mem_limit_bytes", (s.mem_limit_mib << 20).to_string()),
                ("vm.swappiness", d.rec.swappiness.to_string()),
                ("vm.page-cluster", d.rec.page_cluster.to_string()),
            ] {
                println!("{k},{}", super::capture::csv_field(&v));
            }
        }
    }
    Ok(())
}
