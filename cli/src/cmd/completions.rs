//! `zmem completions SHELL`: the shell's completion script for every command
//! and flag, generated from the same CLI definition that parses them
//! (clap_complete), printed to stdout.

use std::io::Write;

/// Arguments of `zmem completions`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Prints the completion script of `cli` for `args.shell`.
pub fn run(args: Args, mut cli: clap::Command) -> anyhow::Result<()> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "zmem", &mut out);
    std::io::stdout().lock().write_all(&out)?;
    Ok(())
}
