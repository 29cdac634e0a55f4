//! `zmem man --out-dir DIR`: man pages generated from the CLI definition
//! (clap_mangen): `zmem.1`, and `zmem-COMMAND.1` for each command and
//! `zmem-bench-MODE.1` for each of bench's modes, as git names its pages.
//! Every page goes through the one output writer, all or none: an existing page is
//! replaced only when zmem wrote it (its `.TH` line names a zmem page) or
//! with `--force`, never through a symbolic link.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use zmem_files::{write_outputs, OutputFile, Readers, Replace};

/// Arguments of `zmem man`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory to write the pages into (made if missing), e.g. /usr/share/man/man1
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
    /// Replace files there that zmem did not write
    #[arg(long)]
    pub force: bool,
}

/// One rendered page: its file name and its roff source.
pub struct Page {
    pub file: String,
    pub roff: Vec<u8>,
}

/// Every page of `cli`: the top one and one per subcommand, recursively.
pub fn pages(cli: clap::Command) -> anyhow::Result<Vec<Page>> {
    let mut cli = cli;
    cli.build();
    let mut out = Vec::new();
    collect(&cli, "zmem", &mut out)?;
    Ok(out)
}

fn collect(cmd: &clap::Command, name: &str, out: &mut Vec<Page>) -> anyhow::Result<()> {
    // The page's own name, so its .TH line and NAME section say `zmem-apply`.
    let named = cmd
        .clone()
        .name(name.to_string())
        .bin_name(name.replace('-', " "));
    let mut roff = Vec::new();
    clap_mangen::Man::new(named).render(&mut roff)?;
    out.push(Page {
        file: format!("{name}.1"),
        roff,
    });
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.get_name() == "help" {
            continue;
        }
        collect(sub, &format!("{name}-{}", sub.get_name()), out)?;
    }
    Ok(())
}

/// Whether `head` is the start of a page zmem wrote: its `.TH` line names a
/// `zmem` page.
fn ours(head: &[u8]) -> bool {
    head.split(|&b| b == b'\n').take(8).any(|l| {
        l.starts_with(b".TH zmem") || l.starts_with(b".TH \"zmem") || l.starts_with(b".TH ZMEM")
    })
}

/// Writes every page of `cli` into `args.out_dir`, world-readable as man
/// pages are, and prints each path.
pub fn run(args: Args, cli: clap::Command) -> anyhow::Result<()> {
    let replace = if args.force {
        Replace::Always
    } else {
        Replace::IfOurs(&ours)
    };
    let pages = pages(cli)?;
    let paths: Vec<PathBuf> = pages
        .iter()
        .map(|p| Path::new(&args.out_dir).join(&p.file))
        .collect();
    // All pages or none: a page that may not be replaced leaves every other as it was.
    let files: Vec<OutputFile> = pages
        .iter()
        .zip(&paths)
        .map(|(p, path)| OutputFile {
            path,
            bytes: &p.roff,
            replace,
            readers: Readers::Everyone,
        })
        .collect();
    write_outputs(&files).with_context(|| {
        format!(
            "writing the man pages into {} (none written)",
            args.out_dir.display()
        )
    })?;
    let written: String = paths.iter().map(|p| format!("{}\n", p.display())).collect();
    // A closed stdout (`| head`) must not stop the pages being written.
    let _ = std::io::stdout().lock().write_all(written.as_bytes());
    Ok(())
}
