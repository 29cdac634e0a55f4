//! PLACEHOLDER: `zmem dict` is not implemented yet; its owner replaces this file.

/// Arguments of `zmem dict`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`zmem dict` is not implemented yet")
}
