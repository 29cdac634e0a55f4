//! The policy engine on an engine device in process (what `zmem serve
//! --maint` runs): fast-path slots go back to the primary by idle age and
//! within max_pages, then idle slots to the secondaries; writeback goes to
//! the backing file within the daily limit and is skipped cleanly on a
//! device without one; without access times the engine marks all and acts
//! a round later; the worker thread stops on `stop()` and on drop.

#[path = "../../../engine/zram/tests/common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use common::{content, phrases, Rng};
use zmem_codec::Params;
use zmem_device::{AttrTarget, BlockDevice, DeviceTarget};
use zmem_files::testutil::ScratchDir;
use zmem_policy::{round, DeviceState, Env, Policy, Worker};
use zmem_zram::{Zram, PAGE_SIZE};

/// A quiet machine: no memory pressure, no backing block device to measure.
struct Quiet;

impl Env for Quiet {
    fn mem_util(&self) -> f64 {
        0.0
    }
    fn backing_free(&self, _: &dyn AttrTarget, _: &str) -> Option<u64> {
        None
    }
}

fn dev(zstd: bool, track: bool) -> Arc<Zram> {
    let mut b = Zram::builder()
        .algorithm("lz4", Params::default())
        .fast_algorithm("lz4m")
        .track_access_time(track);
    if zstd {
        b = b.secondary(1, "zstd", Params::default());
    }
    Arc::new(b.disksize(64 * PAGE_SIZE as u64).build().unwrap())
}

/// Recompress everything that is idle at all, every round; no writeback.
fn policy(max_pages: Option<u64>) -> Policy {
    Policy {
        fast_idle: 0,
        recompress_idle_min: 0,
        recompress_idle_max: 0,
        recompress_backoff: 0,
        recompress_threshold: 0,
        recompress_max_pages: max_pages,
        writeback: false,
        ..Policy::default()
    }
}

/// One round at `now`; its log.
fn run(d: &Arc<Zram>, p: &Policy, st: &mut DeviceState, now: u64) -> String {
    let t = DeviceTarget::new("serve:t", d.clone());
    let mut log = Vec::new();
    round(&Quiet, p, &t, st, now, None, &mut |l| log.push(l));
    log.join("\n")
}

fn fast_slots(d: &Zram) -> usize {
    d.block_state().iter().filter(|s| s.fast).count()
}

fn verify(d: &Zram, n: usize) {
    let mut b = vec![0u8; PAGE_SIZE];
    for i in 0..n {
        d.read_page(i, &mut b).unwrap();
        assert_eq!(b, phrases(i as u64), "page {i}");
    }
}

#[test]
fn round_recompresses_fast_slots_within_max_pages() {
    let d = dev(false, true);
    for i in 0..20 {
        d.write_page_fast(i, &phrases(i as u64)).unwrap();
    }
    let p = policy(Some(8));
    let mut st = DeviceState::default();
    let log = run(&d, &p, &mut st, 1000);
    assert!(log.contains("serve:t: write idle 0 "), "{log}");
    assert!(
        log.contains("write recompress type=idle from=lz4m max_pages=8: ok"),
        "{log}"
    );
    assert!(
        log.contains("recompression skipped: no recompression algorithm configured"),
        "{log}"
    );
    assert!(!log.contains("writeback"), "writeback is off: {log}");
    assert_eq!(fast_slots(&d), 12);
    run(&d, &p, &mut st, 1001);
    assert_eq!(fast_slots(&d), 4);
    run(&d, &p, &mut st, 1002);
    assert_eq!(fast_slots(&d), 0);
    let log = run(&d, &p, &mut st, 1003);
    assert!(
        log.contains("from=lz4m max_pages=8: ok"),
        "nothing left is no error: {log}"
    );
    assert!(d
        .block_state()
        .iter()
        .all(|s| s.priority == 0 && !s.pp_slot));
    verify(&d, 20);
}

#[test]
fn round_ends_with_compaction_counted_in_pages_compacted() {
    let d = dev(false, true);
    for i in 0..64 {
        d.write_page_fast(i, &phrases(i as u64)).unwrap();
    }
    let log = run(&d, &policy(None), &mut DeviceState::default(), 1000);
    let line = log
        .lines()
        .last()
        .filter(|l| l.starts_with("serve:t: write compact: ok, "))
        .unwrap_or_else(|| panic!("the round ends with compact: {log}"));
    let freed: u64 = line
        .trim_start_matches("serve:t: write compact: ok, ")
        .trim_end_matches(" pages freed")
        .parse()
        .expect(line);
    let mm = zmem_kernel::MmStat::parse(&d.attr_read("mm_stat").unwrap()).unwrap();
    assert_eq!(mm.pages_compacted, freed, "{log}");
    verify(&d, 64);
}

#[test]
fn fast_slots_first_then_secondaries() {
    let d = dev(true, true);
    for i in 0..10 {
        d.write_page_fast(i, &phrases(i as u64)).unwrap();
    }
    for i in 10..20 {
        d.write_page(i, &phrases(i as u64)).unwrap();
    }
    let p = Policy {
        recompress_types: vec!["idle".into()],
        ..policy(Some(15))
    };
    let log = run(&d, &p, &mut DeviceState::default(), 1000);
    let fast = log.find("from=lz4m").expect(&log);
    let secondary = log
        .find("write recompress type=idle threshold=0 max_pages=15")
        .expect(&log);
    assert!(fast < secondary, "fast-path slots first: {log}");
    assert_eq!(fast_slots(&d), 0);
    let moved = d.block_state().iter().filter(|s| s.priority == 1).count();
    assert!(
        (1..=15).contains(&moved),
        "at most max_pages went to zstd: {moved}"
    );
    verify(&d, 20);
}

#[test]
fn idle_age_protects_recent_slots() {
    let d = dev(true, true);
    for i in 0..10 {
        d.write_page_fast(i, &phrases(i as u64)).unwrap();
    }
    // Nothing is an hour old.
    let p = Policy {
        fast_idle: 3600,
        recompress_idle_min: 3600,
        recompress_idle_max: 3600,
        ..policy(None)
    };
    let log = run(&d, &p, &mut DeviceState::default(), 1000);
    assert!(log.contains("write idle 3600"), "{log}");
    assert_eq!(fast_slots(&d), 10);
    assert!(d.block_state().iter().all(|s| !s.idle));
}

#[test]
fn writeback_is_skipped_cleanly_without_a_backing_device() {
    let d = dev(false, true);
    d.write_page_fast(0, &phrases(0)).unwrap();
    let p = Policy {
        writeback: true,
        ..policy(None)
    };
    let log = run(&d, &p, &mut DeviceState::default(), 1000);
    assert!(
        log.contains("serve:t: writeback skipped: no backing device"),
        "{log}"
    );
    assert_eq!(fast_slots(&d), 0, "the other stages still ran: {log}");
}

#[test]
fn uninitialised_device_and_no_access_times() {
    let d = Arc::new(Zram::new());
    let log = run(&d, &policy(None), &mut DeviceState::default(), 1000);
    assert_eq!(log, "serve:t: empty, nothing to do");
    // Without access-time tracking: round 1 marks everything idle, round 2
    // acts on what stayed idle (Android mmd's fallback).
    let d = dev(false, false);
    for i in 0..6 {
        d.write_page_fast(i, &phrases(i as u64)).unwrap();
    }
    let (p, mut st) = (
        Policy {
            fast_idle: 60,
            ..policy(None)
        },
        DeviceState::default(),
    );
    let log = run(&d, &p, &mut st, 1000);
    assert!(
        log.contains(
            "write idle all (kernel has no idle ages; acting on these pages after 1 min): ok"
        ),
        "{log}"
    );
    assert_eq!(fast_slots(&d), 6);
    assert!(d.block_state().iter().all(|s| s.idle));
    let log = run(&d, &p, &mut st, 1030);
    assert!(
        log.contains("waiting: pages were marked idle 30 s ago, need 1 min"),
        "{log}"
    );
    let mut b = vec![0u8; PAGE_SIZE];
    d.read_page(0, &mut b).unwrap(); // accessed: stays with lz4m
    let log = run(&d, &p, &mut st, 1060);
    assert!(
        log.contains("old enough") && log.contains("from=lz4m: ok"),
        "{log}"
    );
    assert_eq!(fast_slots(&d), 1);
    assert!(d.slot_info(0).unwrap().fast);
}

#[test]
fn worker_thread_runs_rounds_and_stops_on_drop() {
    let d = dev(false, true);
    for i in 0..4 {
        d.write_page_fast(i, &phrases(i as u64)).unwrap();
    }
    let (tx, rx) = mpsc::channel();
    let p = Policy {
        interval: Duration::from_millis(5),
        ..policy(None)
    };
    let target = Box::new(DeviceTarget::new("serve:t", d.clone()));
    let w = Worker::start(
        target,
        p,
        Box::new(move |r| {
            let _ = tx.send(r.to_string());
        }),
    )
    .unwrap();
    assert!(w.is_running());
    let first = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("a round within a minute");
    assert!(first.starts_with("round 1:\n"), "{first}");
    assert!(first.contains("from=lz4m: ok"), "{first}");
    assert!(w.last_report().is_some());
    drop(w);
    // The thread ended and released its reference to the device.
    assert_eq!(Arc::strong_count(&d), 1);
    assert_eq!(fast_slots(&d), 0);
    verify(&d, 4);
}

#[test]
fn worker_stop_interrupts_a_long_interval() {
    let d = dev(false, true);
    let target = Box::new(DeviceTarget::new("serve:t", d.clone()));
    let mut w = Worker::start(target, Policy::default(), Box::new(|_| {})).unwrap();
    // run_once works beside the thread.
    assert!(w
        .run_once()
        .starts_with("round 1:\nserve:t: empty, nothing to do"));
    assert_eq!(w.rounds(), 1);
    w.stop();
    assert!(!w.is_running());
    w.stop(); // idempotent
    assert_eq!(
        Arc::strong_count(&d),
        2,
        "the worker handle still holds its target"
    );
    drop(w);
    assert_eq!(Arc::strong_count(&d), 1);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]
    /// Random and near-valid policy strings never panic; what is accepted keeps min <= max.
    #[test]
    fn policy_strings_never_panic(
        s in proptest::prop_oneof![
            ".{0,60}",
            "((interval|fast-idle|recompress-idle-min|writeback-idle-max|writeback-min-per-round|writeback-max-per-round|writeback-daily-limit|recompress|writeback|recompress-types|recompress-threshold)=[0-9a-zA-Z+_.]{0,8}[, ]?){0,5}",
        ]
    ) {
        if let Ok(p) = Policy::default().with_spec(&s) {
            proptest::prop_assert!(p.writeback_min_bytes <= p.writeback_max_bytes && !p.interval.is_zero());
            proptest::prop_assert!(p.recompress_idle_min <= p.recompress_idle_max);
        }
    }
}

/// A device with a 128-page backing file (removed at once; the open file lives on).
fn device_with_backing(name: &str) -> Arc<Zram> {
    let dir = ScratchDir::new(&format!("policy-{name}"));
    let backing = dir.join("backing");
    std::fs::File::create(&backing)
        .unwrap()
        .set_len(128 * PAGE_SIZE as u64)
        .unwrap();
    let d = Zram::builder()
        .algorithm("lz4", Params::default())
        .backing_dev(&backing)
        .disksize(64 * PAGE_SIZE as u64)
        .build()
        .unwrap();
    drop(dir); // the backing file goes at once; the open file lives on
    Arc::new(d)
}

#[test]
fn writeback_writes_back_within_the_daily_limit() {
    let d = device_with_backing("wb");
    for i in 0..40 {
        d.write_page(i, &phrases(i as u64)).unwrap();
    }
    let p = Policy {
        recompress_fast: false,
        recompress: false,
        writeback: true,
        writeback_backoff: 0,
        writeback_idle_min: 0,
        writeback_idle_max: 0,
        writeback_min_bytes: PAGE_SIZE as u64,
        writeback_daily_bytes: 30 * PAGE_SIZE as u64,
        ..Policy::default()
    };
    let mut st = DeviceState::default();
    let log = run(&d, &p, &mut st, 1000);
    assert!(
        log.contains("writeback_limit 30 (120 KiB): ok"),
        "the daily limit caps the round: {log}"
    );
    assert!(
        log.contains("wrote back 120 KiB this round; 0 B of the daily 120 KiB left"),
        "{log}"
    );
    assert_eq!(d.block_state().iter().filter(|s| s.wb).count(), 30);
    assert_eq!(
        d.attr_read("bd_stat").unwrap(),
        format!("{:>8} {:>8} {:>8}\n", 30, 0, 30)
    );
    // The limit is spent for the next 24 hours.
    let log = run(&d, &p, &mut st, 1060);
    assert!(log.contains("below the per-round minimum"), "{log}");
    assert_eq!(d.block_state().iter().filter(|s| s.wb).count(), 30);
    verify(&d, 40);
    // A day later there is room again.
    let log = run(&d, &p, &mut st, 1000 + 86400);
    assert!(
        log.contains("wrote back 40.0 KiB this round; 80.0 KiB of the daily 120 KiB left"),
        "{log}"
    );
    assert_eq!(d.block_state().iter().filter(|s| s.wb).count(), 40);
    verify(&d, 40);
}

#[test]
fn per_round_minimum_above_the_daily_limit_writes_nothing() {
    let d = device_with_backing("min");
    d.write_page(0, &phrases(0)).unwrap();
    let p = Policy {
        recompress_fast: false,
        recompress: false,
        writeback_min_bytes: 20 * PAGE_SIZE as u64,
        writeback_daily_bytes: 10 * PAGE_SIZE as u64,
        ..Policy::default()
    };
    let log = run(&d, &p, &mut DeviceState::default(), 1000);
    assert!(
        log.contains("writeback skipped: this round could write 40.0 KiB"),
        "{log}"
    );
    assert!(
        !log.contains("write idle") && !log.contains("writeback_limit"),
        "no attribute written: {log}"
    );
    assert_eq!(
        d.attr_read("bd_stat").unwrap(),
        format!("{:>8} {:>8} {:>8}\n", 0, 0, 0)
    );
}

/// Fast-path and primary writes from several threads while the maintenance
/// worker keeps recompressing (fast slots back to lz4, idle slots to zstd):
/// every read sees exactly the last write of its page.
#[test]
fn fast_writes_during_background_recompression() {
    const PAGES: usize = 64;
    const THREADS: usize = 3;
    let dev = Arc::new(
        Zram::builder()
            .algorithm("lz4", Params::default())
            .secondary(1, "zstd", Params::default())
            .fast_algorithm("lz4m")
            .disksize((PAGES * PAGE_SIZE) as u64)
            .build()
            .unwrap(),
    );
    let policy = Policy {
        interval: Duration::from_millis(1),
        ..policy(None)
    };
    // Writers keep going until the worker has run 20 rounds beside them.
    let rounds = Arc::new(AtomicU64::new(0));
    let r2 = rounds.clone();
    let worker = Worker::start(
        Box::new(DeviceTarget::new("serve:t", dev.clone())),
        policy,
        Box::new(move |_| {
            r2.fetch_add(1, Ordering::Relaxed);
        }),
    )
    .unwrap();
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let dev = dev.clone();
            let rounds = rounds.clone();
            std::thread::spawn(move || {
                let mut r = Rng(t as u64 * 104_729 + 7);
                let mut version = vec![0u64; PAGES];
                let mut n = 0u64;
                while n < 3000 || (rounds.load(Ordering::Relaxed) < 20 && n < 50_000_000) {
                    n += 1;
                    let index = r.below(PAGES as u64) as usize;
                    if index % THREADS != t {
                        continue;
                    }
                    match r.below(4) {
                        0 => {
                            version[index] += 1;
                            dev.write_page_fast(index, &content(index, version[index]))
                                .unwrap();
                        }
                        1 => {
                            version[index] += 1;
                            dev.write_page(index, &content(index, version[index]))
                                .unwrap();
                        }
                        _ => {
                            let mut b = vec![0u8; PAGE_SIZE];
                            dev.read_page(index, &mut b).unwrap();
                            assert!(
                                b == content(index, version[index]),
                                "page {index} v{}",
                                version[index]
                            );
                        }
                    }
                }
                version
            })
        })
        .collect();
    let versions: Vec<Vec<u64>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let rounds = rounds.load(Ordering::Relaxed);
    drop(worker);
    for i in 0..PAGES {
        let mut b = vec![0u8; PAGE_SIZE];
        dev.read_page(i, &mut b).unwrap();
        assert_eq!(b, content(i, versions[i % THREADS][i]), "page {i}");
    }
    let m = dev.mm_stat();
    let slots = dev.block_state();
    assert_eq!(
        m.compr_data_size,
        slots.iter().map(|s| s.size as u64).sum::<u64>()
    );
    assert_eq!(m.huge_pages, slots.iter().filter(|s| s.huge).count() as u64);
    assert!(slots.iter().all(|s| !s.pp_slot));
    assert!(
        rounds >= 20,
        "the writers ran beside 20 maintenance rounds, not {rounds}"
    );
}
