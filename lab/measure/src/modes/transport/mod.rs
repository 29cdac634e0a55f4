//! `zmem bench transport`: the same pages through each way of reaching a
//! compressed RAM device, side by side in one run: the engine in process,
//! a kernel zram device, `zmem serve` over NBD on a Unix socket, and block
//! devices (`zmem serve --ublk`'s /dev/ublkbN, the kernel's nbd-client's
//! /dev/nbdN). Every round runs every target once (the first target of the
//! round rotates), each through the same phases:
//!
//! 1. `seq_write`: the corpus written from the start, 1 MiB requests;
//! 2. `rand_read` at each queue depth: 4 KiB reads at random pages;
//! 3. `rand_write` at each queue depth: 4 KiB writes of other corpus pages
//!    at random pages;
//! 4. `seq_read`: the device read from the start, 1 MiB requests;
//!
//! then (untimed) every page is read back and compared with what was
//! written. A queue depth of N is N threads with one synchronous request
//! each (one NBD connection each), the same for every target. The rows are
//! medians over the rounds, with the lowest and highest round and the
//! median per-round ratio to the first target.

use serde::Serialize;
use zmem_codec::{Params, PAGE_SIZE};
use zmem_corpus::Corpus;
use zmem_kernel::KernelModel;

use super::random_read::{aligned_buffer, read_phase, request_indexes, ReadResult};

mod target;
pub use target::{Build, Spec, Target};

/// What to measure.
#[derive(Debug, Clone)]
pub struct Options {
    pub targets: Vec<Spec>,
    /// The algorithm of the engine and kernel targets (a served device
    /// has the algorithm its server was given).
    pub algo: String,
    pub params: Params,
    pub kernel_model: KernelModel,
    pub rounds: usize,
    /// 4 KiB requests per random phase (split among the queue slots).
    pub requests: usize,
    pub queue_depths: Vec<usize>,
    pub seed: u64,
    /// A block device target holding data may be overwritten.
    pub force: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            targets: vec![Spec::Engine, Spec::Kernel],
            algo: zmem_codec::ZRAM_DEFAULT.name.to_string(),
            params: Params::default(),
            kernel_model: KernelModel::newest(),
            rounds: 5,
            requests: 20_000,
            queue_depths: vec![1, 16],
            seed: 0x7a11_5f0e,
            force: false,
        }
    }
}

/// One target in one phase: medians over the rounds.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub target: String,
    pub address: Option<String>,
    pub corpus: String,
    /// The engine's and kernel's algorithm; null for a served device.
    pub algo: Option<String>,
    pub phase: &'static str,
    pub queue_depth: usize,
    pub request_bytes: usize,
    pub rounds: usize,
    pub iops: Option<f64>,
    pub iops_min: Option<f64>,
    pub iops_max: Option<f64>,
    pub mibps: Option<f64>,
    pub lat_mean_ns: Option<f64>,
    pub lat_p99_ns: Option<f64>,
    /// Median over rounds of this row's IOPS over the first target's.
    pub to_first: Option<f64>,
    pub error: Option<String>,
}

/// A phase: its name, queue depth and request size in pages (log2).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Phase {
    name: &'static str,
    qd: usize,
    page_cluster: u32,
}

/// 1 MiB = 2^8 pages.
const SEQ_CLUSTER: u32 = 8;

fn phases(qds: &[usize]) -> Vec<Phase> {
    let mut v = vec![Phase {
        name: "seq_write",
        qd: 1,
        page_cluster: SEQ_CLUSTER,
    }];
    for name in ["rand_read", "rand_write"] {
        v.extend(qds.iter().map(|&qd| Phase {
            name,
            qd,
            page_cluster: 0,
        }));
    }
    v.push(Phase {
        name: "seq_read",
        qd: 1,
        page_cluster: SEQ_CLUSTER,
    });
    v
}

/// The corpus page written at `index` by round `round`'s random writes
/// (another page than the one the sequential write put there).
fn rewritten(index: usize, round: usize, pages: usize) -> usize {
    (index + round + 1) % pages
}

/// The request plan of one phase: random pages for the random phases,
/// the device in order for the sequential ones.
fn plan(p: &Phase, pages: usize, requests: usize, seed: u64) -> Vec<Vec<usize>> {
    if p.page_cluster == SEQ_CLUSTER {
        return vec![(0..pages).step_by(1 << SEQ_CLUSTER).collect()];
    }
    request_indexes(pages, 0, requests, p.qd, seed)
}

/// Run one phase on a target; `written[i]` is the corpus page at page i.
fn run_phase(
    t: &Target,
    p: &Phase,
    corpus: &Corpus,
    written: &mut [usize],
    round: usize,
    o: &Options,
) -> Result<ReadResult, String> {
    let pages = corpus.page_count();
    let seed = o.seed ^ (round as u64).wrapping_mul(0x9e37_79b9) ^ p.qd as u64;
    let plan = plan(p, pages, o.requests, seed);
    let len = |i: usize| ((1usize << p.page_cluster).min(pages - i)) * PAGE_SIZE;
    let r = match p.name {
        "seq_write" => read_phase(p.page_cluster, &plan, |buf, i| {
            let n = len(i);
            buf[..n].copy_from_slice(&corpus.bytes()[i * PAGE_SIZE..i * PAGE_SIZE + n]);
            t.write(i, &buf[..n])
        }),
        "rand_write" => read_phase(0, &plan, |buf, i| {
            buf[..PAGE_SIZE].copy_from_slice(corpus.page(rewritten(i, round, pages)));
            t.write(i, &buf[..PAGE_SIZE])
        }),
        _ => read_phase(p.page_cluster, &plan, |buf, i| {
            t.read(i, &mut buf[..len(i)])
        }),
    }?;
    match p.name {
        "seq_write" => written.iter_mut().enumerate().for_each(|(i, w)| *w = i),
        "rand_write" => plan
            .iter()
            .flatten()
            .for_each(|&i| written[i] = rewritten(i, round, pages)),
        _ => {}
    }
    Ok(r)
}

/// Every page reads back as the corpus page last written there.
fn verify(t: &Target, corpus: &Corpus, written: &[usize]) -> Result<(), String> {
    let (mut buf, off) = aligned_buffer(PAGE_SIZE);
    let page = &mut buf[off..off + PAGE_SIZE];
    for (i, &w) in written.iter().enumerate() {
        t.read(i, page)?;
        if page != corpus.page(w) {
            return Err(format!("page {i} did not read back as written"));
        }
    }
    Ok(())
}

/// Results of every round: `[target][phase] -> per-round results`.
type Runs = Vec<Vec<Vec<Result<ReadResult, String>>>>;

/// Measure every target on `corpus`; `progress` gets "round R/N: TARGET PHASE".
pub fn run(
    corpus: &Corpus,
    o: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<Row>, String> {
    let pages = corpus.page_count();
    if pages == 0 {
        return Err("the corpus has no pages".into());
    }
    let qd_max = o.queue_depths.iter().copied().max().unwrap_or(1);
    let build = Build {
        algo: &o.algo,
        params: &o.params,
        kernel_model: o.kernel_model,
        pages,
        force: o.force,
    };
    let targets: Vec<Target> = o
        .targets
        .iter()
        .map(|s| Target::open(s, &build, qd_max).map_err(|e| format!("{}: {e}", s.kind())))
        .collect::<Result<_, _>>()?;
    let ph = phases(&o.queue_depths);
    let mut runs: Runs = vec![vec![Vec::new(); ph.len()]; targets.len()];
    let mut written = vec![vec![0usize; pages]; targets.len()];
    for round in 0..o.rounds.max(1) {
        for k in 0..targets.len() {
            let ti = (k + round) % targets.len();
            for (pi, p) in ph.iter().enumerate() {
                progress(&format!(
                    "round {}/{}: {} {} qd{}",
                    round + 1,
                    o.rounds.max(1),
                    o.targets[ti].kind(),
                    p.name,
                    p.qd
                ));
                let r = run_phase(&targets[ti], p, corpus, &mut written[ti], round, o);
                runs[ti][pi].push(r);
            }
            verify(&targets[ti], corpus, &written[ti])
                .map_err(|e| format!("{}: {e}", o.targets[ti].kind()))?;
        }
    }
    Ok(rows(corpus, o, &targets, &ph, &runs))
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn rows(corpus: &Corpus, o: &Options, targets: &[Target], ph: &[Phase], runs: &Runs) -> Vec<Row> {
    let mut out = Vec::new();
    for (ti, spec) in o.targets.iter().enumerate() {
        for (pi, p) in ph.iter().enumerate() {
            let rs = &runs[ti][pi];
            let ok: Vec<&ReadResult> = rs.iter().filter_map(|r| r.as_ref().ok()).collect();
            let iops: Vec<f64> = ok.iter().map(|r| r.iops).collect();
            let ratios: Vec<f64> = rs
                .iter()
                .zip(&runs[0][pi])
                .filter_map(|(a, b)| Some(a.as_ref().ok()?.iops / b.as_ref().ok()?.iops))
                .collect();
            out.push(Row {
                target: spec.kind().to_string(),
                address: Target::address(spec, &targets[ti]),
                corpus: corpus.name.clone(),
                algo: matches!(spec, Spec::Engine | Spec::Kernel).then(|| o.algo.clone()),
                phase: p.name,
                queue_depth: p.qd,
                request_bytes: PAGE_SIZE << p.page_cluster,
                rounds: ok.len(),
                iops_min: iops.iter().copied().reduce(f64::min),
                iops_max: iops.iter().copied().reduce(f64::max),
                iops: median(iops),
                mibps: median(ok.iter().map(|r| r.mibps).collect()),
                lat_mean_ns: median(ok.iter().map(|r| r.lat_mean_ns).collect()),
                lat_p99_ns: median(ok.iter().map(|r| r.lat_p99_ns).collect()),
                to_first: median(ratios),
                error: rs.iter().find_map(|r| r.as_ref().err().cloned()),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus(pages: usize) -> Corpus {
        let mut bytes = vec![0u8; pages * PAGE_SIZE];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = ((i / 7) % 251) as u8 ^ (i / PAGE_SIZE) as u8;
        }
        Corpus::from_bytes("t", "test", bytes).unwrap()
    }

    #[test]
    fn the_engine_through_every_phase_reads_back_what_it_wrote() {
        let c = corpus(600);
        let o = Options {
            targets: vec![Spec::Engine, Spec::Engine],
            rounds: 2,
            requests: 400,
            queue_depths: vec![1, 4],
            ..Default::default()
        };
        let rows = run(&c, &o, &mut |_| {}).unwrap();
        assert_eq!(rows.len(), 2 * 6);
        for r in &rows {
            assert_eq!(r.rounds, 2, "{r:?}");
            assert!(r.error.is_none(), "{r:?}");
            assert!(r.iops.unwrap() > 0.0);
            assert!(r.iops_min.unwrap() <= r.iops.unwrap());
            assert!(r.iops.unwrap() <= r.iops_max.unwrap());
        }
        let first: Vec<_> = rows.iter().filter(|r| r.to_first == Some(1.0)).collect();
        assert_eq!(first.len(), 6, "the first target is its own reference");
        assert_eq!(rows[0].request_bytes, 1 << 20);
        assert_eq!(
            rows.iter().map(|r| r.phase).collect::<Vec<_>>()[..6],
            [
                "seq_write",
                "rand_read",
                "rand_read",
                "rand_write",
                "rand_write",
                "seq_read"
            ]
        );
    }

    #[test]
    fn a_corrupting_target_fails_the_run() {
        // An engine whose pages are rewritten behind the bench's back: the
        // verification pass catches it.
        let c = corpus(64);
        let b = Build {
            algo: "lz4",
            params: &Params::default(),
            kernel_model: KernelModel::newest(),
            pages: 64,
            force: false,
        };
        let t = Target::open(&Spec::Engine, &b, 1).unwrap();
        let mut written: Vec<usize> = (0..64).collect();
        for i in 0..64 {
            t.write(i, c.page(i)).unwrap();
        }
        assert!(verify(&t, &c, &written).is_ok());
        t.write(5, c.page(6)).unwrap();
        assert!(verify(&t, &c, &written).unwrap_err().contains("page 5"));
        written[5] = 6;
        assert!(verify(&t, &c, &written).is_ok());
    }

    #[test]
    fn plans_cover_the_device_in_order_or_at_random() {
        let ph = phases(&[1, 16]);
        let seq = plan(&ph[0], 1000, 0, 1);
        assert_eq!(seq, vec![vec![0, 256, 512, 768]]);
        let rnd = plan(&ph[2], 1000, 1600, 1);
        assert_eq!(rnd.len(), 16);
        assert!(rnd.iter().flatten().all(|&i| i < 1000));
    }
}
