//! One vocabulary: every field of every bench mode's JSON (and every CSV
//! column) is in docs/fields.md, and CSV columns carry the JSON names.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use zmem_files::testutil::ScratchDir;

fn zmem(args: &[&str]) -> Vec<u8> {
    let o = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .output()
        .expect("run zmem");
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

fn glossary() -> BTreeSet<String> {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/fields.md"))
            .unwrap();
    let mut names = BTreeSet::new();
    for l in text.lines().filter(|l| l.starts_with("| `")) {
        let first = l.split('|').nth(1).unwrap_or("");
        for part in first.split('`').skip(1).step_by(2) {
            names.insert(part.to_string());
        }
    }
    names
}

fn keys(v: &serde_json::Value, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                out.insert(k.clone());
                keys(x, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
        _ => {}
    }
}

#[test]
fn every_json_field_and_csv_column_is_in_the_glossary() {
    let d = ScratchDir::new("fields");
    let c = d.join("c.pages");
    let cs = c.to_str().unwrap();
    zmem(&["corpus", "gen", "text", "--size", "512K", "-o", cs]);
    let out = d.join("v");
    let modes: Vec<Vec<&str>> = vec![
        vec!["codecs", "--algo", "lz4", "--min-time-ms", "5"],
        vec![
            "device",
            "--algo",
            "lz4",
            "--no-kernel",
            "--requests",
            "100",
        ],
        vec![
            "full",
            "--algo",
            "lz4",
            "--no-kernel",
            "--requests",
            "100",
            "--fs-read",
            "100",
            "--min-time-ms",
            "5",
        ],
        vec!["zswap", "--no-kernel", "--accesses", "300", "--algo", "lz4"],
        vec!["recomp", "zstd"],
        vec!["fastpath", "lz4m", "--passes", "1"],
        vec!["writeback"],
        vec![
            "transport",
            "--target",
            "engine",
            "--rounds",
            "1",
            "--requests",
            "100",
        ],
        vec![
            "verdict",
            "--algo",
            "lz4,wkdm",
            "--no-kernel",
            "--rounds",
            "2",
            "--requests",
            "100",
            "--fs-read",
            "100",
            "--out-dir",
            out.to_str().unwrap(),
        ],
    ];
    let g = glossary();
    let mut missing = BTreeSet::new();
    for m in &modes {
        let mut args = vec!["bench"];
        args.extend(m.iter().copied());
        args.extend([cs, "--format", "json"]);
        let v: serde_json::Value = serde_json::from_slice(&zmem(&args)).unwrap();
        let mut k = BTreeSet::new();
        keys(&v, &mut k);
        for x in k.difference(&g) {
            missing.insert(format!("{x} ({})", m[0]));
        }
        if ["recomp", "fastpath", "writeback", "verdict"].contains(&m[0]) {
            continue; // one result per corpus, no CSV table
        }
        args.pop();
        args.push("csv");
        let csv = String::from_utf8(zmem(&args)).unwrap();
        let header = csv.lines().next().unwrap_or("");
        for col in header.split(',') {
            if !g.contains(col) {
                missing.insert(format!("CSV column {col} ({})", m[0]));
            }
        }
    }
    assert!(missing.is_empty(), "not in docs/fields.md: {missing:?}");
}
