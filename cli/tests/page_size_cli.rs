//! `zmem bench device --page-size`: the engine rows as a kernel with 16 or 64
//! KiB pages (docs/page-size.md). The corpus of 4 KiB pages is cut into the
//! larger pages; 4 KiB-page formats are refused per row; other sizes are
//! refused by the flag.

use std::process::Command;

fn corpus(dir: &std::path::Path) -> std::path::PathBuf {
    // 40 pages of 4 KiB: text-like runs, a zero page, text again; 40 is not
    // a whole number of 16 or 64 KiB pages (the last is zero-padded).
    let words = ["slot ", "zspage ", "handle ", "page\n", "size class "];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut data = Vec::new();
    while data.len() < 36 * 4096 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        data.extend_from_slice(words[(x % 5) as usize].as_bytes());
    }
    data.truncate(36 * 4096);
    data.extend(std::iter::repeat_n(0u8, 4 * 4096));
    let p = dir.join("pages.bin");
    std::fs::write(&p, data).unwrap();
    p
}

fn bench(corpus: &std::path::Path, page: &str) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(["bench", "device"])
        .arg(corpus)
        .args(["--page-size", page, "--kernel", "6.12", "--no-kernel"])
        .args([
            "--algo",
            "lz4,zstd,lz4m",
            "--requests",
            "20",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn bench_device_models_16k_and_64k_pages() {
    let dir = std::env::temp_dir().join(format!("zmem-page-size-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = corpus(&dir);
    let mut used = Vec::new();
    for (page, bytes, padded) in [
        ("4K", 4096u64, 40 * 4096u64),
        ("16K", 16384, 40 * 4096),
        ("64K", 65536, 65536 * 3),
    ] {
        let rows = bench(&c, page);
        let rows = rows.as_array().unwrap();
        let lz4 = rows
            .iter()
            .find(|r| r["algo"] == "lz4" && r["page_cluster"] == 0)
            .unwrap();
        assert_eq!(lz4["kernel"], "6.12", "{page}");
        assert_eq!(lz4["page_size"], bytes, "{page}");
        assert_eq!(lz4["orig_data_size"], padded, "{page}");
        let mem = lz4["mem_used_total"].as_u64().unwrap();
        assert_eq!(mem % bytes, 0, "{page}: whole pages");
        used.push(mem);
        let lz4m = rows.iter().find(|r| r["algo"] == "lz4m").unwrap();
        if bytes == 4096 {
            assert!(lz4m["reason"].is_null(), "{lz4m}");
        } else {
            let why = lz4m["reason"].as_str().unwrap();
            assert!(why.contains("4 KiB-page format"), "{why}");
        }
    }
    assert!(used[0] != used[1] && used[1] != used[2], "{used:?}");
    let out = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(["bench", "device"])
        .arg(&c)
        .args(["--page-size", "8K", "--no-kernel"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("4 KiB, 16 KiB and 64 KiB"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
