//! The maintenance worker: one round (`run_once`) marks idle by age and
//! recompresses fast-path slots back to the primary, then idle slots with
//! the secondaries, within the per-round limits; writeback goes to the
//! backing file within the daily budget, and is skipped cleanly on a device
//! without one; the thread stops on `stop()` and on drop.

mod common;

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use common::phrases;
use zmem_codec::Params;
use zmem_sysfs::BlockDevice;
use zmem_zram::{MaintPolicy, MaintWorker, Maintainer, Stage, Zram, PAGE_SIZE};

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

/// Recompress everything that is idle at all; no writeback.
fn policy(min: u64, max: u64) -> MaintPolicy {
    MaintPolicy {
        fast_idle_age: Duration::ZERO,
        recompress_idle_age: Duration::ZERO,
        recompress_threshold: 0,
        writeback: false,
        min_pages: min,
        max_pages: max,
        ..MaintPolicy::default()
    }
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
fn round_recompresses_fast_slots_within_the_limits() {
    let d = dev(false, true);
    for i in 0..20 {
        d.write_page_fast(i, &phrases(i as u64)).unwrap();
    }
    // Below the per-round minimum: nothing happens.
    let mut m = Maintainer::new(
        d.clone(),
        MaintPolicy {
            recompress_secondary: false,
            ..policy(21, 100)
        },
    );
    let r = m.run_once();
    assert!(matches!(r.fast, Stage::Skipped(_)), "{r}");
    assert_eq!(fast_slots(&d), 20);
    // At most max_pages per round.
    let mut m = Maintainer::new(d.clone(), policy(1, 8));
    let r = m.run_once();
    match &r.fast {
        Stage::Recompressed(x) => assert_eq!(
            (x.candidates, x.attempted, x.recompressed),
            (20, 8, 8),
            "{r}"
        ),
        s => panic!("{s}"),
    }
    assert_eq!(r.round, 1);
    assert!(
        matches!(r.secondary, Stage::Off(_)),
        "no secondary configured: {r}"
    );
    assert!(matches!(r.writeback, Stage::Off(_)), "{r}");
    assert_eq!(fast_slots(&d), 12);
    assert_eq!(m.run_once().round, 2);
    assert_eq!(fast_slots(&d), 4);
    m.run_once();
    assert_eq!(fast_slots(&d), 0);
    let r = m.run_once();
    assert!(matches!(r.fast, Stage::Skipped(_)), "nothing left: {r}");
    assert!(d
        .block_state()
        .iter()
        .all(|s| s.priority == 0 && !s.pp_slot));
    verify(&d, 20);
    assert!(r.to_string().starts_with("round 4: fast: skipped"), "{r}");
}

#[test]
fn fast_slots_first_then_secondaries_share_the_budget() {
    let d = dev(true, true);
    for i in 0..10 {
        d.write_page_fast(i, &phrases(i as u64)).unwrap();
    }
    for i in 10..20 {
        d.write_page(i, &phrases(i as u64)).unwrap();
    }
    let mut m = Maintainer::new(
        d.clone(),
        MaintPolicy {
            recompress_types: vec!["idle".into()],
            ..policy(1, 15)
        },
    );
    let r = m.run_once();
    let (Stage::Recompressed(f), Stage::Recompressed(s)) = (&r.fast, &r.secondary) else {
        panic!("{r}")
    };
    assert_eq!((f.attempted, f.recompressed), (10, 10), "{r}");
    assert_eq!(s.attempted, 5, "the 5 attempts left of max_pages: {r}");
    assert_eq!(fast_slots(&d), 0);
    assert_eq!(
        d.block_state().iter().filter(|s| s.priority == 1).count() as u64,
        s.recompressed
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
    let p = MaintPolicy {
        fast_idle_age: Duration::from_secs(3600),
        recompress_idle_age: Duration::from_secs(3600),
        ..policy(1, 100)
    };
    let r = Maintainer::new(d.clone(), p).run_once();
    assert!(
        matches!(r.fast, Stage::Skipped(_)) && matches!(r.secondary, Stage::Skipped(_)),
        "{r}"
    );
    assert_eq!(fast_slots(&d), 10);
    assert!(d.block_state().iter().all(|s| !s.idle));
}

#[test]
fn writeback_is_skipped_cleanly_without_a_backing_device() {
    let d = dev(false, true);
    d.write_page_fast(0, &phrases(0)).unwrap();
    let mut m = Maintainer::new(
        d.clone(),
        MaintPolicy {
            writeback: true,
            ..policy(0, 100)
        },
    );
    let r = m.run_once();
    assert!(matches!(r.writeback, Stage::Unavailable(_)), "{r}");
    assert!(
        matches!(r.fast, Stage::Recompressed(_)),
        "the other stages still ran: {r}"
    );
    assert_eq!(
        r.writeback_budget_left,
        MaintPolicy::default().daily_writeback_pages
    );
    // Per-round minimum above the daily budget: skipped before any attribute.
    let mut m = Maintainer::new(
        d.clone(),
        MaintPolicy {
            writeback: true,
            daily_writeback_pages: 10,
            min_pages: 20,
            max_pages: 100,
            ..policy(0, 100)
        },
    );
    assert!(matches!(m.run_once().writeback, Stage::Skipped(_)));
}

#[test]
fn uninitialised_device_and_no_access_times() {
    let d = Arc::new(Zram::new());
    let r = Maintainer::new(d, policy(0, 100)).run_once();
    assert!(
        matches!(r.fast, Stage::Skipped(_)) && matches!(r.secondary, Stage::Skipped(_)),
        "{r}"
    );
    // Without access-time tracking: round 1 marks everything idle at its
    // end, round 2 acts on what stayed idle.
    let d = dev(false, false);
    for i in 0..6 {
        d.write_page_fast(i, &phrases(i as u64)).unwrap();
    }
    let mut m = Maintainer::new(d.clone(), policy(1, 100));
    assert!(matches!(m.run_once().fast, Stage::Skipped(_)));
    assert!(d.block_state().iter().all(|s| s.idle));
    let mut b = vec![0u8; PAGE_SIZE];
    d.read_page(0, &mut b).unwrap(); // accessed: stays with lz4m
    let r = m.run_once();
    let Stage::Recompressed(x) = r.fast else {
        panic!("{r}")
    };
    assert_eq!(x.recompressed, 5);
    assert!(d.slot_info(0).unwrap().fast);
}

#[test]
fn worker_thread_runs_rounds_and_stops_on_drop() {
    let d = dev(false, true);
    for i in 0..4 {
        d.write_page_fast(i, &phrases(i as u64)).unwrap();
    }
    let (tx, rx) = mpsc::channel();
    let p = MaintPolicy {
        interval: Duration::from_millis(5),
        ..policy(1, 100)
    };
    let w = MaintWorker::start_with(
        d.clone(),
        p,
        Box::new(move |r| {
            let _ = tx.send(r.clone());
        }),
    )
    .unwrap();
    assert!(w.is_running());
    let first = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("a round within a minute");
    assert_eq!(first.round, 1);
    assert!(matches!(first.fast, Stage::Recompressed(_)), "{first}");
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
    let mut w =
        MaintWorker::start_with(d.clone(), MaintPolicy::default(), Box::new(|_| {})).unwrap();
    // run_once works beside the thread.
    assert_eq!(w.run_once().round, 1);
    assert_eq!(w.rounds(), 1);
    w.stop();
    assert!(!w.is_running());
    w.stop(); // idempotent
    assert_eq!(
        Arc::strong_count(&d),
        2,
        "the worker handle still holds its Maintainer"
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
            "((interval|fast-idle|recompress-idle|writeback-idle|min-per-round|max-per-round|writeback-daily-limit|recompress|writeback|recompress-types|recompress-threshold)=[0-9a-zA-Z+_]{0,8}[, ]?){0,5}",
        ]
    ) {
        if let Ok(p) = MaintPolicy::default().apply(&s) {
            proptest::prop_assert!(p.min_pages <= p.max_pages && !p.interval.is_zero());
        }
    }
}

#[test]
fn writeback_stage_writes_back_within_the_daily_budget() {
    let backing = std::env::temp_dir().join(format!("zmem-maint-wb-{}", std::process::id()));
    std::fs::File::create(&backing)
        .unwrap()
        .set_len(128 * PAGE_SIZE as u64)
        .unwrap();
    let d = Arc::new(
        Zram::builder()
            .algorithm("lz4", Params::default())
            .backing_dev(&backing)
            .disksize(64 * PAGE_SIZE as u64)
            .build()
            .unwrap(),
    );
    std::fs::remove_file(&backing).unwrap(); // the open file lives on
    for i in 0..40 {
        d.write_page(i, &phrases(i as u64)).unwrap();
    }
    let wb_policy = MaintPolicy {
        recompress_fast: false,
        recompress_secondary: false,
        writeback: true,
        writeback_idle_age: Duration::ZERO,
        daily_writeback_pages: 30,
        ..policy(0, 100)
    };
    let mut m = Maintainer::new(d.clone(), wb_policy);
    let r = m.run_once();
    assert_eq!(
        r.writeback,
        Stage::WrittenBack(30),
        "the daily budget caps the round: {r}"
    );
    assert_eq!(r.writeback_budget_left, 0, "{r}");
    let wb = d.block_state().iter().filter(|s| s.wb).count();
    assert_eq!(wb, 30);
    assert_eq!(
        d.attr_read("bd_stat").unwrap(),
        format!("{:>8} {:>8} {:>8}\n", 30, 0, 30)
    );
    // The budget is spent for the next 24 hours.
    assert!(matches!(m.run_once().writeback, Stage::Skipped(_)));
    assert_eq!(d.block_state().iter().filter(|s| s.wb).count(), 30);
    verify(&d, 40);
}
