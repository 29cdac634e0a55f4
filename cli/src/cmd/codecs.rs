//! PLACEHOLDER: `zmem codecs` is not implemented yet; its owner replaces this file.

/// Arguments of `zmem codecs`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`zmem codecs` is not implemented yet")
}
