//! `zmem bench`: the main job. Modes are chosen by flags; each mode lives in
//! `zmem_lab::bench`.

use std::path::PathBuf;

use crate::output::Format;

/// Arguments of `zmem bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Corpus files of raw 4 KiB pages (e.g. `dd if=/dev/zram0 of=pages.bin`).
    /// With none, a default corpus is built from this machine's memory plus synthetic pages.
    pub corpus: Vec<PathBuf>,
    /// Codec level only: ratio, compress/decompress/reclaim MB/s and per-page latency
    #[arg(long)]
    pub codecs: bool,
    /// Algorithms to run (comma-separated kernel names); default: all
    #[arg(long, value_delimiter = ',')]
    pub algo: Vec<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`zmem bench` is not implemented yet")
}
