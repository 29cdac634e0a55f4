//! PLACEHOLDER: `zmem trial` is not implemented yet; its owner replaces this file.

/// Arguments of `zmem trial`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`zmem trial` is not implemented yet")
}
