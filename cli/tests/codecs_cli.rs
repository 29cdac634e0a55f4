//! `zmem codecs` and `zmem bench codecs`, driving the built binary.

use std::path::PathBuf;
use std::process::{Command, Output};

use zmem_files::testutil::ScratchDir;

fn zmem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .output()
        .expect("run zmem")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const ALL: [&str; 9] = [
    "lzo-rle", "lzo", "lz4", "lz4hc", "zstd", "deflate", "842", "lz4m", "wkdm",
];

/// A small corpus file in `dir`: text, pointer-like and zero pages.
fn write_corpus(dir: &ScratchDir, name: &str) -> PathBuf {
    let mut data = Vec::new();
    for i in 0..24u64 {
        let mut p = vec![0u8; 4096];
        match i % 3 {
            0 => {
                let line =
                    format!("page {i}: the quick zram slot stores a handle of a compressed page\n");
                for (j, b) in line.bytes().cycle().take(4096).enumerate() {
                    p[j] = b;
                }
            }
            1 => {
                for (j, c) in p.chunks_exact_mut(8).enumerate() {
                    let v = if j % 3 == 0 {
                        0x7f00_1234_0000u64 + (j as u64 * 24)
                    } else {
                        j as u64 % 7
                    };
                    c.copy_from_slice(&v.to_le_bytes());
                }
            }
            _ => {}
        }
        data.extend_from_slice(&p);
    }
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    path
}

#[test]
fn codecs_lists_every_algorithm_in_registry_order() {
    let o = zmem(&["codecs"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let names: Vec<&str> = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .take(9)
        .collect();
    assert_eq!(names, ALL);
    assert!(
        out.contains("level=9 (1..=12)"),
        "lz4hc default level: {out}"
    );
    assert!(out.contains("deflate.winbits=-11"), "{out}");

    let o = zmem(&["codecs", "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("codecs json");
    let rows = v.as_array().unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ALL
    );
    let zstd = rows.iter().find(|r| r["name"] == "zstd").unwrap();
    assert_eq!(zstd["origin"], "kernel");
    let level = zstd["params"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["key"] == "level")
        .unwrap();
    assert_eq!(level["default"], "3");
    let wkdm = rows.iter().find(|r| r["name"] == "wkdm").unwrap();
    assert_eq!(wkdm["origin"], "zmem");

    let o = zmem(&["codecs", "--format", "csv"]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert_eq!(out.lines().next(), Some("algorithm,origin,params,format"));
    assert_eq!(out.lines().count(), 10);
}

#[test]
fn bench_codecs_json_has_one_row_per_algorithm_with_the_fields() {
    let dir = ScratchDir::new("codecs-cli");
    let corpus = write_corpus(&dir, "good.bin");
    let o = zmem(&[
        "bench",
        "codecs",
        "--format",
        "json",
        "--min-time-ms",
        "0",
        corpus.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("bench json");
    let rows = v.as_array().unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| r["algo"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ALL
    );
    for r in rows {
        let name = r["algo"].as_str().unwrap();
        assert_eq!(r["corpus"], corpus.display().to_string());
        assert_eq!(r["pages"], 24);
        match r["status"].as_str().unwrap() {
            "ok" => {
                assert_eq!(r["same_pages"], 8, "{name}");
                assert_eq!(r["verified_pages"], 16, "{name}");
                for f in [
                    "ratio",
                    "compress_mbps",
                    "decompress_mbps",
                    "reclaim_mbps",
                    "compress_lat_mean_ns",
                    "compress_lat_p99_ns",
                    "decompress_lat_mean_ns",
                    "decompress_lat_p99_ns",
                ] {
                    let x = r[f]
                        .as_f64()
                        .unwrap_or_else(|| panic!("{name}: {f} missing: {r}"));
                    assert!(x.is_finite() && x > 0.0, "{name}: {f} = {x}");
                }
                let ratio = r["ratio"].as_f64().unwrap();
                let want =
                    r["orig_data_size"].as_f64().unwrap() / r["compr_data_size"].as_f64().unwrap();
                assert!(
                    (ratio - want).abs() < 1e-9 && ratio > 1.5,
                    "{name}: ratio {ratio}"
                );
                let reclaim = r["reclaim_mbps"].as_f64().unwrap();
                let want = r["compress_mbps"].as_f64().unwrap() * (1.0 - 1.0 / ratio);
                assert!(
                    (reclaim - want).abs() <= 1e-6 * want,
                    "{name}: reclaim {reclaim} vs {want}"
                );
            }
            s => panic!("{name}: status {s}: {r}"),
        }
    }
    for name in ["lz4", "lz4hc", "zstd", "deflate"] {
        let r = rows.iter().find(|r| r["algo"] == name).unwrap();
        assert_eq!(r["status"], "ok", "{name}");
    }
}

#[test]
fn bench_codecs_table_and_csv() {
    let dir = ScratchDir::new("codecs-cli");
    let corpus = write_corpus(&dir, "table.bin");
    let c = corpus.to_str().unwrap();
    let o = zmem(&[
        "bench",
        "codecs",
        "--algo",
        "lz4,zstd",
        "--min-time-ms",
        "0",
        c,
        c,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with("algo") && first.contains("reclaim_mb_s"),
        "{out}"
    );
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("lz4 ") || l.starts_with("zstd "))
            .count(),
        4,
        "{out}"
    );

    let o = zmem(&[
        "bench",
        "codecs",
        "--format",
        "csv",
        "--algo",
        "deflate",
        "--level",
        "9",
        "--min-time-ms",
        "0",
        c,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    // CSV columns are the JSON fields (docs/fields.md), same units.
    let head: Vec<&str> = lines[0].split(',').collect();
    for col in [
        "algo",
        "corpus",
        "status",
        "ratio",
        "compress_mbps",
        "compress_lat_mean_ns",
    ] {
        assert!(head.contains(&col), "{col}: {out}");
    }
    let cells: Vec<&str> = lines[1].split(',').collect();
    let at = |name: &str| cells[head.iter().position(|h| *h == name).unwrap()];
    assert_eq!((at("algo"), at("status")), ("deflate", "ok"), "{out}");
    assert_eq!(at("corpus"), c, "{out}");
}

#[test]
fn bench_codecs_bad_corpus_names_the_file() {
    let dir = ScratchDir::new("codecs-cli");
    let odd = dir.join("odd.bin");
    std::fs::write(&odd, vec![7u8; 4096 + 100]).unwrap();
    let o = zmem(&["bench", "codecs", odd.to_str().unwrap()]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains(&odd.display().to_string()) && e.contains("multiple of 4096"),
        "{e}"
    );

    let missing = dir.join("missing.bin");
    let o = zmem(&["bench", "codecs", missing.to_str().unwrap()]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains(&missing.display().to_string()) && e.contains("cannot read"),
        "{e}"
    );
}

#[test]
fn bench_codecs_unknown_algorithm_or_param_lists_valid_ones() {
    let o = zmem(&["bench", "codecs", "--algo", "lz4,snappy"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("snappy"), "{e}");
    for n in ALL {
        assert!(e.contains(n), "{e} lacks {n}");
    }
    // A bad level makes the row unavailable with the valid range, not a crash.
    let dir = ScratchDir::new("codecs-cli");
    let corpus = write_corpus(&dir, "level.bin");
    let o = zmem(&[
        "bench",
        "codecs",
        "--format",
        "json",
        "--algo",
        "lz4hc",
        "--level",
        "13",
        "--min-time-ms",
        "0",
        corpus.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["status"], "unavailable");
    assert!(v[0]["reason"].as_str().unwrap().contains("1..=12"), "{v}");
}

#[test]
fn bench_codecs_default_corpus_when_none_given() {
    let o = zmem(&[
        "bench",
        "codecs",
        "--format",
        "json",
        "--algo",
        "lz4",
        "--min-time-ms",
        "0",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["corpus"], "default");
    assert_eq!(v[0]["pages"], 1024);
    assert_eq!(v[0]["same_pages"], 160);
    assert_eq!(v[0]["status"], "ok");
}
