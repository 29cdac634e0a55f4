//! `zmem capture`: a corpus of 4 KiB pages from process memory or a zram device.

use std::path::PathBuf;

use anyhow::{bail, Result};
use zmem_conf::bytes;
use zmem_corpus::{self as capture, Sidecar};

use crate::output::Format;

/// Arguments of `zmem capture`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  zmem capture --pid 1234 -o app.pages\n  zmem capture --all --max 256M -o machine.pages\n  \
zmem capture --device /dev/zram0 -o swap.pages\n\nThe corpus is raw 4 KiB pages; FILE.json beside it says where they came from."
)]
pub struct Args {
    /// Processes whose anonymous private writable memory to capture (repeat or comma-separate)
    #[arg(long, value_delimiter = ',', num_args = 1.., conflicts_with_all = ["all", "device"])]
    pub pid: Vec<u32>,
    /// Every readable process except zmem itself; unreadable ones are skipped and listed
    #[arg(long, conflicts_with = "device")]
    pub all: bool,
    /// A zram device to dump (read-only), e.g. /dev/zram0
    #[arg(long)]
    pub device: Option<PathBuf>,
    /// At most this much (e.g. 256M); larger sources are sampled evenly in 64 KiB blocks
    #[arg(long)]
    pub max: Option<String>,
    /// Output corpus file (the sidecar goes to FILE.json), created 0600: captures hold
    /// whatever the processes held. An existing file that is not a zmem corpus is refused
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Overwrite an existing output file that is not a zmem corpus
    #[arg(long)]
    pub force: bool,
    /// Output format of the summary
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(a: Args) -> Result<()> {
    let max = a
        .max
        .as_deref()
        .map(|m| crate::args::size_of("--max", m))
        .transpose()?;
    let sc = if let Some(dev) = &a.device {
        capture::to_file(&a.output, a.force, |w| capture::capture_device(dev, max, w))?
    } else if a.all {
        capture::to_file(&a.output, a.force, |w| capture::capture_all(max, w))?
    } else if !a.pid.is_empty() {
        capture::to_file(&a.output, a.force, |w| {
            capture::capture_pids(&a.pid, max, w)
        })?
    } else {
        bail!("say what to capture: --pid PID..., --all or --device /dev/zramN");
    };
    print_summary(&a.output, &sc, a.format)
}

/// Print what a corpus holds (shared with `zmem corpus info`).
pub fn print_summary(path: &std::path::Path, sc: &Sidecar, format: Format) -> Result<()> {
    match format {
        Format::Json => println!("{}", sc.to_json()),
        Format::Csv => {
            println!(
                "file,source,pages,bytes,same_filled_pages,same_filled_pct,pids,commands,skipped"
            );
            println!(
                "{},{},{},{},{},{:.1},{},{},{}",
                csv_field(&path.display().to_string()),
                sc.source,
                sc.pages,
                sc.pages * 4096,
                sc.same_filled_pages,
                pct(sc.same_filled_pages, sc.pages),
                csv_field(
                    &sc.pids
                        .iter()
                        .map(|p| p.to_string())
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
                csv_field(&sc.commands.join(" ")),
                sc.skipped.len()
            );
        }
        Format::Table => {
            println!("corpus      {}", path.display());
            println!(
                "source      {}{}",
                sc.source,
                sc.kind
                    .as_deref()
                    .map(|k| format!(" ({k})"))
                    .unwrap_or_default()
            );
            println!("pages       {} ({})", sc.pages, bytes(sc.pages * 4096));
            println!(
                "same-filled {} ({:.1}%)",
                sc.same_filled_pages,
                pct(sc.same_filled_pages, sc.pages)
            );
            if let Some(d) = &sc.device {
                println!("device      {d}");
            }
            if !sc.pids.is_empty() {
                let shown: Vec<String> = sc
                    .pids
                    .iter()
                    .zip(&sc.commands)
                    .take(12)
                    .map(|(p, c)| format!("{p} ({c})"))
                    .collect();
                let more = if sc.pids.len() > 12 {
                    format!(" and {} more", sc.pids.len() - 12)
                } else {
                    String::new()
                };
                println!("processes   {}{more}", shown.join(", "));
                println!("regions     {}", sc.regions.len());
            }
            for n in &sc.notes {
                println!("note        {n}");
            }
            if sc.kernel_threads_skipped + sc.exited_skipped > 0 {
                println!(
                    "passed over {} kernel threads (no user memory), {} processes that exited",
                    sc.kernel_threads_skipped, sc.exited_skipped
                );
            }
            if !sc.skipped.is_empty() {
                println!("skipped     {} (not readable):", sc.skipped.len());
                for s in sc.skipped.iter().take(20) {
                    println!("  {}: {}", s.what, s.reason);
                }
                if sc.skipped.len() > 20 {
                    println!("  … {} more in the sidecar", sc.skipped.len() - 20);
                }
            }
        }
    }
    Ok(())
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// Quote a CSV field when needed (RFC 4180).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
