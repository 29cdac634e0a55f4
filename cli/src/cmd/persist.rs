//! PLACEHOLDER: `zmem persist` is not implemented yet; its owner replaces this file.

/// Arguments of `zmem persist`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`zmem persist` is not implemented yet")
}
