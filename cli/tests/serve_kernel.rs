//! `zmem serve --kernel VERSION` driven by `zmem ctl`: the served device has
//! that kernel's attribute set (6.18: no writeback_batch_size; the default,
//! the newest modeled, has it); versions zmem does not model are refused; and
//! `zmem bench device --kernel` says which version its engine rows behave as.

mod serve_common;

use std::process::{Command, Output};
use std::time::Duration;

use serve_common::*;

fn zmem(args: &[&str]) -> Output {
    output_within(
        Command::new(env!("CARGO_BIN_EXE_zmem")).args(args),
        Duration::from_secs(120),
    )
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn served_6_18_has_no_writeback_batch_size_and_the_default_has() {
    let old = Served::start("16M", &["--kernel", "6.18"]);
    let ctl = old.ctl.to_str().unwrap().to_string();
    let all = text(&zmem(&["ctl", &ctl]).stdout);
    assert!(
        all.contains("mm_stat:") && all.contains("recomp_algorithm:"),
        "{all}"
    );
    assert!(
        !all.contains("writeback_batch_size") && !all.contains("compressed_writeback"),
        "{all}"
    );
    for (args, errno) in [
        (vec!["writeback_batch_size"], "ENOENT"),
        (vec!["writeback_batch_size", "8"], "ENOENT"),
        (vec!["compressed_writeback", "1"], "ENOENT"),
    ] {
        let mut a = vec!["ctl", ctl.as_str()];
        a.extend(args.iter().copied());
        let o = zmem(&a);
        let err = text(&o.stderr);
        assert!(
            !o.status.success() && err.contains(errno),
            "{args:?}: {err}"
        );
        assert!(err.contains("6.18"), "{args:?}: {err}");
    }
    let (ok, err) = old.stop();
    assert!(ok && err.contains("as kernel 6.18's zram"), "{err}");

    let new = Served::start("16M", &[]);
    let ctl = new.ctl.to_str().unwrap().to_string();
    let all = text(&zmem(&["ctl", &ctl]).stdout);
    assert!(all.contains("writeback_batch_size: 32"), "{all}");
    assert!(all.contains("compressed_writeback: 0"), "{all}");
    let (ok, err) = new.stop();
    assert!(ok && err.contains("as kernel 7.3's zram"), "{err}");
}

#[test]
fn served_6_1_refuses_algorithm_params() {
    let s = Served::start("16M", &["--kernel", "6.1.0-56-amd64"]);
    let ctl = s.ctl.to_str().unwrap().to_string();
    let all = text(&zmem(&["ctl", &ctl]).stdout);
    assert!(
        !all.contains("recomp_algorithm") && all.contains("bd_stat"),
        "{all}"
    );
    let o = zmem(&["ctl", &ctl, "algorithm_params", "level=3"]);
    assert!(
        !o.status.success() && text(&o.stderr).contains("ENOENT"),
        "{o:?}"
    );
    let _ = s.stop();
    // A parameter the version lacks is refused when serving starts.
    let o = zmem(&[
        "serve",
        "--size",
        "16M",
        "--kernel",
        "6.1",
        "--params",
        "level=3",
        "--listen",
        "unix:/nonexistent/x.sock",
        "--no-ctl",
    ]);
    let err = text(&o.stderr);
    assert!(
        !o.status.success() && err.contains("algorithm_params") && err.contains("6.12+"),
        "{err}"
    );
}

#[test]
fn versions_zmem_does_not_model_are_refused() {
    for (v, want) in [
        (
            "5.15",
            "zmem does not model kernel 5.15: it models 6.1 to 7.3",
        ),
        ("8.0", "zmem does not model kernel 8.0"),
        ("latest", "'latest' is not a kernel version"),
    ] {
        for args in [
            vec![
                "serve",
                "--size",
                "16M",
                "--listen",
                "unix:/nonexistent/x",
                "--kernel",
                v,
            ],
            vec!["bench", "device", "--no-kernel", "--kernel", v],
        ] {
            let o = zmem(&args);
            let err = text(&o.stderr);
            assert!(!o.status.success() && err.contains(want), "{args:?}: {err}");
        }
    }
    let o = zmem(&[
        "serve",
        "--size",
        "16M",
        "--listen",
        "unix:/nonexistent/x",
        "--mode",
        "zswap",
        "--kernel",
        "6.18",
    ]);
    assert!(
        !o.status.success() && text(&o.stderr).contains("--mode zram"),
        "{o:?}"
    );
}

#[test]
fn bench_device_says_which_version_its_engine_rows_model() {
    let o = zmem(&[
        "bench",
        "device",
        "--no-kernel",
        "--kernel",
        "6.1",
        "--algo",
        "lzo",
        "--requests",
        "20",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let rows = v.as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["kernel"] == "6.1"), "{v}");
    let o = zmem(&[
        "bench",
        "device",
        "--no-kernel",
        "--algo",
        "lzo",
        "--requests",
        "20",
    ]);
    let out = text(&o.stdout);
    assert!(
        out.contains("engine rows: as kernel 7.3's zram (the newest modeled; no kernel rows)"),
        "{out}"
    );
}
