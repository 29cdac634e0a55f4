//! PLACEHOLDER: `zmem serve` is not implemented yet; its owner replaces this file.

/// Arguments of `zmem serve`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`zmem serve` is not implemented yet")
}
