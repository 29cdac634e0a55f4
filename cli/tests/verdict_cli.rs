//! The lab's verdict (`zmem bench` with no corpus, `zmem bench --verdict
//! CORPUS`, `zmem recommend`): ranked with intervals, ties called, and one
//! config file that `zmem apply` takes as is, sysctls included.

use std::path::Path;
use std::process::{Command, Output};

use zmem_host::testutil::ScratchDir;

fn zmem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .output()
        .expect("run zmem")
}

fn dir(tag: &str) -> ScratchDir {
    ScratchDir::new(&format!("verdict-{tag}"))
}

fn corpus(d: &Path) -> String {
    let c = d.join("c.pages");
    let o = zmem(&[
        "corpus",
        "gen",
        "text",
        "--size",
        "2M",
        "-o",
        c.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    c.to_str().unwrap().to_string()
}

#[test]
fn verdict_ranks_with_intervals_and_writes_one_config_apply_takes() {
    let d = dir("bench");
    let c = corpus(d.path());
    let out = d.join("out");
    let o = zmem(&[
        "bench",
        "--verdict",
        &c,
        "--rounds",
        "3",
        "--requests",
        "500",
        "--no-kernel",
        "--algo",
        "lz4,lzo,wkdm",
        "--fs-read",
        "100",
        "--format",
        "json",
        "--out-dir",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &v["ranking"];
    assert_eq!(r["rounds"], 3);
    let winner = r["winner"].as_str().unwrap();
    assert!(
        ["lz4", "lzo"].contains(&winner),
        "wkdm is engine-only: {winner}"
    );
    for x in r["ranked"].as_array().unwrap() {
        let s = &x["score"];
        assert!(s["ci_low"].as_f64() <= s["median"].as_f64());
        assert!(s["median"].as_f64() <= s["ci_high"].as_f64());
    }
    let had = r["if_kernel_had"].as_array().unwrap();
    assert!(had.iter().any(|k| k["algo"] == "wkdm"), "{had:?}");
    let conf = std::fs::read_to_string(out.join("zmem.conf")).unwrap();
    assert!(
        conf.contains("[zram0]") && conf.contains("[sysctl]"),
        "{conf}"
    );
    assert!(
        conf.contains(&format!("compression-algorithm = {winner}")),
        "{conf}"
    );
    // `zmem apply FILE --dry-run` takes it unchanged and sets the sysctls.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ops/tests/fixtures/01-basic/root");
    let o = zmem(&[
        "apply",
        out.join("zmem.conf").to_str().unwrap(),
        "--dry-run",
        "--root",
        root.to_str().unwrap(),
    ]);
    let plan = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(plan.contains("write /proc/sys/vm/swappiness"), "{plan}");
    assert!(plan.contains(&format!("comp_algorithm {winner}")), "{plan}");
    // `zmem persist FILE` takes it unchanged: zram-generator.conf and one sysctl.d file.
    let proot = d.join("persist-root");
    // With the programs that read the files at boot (exit 3 without them: persist_cli.rs).
    for p in [
        "usr/lib/systemd/system-generators/zram-generator",
        "usr/lib/systemd/systemd-sysctl",
        "usr/bin/systemd-tmpfiles",
    ] {
        std::fs::create_dir_all(proot.join(p).parent().unwrap()).unwrap();
        std::fs::write(proot.join(p), "").unwrap();
    }
    let o = zmem(&[
        "persist",
        out.join("zmem.conf").to_str().unwrap(),
        "--root",
        proot.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sysctl = std::fs::read_to_string(proot.join("etc/sysctl.d/90-zmem.conf")).unwrap();
    assert!(
        sysctl.contains("vm.swappiness = ") && sysctl.contains("vm.page-cluster = "),
        "{sysctl}"
    );
    assert!(proot.join("etc/systemd/zram-generator.conf").exists());
}

#[test]
fn verdict_table_names_the_configuration_and_the_apply_command() {
    let d = dir("table");
    let c = corpus(d.path());
    let o = zmem(&[
        "bench",
        "--verdict",
        &c,
        "--rounds",
        "2",
        "--requests",
        "300",
        "--no-kernel",
        "--algo",
        "lz4,lzo-rle",
        "--fs-read",
        "100",
        "--out-dir",
        d.path().to_str().unwrap(),
    ]);
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let tail: Vec<&str> = t.lines().rev().take(4).collect();
    assert!(
        tail.iter()
            .any(|l| l.starts_with("apply:") && l.contains("zmem apply")),
        "{t}"
    );
    for key in [
        "use",
        "algorithm",
        "recompression",
        "disksize",
        "mem_limit",
        "vm.swappiness",
        "vm.page-cluster",
    ] {
        assert!(
            t.lines().any(|l| l.trim_start().starts_with(key)),
            "{key} missing:\n{t}"
        );
    }
}
