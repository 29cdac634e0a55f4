//! PLACEHOLDER: `zmem ctl` is not implemented yet; its owner replaces this file.

/// Arguments of `zmem ctl`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`zmem ctl` is not implemented yet")
}
