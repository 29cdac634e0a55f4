//! Writeback from the command line: `zmem bench writeback` on a generated
//! corpus, and `zmem serve --backing-dev` driven by `zmem ctl`.

mod serve_common;

use std::process::{Command, Output};

use serve_common::*;

fn zmem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .output()
        .expect("run zmem")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn bench_writeback_json_table_and_backing_file() {
    let d = tmpdir("wbbench");
    let corpus = d.join("text.bin");
    let o = zmem(&[
        "corpus",
        "gen",
        "text",
        "--size",
        "1M",
        "-o",
        corpus.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "corpus gen: {}", text(&o.stderr));
    let o = zmem(&[
        "bench",
        "writeback",
        corpus.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let r = &v.as_array().expect("array")[0];
    assert_eq!(r["pages"], 256);
    assert_eq!(r["verified"], true);
    assert_eq!(r["wb_type"], "idle");
    let written = r["written_back_pages"].as_u64().unwrap();
    assert!(written > 0, "{r}");
    assert_eq!(r["bd_writes"].as_u64().unwrap(), written);
    assert_eq!(r["bd_count"].as_u64().unwrap(), written);
    assert_eq!(r["before"]["orig_data_size"], r["after"]["orig_data_size"]);
    assert!(
        r["after"]["mem_used_total"].as_u64().unwrap()
            < r["before"]["mem_used_total"].as_u64().unwrap()
    );
    let tmp_backing = r["backing_dev"].as_str().unwrap().to_string();
    assert!(
        !std::path::Path::new(&tmp_backing).exists(),
        "temporary backing file removed: {tmp_backing}"
    );

    // A named backing file that does not exist: created, then removed; compressed huge_idle.
    let back = d.join("backing.img");
    let o = zmem(&[
        "bench",
        "writeback",
        corpus.to_str().unwrap(),
        "--wb-type",
        "all",
        "--wb-compressed",
        "--backing-dev",
        back.to_str().unwrap(),
    ]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    for want in [
        "writeback type=all, compressed_writeback",
        "before writeback",
        "after writeback",
        "bd_stat",
        "read-back verified: true",
    ] {
        assert!(out.contains(want), "{want:?} in {out}");
    }
    assert!(!exists(&back), "created backing file removed");
    // Bad input is refused with a message.
    let o = zmem(&[
        "bench",
        "writeback",
        corpus.to_str().unwrap(),
        "--wb-type",
        "warm",
    ]);
    assert!(
        !o.status.success() && text(&o.stderr).contains("--wb-type"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn serve_backing_dev_and_ctl_writeback() {
    let d = tmpdir("wbserve");
    let back = d.join("backing.img");
    std::fs::File::create(&back)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let s = Served::start("16M", &["--backing-dev", back.to_str().unwrap()]);
    let ctl = s.ctl.to_str().unwrap().to_string();
    let canon = std::fs::canonicalize(&back).unwrap();
    let o = zmem(&["ctl", &ctl, "backing_dev"]);
    assert_eq!(text(&o.stdout).trim(), canon.display().to_string(), "{o:?}");
    // Text, zeros and random (huge) pages over NBD.
    let mut c = zmem_nbd::Client::connect(&s.sock, "zmem").unwrap();
    let data = mixed_bytes(3 << 18, 4);
    assert_eq!(c.write(0, &data).unwrap(), 0);
    let o = zmem(&["ctl", &ctl, "mm_stat"]);
    let huge_before: u64 = text(&o.stdout)
        .split_whitespace()
        .nth(7)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(huge_before, 64, "{}", text(&o.stdout));
    let o = zmem(&["ctl", &ctl, "writeback", "huge"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = zmem(&["ctl", &ctl, "bd_stat"]);
    assert_eq!(text(&o.stdout), "      64        0       64\n");
    let o = zmem(&["ctl", &ctl, "mm_stat"]);
    assert_eq!(
        text(&o.stdout).split_whitespace().nth(7),
        Some("0"),
        "huge pages left RAM"
    );
    // Data reads back identical, the written-back part from the file.
    assert!(c.read(0, data.len() as u32).unwrap().unwrap() == data);
    let o = zmem(&["ctl", &ctl, "bd_stat"]);
    assert_eq!(text(&o.stdout), "      64       64       64\n");
    // Kernel syntax and errnos through the socket.
    for (args, errno) in [
        (vec!["writeback", "page_index=99999"], "ERANGE"),
        (vec!["writeback", "type=warm"], "EINVAL"),
        (vec!["backing_dev", "/tmp/x"], "EBUSY"),
        (vec!["compressed_writeback", "1"], "EBUSY"),
        (vec!["writeback_batch_size", "0"], "EINVAL"),
        (vec!["writeback_batch_size", "-1"], "EINVAL"),
        (vec!["writeback_batch_size", "lots"], "EINVAL"),
        (vec!["writeback_compressed", "1"], "ENOENT"),
        (vec!["writeback_limit", "lots"], "EINVAL"),
    ] {
        let mut a = vec!["ctl", ctl.as_str()];
        a.extend(args.iter().copied());
        let o = zmem(&a);
        assert!(
            !o.status.success() && text(&o.stderr).contains(errno),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
    assert!(zmem(&["ctl", &ctl, "writeback_limit_enable", "1"])
        .status
        .success());
    let o = zmem(&["ctl", &ctl, "writeback", "page_indexes=0-10"]);
    assert!(
        text(&o.stderr).contains("EIO"),
        "limit 0: {}",
        text(&o.stderr)
    );
    // `zmem ctl TARGET` lists the writeback attributes.
    let all = text(&zmem(&["ctl", &ctl]).stdout);
    for a in [
        "backing_dev:",
        "bd_stat:",
        "writeback_limit:",
        "writeback_limit_enable:",
        "compressed_writeback: 0",
        "writeback_batch_size: 32",
    ] {
        assert!(all.contains(a), "{a} in {all}");
    }
    assert!(!all.contains("writeback_compressed"), "{all}");
    // 7.0's and 6.19's attributes are read and written by name.
    assert!(zmem(&["ctl", &ctl, "writeback_batch_size", "8"])
        .status
        .success());
    let o = zmem(&["ctl", &ctl, "writeback_batch_size"]);
    assert_eq!(text(&o.stdout), "8\n");
    let o = zmem(&["ctl", &ctl, "writeback_compressed"]);
    assert!(
        text(&o.stderr).contains("compressed_writeback"),
        "the released name: {}",
        text(&o.stderr)
    );
    c.disconnect().unwrap();
    let (ok, err) = s.stop();
    assert!(ok, "{err}");

    // A missing backing file fails clearly, naming it.
    let o = zmem(&[
        "serve",
        "--no-ctl",
        "--size",
        "16M",
        "--backing-dev",
        "/nonexistent/zmem-backing.img",
        "--listen",
        &format!("unix:{}", d.join("s").display()),
    ]);
    let err = text(&o.stderr);
    assert!(
        !o.status.success()
            && err.contains("ENOENT")
            && err.contains("/nonexistent/zmem-backing.img"),
        "{err}"
    );
}
