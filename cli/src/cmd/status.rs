//! PLACEHOLDER: `zmem status` is not implemented yet; its owner replaces this file.

/// Arguments of `zmem status`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`zmem status` is not implemented yet")
}
