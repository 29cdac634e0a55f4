//! The lab's verdict (`zmem bench` with no corpus, `zmem bench verdict
//! CORPUS`, `zmem recommend`): ranked with intervals, ties called, and one
//! config file that `zmem apply` takes as is, sysctls included.

use std::path::Path;
use std::process::{Command, Output};

use zmem_files::testutil::ScratchDir;

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
        "verdict",
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
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../ops/admin/tests/fixtures/01-basic/root");
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
        "verdict",
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

fn json_of(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("JSON")
}

/// Too few rounds to decide: the verdict says so, names the candidates it
/// could not separate, and picks by the stable tie-break (the higher ratio).
#[test]
fn verdict_without_enough_rounds_says_it_is_not_settled() {
    let d = dir("unsettled");
    let c = corpus(d.path());
    let o = zmem(&[
        "bench",
        "verdict",
        &c,
        "--rounds",
        "2",
        "--requests",
        "300",
        "--no-kernel",
        "--algo",
        "lz4,lzo",
        "--fs-read",
        "100",
        "--format",
        "json",
        "--out-dir",
        d.path().to_str().unwrap(),
    ]);
    let r = &json_of(&o)["ranking"];
    let dec = &r["decision"];
    assert_eq!(dec["settled"], false, "{dec}");
    let leader = dec["leader"].as_str().unwrap();
    let other = if leader == "lz4" { "lzo" } else { "lz4" };
    assert_eq!(dec["undecided"], serde_json::json!([other]), "{dec}");
    let ratio = |a: &str| {
        r["ranked"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["algo"] == a)
            .unwrap()["effective_ratio"]
            .as_f64()
            .unwrap()
    };
    let better = if ratio("lzo") > ratio("lz4") {
        "lzo"
    } else {
        "lz4"
    };
    assert_eq!(r["winner"], better, "the tie rule picks the better ratio");
    let o = zmem(&[
        "bench",
        "verdict",
        &c,
        "--rounds",
        "2",
        "--requests",
        "300",
        "--no-kernel",
        "--algo",
        "lz4,lzo",
        "--fs-read",
        "100",
        "--out-dir",
        d.path().to_str().unwrap(),
    ]);
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(t.contains("NOT settled") && t.contains("not proven"), "{t}");
}

/// A clear difference settles at the first look, and `zmem bench full`,
/// `zmem recommend` and the main job's verdict on the same pages pick the
/// same algorithm (one decision, one code path). Scored on the effective
/// ratio alone, which is exact, the difference is the same in every round:
/// the leader is ahead at the first look, whatever the machine does.
#[test]
fn a_clear_difference_settles_and_every_command_picks_the_same() {
    let d = dir("settled");
    let c = corpus(d.path());
    let common = [
        "--requests",
        "300",
        "--no-kernel",
        "--algo",
        "lz4,lzo",
        "--weights",
        "ratio=1",
        "--fs-read",
        "100",
        "--ram",
        "4G",
        "--format",
        "json",
        "--budget",
        "60s",
    ];
    let run = |head: &[&str], out: &str| {
        let out = d.join(out);
        let mut a: Vec<&str> = head.to_vec();
        a.push(&c);
        a.extend(common);
        a.extend(["--out-dir", out.to_str().unwrap()]);
        json_of(&zmem(&a))
    };
    let v = run(&["bench", "verdict"], "v");
    let r = &v["ranking"];
    assert_eq!(r["decision"]["settled"], true, "{}", r["decision"]);
    assert_eq!(r["rounds"], 6, "settled at the first look");
    let winner = r["winner"].as_str().unwrap().to_string();
    let other = &r["ranked"][1];
    assert_eq!(other["call"], "ahead", "{other}");
    assert!(
        r["ranked"][0]["effective_ratio"].as_f64() > other["effective_ratio"].as_f64(),
        "{r}"
    );
    let rec = run(&["recommend"], "r");
    assert_eq!(rec["recommendation"]["primary"], winner.as_str());
    let mut full = vec!["bench", "full", &c];
    full.extend(common);
    full.extend(["--min-time-ms", "20"]);
    let f = json_of(&zmem(&full));
    assert_eq!(f["ranking"]["winner"], winner.as_str());
    assert_eq!(f["recommendation"]["primary"], winner.as_str());
}
