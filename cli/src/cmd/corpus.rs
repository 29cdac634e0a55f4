//! PLACEHOLDER: `zmem corpus` is not implemented yet; its owner replaces this file.

/// Arguments of `zmem corpus`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`zmem corpus` is not implemented yet")
}
