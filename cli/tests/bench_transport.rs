//! `zmem bench transport` as a user drives it: the engine in process beside `zmem serve`
//! over NBD on a Unix socket (and, as root, a kernel zram device), every phase measured and
//! every page verified; block devices that hold data and bad targets refused.

mod serve_common;

use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use serve_common::{output_within, tmpdir, Served};

fn transport(args: &[&str]) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_zmem"));
    c.args(["bench", "transport"]).args(args);
    output_within(&mut c, Duration::from_secs(300))
}

fn rows(o: &std::process::Output) -> Vec<Value> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

const PHASES: [&str; 6] = [
    "seq_write",
    "rand_read",
    "rand_read",
    "rand_write",
    "rand_write",
    "seq_read",
];

#[test]
fn the_engine_and_a_served_device_side_by_side() {
    let s = Served::start("8M", &[]);
    let uri = s.uri();
    let o = transport(&[
        "--target",
        "engine",
        "--target",
        &uri,
        "--rounds",
        "2",
        "--requests",
        "300",
        "--queue-depth",
        "1,4",
        "--format",
        "json",
    ]);
    let rows = rows(&o);
    assert_eq!(rows.len(), 12, "{rows:?}");
    for (i, r) in rows.iter().enumerate() {
        let (target, phase) = (r["target"].as_str().unwrap(), r["phase"].as_str().unwrap());
        assert_eq!(target, if i < 6 { "engine" } else { "nbd" });
        assert_eq!(phase, PHASES[i % 6]);
        assert_eq!(r["rounds"], 2, "{r}");
        assert!(r["error"].is_null(), "{r}");
        assert!(r["iops"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["to_first"].as_f64().unwrap() > 0.0, "{r}");
    }
    assert_eq!(rows[0]["to_first"], 1.0);
    assert_eq!(rows[6]["address"].as_str(), Some(uri.as_str()));
    assert!(
        rows[6]["algo"].is_null(),
        "a served device's algorithm is its server's"
    );
    let (ok, err) = s.stop();
    assert!(ok, "{err}");
}

#[test]
fn a_kernel_target_is_measured_and_removed() {
    if let Err(e) = zmem_host::HotDevice::available() {
        zmem_files::testutil::skip(&format!(
            "SKIP a_kernel_target_is_measured_and_removed: {e}"
        ));
        return;
    }
    let o = transport(&[
        "--target",
        "kernel",
        "--target",
        "engine",
        "--algo",
        "lz4",
        "--rounds",
        "1",
        "--requests",
        "200",
        "--format",
        "json",
    ]);
    let rows = rows(&o);
    assert_eq!(rows.len(), 12);
    let address = rows[0]["address"].as_str().unwrap();
    assert!(address.starts_with("/dev/zram"), "{address}");
    assert!(rows.iter().all(|r| r["error"].is_null()), "{rows:?}");
    // The device this run hot-added, and only it: other work may hold zram devices of its own.
    let sysfs = format!("/sys/block/{}", address.trim_start_matches("/dev/"));
    assert!(
        !std::path::Path::new(&sysfs).exists(),
        "the kernel target's device {address} was not removed"
    );
}

#[test]
fn targets_that_would_lose_data_or_make_no_sense_are_refused() {
    let d = tmpdir("transport");
    let img = d.path().join("disk.img");
    std::fs::write(&img, vec![0x55u8; 8 << 20]).unwrap();
    let o = transport(&["--target", img.to_str().unwrap(), "--rounds", "1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("holds data") || err.contains("data"), "{err}");
    assert_eq!(
        std::fs::read(&img).unwrap(),
        vec![0x55u8; 8 << 20],
        "the file was written"
    );
    for (args, want) in [
        (&["--target", "tcp://x"][..], "--target"),
        (&["--target", "nbd+unix:///x"], "socket="),
        (&["--queue-depth", "0"], "--queue-depth"),
        (&["--algo", "nope"], "--algo"),
    ] {
        let o = transport(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
