//! `zmem doctor`: each problem of the machine's zram, zswap and swap set-up, with the command
//! that fixes it.

use std::path::PathBuf;

use zmem_host::Sys;

/// What the exit status means.
const EXIT_STATUS: &str = "Exit status: 0 when no check found anything, or only notes (a journal of a dead \
zmem run with nothing of it left); 1 when any finding is a warning or an error (each printed with its fix), \
and also when the machine cannot be read (the message on stderr). Checks: zswap-over-zram, no-swap-pressure \
(no swap while /proc/pressure/memory some avg60 >= 10 or avg300 >= 5), oomd-zram, zram-priority, \
resume-on-zram, page-cluster, swappiness, writeback-limit, generator-missing, leftovers (docs/ops.md).";

/// Arguments of `zmem doctor`.
#[derive(clap::Args, Debug)]
#[command(after_help = EXIT_STATUS)]
pub struct Args {
    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Read a fixture tree instead of the running kernel
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
}

/// How the findings are printed.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Format {
    /// One block per finding with its fix, then a summary line
    Table,
    /// One JSON document: `checks` (ids run) and `findings`
    Json,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let sys = Sys::new(&args.root);
    let d = zmem_admin::diagnose(&sys)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", args.root.display()))?;
    match args.format {
        Format::Table => print!("{}", d.text()),
        Format::Json => println!("{}", d.json()),
    }
    let code = d.exit_code();
    if code != 0 {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        std::process::exit(code);
    }
    Ok(())
}
