//! `zmem ctl` against a running `zmem serve`, bad `zmem serve` arguments, and
//! clean shutdown.

mod serve_common;

use std::process::Command;

use serve_common::*;

fn zmem(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn serve_ctl_reads_writes_and_errors() {
    let s = Served::start("64M", &["--mem-limit", "32M"]);
    let ctl = s.ctl.to_str().unwrap().to_string();
    let out = zmem(&["ctl", &ctl, "mm_stat"]);
    assert!(out.status.success(), "{out:?}");
    let mm = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<u64> = mm.split_whitespace().map(|v| v.parse().unwrap()).collect();
    assert_eq!(fields.len(), 9, "{mm}");
    assert_eq!(fields[3], 32 << 20, "mem_limit field: {mm}");
    let out = zmem(&["ctl", &ctl, "disksize"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        (64u64 << 20).to_string()
    );
    // A good write, a bad value (EINVAL), a busy one (EBUSY), an unknown attribute (ENOENT).
    assert!(zmem(&["ctl", &ctl, "mem_limit", "16M"]).status.success());
    let out = zmem(&["ctl", &ctl, "mm_stat"]);
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .nth(3)
            == Some(&(16u64 << 20).to_string())
    );
    for (args, errno) in [
        (vec!["mem_limit", "lots"], "EINVAL"),
        (vec!["comp_algorithm", "zstd"], "EBUSY"),
        (vec!["reset", "1"], "EBUSY"),
        (vec!["no_such_attr"], "ENOENT"),
    ] {
        let mut a = vec!["ctl", ctl.as_str()];
        a.extend(args.iter().copied());
        let out = zmem(&a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(errno),
            "{args:?}: {err}"
        );
    }
    // Every readable attribute.
    let out = zmem(&["ctl", &ctl]);
    let all = String::from_utf8_lossy(&out.stdout);
    for a in ["disksize:", "mm_stat:", "comp_algorithm:", "io_stat:"] {
        assert!(all.contains(a), "{all}");
    }
    // By name under a run directory.
    let out = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(["ctl", "--run-dir"])
        .arg(&s.dir)
        .args(["dev", "initstate"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1", "{out:?}");
    let out = zmem(&["ctl", "/nonexistent/x.ctl", "mm_stat"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("ENOENT"));
    let (ok, err) = s.stop();
    assert!(ok && err.contains("final mm_stat"), "{err}");
}

#[test]
fn serve_refuses_bad_arguments() {
    let d = tmpdir("args");
    let sock = format!("unix:{}", d.join("s").display());
    for (args, want) in [
        (
            vec!["--size", "64M", "--listen", "tcp:0.0.0.0:0"],
            "--allow-remote",
        ),
        (
            vec!["--size", "64M", "--listen", "nowhere"],
            "unix:PATH or tcp:HOST:PORT",
        ),
        (vec!["--size", "0", "--listen", &sock], "EINVAL"),
        (
            vec!["--size", "64M", "--algo", "nope", "--listen", &sock],
            "unknown algorithm",
        ),
        (
            vec!["--size", "64M", "--allocator", "slab", "--listen", &sock],
            "unknown allocator",
        ),
        (
            vec!["--size", "64M", "--mode", "zswap", "--listen", &sock],
            "--backing-dev",
        ),
        (
            vec!["--size", "64M", "--mode", "nbd", "--listen", &sock],
            "expected zram or zswap",
        ),
    ] {
        let mut a = vec!["serve", "--no-ctl"];
        a.extend(args.iter().copied());
        let out = zmem(&a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(want),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn serve_zswap_mode_round_trip() {
    let d = tmpdir("zswap");
    let back = d.join("backing");
    let s = Served::start(
        "16M",
        &[
            "--mode",
            "zswap",
            "--backing-dev",
            back.to_str().unwrap(),
            "--mem-limit",
            "1M",
        ],
    );
    let mut c = zmem_nbd::Client::connect(&s.sock, "zmem").unwrap();
    assert_eq!(c.size, 16 << 20);
    // More than the 1 MiB pool holds: the rest goes to the backing file.
    let data = mixed_bytes(4 << 20, 9);
    for (i, chunk) in data.chunks(256 << 10).enumerate() {
        assert_eq!(c.write(i as u64 * (256 << 10), chunk).unwrap(), 0);
    }
    for (i, chunk) in data.chunks(256 << 10).enumerate() {
        assert!(
            c.read(i as u64 * (256 << 10), chunk.len() as u32)
                .unwrap()
                .unwrap()
                == chunk,
            "chunk {i}"
        );
    }
    c.disconnect().unwrap();
    let out = zmem(&["ctl", s.ctl.to_str().unwrap(), "stored_pages"]);
    let stored: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(stored > 0, "{out:?}");
    let (ok, err) = s.stop();
    assert!(ok && err.contains("final pool_total_size"), "{err}");
}

#[test]
fn serve_ctl_kernel_device_same_syntax() {
    let name = "serve_ctl_kernel_device_same_syntax";
    let dev = match zmem_host::HotDevice::with_config("lz4", 16 << 20) {
        Ok(d) => d,
        Err(e) => {
            zmem_files::testutil::skip(&format!("SKIP {name}: {}", e.0));
            return;
        }
    };
    let z = format!("zram{}", dev.id());
    let out = zmem(&["ctl", &z, "disksize"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        (16u64 << 20).to_string(),
        "{out:?}"
    );
    let sys = dev.sys_path().to_str().unwrap().to_string();
    let out = zmem(&["ctl", &sys, "mm_stat"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .count(),
        9,
        "{out:?}"
    );
    // The kernel's errors for the same mistakes as a served device.
    let out = zmem(&["ctl", &z, "comp_algorithm", "lzo"]);
    assert!(
        !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("EBUSY"),
        "{out:?}"
    );
    let out = zmem(&["ctl", &z]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("mm_stat:"),
        "{out:?}"
    );
    drop(dev);
}

#[test]
fn serve_fast_path_and_maintenance_options() {
    let s = Served::start(
        "16M",
        &[
            "--fast",
            "lz4m",
            "--fast-when",
            "pressure:50%,100000/s",
            "--mem-limit",
            "8M",
            "--maint=interval=1h,writeback-min-per-round=0",
        ],
    );
    let ctl = s.ctl.to_str().unwrap().to_string();
    let read = |a: &str| String::from_utf8_lossy(&zmem(&["ctl", &ctl, a]).stdout).into_owned();
    assert!(read("fast_algorithm").contains("[lz4m]"));
    assert!(
        read("fast_path").starts_with("mode=pressure limit_pct=50 rate=100000 "),
        "{}",
        read("fast_path")
    );
    assert_eq!(read("maint").trim(), "no round yet");
    // A round on demand: nothing written yet, and this device has no writeback.
    let out = zmem(&["ctl", &ctl, "maint", "run"]);
    assert!(out.status.success(), "{out:?}");
    let rep = read("maint");
    assert!(rep.starts_with("round 1:\nserve:"), "{rep}");
    assert!(rep.contains("empty, nothing to do"), "{rep}");
    let out = zmem(&["ctl", &ctl, "maint", "now"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("EINVAL"));
    assert!(zmem(&["ctl", &ctl, "fast_path", "mode=always"])
        .status
        .success());
    assert!(read("fast_path").contains("active=1"));
    let (ok, err) = s.stop();
    assert!(
        ok && err.contains("fast path lz4m") && err.contains("maintenance every 3600"),
        "{err}"
    );
}

#[test]
fn serve_rejects_bad_fast_and_maint_options() {
    for (args, want) in [
        (vec!["--fast", "nope"], "--fast"),
        (
            vec!["--fast", "lz4m", "--fast-when", "sometimes"],
            "--fast-when",
        ),
        (
            vec!["--fast", "lz4m", "--fast-when", "pressure:120%"],
            "--fast-when",
        ),
        (vec!["--fast-when", "always"], "--fast"),
        (vec!["--maint=interval=0"], "--maint"),
        (vec!["--maint=bogus=1"], "--maint"),
        (vec!["--maint=writeback-max-per-round=12Q"], "--maint"),
        (vec!["--mem-limit", "12Q"], "unknown unit \"Q\""),
        (vec!["--mem-limit", "0.3K"], "whole number of bytes"),
    ] {
        let mut a = vec![
            "serve",
            "--size",
            "1M",
            "--listen",
            "unix:/nonexistent/zmem-test.sock",
            "--no-ctl",
        ];
        a.extend(args.iter().copied());
        let out = zmem(&a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(want),
            "{args:?}: {err}"
        );
    }
}

/// Sizes go through the one parser: what every other command refuses, serve
/// refuses too, and 1.5G is 1.5 GiB (not memparse's "1", rounded up to a page).
#[test]
fn serve_sizes_are_strict_and_fractions_mean_what_they_say() {
    for bad in ["12Q", "4X", "1..5G", ""] {
        let out = zmem(&[
            "serve",
            "--size",
            bad,
            "--listen",
            "unix:/nonexistent/zmem-test.sock",
            "--no-ctl",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("--size") && err.contains("a size is"),
            "{bad}: {err}"
        );
    }
    let s = Served::start("1.5G", &[]);
    let ctl = s.ctl.to_str().unwrap().to_string();
    let out = zmem(&["ctl", &ctl, "disksize"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        (3u64 << 29).to_string(),
        "{out:?}"
    );
    // ctl speaks the kernel's memparse on purpose, and says what the kernel made of it.
    let out = zmem(&["ctl", &ctl, "mem_limit", "12Q"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.contains("reads mem_limit \"12Q\" as 12 bytes"),
        "{err}"
    );
    let (ok, _) = s.stop();
    assert!(ok);
}
