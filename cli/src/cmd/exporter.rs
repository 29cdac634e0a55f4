//! PLACEHOLDER: `zmem exporter` is not implemented yet; its owner replaces this file.

/// Arguments of `zmem exporter`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`zmem exporter` is not implemented yet")
}
