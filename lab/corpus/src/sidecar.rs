//! The sidecar `FILE.json` beside a corpus of raw 4 KiB pages: where the pages
//! came from. The corpus itself stays raw pages, so `dd`, fio and every other
//! tool can read it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// One memory region that went into (or was left out of) a capture.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Region {
    pub pid: u32,
    /// `start-end` in hex, as in /proc/PID/maps.
    pub range: String,
    /// The mapping's name (`[heap]`, `[stack]`, `[anon:…]`) or empty.
    pub name: String,
    /// Pages written to the corpus from this region.
    pub pages: u64,
    /// Pages of the region that were not resident (never touched) and so left out.
    #[serde(default)]
    pub not_resident: u64,
}

/// What was skipped and why (unreadable process or region).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Skipped {
    pub what: String,
    pub reason: String,
}

/// Metadata of one corpus file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Sidecar {
    /// `pid`, `all`, `device`, `synthetic`, `default`.
    pub source: String,
    /// For synthetic corpora: the kind and its parameters (`fio-style:60`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    #[serde(default)]
    pub pids: Vec<u32>,
    /// Command names (/proc/PID/comm), same order as `pids`.
    #[serde(default)]
    pub commands: Vec<String>,
    #[serde(default)]
    pub regions: Vec<Region>,
    #[serde(default)]
    pub skipped: Vec<Skipped>,
    /// `capture --all`: kernel threads passed over (they have no user memory).
    #[serde(default)]
    pub kernel_threads_skipped: u64,
    /// `capture --all`: processes that exited while the capture ran.
    #[serde(default)]
    pub exited_skipped: u64,
    /// Pages in the corpus file.
    pub pages: u64,
    /// A process capture: the resident pages it could take, before sampling
    /// down to its limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resident_pages: Option<u64>,
    /// Of which same-filled (one repeated 8-byte word; zram stores none of them).
    pub same_filled_pages: u64,
    /// Unix time of the capture or generation, seconds.
    pub created_unix: u64,
    /// Free-form notes (sampling, limits).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// `FILE.json` for corpus `FILE`.
pub fn path_for(corpus: &Path) -> PathBuf {
    let mut s = corpus.as_os_str().to_owned();
    s.push(".json");
    PathBuf::from(s)
}

/// Seconds since the epoch.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Sidecar {
    /// Pretty JSON, as written to the sidecar file.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a sidecar always serialises")
    }

    /// Read the sidecar of `corpus`, if there is one. A sidecar that exists but
    /// cannot be parsed is an error.
    pub fn read_for(corpus: &Path) -> Result<Option<Sidecar>> {
        let p = path_for(corpus);
        match std::fs::read_to_string(&p) {
            Ok(s) => {
                Ok(Some(serde_json::from_str(&s).with_context(|| {
                    format!("parsing sidecar {}", p.display())
                })?))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", p.display())),
        }
    }
}

/// Count same-filled pages in a buffer of whole pages.
pub fn count_same_filled(pages: &[u8]) -> u64 {
    pages
        .chunks_exact(zmem_codec::PAGE_SIZE)
        .filter(|p| zmem_codec::same_filled(p).is_some())
        .count() as u64
}
