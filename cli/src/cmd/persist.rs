//! `zmem persist`: write the files that make a configuration survive a reboot.

use std::path::PathBuf;

use zmem_conf as config;
use zmem_ops::persist;

/// Arguments of `zmem persist`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Configuration file (as for `zmem apply`)
    pub config: PathBuf,
    /// Write into this tree instead of /
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// Print the files instead of writing them
    #[arg(long)]
    pub dry_run: bool,
    /// Replace files zmem did not write
    #[arg(long)]
    pub force: bool,
    /// Unknown keys and sections (warnings by default, as zram-generator takes them) are
    /// errors
    #[arg(long)]
    pub strict: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let cfg = config::load_with(&args.config, args.strict)?;
    for w in &cfg.warnings {
        eprintln!("warning: {w}");
    }
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.to_str().map(str::to_string))
        .unwrap_or_else(|| "/usr/bin/zmem".into());
    let files = persist::files(&cfg, &exe);
    if files.is_empty() {
        anyhow::bail!("{} has nothing to persist", args.config.display());
    }
    if args.dry_run {
        for f in &files {
            out(&format!("==> {} <==\n{}\n", f.path, f.contents));
        }
        return Ok(());
    }
    for p in persist::write(&args.root, &files, args.force)? {
        out(&format!("wrote {}\n", p.display()));
    }
    out("at boot: zram-generator creates the devices, systemd-sysctl and systemd-tmpfiles set the rest \
(enable units with `systemctl enable` where listed)\n");
    Ok(())
}

/// Print to stdout; a closed pipe (`| head`) ends the program quietly instead of panicking.
fn out(text: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(text.as_bytes()).and_then(|_| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
    }
}
