//! `zmem tune`: the lab's prediction checked by trials of the user's own
//! workload under real memory pressure, and the winner as one config file
//! (docs/tune.md).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use zmem_trial::{SignalWatch, TrialError};
use zmem_tune::TuneSpec;

use super::trial::{builtin_command, Builtin};
use crate::output::Format;

/// Arguments of `zmem tune`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Steps: learn (one run without pressure, its memory captured near the peak), \
predict (the lab's verdict on those pages and a model of every configuration this kernel can run), \
measure (the best --candidates plus disk swap alone and what runs now, in interleaved rounds under --memory), \
compare (a candidate with a failed run cannot win; the others behind, equivalent or undecided against \
the fastest at a margin of 5 % of its wall time; predicted beside measured) and deploy (the winner as \
DIR/zmem.conf for `zmem apply` and `zmem persist`; nothing is applied). When no candidate finished all \
its runs there is no winner: nothing is written and tune exits with an error.\n\
Example: zmem tune --memory 128M --builtin memalloc --size 256M --repeat 2 --out-dir /tmp/tuned\n\
Needs root. Everything it sets up is removed or restored afterwards, also on Ctrl-C; after a crash run `zmem trial --recover`."
)]
pub struct Args {
    /// Memory limit the trials run the workload under (e.g. 128M)
    #[arg(long, value_name = "SIZE", value_parser = crate::args::size, required_unless_present = "recover")]
    pub memory: Option<u64>,
    /// Rank and pick by this figure of the workload's (written to $ZMEM_METRICS, or read from
    /// redis-benchmark --csv, pgbench, fio json or sysbench output), as `zmem trial --metric`
    /// takes it: NAME[:lower|:higher][:MARGIN] [default: wall_s]; the model does not predict it,
    /// the trials' measurements decide
    #[arg(long, value_name = "NAME", value_parser = |s: &str| s.parse::<zmem_trial::MetricSpec>())]
    pub metric: Option<zmem_trial::MetricSpec>,
    /// Runs per candidate (interleaved rounds); 6, the default, is the fewest that let the
    /// comparison decide (fewer: undecided, the pick not proven)
    #[arg(long, default_value_t = 6)]
    pub repeat: u32,
    /// How many of the prediction's best configurations to trial (the baselines come on top)
    #[arg(long, default_value_t = 3)]
    pub candidates: usize,
    /// Write the winner's configuration as DIR/zmem.conf
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Also write a self-contained HTML page: predicted beside measured, the table, the winner's file
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// Replace an existing --out-dir or --report file that zmem did not write (never a link or
    /// another user's file)
    #[arg(long)]
    pub overwrite: bool,
    /// A built-in workload instead of COMMAND
    #[arg(long, value_enum, conflicts_with = "command")]
    pub builtin: Option<Builtin>,
    /// Size for --builtin (default 2 × --memory), or how much of --corpus to replay (default: all of it)
    #[arg(long, value_name = "SIZE", value_parser = crate::args::size)]
    pub size: Option<u64>,
    /// Predict from these pages instead of capturing the workload's; alone, the trials replay them
    #[arg(long, value_name = "FILE")]
    pub corpus: Option<PathBuf>,
    /// At most this much of the workload's memory is captured (sampled evenly)
    #[arg(long, value_name = "SIZE", value_parser = crate::args::size, default_value = "64M")]
    pub capture_max: u64,
    /// The lab's interleaved rounds for the prediction
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// The lab's random 4 KiB reads per candidate per round
    #[arg(long, default_value_t = 4000)]
    pub requests: usize,
    /// Directory for the disk swap file (not tmpfs); the disk's speed is measured there too
    #[arg(long, value_name = "DIR", default_value = "/var/tmp")]
    pub swap_dir: PathBuf,
    /// Size of the disk swap file and of zram devices without a size [default: max(2 × --memory, 2 × the workload's peak)]
    #[arg(long, value_name = "SIZE", value_parser = crate::args::size)]
    pub swap_size: Option<u64>,
    /// Run even though active swap or enabled zswap would distort the results
    #[arg(long)]
    pub force: bool,
    /// Undo what a tune or trial killed with SIGKILL left behind, and exit
    #[arg(long)]
    pub recover: bool,
    #[command(flatten)]
    pub service: super::trial::ServiceArgs,
    /// The workload to run (after `--`)
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// The workload: its command and short name.
fn workload(a: &Args, memory: u64) -> Result<(Vec<String>, String)> {
    if let Some(s) = a.service.spec() {
        if a.corpus.is_some() {
            bail!("--corpus replays pages as the workload; give it or --service, not both");
        }
        return Ok((Vec::new(), format!("{} (load: {})", s.service, s.load)));
    }
    match (a.builtin, a.command.is_empty(), &a.corpus) {
        (Some(kind), true, _) => builtin_command(kind, a.size.unwrap_or(2 * memory)),
        (None, false, _) => {
            if a.size.is_some() {
                bail!("--size is for --builtin or a replayed --corpus");
            }
            Ok((a.command.clone(), a.command.join(" ")))
        }
        (None, true, Some(c)) => {
            zmem_corpus::Corpus::load(c)?;
            let exe = std::env::current_exe().context("finding the zmem binary")?;
            let mut cmd = vec![
                exe.to_string_lossy().into_owned(),
                "trial".into(),
                "--replay".into(),
                c.to_string_lossy().into_owned(),
            ];
            if let Some(s) = a.size {
                cmd.extend(["--size".into(), s.to_string()]);
            }
            Ok((cmd, format!("replay of {}", c.display())))
        }
        (None, true, None) => bail!(
            "no workload: give --builtin {}, --corpus FILE or `-- COMMAND [ARGS]`",
            zmem_trial::workload::names()
        ),
        (Some(_), false, _) => bail!("give either --builtin or a COMMAND, not both"),
    }
}

pub fn run(a: Args) -> Result<()> {
    if a.recover {
        return super::trial::run_recover();
    }
    let memory = a.memory.context("--memory is required")?;
    if let Some(o) = &a.out_dir {
        super::bench::verdict::config_path(Some(o), a.overwrite)?; // refused before the trials
    }
    if let Some(r) = &a.report {
        super::lab_run::check_report(r, a.overwrite)?;
    }
    let (command, name) = workload(&a, memory)?;
    let spec = TuneSpec {
        memory_limit: memory,
        repeat: a.repeat,
        candidates: a.candidates,
        command,
        workload: name,
        corpus: a.corpus.clone(),
        capture_max: a.capture_max,
        swap_dir: a.swap_dir.clone(),
        swap_size: a.swap_size,
        force: a.force,
        rounds: a.rounds,
        requests: a.requests,
        metric: a.metric.clone(),
        service: a.service.spec(),
    };
    let signals = SignalWatch::install().context("installing signal handlers")?;
    let result = zmem_tune::run(&spec, &signals, &mut |l| eprintln!("zmem tune: {l}"));
    let status = signals.exit_status();
    drop(signals);
    let t = match result {
        Ok(t) => t,
        Err(e) => {
            if let Some(TrialError::Interrupted(_)) = e.downcast_ref::<TrialError>() {
                eprintln!("zmem: tune interrupted; everything it set up was removed and restored");
                // Exiting here skips main's release: the trial lock goes first.
                zmem_files::release_process_locks();
                std::process::exit(status);
            }
            return Err(e);
        }
    };
    let path = a.out_dir.as_ref().map(|d| d.join("zmem.conf"));
    if let (Some(p), Some(text)) = (&path, &t.config_text) {
        super::bench::verdict::write_config(p, text, a.overwrite)?;
        eprintln!("zmem tune: wrote {}", p.display());
    }
    if let Some(r) = &a.report {
        super::lab_run::write_report(r, &zmem_tune::render_html(&t), a.overwrite)?;
        eprintln!("zmem tune: report written to {}", r.display());
    }
    match a.format {
        Format::Table => {
            print!("{}", zmem_tune::render_table(&t));
            print_deploy(&t, path.as_deref());
        }
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&zmem_tune::to_json(&t, path.as_deref()))?
        ),
        Format::Csv => print!("{}", zmem_tune::render_csv(&t)),
    }
    if t.winner.is_none() {
        // After the report, so the measurements are on the screen.
        bail!(
            "{}",
            t.no_fit
                .as_deref()
                .unwrap_or("no configuration finished all its runs; nothing was written")
        );
    }
    Ok(())
}

fn print_deploy(t: &zmem_tune::Tune, path: Option<&std::path::Path>) {
    let Some(w) = &t.winner else { return };
    println!();
    if let Some(d) = t.decision.as_ref().filter(|d| !d.proven) {
        println!(
            "not proven: {w} is the pick among {} and the leader, which the runs could not separate (see above)",
            d.undecided.join(", ")
        );
    }
    match (path, &t.config_text) {
        (Some(p), Some(_)) => {
            println!("winner: {w}; its configuration is in {}", p.display());
            println!("  apply now:        zmem apply {}", p.display());
            println!("  after every boot: zmem persist {}", p.display());
        }
        (None, Some(text)) => {
            println!("winner: {w}; its configuration (write it with --out-dir DIR):");
            print!("{text}");
        }
        _ => println!("winner: {w}"),
    }
}
