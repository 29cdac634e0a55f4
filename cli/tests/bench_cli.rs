//! `zmem bench` device mode, driving the built binary.

mod bench_common;

use bench_common::{text, write_corpus, zmem};
use zmem_files::testutil::ScratchDir;

/// `zmem bench MODE CORPUS ARGS…` (MODE: device, or floor when ARGS has `--floor`), which
/// must succeed: its standard output.
fn bench_ok(corpus: &std::path::Path, args: &[&str]) -> Vec<u8> {
    let mode = if args.contains(&"--floor") {
        "floor"
    } else {
        "device"
    };
    let args: Vec<&str> = args.iter().copied().filter(|a| *a != "--floor").collect();
    let mut all = vec!["bench", mode, corpus.to_str().unwrap()];
    all.extend_from_slice(&args);
    let o = zmem(&all);
    assert!(o.status.success(), "{all:?}: {}", text(&o.stderr));
    o.stdout
}

#[test]
fn json_rows_carry_the_documented_fields_and_kernel_accounting() {
    let dir = ScratchDir::new("bench-cli");
    let c = write_corpus(&dir, "json");
    let stdout = bench_ok(
        &c,
        &[
            "--algo",
            "lz4",
            "--requests",
            "100",
            "--no-kernel",
            "--format",
            "json",
        ],
    );
    let rows: serde_json::Value = serde_json::from_slice(&stdout).expect("JSON");
    let rows = rows.as_array().expect("array of rows");
    assert_eq!(rows.len(), 4, "one engine row per page-cluster 0..3");
    for (pc, r) in rows.iter().enumerate() {
        for k in [
            "target",
            "algo",
            "page_cluster",
            "orig_data_size",
            "compr_data_size",
            "mem_used_total",
            "same_pages",
            "huge_pages",
            "ratio",
            "effective_ratio",
            "write_mibps",
            "read_mibps",
            "iops",
            "lat_mean_ns",
            "lat_p99_ns",
        ] {
            assert!(r.get(k).is_some(), "row lacks {k}: {r}");
        }
        assert_eq!(r["target"], "engine");
        assert_eq!(r["algo"], "lz4");
        assert_eq!(r["page_cluster"], pc);
        assert_eq!(r["orig_data_size"], 48 * 4096);
        assert_eq!(r["same_pages"], 16);
        assert_eq!(r["huge_pages"], 16);
        assert!(r["compr_data_size"].as_u64().unwrap() > 16 * 4096);
        assert!(r["iops"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn table_explains_missing_kernel_rows_and_unavailable_algorithms() {
    let dir = ScratchDir::new("bench-cli");
    let c = write_corpus(&dir, "table");
    let stdout = bench_ok(
        &c,
        &[
            "--algo",
            "lz4,lzo",
            "--requests",
            "50",
            "--no-kernel",
            "--threads",
            "2",
        ],
    );
    let out = text(&stdout);
    assert!(
        out.contains("target") && out.contains("lat_p99_us"),
        "{out}"
    );
    assert!(
        out.contains("kernel rows missing: kernel rows not requested"),
        "{out}"
    );
    assert!(out.contains("lz4 overhead:"), "{out}");
    // Table rows only: "engine  lz4 …", not the "engine rows: as kernel …" line under it.
    let engine_lines = out
        .lines()
        .filter(|l| {
            let mut w = l.split_whitespace();
            w.next() == Some("engine") && matches!(w.next(), Some("lz4" | "lzo"))
        })
        .count();
    assert_eq!(engine_lines, 8, "{out}");
}

/// `--floor` adds a `codec` row beside each engine row: the same objects
/// (orig, compr, same and huge pages), packed without waste, with a write
/// rate and read latencies of their own; the table says what the rows are.
#[test]
fn floor_rows_sit_beside_the_engine_rows() {
    let dir = ScratchDir::new("bench-cli");
    let c = write_corpus(&dir, "floor");
    let run = |format: &str| {
        bench_ok(
            &c,
            &[
                "--algo",
                "lzo-rle",
                "--requests",
                "100",
                "--no-kernel",
                "--floor",
                "--format",
                format,
            ],
        )
    };
    let rows: serde_json::Value = serde_json::from_slice(&run("json")).unwrap();
    let rows = rows.as_array().unwrap();
    let of = |t: &str| rows.iter().filter(|r| r["target"] == t).collect::<Vec<_>>();
    let (engine, codec) = (of("engine"), of("codec"));
    assert_eq!(
        (engine.len(), codec.len(), rows.len()),
        (4, 4, 8),
        "{rows:?}"
    );
    for (e, f) in engine.iter().zip(&codec) {
        assert_eq!(e["page_cluster"], f["page_cluster"]);
        for k in [
            "orig_data_size",
            "compr_data_size",
            "same_pages",
            "huge_pages",
        ] {
            assert_eq!(e[k], f[k], "{k}");
        }
        let used = |r: &serde_json::Value| r["mem_used_total"].as_u64().unwrap();
        assert!(used(f) <= used(e), "{f} {e}");
        assert!(f["write_mibps"].as_f64().unwrap() > 0.0);
        assert!(f["lat_mean_ns"].as_f64().unwrap() > 0.0);
    }
    // Only device mode has the floor: with another mode it is an error, not ignored.
    let o = zmem(&["bench", "codecs", "--floor", c.to_str().unwrap()]);
    assert!(
        !o.status.success() && text(&o.stderr).contains("--floor"),
        "{}",
        text(&o.stderr)
    );
    let table = text(&run("table"));
    assert_eq!(table.lines().filter(|l| l.starts_with("codec ")).count(), 4);
    assert!(
        table.contains("codec: the floor under any engine"),
        "{table}"
    );
}

#[test]
fn kernel_rows_beside_engine_rows_with_root() {
    if let Err(e) = zmem_host::HotDevice::available() {
        zmem_files::testutil::skip(&format!(
            "SKIP kernel_rows_beside_engine_rows_with_root: {e}"
        ));
        return;
    }
    let dir = ScratchDir::new("bench-cli");
    let c = write_corpus(&dir, "kernel");
    let stdout = bench_ok(
        &c,
        &["--algo", "lz4", "--requests", "50", "--format", "json"],
    );
    let rows: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    let rows = rows.as_array().unwrap();
    let kernel: Vec<_> = rows.iter().filter(|r| r["target"] == "kernel").collect();
    assert_eq!(kernel.len(), 4, "{rows:?}");
    let engine = rows.iter().find(|r| r["target"] == "engine").unwrap();
    for k in [
        "orig_data_size",
        "same_pages",
        "huge_pages",
        "mem_used_total",
    ] {
        assert_eq!(engine[k], kernel[0][k], "{k}");
    }
    // With the floor, the table puts codec/kernel beside engine/kernel.
    let stdout = bench_ok(&c, &["--algo", "lz4", "--requests", "50", "--floor"]);
    let out = text(&stdout);
    for who in ["engine", "codec floor"] {
        for pc in 0..4 {
            let line = format!("pc={pc}: {who}/kernel mean read latency");
            assert!(out.contains(&line), "{line} missing: {out}");
        }
    }
}

#[test]
fn bad_algorithm_and_bad_corpus_are_errors() {
    let o = zmem(&["bench", "--algo", "lz5", "--no-kernel"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("unknown algorithm 'lz5'"),
        "{}",
        text(&o.stderr)
    );
    let o = zmem(&["bench", "device", "/nonexistent/zmem-corpus", "--no-kernel"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("/nonexistent/zmem-corpus"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn fastpath_mode_table_and_json() {
    let dir = ScratchDir::new("bench-cli");
    let c = write_corpus(&dir, "fastpath");
    let o = zmem(&[
        "bench",
        "fastpath",
        "lz4m",
        "--primary",
        "lz4",
        c.to_str().unwrap(),
        "--passes",
        "3",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let r = &v.as_array().expect("one result per corpus")[0];
    assert_eq!(
        (r["pages"].as_u64(), r["passes"].as_u64()),
        (Some(48), Some(3))
    );
    assert_eq!(
        (r["primary"].as_str(), r["fast"].as_str()),
        (Some("lz4"), Some("lz4m"))
    );
    assert_eq!(r["verified"], true);
    for k in ["write_fast", "write_primary"] {
        for f in ["lat_mean_ns", "lat_p50_ns", "lat_p99_ns", "total_s"] {
            assert!(r[k][f].as_f64().is_some_and(|x| x >= 0.0), "{k}.{f}: {r}");
        }
    }
    // 16 text pages are compressed, 16 random ones huge, 16 zero pages same-filled.
    assert_eq!(r["candidates"], 32, "{r}");
    assert_eq!(
        r["candidates"].as_u64().unwrap(),
        r["recompressed"].as_u64().unwrap() + r["kept_fast"].as_u64().unwrap(),
        "{r}"
    );
    for m in ["before", "after", "primary_alone"] {
        assert_eq!(r[m]["orig_data_size"], 48 * 4096, "{m}");
    }
    assert!(r["after"]["compr_data_size"].as_u64() <= r["before"]["compr_data_size"].as_u64());
    let o = zmem(&["bench", "fastpath", "wkdm", c.to_str().unwrap()]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let out = text(&o.stdout);
    for want in [
        "primary lz4, fast path wkdm",
        "fast/primary mean write latency",
        "back to lz4 (after)",
        "lz4 alone",
        "read-back verified: true",
    ] {
        assert!(out.contains(want), "{want}: {out}");
    }
    let o = zmem(&["bench", "fastpath", "nope", c.to_str().unwrap()]);
    assert!(
        !o.status.success() && text(&o.stderr).contains("nope"),
        "{}",
        text(&o.stderr)
    );
}
