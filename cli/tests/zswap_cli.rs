//! `zmem bench zswap` through the binary. The kernel test changes swap,
//! zswap parameters, vm.page-cluster, a cgroup and the debugfs mount (all
//! restored): run it under the machine-wide lock,
//! `flock /tmp/zmem-kernel.lock cargo test -p zmem --test zswap_cli`.

use std::process::Command;

fn zmem(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .output()
        .expect("run zmem")
}

#[test]
fn bench_zswap_prints_both_engines_on_the_default_corpus() {
    let out = zmem(&[
        "bench",
        "zswap",
        "--no-kernel",
        "--accesses",
        "3000",
        "--budget",
        "0.25",
    ]);
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
        "target",
        "B/stored",
        "limit_hits",
        "rejects",
    ] {
        assert!(stdout.contains(col), "column {col} missing:\n{stdout}");
    }
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("zswap ") || l.starts_with("zram "))
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    assert!(rows.iter().all(|r| r.contains(" engine ")), "{stdout}");
    assert!(stdout.contains("corpus default"), "{stdout}");

    let out = zmem(&[
        "bench",
        "zswap",
        "--no-kernel",
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
    assert_eq!(rows[0]["target"], "engine");
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
        (vec!["--worker", "paced:0"], "--worker"),
    ] {
        let mut a = vec!["bench", "zswap"];
        a.extend(args.iter().copied());
        let out = zmem(&a);
        assert!(!out.status.success(), "{a:?} should fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{a:?}: {err}");
        assert!(!err.contains("panicked"), "{a:?}: {err}");
    }
}

/// As root, a --swap-dir on a filesystem that cannot hold a swap file is an
/// error naming the filesystem, before anything is set up or measured.
#[test]
fn bench_zswap_refuses_a_swap_dir_that_cannot_hold_swap() {
    if !zmem_files::euid_is_root() {
        zmem_files::testutil::skip(
            "SKIP bench_zswap_refuses_a_swap_dir_that_cannot_hold_swap: the kernel rows (and the check) need root",
        );
        return;
    }
    let before = kernel_state();
    for (dir, fs) in [("/proc", "proc"), ("/dev/shm", "tmpfs")] {
        if zmem_host::swapless_filesystem(std::path::Path::new(dir)) != Some(fs) {
            continue; // not that filesystem on this machine
        }
        let out = zmem(&["bench", "zswap", "--accesses", "300", "--swap-dir", dir]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{dir}: {err}");
        assert!(
            err.contains(&format!("{dir} is on {fs}, which cannot hold a swap file")),
            "{err}"
        );
        assert!(out.stdout.is_empty(), "no rows before the check");
    }
    let out = zmem(&["bench", "zswap", "--swap-dir", "/nonexistent/zmem-dir"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("does not exist"),
        "{err}"
    );
    assert_eq!(kernel_state(), before);
}

/// The kernel tests of this file run one at a time (each sets up the
/// kernel's zswap; a second one would find the first one's swap active).
static KERNEL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What the kernel run must leave as it found it.
fn kernel_state() -> Vec<String> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let mut v: Vec<String> = [
        "enabled",
        "compressor",
        "max_pool_percent",
        "accept_threshold_percent",
    ]
    .iter()
    .map(|n| read(&format!("/sys/module/zswap/parameters/{n}")))
    .collect();
    v.push(read("/proc/swaps"));
    v.push(read("/proc/sys/vm/page-cluster"));
    let mounts = read("/proc/mounts");
    v.push(format!("debugfs mounted: {}", mounts.contains(" debugfs ")));
    v.push(format!("bench cgroups left: {:?}", bench_cgroups()));
    v
}

/// As root with zswap and no other swap active: kernel rows beside the
/// engine's, pool bytes per stored page within 2 % of the engine at the same
/// limit, and every setting, swap area and mount as before.
#[test]
fn bench_zswap_kernel_rows_beside_the_engine() {
    let _one = KERNEL.lock().unwrap_or_else(|e| e.into_inner());
    let root = zmem_files::euid_is_root();
    let zswap = std::path::Path::new("/sys/module/zswap/parameters/enabled").exists();
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    if !root || !zswap || swaps.lines().count() > 1 {
        zmem_files::testutil::skip(
            "SKIP bench_zswap_kernel_rows_beside_the_engine: needs root, zswap and no active swap",
        );
        return;
    }
    let before = kernel_state();
    let out = zmem(&["bench", "zswap", "--accesses", "1500", "--format", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    assert_eq!(kernel_state(), before, "everything restored");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let rows = v.as_array().expect("array");
    assert_eq!(rows.len(), 4, "{v:#}\n{stderr}");
    let (engine, kernel) = (&rows[2], &rows[3]);
    assert_eq!(engine["target"], "engine");
    assert_eq!(kernel["target"], "kernel");
    assert_eq!(engine["budget_bytes"], kernel["budget_bytes"]);
    let stored = kernel["stored_pages"].as_u64().unwrap();
    assert!(stored > 0, "{kernel:#}");
    // The same pages are stored on both sides (the counters are machine-wide:
    // a page of another process swapped meanwhile would add to the kernel's).
    let engine_stored = engine["stored_pages"].as_u64().unwrap();
    assert!(
        stored.abs_diff(engine_stored) <= engine_stored / 100,
        "stored pages {stored} vs {engine_stored}: {v:#}"
    );
    let bpp = |r: &serde_json::Value| r["bytes_per_stored_page"].as_f64().unwrap();
    let diff = (bpp(kernel) - bpp(engine)).abs() / bpp(engine);
    assert!(
        diff <= 0.02,
        "pool bytes per stored page differ by {diff}: {v:#}"
    );
    assert!(bench_cgroups().is_empty());
}

/// `zmem-bench-zswap.*` cgroups below this process's own cgroups.
fn bench_cgroups() -> Vec<String> {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut left = Vec::new();
    for path in own.lines().filter_map(|l| l.splitn(3, ':').nth(2)) {
        for base in [
            "/sys/fs/cgroup/memory",
            "/sys/fs/cgroup/unified",
            "/sys/fs/cgroup",
        ] {
            let dir = format!("{base}{path}");
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with("zmem-bench-zswap") {
                    left.push(format!("{dir}/{name}"));
                }
            }
        }
    }
    left
}

/// SIGINT while the kernel run is under way: zmem stops its worker, undoes
/// everything and says so.
#[test]
fn bench_zswap_kernel_run_interrupted_restores_everything() {
    let _one = KERNEL.lock().unwrap_or_else(|e| e.into_inner());
    let zswap = std::path::Path::new("/sys/module/zswap/parameters/enabled").exists();
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    if !zmem_files::euid_is_root() || !zswap || swaps.lines().count() > 1 {
        zmem_files::testutil::skip(
            "SKIP bench_zswap_kernel_run_interrupted_restores_everything: needs root, zswap and no active swap",
        );
        return;
    }
    let before = kernel_state();
    // Enough accesses that the kernel run lasts seconds.
    let mut child = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(["bench", "zswap", "--accesses", "400000"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run zmem");
    let started = std::time::Instant::now();
    loop {
        let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
        if swaps.contains("zmem-bench-zswap") {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "zmem finished before its kernel run was seen"
        );
        assert!(
            started.elapsed().as_secs() < 300,
            "no kernel run after 300 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert_eq!(kernel_state(), before, "everything restored: {stderr}");
    assert!(bench_cgroups().is_empty());
}
