//! `zmem policy`: idle marking, recompression and writeback on zram devices, on a policy.

use std::io::Write;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use zmem_conf as config;
use zmem_host::Sys;
use zmem_policy::{self as policy, Policy, State};

/// Arguments of `zmem policy`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Configuration file with a [policy] section (defaults: Android/ChromeOS policies)
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Run one round and exit
    #[arg(long)]
    pub once: bool,
    /// Log what would be written, write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Work on a fixture tree instead of the running kernel
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// Use this time (seconds since the epoch) instead of the clock (for tests)
    #[arg(long, hide = true)]
    pub now: Option<u64>,
}

fn stamp(now: u64) -> String {
    let [year, month, day, h, m, s] = zmem_files::utc_civil(now);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let sys = Sys::new(&args.root);
    let cfg = match &args.config {
        Some(p) => Some(config::load(p)?),
        None => None,
    };
    let pol = match &cfg {
        Some(c) => Policy::from_config(c)?,
        None => Policy::default(),
    };
    let _ = writeln!(
        std::io::stdout().lock(),
        "zmem policy: writeback {} (idle {}–{} h, {}–{} MiB/round, {} MiB/day, backoff {} s), recompression {} (idle {}–{} h, threshold {} B, backoff {} s){}",
        if pol.writeback { "on" } else { "off" },
        pol.writeback_idle_min / 3600,
        pol.writeback_idle_max / 3600,
        pol.writeback_min_bytes >> 20,
        pol.writeback_max_bytes >> 20,
        pol.writeback_daily_bytes >> 20,
        pol.writeback_backoff,
        if pol.recompress { "on" } else { "off" },
        pol.recompress_idle_min / 3600,
        pol.recompress_idle_max / 3600,
        pol.recompress_threshold,
        pol.recompress_backoff,
        if args.dry_run { " [dry run: nothing is written]" } else { "" }
    );
    let mut state = State::load(&sys)?;
    loop {
        let now = args.now.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        });
        let ts = stamp(now);
        let mut log = |l: String| {
            // A closed stdout must not stop the daemon.
            let dry = if args.dry_run && l.contains(": write ") {
                " (dry run)"
            } else {
                ""
            };
            let _ = writeln!(std::io::stdout().lock(), "{ts} {l}{dry}");
        };
        zmem_admin::round_all(
            &sys,
            &pol,
            cfg.as_ref(),
            &mut state,
            now,
            args.dry_run,
            &mut log,
        )?;
        if !args.dry_run {
            if let Err(e) = state.save(&sys) {
                log(format!(
                    "warning: cannot save state to {}: {e}",
                    sys.path(&policy::state_file(&sys)).display()
                ));
            }
        }
        if args.once {
            return Ok(());
        }
        std::thread::sleep(pol.interval);
    }
}
