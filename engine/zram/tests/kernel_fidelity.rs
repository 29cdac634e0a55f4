//! The same corpus through our engine and a hot-added kernel zram device with
//! the same algorithm: orig_data_size, same_pages and huge_pages equal;
//! compr_data_size and mem_used_total within 1%. Needs root and kernel zram
//! (skips with the reason otherwise).
mod common;
use std::io::Write;

use common::*;
use zmem_host::HotDevice;
use zmem_kernel::MmStat;
use zmem_zram::{Zram, PAGE_SIZE};

/// ~4 MiB of mixed pages: text, sparse, same-filled, random, half-random.
fn corpus() -> Vec<u8> {
    let mut v = Vec::new();
    let mut r = Rng(0xf1de_117e);
    for i in 0..1024u64 {
        let kind = match r.below(20) {
            0..=7 => 2,
            8..=10 => 5,
            11..=13 => 0,
            14..=15 => 1,
            16 => 3,
            _ => 4,
        };
        v.extend_from_slice(&page(kind, i * 31 + 7));
    }
    v
}

fn engine(algo: &str, data: &[u8]) -> Result<MmStat, String> {
    let dev = Zram::builder()
        .algorithm(algo, Default::default())
        .disksize(data.len() as u64)
        .build()
        .map_err(|e| e.to_string())?;
    for (i, p) in data.chunks(PAGE_SIZE).enumerate() {
        dev.write_page(i, p).map_err(|e| e.to_string())?;
    }
    Ok(dev.mm_stat())
}

fn kernel(algo: &str, data: &[u8]) -> Result<MmStat, String> {
    let d = HotDevice::with_config(algo, data.len() as u64).map_err(|e| e.to_string())?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(d.dev_path())
        .map_err(|e| e.to_string())?;
    f.write_all(data).map_err(|e| e.to_string())?;
    f.sync_all().map_err(|e| e.to_string())?;
    drop(f);
    let s = d.read_attr("mm_stat").map_err(|e| e.to_string())?;
    MmStat::parse(&s).ok_or_else(|| format!("bad mm_stat {s:?}"))
}

fn within(a: u64, b: u64, pct: f64) -> bool {
    (a as f64 - b as f64).abs() <= b as f64 * pct / 100.0
}

fn compare(test: &str, algo: &str) {
    if let Err(e) = HotDevice::available() {
        zmem_files::testutil::skip(&format!("SKIP {test}: {e}"));
        return;
    }
    let data = corpus();
    let ours = engine(algo, &data).unwrap_or_else(|e| panic!("engine {algo}: {e}"));
    let theirs = match kernel(algo, &data) {
        Ok(m) => m,
        Err(e) if e.contains("unavailable") || e.contains("no algorithm") => {
            zmem_files::testutil::skip(&format!("SKIP {test}: {e}"));
            return;
        }
        Err(e) => panic!("kernel {algo}: {e}"),
    };
    println!("{test}: engine mm_stat {}", ours.render().trim_end());
    println!("{test}: kernel mm_stat {}", theirs.render().trim_end());
    assert_eq!(ours.orig_data_size, theirs.orig_data_size, "orig_data_size");
    assert_eq!(ours.same_pages, theirs.same_pages, "same_pages");
    assert_eq!(ours.huge_pages, theirs.huge_pages, "huge_pages");
    assert_eq!(
        ours.huge_pages_since, theirs.huge_pages_since,
        "huge_pages_since"
    );
    assert!(
        within(ours.compr_data_size, theirs.compr_data_size, 1.0),
        "compr_data_size {} vs {}",
        ours.compr_data_size,
        theirs.compr_data_size
    );
    assert!(
        within(ours.mem_used_total, theirs.mem_used_total, 1.0),
        "mem_used_total {} vs {}",
        ours.mem_used_total,
        theirs.mem_used_total
    );
}

#[test]
fn lz4_matches_kernel_zram() {
    compare("lz4_matches_kernel_zram", "lz4");
}

#[test]
fn lzo_rle_matches_kernel_zram() {
    compare("lzo_rle_matches_kernel_zram", "lzo-rle");
}

#[test]
fn lzo_matches_kernel_zram() {
    compare("lzo_matches_kernel_zram", "lzo");
}
