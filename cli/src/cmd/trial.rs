//! `zmem trial`: run a workload under real memory pressure against swap
//! configurations on the kernel's own zram and zswap, and compare.

use std::path::PathBuf;
use std::sync::LazyLock;

use anyhow::{bail, Context};
use zmem_trial::workload::{self, Workload};
use zmem_trial::{self as trial, SignalWatch, TrialConfig, TrialError, TrialSpec};

use crate::output::Format;

/// A built-in workload, as `--builtin` and `--worker` take it: one of
/// `zmem_trial::workload::WORKLOADS` (names and help come from there).
#[derive(Debug, Clone, Copy)]
pub struct Builtin(&'static Workload);

impl Builtin {
    /// The name `--builtin` and `--worker` take.
    pub fn name(self) -> &'static str {
        self.0.name
    }
}

impl clap::ValueEnum for Builtin {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: LazyLock<Vec<Builtin>> =
            LazyLock::new(|| workload::WORKLOADS.iter().map(Builtin).collect());
        &ALL
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.name).help(self.0.help))
    }
}

/// The command that runs built-in workload `kind` over `size` bytes in a
/// child process (this zmem binary with the hidden `--worker` flag), and its
/// short name for reports.
pub fn builtin_command(kind: Builtin, size: u64) -> anyhow::Result<(Vec<String>, String)> {
    let exe =
        std::env::current_exe().context("finding the zmem binary to run the built-in workload")?;
    let cmd = vec![
        exe.to_string_lossy().into_owned(),
        "trial".into(),
        "--worker".into(),
        kind.name().into(),
        "--size".into(),
        size.to_string(),
    ];
    Ok((
        cmd,
        format!("{} {}", kind.name(), zmem_conf::format_size(size)),
    ))
}

/// `--service`, `--ready`, `--ready-timeout`, `--fill`, `--load`: a server in the
/// memory-limited cgroup and its load outside it (trial and tune).
#[derive(clap::Args, Debug)]
pub struct ServiceArgs {
    /// A server to run in the memory-limited cgroup (one shell command line), with --load; it is
    /// stopped after each run, with everything it started
    #[arg(long, value_name = "CMD", requires_all = ["load", "ready"], conflicts_with_all = ["builtin", "command"])]
    pub service: Option<String>,
    /// When --service is ready: tcp:PORT (127.0.0.1:PORT accepts), unix:PATH (the socket accepts)
    /// or line:REGEX (a line of its standard output matches)
    #[arg(long, value_name = "HOW", requires = "service", value_parser = |s: &str| s.parse::<trial::Ready>())]
    pub ready: Option<trial::Ready>,
    /// How long --service may take to be ready
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::args::duration)]
    pub ready_timeout: std::time::Duration,
    /// Run once --service is ready, before --load, outside the cgroup (one shell command line)
    #[arg(long, value_name = "CMD", requires = "service")]
    pub fill: Option<String>,
    /// The load generator, outside the cgroup (one shell command line); its output is read for
    /// metrics (redis-benchmark --csv, pgbench, fio json, sysbench) and its wall time is the run's
    #[arg(long, value_name = "CMD", requires = "service")]
    pub load: Option<String>,
}

impl ServiceArgs {
    /// The service with its load, when `--service` was given (clap requires the rest).
    pub fn spec(&self) -> Option<trial::ServiceSpec> {
        Some(trial::ServiceSpec {
            service: self.service.clone()?,
            ready: self.ready.clone()?,
            ready_timeout: self.ready_timeout,
            fill: self.fill.clone(),
            load: self.load.clone()?,
        })
    }
}

/// Arguments of `zmem trial`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Configurations: none | disk | zram:ALGO[:SIZE] | zram:ALGO[:SIZE]+disk | zswap:COMPRESSOR[:POOL%], \
each optionally followed by ,swappiness=N and/or ,page-cluster=N for its runs only\n\
Example: zmem trial --builtin memalloc --memory 256M --config none --config disk --config zram:lz4 --config zswap:lzo\n\
Needs root. Refuses when swap is active or zswap is enabled (unless --force). Everything it sets up \
(cgroups, swap file, zram devices, zswap parameters, sysctls) is removed or restored afterwards, also on Ctrl-C."
)]
pub struct Args {
    /// RAM limit of the workload's cgroup (e.g. 256M)
    #[arg(long, value_name = "SIZE", value_parser = crate::args::size, required_unless_present_any = ["worker", "recover", "replay"])]
    pub memory: Option<u64>,
    /// Swap configuration to run under, optionally with its own sysctls
    /// (zram:lz4,swappiness=180,page-cluster=0); repeat the flag; runs in this order each round
    #[arg(long = "config", value_name = "NAME", value_parser = |s: &str| s.parse::<TrialConfig>())]
    pub configs: Vec<TrialConfig>,
    /// Rotate the run order by one place every round (drift of the machine spreads over every configuration)
    #[arg(long)]
    pub interleave: bool,
    /// Rounds (every configuration runs once per round) [default: 3, or 6 with --metric: the
    /// fewest whose interval can decide]
    #[arg(long)]
    pub repeat: Option<u32>,
    /// Judge the configurations by this figure of the workload's (written to $ZMEM_METRICS as
    /// `NAME VALUE [UNIT]`, or read from redis-benchmark --csv, pgbench, fio json or sysbench
    /// output) or of the trial's (wall_s, user_s, sys_s, major_faults): NAME[:lower|:higher][:MARGIN],
    /// MARGIN a share (5%, the default) of the leader's median or an amount in its unit;
    /// repeat the flag, the first decides [default: wall_s]
    #[arg(long = "metric", value_name = "NAME", value_parser = |s: &str| s.parse::<trial::MetricSpec>())]
    pub metrics: Vec<trial::MetricSpec>,
    /// Stop running a configuration once the deciding metric shows it clearly behind the leader
    /// (or a run of it failed), at the verdict's looks: after rounds 6, 8, 11, 15, …
    #[arg(long)]
    pub stop_behind: bool,
    /// Configuration the ratio column compares to [default: disk if given, else the first]
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Also write a self-contained HTML page with charts (wall time, swap-outs, major faults) and the table
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// Replace an existing --report file that zmem did not write (never a link or another
    /// user's file)
    #[arg(long)]
    pub overwrite: bool,
    /// Run even though active swap or enabled zswap would distort the results
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub service: ServiceArgs,
    /// Run a built-in workload instead of COMMAND
    #[arg(long, value_enum, conflicts_with = "command")]
    pub builtin: Option<Builtin>,
    /// Size for --builtin [default: 1.5 × --memory]
    #[arg(long, value_name = "SIZE", value_parser = crate::args::size)]
    pub size: Option<u64>,
    /// Directory for the disk swap file zmem creates (not tmpfs)
    #[arg(long, value_name = "DIR", default_value = "/var/tmp")]
    pub swap_dir: PathBuf,
    /// Size of the disk swap file and of zram devices without a size [default: max(2 × --memory, memalloc size), or 4 × --memory for a COMMAND]
    #[arg(long, value_name = "SIZE", value_parser = crate::args::size)]
    pub swap_size: Option<u64>,
    /// Set vm.swappiness during the trial (restored after)
    #[arg(long, value_name = "N")]
    pub swappiness: Option<u32>,
    /// Set vm.page-cluster during the trial (restored after)
    #[arg(long, value_name = "N")]
    pub page_cluster: Option<u32>,
    /// Undo what a trial, tune or bench killed with SIGKILL (or crashed) left behind, from its crash journal, and exit
    #[arg(long)]
    pub recover: bool,
    /// Internal: run a built-in workload in this process (what a trial starts in its cgroup)
    #[arg(long, value_enum, hide = true)]
    pub worker: Option<Builtin>,
    /// Internal: replay the pages of this corpus file over --size (what `zmem tune --corpus` trials)
    #[arg(long, hide = true, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// Internal: content seed of the worker
    #[arg(long, hide = true, default_value_t = 1)]
    pub seed: u64,
    /// The workload to run (after `--`)
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

pub fn worker(kind: Builtin, size: Option<u64>, seed: u64) -> anyhow::Result<()> {
    let Some(size) = size else {
        bail!("--worker {} needs --size", kind.name())
    };
    if let Err(m) = (kind.0.run)(size, seed) {
        eprintln!("zmem: {} {m}", kind.name());
        std::process::exit(3);
    }
    Ok(())
}

/// The replay worker: the corpus's pages repeated over `size` bytes, checked.
fn replay_worker(path: &std::path::Path, size: Option<u64>) -> anyhow::Result<()> {
    let corpus = zmem_corpus::Corpus::load(path)?;
    let size = size.unwrap_or((corpus.page_count() * 4096) as u64);
    let pages = corpus.bytes().to_vec();
    drop(corpus);
    if let Err(m) = trial::workload::replay(pages, size) {
        eprintln!("zmem: replay: {m}");
        std::process::exit(3);
    }
    Ok(())
}

/// `--recover`: replay the crash journals of trials, tunes and benches that died.
pub fn run_recover() -> anyhow::Result<()> {
    let done = trial::recover()?;
    if done.is_empty() {
        println!("nothing to recover");
    }
    for d in done {
        println!("recovered: {d}");
    }
    Ok(())
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if let Some(path) = &args.replay {
        return replay_worker(path, args.size);
    }
    if let Some(kind) = args.worker {
        return worker(kind, args.size, args.seed);
    }
    if args.recover {
        return run_recover();
    }
    let memory = args.memory.context("--memory is required")?;
    if let Some(r) = &args.report {
        super::lab_run::check_report(r, args.overwrite)?; // refused before the trial, not after
    }
    let service = args.service.spec();
    let (command, workload, builtin_size) = match (args.builtin, args.command.is_empty()) {
        (None, true) if service.is_some() => {
            let s = service.as_ref().expect("matched");
            (
                Vec::new(),
                format!("{} (load: {})", s.service, s.load),
                None,
            )
        }
        (Some(kind), true) => {
            let size = args.size.unwrap_or(memory / 2 * 3);
            let (cmd, name) = builtin_command(kind, size)?;
            (cmd, name, Some(size))
        }
        (None, false) => {
            if args.size.is_some() {
                bail!("--size is for --builtin {}", workload::names());
            }
            (args.command.clone(), args.command.join(" "), None)
        }
        (None, true) => {
            bail!(
                "no workload: give --builtin {} or `-- COMMAND [ARGS]`",
                workload::names()
            )
        }
        (Some(_), false) => bail!("give either --builtin or a COMMAND, not both"),
    };
    let swap_size = args.swap_size.unwrap_or_else(|| match builtin_size {
        Some(s) => (2 * memory).max(s),
        None => 4 * memory,
    });
    let repeat = args.repeat.unwrap_or(if args.metrics.is_empty() {
        3
    } else {
        trial::rounds_for(1.0 - trial::look_error(1)) as u32
    });
    let spec = TrialSpec {
        memory_limit: memory,
        configs: args.configs,
        interleave: args.interleave,
        repeat,
        baseline: args.baseline,
        command,
        workload,
        force: args.force,
        swap_dir: args.swap_dir,
        swap_size,
        swappiness: args.swappiness,
        page_cluster: args.page_cluster,
        metrics: args.metrics,
        service,
        stop_behind: args.stop_behind,
    };
    let signals = SignalWatch::install().context("installing signal handlers")?;
    let result = trial::run(&spec, &signals, &mut |line| eprintln!("zmem trial: {line}"));
    let status = signals.exit_status();
    drop(signals);
    let html = |r: &trial::TrialReport| -> anyhow::Result<()> {
        if let Some(path) = &args.report {
            super::lab_run::write_report(path, &zmem_report::trial_html(r), args.overwrite)?;
            eprintln!("zmem trial: report written to {}", path.display());
        }
        Ok(())
    };
    match result {
        Ok(report) => {
            html(&report)?;
            print_report(&report, args.format)
        }
        Err(TrialError::Interrupted(report)) => {
            html(&report)?;
            print_report(&report, args.format)?;
            eprintln!("zmem: {}", TrialError::Interrupted(report));
            // Exiting here skips main's release: the trial lock goes first.
            zmem_files::release_process_locks();
            std::process::exit(status);
        }
        Err(e) => Err(e.into()),
    }
}

fn print_report(report: &trial::TrialReport, format: Format) -> anyhow::Result<()> {
    match format {
        Format::Table => print!("{}", zmem_report::trial_table(report)),
        Format::Csv => print!("{}", zmem_report::trial_csv(report)),
        Format::Json => println!("{}", serde_json::to_string_pretty(report)?),
    }
    Ok(())
}
