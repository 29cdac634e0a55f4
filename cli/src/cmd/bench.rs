//! `zmem bench`: with no subcommand the main job, the verdict on this machine's memory; every
//! other mode is a subcommand with only its own flags. A mode is its flags struct and a `run`:
//! the measurement modes (`recomp`, `fastpath`, `writeback`) are one entry each in
//! `zmem_measure` (`lab/measure/src/modes/`, flattened in here as [`Mode::Measured`]); the
//! modes that draw progress bars, tables or write files have theirs in `bench/` (ARCHITECTURE.md,
//! "Adding a bench mode"). `--format` is common to all.

use anyhow::Context;

use crate::output::Format;

mod codecs;
mod device;
mod full;
mod transport;
pub(crate) mod verdict;
mod zswap;

// Defaults shared by more than one mode.
const ROUND_BUDGET: &str = "60s";
const REQUESTS: usize = 20_000;
const MIN_TIME_MS: u64 = 200;

/// `zmem bench`: a mode, or the main job with its flags.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Bench {
    #[command(subcommand)]
    mode: Option<Mode>,
    /// Remove what a bench killed with SIGKILL (or crashed) left behind (its kernel zram
    /// devices), from its crash journal, and exit: `zmem trial --recover`
    #[arg(long)]
    recover: bool,
    /// Output format
    #[arg(long, value_enum, global = true, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    main: verdict::Flags,
}

/// The modes of `zmem bench`, one subcommand each; its help is its flags struct's doc comment.
#[derive(clap::Subcommand, Debug)]
enum Mode {
    Verdict(verdict::Args),
    Device(device::Args),
    Floor(device::Floor),
    Codecs(codecs::Args),
    Full(full::Args),
    #[command(flatten)]
    Measured(zmem_measure::Measured),
    Zswap(zswap::Args),
    Transport(transport::Args),
}

pub fn run(bench: Bench) -> anyhow::Result<()> {
    if bench.recover {
        return super::trial::run_recover();
    }
    let format = bench.format;
    // zswap (between its steps) and transport watch for Ctrl-C, SIGTERM and SIGHUP
    // themselves; for every other mode they remove the kernel rows' devices and exit.
    let _signals = match bench.mode {
        Some(Mode::Zswap(_) | Mode::Transport(_)) => None,
        _ => Some(zmem_host::SignalWatch::install_undoing().context("installing signal handlers")?),
    };
    match bench.mode {
        None => verdict::run(&verdict::Args::main(bench.main), format),
        Some(Mode::Verdict(a)) => verdict::run(&a, format),
        Some(Mode::Device(a)) => device::run(&a, false, format),
        Some(Mode::Floor(a)) => device::run(&a.device, true, format),
        Some(Mode::Codecs(a)) => codecs::run(&a, format),
        Some(Mode::Full(a)) => full::run(&a, format),
        Some(Mode::Measured(m)) => {
            print_quietly(&m.run(&zmem_report::Text, format == Format::Json)?)
        }
        Some(Mode::Zswap(a)) => zswap::run(&a, format),
        Some(Mode::Transport(a)) => transport::run(&a, format),
    }
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
