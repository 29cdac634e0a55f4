//! The HTML report renders in headless Chromium: a screenshot is taken and
//! checked, and the page holds the chart SVGs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use zmem_files::testutil::ScratchDir;

fn zmem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .output()
        .expect("run zmem")
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|n| {
            std::env::var_os("PATH")?
                .to_str()?
                .split(':')
                .map(|d| Path::new(d).join(n))
                .find(|p| p.is_file())
        })
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(b: &[u8]) -> Option<(u32, u32)> {
    (b.len() > 24 && &b[..8] == b"\x89PNG\r\n\x1a\n" && &b[12..16] == b"IHDR").then(|| {
        (
            u32::from_be_bytes(b[16..20].try_into().unwrap()),
            u32::from_be_bytes(b[20..24].try_into().unwrap()),
        )
    })
}

#[test]
fn report_renders_in_headless_chromium() {
    let dir = ScratchDir::new("lab-report");
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
    let html = dir.join("report.html");
    let o = zmem(&[
        "bench",
        "full",
        c.to_str().unwrap(),
        "--report",
        html.to_str().unwrap(),
        "--algo",
        "lz4,lzo-rle,zstd,wkdm",
        "--requests",
        "300",
        "--min-time-ms",
        "5",
        "--fs-read",
        "100",
        "--ram",
        "8G",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    for id in [
        "chart-pareto",
        "chart-latency",
        "chart-eff-ratio",
        "chart-compress",
        "chart-decompress",
        "chart-reclaim",
        "chart-read",
        "chart-iops",
        "chart-score",
    ] {
        assert!(
            page.contains(&format!("<svg class=\"chart\" id=\"{id}\"")),
            "{id} missing"
        );
    }
    assert!(page.contains("Recommendation") && page.contains("[zram0]"));
    // The first section is the deployable recommendation, one file with [sysctl].
    let first_h2 = page.split("<h2>").nth(1).unwrap_or("");
    assert!(first_h2.starts_with("Recommendation"), "{first_h2:.80}");
    assert!(page.contains("[sysctl]") && page.contains("zmem.conf"));
    assert!(
        !page.contains("<script") && !page.contains("https://"),
        "self-contained, offline"
    );

    let Some(chrome) = chromium() else {
        zmem_files::testutil::skip(
            "SKIP report_renders_in_headless_chromium (screenshot part): chromium not installed",
        );
        return;
    };
    let profile = dir.join("profile");
    let shot = dir.join("shot.png");
    let o = Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            &format!("--user-data-dir={}", profile.display()),
            &format!("--screenshot={}", shot.display()),
            "--window-size=1400,2400",
            &format!("file://{}", html.display()),
        ])
        .output()
        .expect("run chromium");
    assert!(
        o.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let png = std::fs::read(&shot).expect("screenshot written");
    assert_eq!(png_size(&png), Some((1400, 2400)));
    // A blank page compresses to a few KiB; text and charts make it much larger.
    assert!(
        png.len() > 60_000,
        "screenshot only {} bytes: nothing rendered?",
        png.len()
    );
}
