//! `zmem apply`, `status` and `policy` against the fixture trees in tests/fixtures/NN-name/
//! (zram-generator's tests/ style; see tests/fixtures/make.py for the layout).
//!
//! Each case: apply the config to a copy of root/ and compare the writes and commands, in
//! order, with expected-apply.log (or the error with expected-error, the tree untouched);
//! apply again and expect no change (idempotent); revert and compare the revert's writes with
//! expected-revert.log and the tree with the original.
//!
//! zg-* cases are zram-generator's own tests (its repository's tests/01-basic … 11-obsolete)
//! with their zram-generator.conf files inside root/; they also compare `apply --dry-run`'s
//! text with expected-dry-run.log.
//!
//! `ZMEM_BLESS=1 cargo test -p zmem-admin --test fixtures` rewrites the expected files from
//! what the code does now (review the diff before committing).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use zmem_admin::apply::{self, Options};
use zmem_admin::status;
use zmem_conf as config;
use zmem_host::SysfsDevice;
use zmem_host::{Sys, FIXTURE_LOG};
use zmem_policy::{self as policy, Policy, State};

use zmem_files::testutil::ScratchDir;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn bless() -> bool {
    std::env::var_os("ZMEM_BLESS").is_some()
}

fn read_tree(root: &Path) -> BTreeMap<String, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
            if rel == FIXTURE_LOG || rel.starts_with("run") {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                walk(base, &p, out);
            } else {
                out.insert(rel, fs::read_to_string(&p).unwrap());
            }
        }
    }
    let mut m = BTreeMap::new();
    walk(root, root, &mut m);
    m
}

fn log_of(root: &Path) -> String {
    fs::read_to_string(root.join(FIXTURE_LOG)).unwrap_or_default()
}

/// Compare with an expected file, or write it when blessing.
fn expect_file(case_dir: &Path, name: &str, actual: &str) {
    let p = case_dir.join(name);
    if bless() {
        fs::write(&p, actual).unwrap();
        return;
    }
    let want = fs::read_to_string(&p).unwrap_or_else(|_| panic!("missing {}", p.display()));
    assert_eq!(actual, want, "{} differs", p.display());
}

fn assert_same_tree(case: &str, original: &Path, now: &Path, allowed: &[String]) {
    let a = read_tree(original);
    let b = read_tree(now);
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for k in keys {
        if allowed.iter().any(|x| x == k) {
            continue;
        }
        assert_eq!(
            a.get(k),
            b.get(k),
            "{case}: {k} differs from the original tree"
        );
    }
}

/// The case's configuration: its zmem.conf, or (zram-generator's cases, zg-*) the
/// zram-generator files inside the tree, read as zram-generator reads them.
fn load_case(dir: &Path, root: &Path, strict: bool) -> Result<config::Config, String> {
    let conf = dir.join("zmem.conf");
    if conf.exists() {
        config::load_with(&conf, strict)
    } else {
        config::load_system(root, strict)
    }
    .map_err(|e| e.to_string())
}

fn run_case(dir: &Path) {
    let case = dir.file_name().unwrap().to_string_lossy().into_owned();
    let args = fs::read_to_string(dir.join("args")).unwrap_or_default();
    let opts = Options {
        force: args.contains("--force"),
    };
    let strict = args.contains("--strict");
    let (_scratch, root) = ScratchDir::with_copy(&format!("fixture-{case}"), &dir.join("root"));
    let sys = Sys::new(&root);
    let expected_error = fs::read_to_string(dir.join("expected-error")).ok();
    let dry_run_file = dir.join("expected-dry-run.log");
    let result = load_case(dir, &root, strict).and_then(|cfg| {
        let plan = apply::plan(&sys, &cfg, opts).map_err(|e| e.to_string())?;
        if dry_run_file.exists() || (bless() && case.starts_with("zg-")) {
            expect_file(
                dir,
                "expected-dry-run.log",
                &apply::render_dry_run(&cfg, &plan),
            );
        }
        apply::execute(&sys, &plan, &mut |_| {}).map_err(|e| e.to_string())
    });
    match (result, expected_error) {
        (Ok(()), None) => {
            expect_file(dir, "expected-apply.log", &log_of(&root));
            // Idempotent: a second apply plans nothing.
            let cfg = load_case(dir, &root, strict).unwrap();
            let again = apply::plan(&sys, &cfg, opts).unwrap();
            assert!(
                again.steps.is_empty(),
                "{case}: second apply would change {:?}",
                again.steps
            );
            // Revert: back to the original tree.
            let before_revert = log_of(&root);
            let had_state = sys.exists(&apply::state_file(&sys));
            if had_state {
                apply::revert(&sys, &mut |_| {}).unwrap();
            }
            let revert_log = log_of(&root)[before_revert.len()..].to_string();
            expect_file(dir, "expected-revert.log", &revert_log);
            let allowed: Vec<String> = fs::read_to_string(dir.join("revert-differs"))
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect();
            assert_same_tree(&case, &dir.join("root"), &root, &allowed);
        }
        (Err(e), Some(want)) => {
            assert!(
                e.contains(want.trim()),
                "{case}: error {e:?} does not contain {:?}",
                want.trim()
            );
            if dir.join("expected-apply.log").exists() || (bless() && !log_of(&root).is_empty()) {
                // Partial failure: the writes, then the rollback.
                expect_file(dir, "expected-apply.log", &log_of(&root));
            } else {
                assert_eq!(
                    log_of(&root),
                    "",
                    "{case}: something was written although apply failed before starting"
                );
            }
            assert_same_tree(&case, &dir.join("root"), &root, &[]);
        }
        (Ok(()), Some(want)) => {
            panic!("{case}: apply succeeded, expected an error containing {want:?}")
        }
        (Err(e), None) => {
            if bless() {
                fs::write(dir.join("expected-error"), format!("{e}\n")).unwrap();
                if !log_of(&root).is_empty() {
                    fs::write(dir.join("expected-apply.log"), log_of(&root)).unwrap();
                }
            } else {
                panic!("{case}: apply failed: {e}");
            }
        }
    }
}

#[test]
fn apply_fixture_cases() {
    let (mut n, mut zg) = (0, 0);
    let mut dirs: Vec<PathBuf> = fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("zmem.conf").exists() || p.join("root").is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        if name.contains("policy") {
            continue;
        }
        run_case(&d);
        n += 1;
        zg += name.starts_with("zg-") as usize;
    }
    assert!(n >= 10, "only {n} fixture cases found");
    // zram-generator's tests/ 01-basic … 11-obsolete, with 07a.
    assert_eq!(zg, 12, "zram-generator's cases");
}

#[test]
fn status_of_fixture_trees() {
    for case in [
        "01-basic",
        "03-multi-comp-writeback",
        "06-in-use",
        "15-policy",
    ] {
        let dir = fixtures().join(case);
        let sys = Sys::new(dir.join("root"));
        let st = status::collect(&sys, false).unwrap();
        expect_file(&dir, "expected-status.txt", &status::render_text(&st));
    }
}

#[test]
fn status_leaves_out_a_device_removed_while_it_is_read() {
    // /sys/block/zramN is a link into /sys/devices; after hot_remove it goes.
    // A link that leads nowhere is what a reader sees between the listing
    // and the read.
    let dir = fixtures().join("01-basic");
    let (_scratch, root) = ScratchDir::with_copy("fixture-vanished", &dir.join("root"));
    std::os::unix::fs::symlink(
        "../devices/virtual/block/zram7",
        root.join("sys/block/zram7"),
    )
    .unwrap();
    let st = status::collect(&Sys::new(&root), false).unwrap();
    expect_file(&dir, "expected-status.txt", &status::render_text(&st));
}

#[test]
fn status_warns_when_zram_and_zswap_both_active() {
    let dir = fixtures().join("06-in-use");
    let (_scratch, root) = ScratchDir::with_copy("fixture-zswap-warn", &dir.join("root"));
    fs::write(root.join("sys/module/zswap/parameters/enabled"), "Y\n").unwrap();
    let st = status::collect(&Sys::new(&root), false).unwrap();
    assert!(
        st.warnings
            .iter()
            .any(|w| w.contains("zram and zswap are both active")),
        "{:?}",
        st.warnings
    );
}

fn policy_case(case: &str) -> String {
    let dir = fixtures().join(case);
    let (_scratch, root) = ScratchDir::with_copy(&format!("fixture-{case}"), &dir.join("root"));
    let sys = Sys::new(&root);
    let cfg = config::load(&dir.join("zmem.conf")).unwrap();
    let pol = Policy::from_config(&cfg).unwrap();
    let dev = SysfsDevice::new(&sys, "zram0");
    let mut st = State::default();
    let mut out = String::new();
    // Three rounds: t0, t0 + 5 min (inside every backoff), t0 + 7 h (past the recompression
    // backoff and the longest recompression idle age, inside neither writeback bound).
    let t0 = 1_700_000_000;
    for now in [t0, t0 + 300, t0 + 7 * 3600] {
        out.push_str(&format!("-- round at t0+{}s\n", now - t0));
        let d = st.devices.entry("zram0".into()).or_default();
        policy::round(&sys, &pol, &dev, d, now, None, &mut |l| {
            out.push_str(&l);
            out.push('\n');
        });
    }
    out.push_str("-- writes\n");
    out.push_str(&log_of(&root));
    out
}

#[test]
fn policy_rounds_on_a_device_with_recompression_and_writeback() {
    let out = policy_case("15-policy");
    expect_file(&fixtures().join("15-policy"), "expected-policy.log", &out);
}

#[test]
fn policy_without_idle_ages_marks_all_and_waits() {
    let out = policy_case("16-policy-no-idle-age");
    expect_file(
        &fixtures().join("16-policy-no-idle-age"),
        "expected-policy.log",
        &out,
    );
}
