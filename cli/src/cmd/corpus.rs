//! `zmem corpus`: make synthetic corpora and inspect corpus files.

use std::path::PathBuf;

use anyhow::{bail, Result};
use zmem_corpus::Kind;

use crate::output::Format;

/// Arguments of `zmem corpus`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(clap::Subcommand, Debug)]
pub enum Cmd {
    /// Generate a synthetic corpus: text, zero-mixed, fio-style, zram-perf or random
    Gen(GenArgs),
    /// Show what a corpus file holds: pages, same-filled share, sidecar
    Info(InfoArgs),
}

#[derive(clap::Args, Debug)]
pub struct GenArgs {
    /// text | zero-mixed | fio-style | zram-perf | random
    pub kind: String,
    /// Size (rounded up to whole 4 KiB pages), e.g. 64M
    #[arg(long)]
    pub size: String,
    /// fio-style only: buffer_compress_percentage (share of each 512-byte chunk that is zeros)
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub compress_percentage: Option<u8>,
    /// Seed; the same seed gives the same corpus
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output corpus file (an existing file that is not a zmem corpus is refused)
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Overwrite an existing output file that is not a zmem corpus
    #[arg(long)]
    pub force: bool,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(clap::Args, Debug)]
pub struct InfoArgs {
    /// Corpus file of raw 4 KiB pages
    pub file: PathBuf,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(a: Args) -> Result<()> {
    match a.cmd {
        Cmd::Gen(g) => gen(g),
        Cmd::Info(i) => info(i),
    }
}

fn gen(g: GenArgs) -> Result<()> {
    let mut kind: Kind = g.kind.parse()?;
    match (&mut kind, g.compress_percentage) {
        (
            Kind::FioStyle {
                compress_percentage,
            },
            Some(p),
        ) => *compress_percentage = p,
        (Kind::FioStyle { .. }, None) => {}
        (_, Some(_)) => bail!("--compress-percentage applies to the fio-style kind only"),
        _ => {}
    }
    let size = crate::args::size_of("--size", &g.size)?;
    if size == 0 {
        bail!("--size must be at least one page (4096 bytes)");
    }
    let sc = zmem_corpus::write_corpus(kind, size, g.seed, &g.output, g.force)?;
    super::capture::print_summary(&g.output, &sc, g.format)
}

fn info(i: InfoArgs) -> Result<()> {
    let sc = zmem_corpus::info(&i.file)?;
    super::capture::print_summary(&i.file, &sc, i.format)
}
