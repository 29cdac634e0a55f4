//! PLACEHOLDER: `zmem apply` is not implemented yet; its owner replaces this file.

/// Arguments of `zmem apply`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`zmem apply` is not implemented yet")
}
