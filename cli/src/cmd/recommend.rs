//! `zmem recommend`: measure a corpus (the default: this machine's memory plus
//! synthetic pages) and recommend a zram/zswap configuration, with the
//! arithmetic and the reasons, as a zram-generator.conf and a sysctl.d snippet.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::lab_run as full;
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
    /// Random-read requests per page-cluster value
    #[arg(long, default_value_t = 20_000)]
    pub requests: usize,
    /// Skip the kernel zram rows
    #[arg(long)]
    pub no_kernel: bool,
    /// Write zram-generator.conf and 99-zmem.conf (sysctl.d) into this directory
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(a: Args) -> Result<()> {
    if let Some(w) = &a.weights {
        w.parse::<zmem_lab::score::Weights>()?;
    }
    // Check --ram before measuring anything.
    if let Some(r) = &a.ram {
        crate::args::size_of("--ram", r)?;
    }
    let t = full::table(&full::Run {
        corpus: &a.corpus,
        algo: &a.algo,
        weights: a.weights.as_deref(),
        min_time_ms: 100,
        requests: a.requests,
        kernel: !a.no_kernel,
        dict: None,
    })?;
    let inputs = full::inputs(a.ram.as_deref(), a.fs_read, &full::fs_dir())?;
    let rec = zmem_lab::recommend::recommend(&t, &inputs)?;
    match a.format {
        Format::Table => print!("{}", rec.render_text()),
        Format::Json => println!(
            "{}",
            zmem_lab::recommend::pretty(&zmem_lab::recommend::to_json_value(&rec))
        ),
        Format::Csv => {
            println!("key,value");
            let s = rec.sizes;
            for (k, v) in [
                ("use", rec.use_.clone()),
                ("primary", rec.primary.clone()),
                ("recompress", rec.recompress.clone().unwrap_or_default()),
                ("ram_mib", s.ram_mib.to_string()),
                ("ratio", format!("{:.2}", s.ratio)),
                ("disksize_mib", s.disksize_mib.to_string()),
                ("mem_limit_mib", s.mem_limit_mib.to_string()),
                (
                    "memory_when_full_mib",
                    format!("{:.0}", s.memory_when_full_mib),
                ),
                ("vm.swappiness", rec.swappiness.to_string()),
                ("vm.page-cluster", rec.page_cluster.to_string()),
            ] {
                println!("{k},{}", super::capture::csv_field(&v));
            }
        }
    }
    if let Some(dir) = &a.out_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let g = dir.join("zram-generator.conf");
        let s = dir.join("99-zmem.conf");
        std::fs::write(&g, &rec.zram_generator_conf)
            .with_context(|| format!("writing {}", g.display()))?;
        std::fs::write(&s, &rec.sysctl_conf).with_context(|| format!("writing {}", s.display()))?;
        eprintln!("zmem: wrote {} and {}", g.display(), s.display());
    }
    Ok(())
}
