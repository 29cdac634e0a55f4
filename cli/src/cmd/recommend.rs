//! PLACEHOLDER: `zmem recommend` is not implemented yet; its owner replaces this file.

/// Arguments of `zmem recommend`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`zmem recommend` is not implemented yet")
}
