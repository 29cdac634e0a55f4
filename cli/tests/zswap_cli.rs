//! `zmem bench --zswap` through the binary.

use std::process::Command;

fn zmem(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .output()
        .expect("run zmem")
}

#[test]
fn bench_zswap_prints_both_engines_on_the_default_corpus() {
    let out = zmem(&["bench", "--zswap", "--accesses", "3000", "--budget", "0.25"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for col in [
        "hit_rate",
        "written_back",
        "ram_used",
        "lat_p99_us",
        "backing_r/w",
    ] {
        assert!(stdout.contains(col), "column {col} missing:\n{stdout}");
    }
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("zswap ") || l.starts_with("zram "))
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    assert!(stdout.contains("corpus default"), "{stdout}");

    let out = zmem(&[
        "bench",
        "--zswap",
        "--accesses",
        "500",
        "--format",
        "json",
        "--zpool",
        "z3fold",
        "--algo",
        "lz4",
    ]);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let rows = v.as_array().expect("array");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["engine"], "zswap");
    assert_eq!(rows[0]["allocator"], "z3fold");
    assert_eq!(rows[1]["engine"], "zram");
    assert_eq!(
        rows[0]["budget_bytes"], rows[1]["budget_bytes"],
        "equal RAM budgets"
    );
}

#[test]
fn bench_zswap_bad_options_are_clear_errors() {
    for (args, want) in [
        (vec!["--hot", "1.5"], "--hot"),
        (vec!["--hot-access", "1.1"], "--hot-access"),
        (vec!["--budget", "lots"], "--budget"),
        (vec!["--zpool", "zfoo"], "zfoo"),
        (vec!["--algo", "lz5"], "lz5"),
    ] {
        let mut a = vec!["bench", "--zswap"];
        a.extend(args.iter().copied());
        let out = zmem(&a);
        assert!(!out.status.success(), "{a:?} should fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{a:?}: {err}");
        assert!(!err.contains("panicked"), "{a:?}: {err}");
    }
}
