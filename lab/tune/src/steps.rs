//! The five steps in order, and what they produce.

use std::cell::RefCell;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use zmem_corpus::Corpus;
use zmem_host::Sys;
use zmem_trial::{
    self as trial, Learned, SignalWatch, SwapConfig, TrialError, TrialReport, TrialSpec,
};
use zmem_verdict::{self as verdict, Ranked, Ranking};

use crate::candidates::{self, Candidate};
use crate::check;
use crate::compare::{self, Entrant};
use crate::deploy;
use crate::findings;
use crate::outcome::{Learn, Tune};
use crate::predict::{self, Costs, ModelInputs, Prediction};

/// What to tune for.
#[derive(Debug, Clone)]
pub struct TuneSpec {
    /// The memory limit the trials run under, bytes.
    pub memory_limit: u64,
    /// Runs per candidate.
    pub repeat: u32,
    /// How many of the prediction's best to trial.
    pub candidates: usize,
    /// The workload: program and arguments.
    pub command: Vec<String>,
    /// Its short name.
    pub workload: String,
    /// Predict from these pages instead of capturing the workload's.
    pub corpus: Option<PathBuf>,
    /// At most this much of the workload's memory is captured (sampled evenly).
    pub capture_max: u64,
    /// Directory of the trials' disk swap file (and of the disk measurement).
    pub swap_dir: PathBuf,
    /// Disk swap file size; default max(2 × limit, 2 × footprint).
    pub swap_size: Option<u64>,
    /// Run although active swap or zswap would distort the results.
    pub force: bool,
    /// The lab's interleaved rounds.
    pub rounds: usize,
    /// The lab's random 4 KiB reads per candidate per round.
    pub requests: usize,
    /// `--metric`: rank and pick by this figure (wall time without it).
    pub metric: Option<zmem_trial::MetricSpec>,
    /// `--service`: a server in the cgroup and its load outside it (then
    /// `command` is empty): learned, captured and trialed as one workload.
    pub service: Option<zmem_trial::ServiceSpec>,
}

impl TuneSpec {
    /// The metric that ranks and picks.
    pub fn metric(&self) -> zmem_trial::MetricSpec {
        self.metric
            .clone()
            .unwrap_or_else(zmem_trial::MetricSpec::wall)
    }
}

fn validate(s: &TuneSpec) -> Result<()> {
    if s.memory_limit < 8 << 20 {
        bail!("--memory must be at least 8M");
    }
    if s.repeat == 0 || s.candidates == 0 || s.rounds == 0 {
        bail!("--repeat, --candidates and --rounds must be at least 1");
    }
    if s.command.is_empty() && s.service.is_none() {
        bail!(
            "no workload: give --builtin {}, --corpus FILE, `-- COMMAND [ARGS]` or --service CMD --load CMD",
            trial::workload::names()
        );
    }
    Ok(())
}

/// Refuse before spending minutes: what a trial with the disk baseline would refuse.
fn preflight(s: &TuneSpec, sys: &Sys) -> Result<()> {
    let probe = TrialSpec {
        memory_limit: s.memory_limit,
        configs: vec![SwapConfig::Disk.into()],
        interleave: true,
        repeat: 1,
        baseline: None,
        command: s.command.clone(),
        workload: s.workload.clone(),
        force: s.force,
        swap_dir: s.swap_dir.clone(),
        swap_size: s.swap_size.unwrap_or(2 * s.memory_limit),
        swappiness: None,
        page_cluster: None,
        metrics: Vec::new(),
        service: s.service.clone(),
        stop_behind: false,
    };
    trial::preflight(&probe, sys)?;
    Ok(())
}

/// What the learning run captured: the newest capture's pages.
#[derive(Default)]
struct Captures {
    pages: Vec<u8>,
    at_anon: u64,
    seconds: f64,
    error: Option<String>,
}

impl Captures {
    /// Take a new capture, taken when the processes held `anon` bytes,
    /// unless it is smaller than the one kept: a capture that the workload's
    /// exit cut short (its address space read only partly) must not replace
    /// a whole one taken earlier. A smaller one leaves `at_anon` as it was,
    /// so the next look tries again.
    fn offer(&mut self, pages: Vec<u8>, anon: u64) {
        if pages.len() >= self.pages.len() {
            self.pages = pages;
            self.at_anon = anon;
        }
    }
}

/// Step 1: one unpressured run; capture the processes' pages each time their
/// anonymous memory has grown by 15 % since the last capture kept, so the
/// capture kept is within 15 % of the peak, unless the workload exited
/// during a later one (then the earlier, whole capture is kept).
fn learn(s: &TuneSpec, signals: &SignalWatch) -> Result<(Learned, Captures)> {
    let cap = RefCell::new(Captures::default());
    let want = s.corpus.is_none();
    let hook = |pids: &[i32], anon: u64| {
        let mut c = cap.borrow_mut();
        if !want || anon < (1 << 20) || (anon as f64) < c.at_anon as f64 * 1.15 {
            return;
        }
        let t = Instant::now();
        let pids: Vec<u32> = pids.iter().map(|&p| p as u32).collect();
        let mut buf = Vec::new();
        match zmem_corpus::capture_group(&pids, Some(s.capture_max), &mut buf) {
            Ok(_) => c.offer(buf, anon),
            Err(e) => c.error = Some(e.to_string()),
        }
        c.seconds += t.elapsed().as_secs_f64();
    };
    let learned = trial::learn(&s.command, s.service.as_ref(), signals, &hook)?;
    interrupted(s, signals)?;
    if !learned.record.outcome.ok() {
        bail!(
            "the workload failed without memory pressure ({}); tune needs a workload that succeeds",
            learned.record.outcome.short()
        );
    }
    Ok((learned, cap.into_inner()))
}

/// An interruption before the trials started, once a signal arrived.
fn interrupted(s: &TuneSpec, signals: &SignalWatch) -> Result<()> {
    if signals.fired() {
        return Err(TrialError::Interrupted(Box::new(empty_report(s))).into());
    }
    Ok(())
}

/// An empty report for an interruption before the trials started.
fn empty_report(s: &TuneSpec) -> TrialReport {
    TrialReport {
        kernel: String::new(),
        cpus: 0,
        cgroup: zmem_trial::CgroupVersion::V2,
        memory_limit: s.memory_limit,
        swap_size: 0,
        swappiness: None,
        page_cluster: None,
        command: s.command.clone(),
        workload: s.workload.clone(),
        repeat: s.repeat,
        baseline: String::new(),
        configs: Vec::new(),
        forced_over: Vec::new(),
        interrupted: true,
        runs: Vec::new(),
        summaries: Vec::new(),
        decision: None,
        other_decisions: Vec::new(),
        stopped_early: Vec::new(),
    }
}

fn corpus_of(s: &TuneSpec, cap: &Captures, learned: &Learned) -> Result<Corpus> {
    if let Some(p) = &s.corpus {
        return Corpus::load(p);
    }
    if cap.pages.is_empty() {
        bail!(
            "captured nothing: the workload's anonymous memory peaked at {} KiB{}; give --corpus FILE",
            learned.peak_anon_bytes >> 10,
            cap.error.as_ref().map(|e| format!(" ({e})")).unwrap_or_default()
        );
    }
    let name = format!("{} (captured)", s.workload);
    Corpus::from_bytes(name.clone(), name, cap.pages.clone())
}

/// The lab's row for `algo`: the kernel's when measured, else the engine's.
fn row<'a>(r: &'a Ranking, algo: &str) -> Option<&'a Ranked> {
    r.ranked
        .iter()
        .find(|x| x.algo == algo && x.target == "kernel")
        .or_else(|| r.engine.iter().find(|x| x.algo == algo))
}

/// The lab's effective ratio on the workload's pages for `c`'s compressed
/// tier (`None` without one): the pick's tie-break, and the ratio its
/// config file is sized for.
fn lab_ratio(c: &Candidate, r: &Ranking) -> Option<f64> {
    let swap = &c.config().swap;
    let algo = swap.zram_algo().or(swap.zswap_compressor())?;
    row(r, algo).map(|x| x.effective_ratio)
}

fn costs(x: &Ranked) -> Costs {
    Costs::from_speeds(
        x.read_lat_ns.median,
        x.write_mibps.median,
        x.effective_ratio,
        &format!("{} rows", x.target),
    )
}

/// Step 2's inputs: the lab's verdict on the pages and the disk's speed.
fn model(
    s: &TuneSpec,
    corpus: &Corpus,
    learned: &Learned,
    capture_s: f64,
    signals: &SignalWatch,
    progress: &mut dyn FnMut(&str),
) -> Result<(ModelInputs, Ranking)> {
    let zram_algos = zmem_measure::kernel::algorithms();
    let zswap_comps = trial::zswap_compressors(&Sys::real());
    let mut algos: Vec<String> = zram_algos.clone();
    for c in &zswap_comps {
        if !algos.contains(c) && zmem_codec::find(c).is_ok() {
            algos.push(c.clone());
        }
    }
    let opts = verdict::RankOptions {
        rounds: s.rounds,
        requests: s.requests,
        algorithms: algos,
        ..Default::default()
    };
    // The lab never looks at the flag, and its kernel rows hold zram devices full of the
    // workload's pages: a signal undoes them and exits at once, as in `zmem bench`.
    let ranking = signals.undoing_while(|| {
        // The test point of cli/tests/hostile_machine.rs (`ZMEM_TEST_PAUSE_IN=lab`).
        zmem_host::test_pause_step("lab");
        verdict::rank(corpus, &opts, &mut |done, total, what| {
            progress(&format!("predict: lab {done}/{total}: {what}"));
        })
    })?;
    interrupted(s, signals)?;
    progress(&format!("predict: disk speed in {}", s.swap_dir.display()));
    let fs = zmem_measure::measure_fs_read(&s.swap_dir, 64, 2000)
        .with_context(|| format!("measuring the disk in {}", s.swap_dir.display()))?;
    interrupted(s, signals)?;
    let disk = Costs::from_speeds(
        fs.mean_us * 1e3,
        fs.write_mib_s,
        1.0,
        &format!("a file in {}", s.swap_dir.display()),
    );
    let pick = |names: &[String]| -> Vec<(String, Costs)> {
        names
            .iter()
            .filter_map(|a| Some((a.clone(), costs(row(&ranking, a)?))))
            .collect()
    };
    let m = ModelInputs {
        footprint_bytes: learned.peak_anon_bytes,
        memory_limit: s.memory_limit,
        base_wall_s: (learned.record.wall_s - capture_s).max(0.0),
        zram: pick(&zram_algos),
        zswap: pick(&zswap_comps),
        disk,
        swap_bytes: trial_swap_size(s, learned.peak_anon_bytes),
        cgroup: zmem_host::memory_hierarchy(&Sys::real())
            .map_err(anyhow::Error::msg)?
            .version,
        zswap_pool_percent: zswap_pool_percent(&Sys::real()),
    };
    Ok((m, ranking))
}

/// zswap's max_pool_percent now (the trials of `zswap:C` leave it as it is;
/// 20, the kernel's default, where it cannot be read).
fn zswap_pool_percent(sys: &Sys) -> u32 {
    zmem_host::read_knob(
        sys,
        &format!("{}/max_pool_percent", zmem_host::ZSWAP_PARAMS),
    )
    .ok()
    .and_then(|v| v.trim().parse().ok())
    .unwrap_or(20)
}

/// The trials' swap size: `--swap-size`, else max(2 × limit, 2 × footprint).
fn trial_swap_size(s: &TuneSpec, footprint: u64) -> u64 {
    s.swap_size
        .unwrap_or((2 * s.memory_limit).max(2 * footprint))
}

/// Steps 3 and 4: the trials, then the comparison.
fn measure(
    s: &TuneSpec,
    chosen: &[Candidate],
    footprint: u64,
    signals: &SignalWatch,
    progress: &mut dyn FnMut(&str),
) -> Result<TrialReport, TrialError> {
    let spec = TrialSpec {
        memory_limit: s.memory_limit,
        configs: chosen.iter().map(|c| c.config().clone()).collect(),
        interleave: true,
        repeat: s.repeat,
        baseline: None,
        command: s.command.clone(),
        workload: s.workload.clone(),
        force: s.force,
        swap_dir: s.swap_dir.clone(),
        swap_size: trial_swap_size(s, footprint),
        swappiness: None,
        page_cluster: None,
        metrics: vec![s.metric()],
        service: s.service.clone(),
        // A candidate clearly behind (or with a failed run) runs no more
        // rounds: tune's cost does not grow with --repeat for the losers.
        stop_behind: true,
    };
    trial::run(&spec, signals, &mut |l| progress(&format!("measure: {l}")))
}

/// Run the five steps. `progress` gets a line per step and run.
pub fn run(s: &TuneSpec, signals: &SignalWatch, progress: &mut dyn FnMut(&str)) -> Result<Tune> {
    validate(s)?;
    let sys = Sys::real();
    preflight(s, &sys)?;
    progress("learn: running the workload once without memory pressure");
    let (learned, cap) = learn(s, signals)?;
    let corpus = corpus_of(s, &cap, &learned)?;
    progress(&format!(
        "learn: {:.2} s, anonymous peak {} MiB; {} pages to predict from",
        learned.record.wall_s,
        learned.peak_anon_bytes >> 20,
        corpus.page_count()
    ));
    let (m, ranking) = model(s, &corpus, &learned, cap.seconds, signals, progress)?;
    let mut predictions = predict::predict(&m);
    for p in &mut predictions {
        candidates::with_sysctls(p, &m);
    }
    let current = candidates::current(&sys);
    let chosen = candidates::choose(&predictions, s.candidates, current.as_ref());
    progress(&estimate(s, chosen.len(), learned.record.wall_s));
    let report = measure(s, &chosen, m.footprint_bytes, signals, progress)?;
    let entrants: Vec<Entrant> = chosen
        .iter()
        .map(|c| Entrant {
            config: c.config().to_string(),
            ratio: lab_ratio(c, &ranking).unwrap_or(1.0),
        })
        .collect();
    let outcome = compare::compare(&report, &entrants, &s.metric());
    let learn = Learn {
        wall_s: m.base_wall_s,
        peak_anon_bytes: learned.peak_anon_bytes,
        cgroup_peak_bytes: learned.record.cgroup_peak_bytes,
        capture_s: cap.seconds,
        corpus: corpus.name.clone(),
        pages: corpus.page_count(),
        captured_at_anon_bytes: s.corpus.is_none().then_some(cap.at_anon),
    };
    Ok(finish(
        s,
        learn,
        &m,
        predictions,
        chosen,
        outcome,
        ranking,
        report,
    ))
}

/// How long the trials will take, said before they start: every run at least
/// as long as the learning run (under memory pressure most are longer).
fn estimate(s: &TuneSpec, candidates: usize, learn_s: f64) -> String {
    let runs = candidates * s.repeat as usize;
    let at_least = runs as f64 * learn_s;
    let minutes = |x: f64| {
        if x < 90.0 {
            format!("{x:.0} s")
        } else {
            format!("{:.0} min", x / 60.0)
        }
    };
    format!(
        "measure: {candidates} candidates × {} rounds = {runs} runs (fewer when one is clearly behind at a look), each at least the {:.1} s the learning run took: {} or more if all run (swapping makes runs longer; the load average makes them noisier)",
        s.repeat,
        learn_s,
        minutes(at_least)
    )
}

/// The winner's config file.
fn config_text(s: &TuneSpec, c: &Candidate, wall_s: f64, ranking: &Ranking) -> String {
    let (ram, disk_swap, zswap) = zmem_verdict::machine_facts();
    let machine = deploy::Machine {
        ram_mib: ram.unwrap_or(0) >> 20,
        disk_swap,
        zswap_enabled: zswap == Some(true),
    };
    let why = deploy::Why {
        trial: format!(
            "{} under {}",
            s.workload,
            zmem_conf::format_size(s.memory_limit)
        ),
        wall_s,
        ratio: lab_ratio(c, ranking).unwrap_or(1.0),
    };
    deploy::config_file(c.config(), &why, &machine)
}

/// The comparison's verdict, the model's check and the winner's file (none
/// when no candidate finished all its runs).
#[allow(clippy::too_many_arguments)]
fn finish(
    s: &TuneSpec,
    learn: Learn,
    m: &ModelInputs,
    predictions: Vec<Prediction>,
    chosen: Vec<Candidate>,
    outcome: compare::Outcome,
    ranking: Ranking,
    report: TrialReport,
) -> Tune {
    let held = findings::prediction_held(&chosen, &outcome);
    let rho = findings::rank_correlation(&chosen, &outcome.measured);
    let no_fit = findings::no_fit(
        &s.workload,
        s.memory_limit,
        &learn,
        &chosen,
        &outcome,
        &report,
    );
    let winner = outcome.winner().map(String::from);
    let config_text = winner.as_ref().and_then(|w| {
        let c = chosen.iter().find(|c| &c.config().to_string() == w)?;
        let wall = outcome.measured.iter().find(|x| &x.config == w)?.wall_s?;
        Some(config_text(s, c, wall.median, &ranking))
    });
    let model_check: Vec<check::ModelCheck> = chosen
        .iter()
        .filter_map(|c| {
            let name = c.config().to_string();
            let x = outcome.measured.iter().find(|x| x.config == name)?;
            Some(check::check(c, x, m.base_wall_s, lab_ratio(c, &ranking)))
        })
        .collect();
    let mut t = Tune {
        workload: s.workload.clone(),
        memory_limit_bytes: s.memory_limit,
        repeat: s.repeat,
        learn,
        overflow_bytes: m.overflow(),
        disk: m.disk.clone(),
        predictions,
        candidates: chosen,
        measured: outcome.measured,
        winner,
        decision: outcome.decision,
        no_fit,
        prediction_held: held,
        rank_correlation: rho,
        model_errors: check::errors(&model_check),
        model_check,
        findings: Vec::new(),
        config_text,
        ranking,
        trial: report,
    };
    t.findings = findings::findings(&t);
    t
}

#[cfg(test)]
mod tests {
    use super::Captures;

    #[test]
    fn a_capture_cut_short_does_not_replace_a_whole_one() {
        let mut c = Captures::default();
        c.offer(vec![1; 4 << 12], 4 << 20);
        c.offer(vec![2; 64 << 12], 200 << 20);
        assert_eq!((c.pages.len(), c.at_anon), (64 << 12, 200 << 20));
        // The workload exited while the next was read: 3 pages of it.
        c.offer(vec![3; 3 << 12], 260 << 20);
        assert_eq!((c.pages.len(), c.at_anon), (64 << 12, 200 << 20));
        assert!(c.pages.iter().all(|&b| b == 2));
        // A later capture as large as the kept one replaces it.
        c.offer(vec![4; 64 << 12], 270 << 20);
        assert_eq!((c.pages[0], c.at_anon), (4, 270 << 20));
    }
}
