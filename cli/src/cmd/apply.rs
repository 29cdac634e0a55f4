//! `zmem apply`: apply a zram-generator.conf (plus zmem extensions) to the running kernel.

use std::path::PathBuf;

use anyhow::Context;
use zmem_admin::apply::{self, Options};
use zmem_conf as config;
use zmem_host::Sys;

/// Arguments of `zmem apply`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Configuration file (zram-generator.conf format plus [sysctl], [zswap], [disk-swap], [policy])
    #[arg(required_unless_present_any = ["revert", "zram_generator"], conflicts_with = "zram_generator")]
    pub config: Option<PathBuf>,
    /// Instead of CONFIG, read zram-generator's own files under --root as zram-generator
    /// does: the one main zram-generator.conf of highest precedence, then the drop-ins of
    /// {/usr/lib,/usr/local/lib,/etc,/run}/systemd/zram-generator.conf.d/*.conf by name
    #[arg(long)]
    pub zram_generator: bool,
    /// Unknown keys and sections (warnings by default, as zram-generator takes them), and
    /// levels the kernel would clamp, are errors
    #[arg(long)]
    pub strict: bool,
    /// Print every sysfs write and command in order, change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Swap off / unmount and reset devices in use when their configuration differs, and set up
    /// devices whose kernel slot tables (up to 24 bytes per 4 KiB page) take more than 1/16 of RAM
    #[arg(long)]
    pub force: bool,
    /// Undo what earlier applies changed (from the saved undo list), and what an apply that
    /// was killed left (from its journal); with --dry-run, print the undo operations without
    /// running them
    #[arg(long, conflicts_with = "force")]
    pub revert: bool,
    /// Work on a fixture tree instead of the running kernel
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let sys = Sys::new(&args.root);
    if args.revert && args.dry_run {
        let ops = apply::revert_ops(&sys).map_err(anyhow::Error::msg)?;
        for op in &ops {
            out(&format!("{op}\n"));
        }
        out(&format!(
            "# --revert would run these {} operations\n",
            ops.len()
        ));
        return Ok(());
    }
    if args.revert {
        if !sys.is_fixture() && !zmem_files::euid_is_root() {
            anyhow::bail!("reverting changes the kernel's settings and needs root");
        }
        let n = apply::revert(&sys, &mut |l| out(&format!("{l}\n"))).map_err(anyhow::Error::msg)?;
        out(&format!("reverted ({n} operations)\n"));
        return Ok(());
    }
    let cfg = if args.zram_generator {
        if config::locate_fragments(&args.root).is_empty() {
            out(&format!(
                "# no zram-generator.conf and no drop-in under {} ({{/usr/lib,/usr/local/lib,/etc,/run}}/systemd/zram-generator.conf[.d/*.conf])\n",
                args.root.display()
            ));
        }
        config::load_system(&args.root, args.strict)?
    } else {
        let path = args.config.context("a configuration file is needed")?;
        config::load_with(&path, args.strict)?
    };
    let plan = apply::plan(&sys, &cfg, Options { force: args.force })?;
    if args.dry_run || plan.steps.is_empty() {
        out(&apply::render_dry_run(&cfg, &plan));
        return Ok(());
    }
    for w in &cfg.warnings {
        out(&format!("# warning: {w}\n"));
    }
    for n in &plan.notes {
        out(&format!("# {n}\n"));
    }
    if !sys.is_fixture() && !zmem_files::euid_is_root() {
        anyhow::bail!("applying changes the kernel's settings and needs root (use --dry-run to see the {} change(s))", plan.steps.len());
    }
    apply::execute(&sys, &plan, &mut |l| log_line(l))?;
    out(&format!(
        "applied {} change(s); `zmem apply --revert` undoes them\n",
        plan.steps.len()
    ));
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

/// A line of the running apply: never stops the apply, even when stdout is gone.
fn log_line(l: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout().lock(), "{l}");
}
