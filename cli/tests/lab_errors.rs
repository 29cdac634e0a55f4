//! Bad input to the lab commands gives clear errors, before anything is measured.

use std::process::{Command, Output};

use zmem_files::testutil::ScratchDir;

fn zmem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .output()
        .expect("run zmem")
}

#[test]
fn bad_weights_show_the_expected_form() {
    for w in [
        "speed=1",
        "latency=x",
        "latency",
        "latency=0,ratio=0",
        "ratio=-1",
    ] {
        for cmd in [
            &["bench", "full", "--weights", w][..],
            &["recommend", "--weights", w][..],
        ] {
            let o = zmem(cmd);
            assert!(!o.status.success(), "{cmd:?}");
            let e = String::from_utf8_lossy(&o.stderr);
            assert!(
                e.contains("latency=W,ratio=W,throughput=W")
                    && e.contains("e.g. latency=0.4,ratio=0.4,throughput=0.2"),
                "{cmd:?}: {e}"
            );
        }
    }
}

#[test]
fn bad_pid_bad_ram_bad_corpus_and_json_csv_outputs() {
    let dir = ScratchDir::new("lab-errors");
    let never = dir.join("never-written");
    let o = zmem(&["capture", "--pid", "0", "-o", never.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("PID 0"));
    let o = zmem(&["recommend", "--ram", "lots"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad size"));
    let o = zmem(&["bench", "full", "/nonexistent/pages"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/pages"));
    let o = zmem(&["bench", "full", "--algo", "lz5"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("lz5"));
}

#[test]
fn recommend_json_and_files() {
    let dir = ScratchDir::new("lab-rec");
    let c = dir.join("c.pages");
    assert!(zmem(&[
        "corpus",
        "gen",
        "zero-mixed",
        "--size",
        "2M",
        "-o",
        c.to_str().unwrap()
    ])
    .status
    .success());
    let o = zmem(&[
        "recommend",
        c.to_str().unwrap(),
        "--algo",
        "lz4,lzo,zstd",
        "--ram",
        "16G",
        "--fs-read",
        "100",
        "--requests",
        "300",
        "--rounds",
        "3",
        "--out-dir",
        dir.path().to_str().unwrap(),
        "--format",
        "json",
    ]);
    let j = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for k in [
        "\"primary\"",
        "\"swappiness\"",
        "\"disksize_mib\"",
        "\"zram_generator_conf\"",
        "\"use\"",
    ] {
        assert!(j.contains(k), "{k} in {j}");
    }
    // One file: zram-generator sections and [sysctl], read back by zmem's config reader.
    let conf = std::fs::read_to_string(dir.join("zmem.conf")).unwrap();
    let parsed = zmem_conf::parse(&conf, &dir.join("zmem.conf")).expect("parses back");
    let d = &parsed.devices[0];
    assert_eq!(
        d.resident_limit
            .as_ref()
            .unwrap()
            .eval_mib(16384.0)
            .unwrap(),
        8192.0
    );
    let keys: Vec<&str> = parsed.sysctls.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(keys, ["vm.swappiness", "vm.page-cluster"]);
    assert!(j.contains("\"ranking\""), "{j}");
}
