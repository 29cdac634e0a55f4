//! `zmem persist`: write the files that make a configuration survive a reboot, and say which
//! program applies each at boot — or that it is not installed, what to install, and exit 3.

use std::path::{Path, PathBuf};

use zmem_admin::persist;
use zmem_conf as config;

/// What the exit status means.
const EXIT_STATUS: &str = "Exit status: 0 when the files are written and every program that reads them at boot \
is installed in the tree; 3 when the files are written but one of those programs is missing (named, with \
the package to install): boot will not apply that part until it is installed; 1 on an error.";

/// Arguments of `zmem persist`.
#[derive(clap::Args, Debug)]
#[command(after_help = EXIT_STATUS)]
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
    let packaged = persist::packaged_policy_unit(&args.root);
    let files = persist::files(&cfg, &exe, packaged.is_some());
    if files.is_empty() {
        anyhow::bail!("{} has nothing to persist", args.config.display());
    }
    if args.dry_run {
        for f in &files {
            out(&format!("==> {} <==\n{}\n", f.path, f.contents));
        }
        at_boot(&args.root, &files, "would be written");
        return Ok(());
    }
    for p in persist::write(&args.root, &files, args.force)? {
        out(&format!("wrote {}\n", p.display()));
    }
    if let (Some(unit), false) = (&packaged, cfg.policy.is_empty()) {
        out(&format!(
            "the policy daemon: the package's unit {} reads /etc/zmem/zmem.conf; start it \
             now and at every boot with `systemctl enable --now zmem-policy.service`\n",
            unit.display()
        ));
    }
    if !at_boot(&args.root, &files, "is written") {
        eprintln!(
            "zmem: the files are written, but boot will not apply all of them until what is \
             named above is installed; `zmem apply {}` sets the configuration up for this boot \
             only (exit status 3)",
            args.config.display()
        );
        std::process::exit(3);
    }
    Ok(())
}

/// Says which program applies each file at boot, or that it is not installed under `root`
/// and what to install; false when one is missing.
fn at_boot(root: &Path, files: &[persist::File], state: &str) -> bool {
    let mut all = true;
    for c in persist::partners(root, files) {
        let p = c.partner;
        let list = c.files.join(", ");
        match &c.found {
            Some(_) => out(&format!("at boot: {} {} ({list})\n", p.name, p.does)),
            None => {
                all = false;
                let tree = match root == Path::new("/") {
                    true => String::new(),
                    false => format!(" under {}", root.display()),
                };
                out(&format!(
                    "not at boot: {} is not installed: nothing {} of {list}, which {state}\n  \
                     looked for{tree}: {}\n  install: {}\n",
                    p.name,
                    p.does,
                    p.paths.join(", "),
                    p.install
                ));
            }
        }
    }
    all
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
