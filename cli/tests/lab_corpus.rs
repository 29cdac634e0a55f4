//! `zmem corpus gen` / `info` and `zmem dict train` through the binary.

use std::process::{Command, Output};
use zmem_files::testutil::ScratchDir;

fn zmem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .output()
        .expect("run zmem")
}

#[test]
fn every_kind_is_generated_deterministically() {
    let dir = ScratchDir::new("lab-corpus");
    for kind in ["text", "zero-mixed", "fio-style", "zram-perf", "random"] {
        let a = dir.join(&format!("{kind}-a"));
        let b = dir.join(&format!("{kind}-b"));
        for p in [&a, &b] {
            let o = zmem(&[
                "corpus",
                "gen",
                kind,
                "--size",
                "100K",
                "--seed",
                "9",
                "-o",
                p.to_str().unwrap(),
            ]);
            assert!(
                o.status.success(),
                "{kind}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let da = std::fs::read(&a).unwrap();
        assert_eq!(da.len(), 25 * 4096, "{kind}: 100K rounds to 25 pages");
        assert_eq!(
            da,
            std::fs::read(&b).unwrap(),
            "{kind}: same seed, same pages"
        );
        let o = zmem(&["corpus", "info", a.to_str().unwrap(), "--format", "csv"]);
        let csv = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success());
        assert!(
            csv.lines().nth(1).unwrap().contains(",synthetic,25,"),
            "{csv}"
        );
    }
    let z = dir.join("zero-mixed-a");
    let o = zmem(&["corpus", "info", z.to_str().unwrap()]);
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(t.contains("same-filled") && t.contains("zero-mixed"), "{t}");
}

#[test]
fn fio_style_percentage_and_bad_input() {
    let dir = ScratchDir::new("lab-corpus");
    let p = dir.join("fio80");
    let o = zmem(&[
        "corpus",
        "gen",
        "fio-style",
        "--compress-percentage",
        "80",
        "--size",
        "8K",
        "-o",
        p.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let d = std::fs::read(&p).unwrap();
    for c in d.chunks(512) {
        assert!(
            c[103..].iter().all(|&b| b == 0),
            "80% of each 512-byte chunk is zeros"
        );
    }
    let o = zmem(&[
        "corpus",
        "gen",
        "fio-style",
        "--compress-percentage",
        "101",
        "--size",
        "8K",
        "-o",
        p.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let o = zmem(&[
        "corpus",
        "gen",
        "text",
        "--compress-percentage",
        "10",
        "--size",
        "8K",
        "-o",
        p.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("fio-style kind only"));
    let o = zmem(&[
        "corpus",
        "gen",
        "lotsofzeros",
        "--size",
        "8K",
        "-o",
        p.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("kinds: text, zero-mixed"));
    let o = zmem(&[
        "corpus",
        "gen",
        "text",
        "--size",
        "8Q",
        "-o",
        p.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad size"));
    let o = zmem(&["corpus", "info", "/nonexistent/corpus"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("corpus /nonexistent/corpus: cannot read"), "{e}");
}

#[test]
fn dict_train_writes_a_zstd_dictionary() {
    let dir = ScratchDir::new("lab-corpus");
    let c = dir.join("dict-corpus");
    assert!(zmem(&[
        "corpus",
        "gen",
        "text",
        "--size",
        "1M",
        "-o",
        c.to_str().unwrap()
    ])
    .status
    .success());
    let d = dir.join("pages.dict");
    let o = zmem(&[
        "dict",
        "train",
        c.to_str().unwrap(),
        "-o",
        d.to_str().unwrap(),
        "--size",
        "8K",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dict = std::fs::read(&d).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&d).unwrap().permissions().mode();
        assert_eq!(
            mode & 0o777,
            0o600,
            "a dictionary holds bytes of the corpus: private"
        );
    }
    assert!(dict.len() <= 8192 && dict.len() > 1024);
    assert_eq!(
        &dict[..4],
        &[0x37, 0xa4, 0x30, 0xec],
        "zstd dictionary magic"
    );
    // The bench uses it for the zstd+dict rows.
    let o = zmem(&[
        "bench",
        "full",
        c.to_str().unwrap(),
        "--algo",
        "zstd",
        "--dict",
        d.to_str().unwrap(),
        "--requests",
        "200",
        "--min-time-ms",
        "5",
        "--no-kernel",
        "--fs-read",
        "100",
        "--format",
        "csv",
    ]);
    let csv = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        csv.lines().any(|l| l.starts_with("engine,zstd+dict,0,")),
        "{csv}"
    );
    let z = dir.join("zeros");
    std::fs::write(&z, vec![0u8; 64 * 4096]).unwrap();
    let o = zmem(&[
        "dict",
        "train",
        z.to_str().unwrap(),
        "-o",
        d.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("too few pages"));
}
