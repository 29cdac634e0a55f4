//! PLACEHOLDER: `zmem policy` is not implemented yet; its owner replaces this file.

/// Arguments of `zmem policy`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`zmem policy` is not implemented yet")
}
