//! PLACEHOLDER: `zmem capture` is not implemented yet; its owner replaces this file.

/// Arguments of `zmem capture`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`zmem capture` is not implemented yet")
}
