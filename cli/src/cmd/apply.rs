//! `zmem apply`: apply a zram-generator.conf (plus zmem extensions) to the running kernel.

use std::path::PathBuf;

use anyhow::Context;
use zmem_kernel::apply::{self, Options};
use zmem_kernel::config;
use zmem_kernel::sys::Sys;

/// Arguments of `zmem apply`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Configuration file (zram-generator.conf format plus [sysctl], [zswap], [disk-swap], [policy])
    #[arg(required_unless_present = "revert")]
    pub config: Option<PathBuf>,
    /// Print every sysfs write and command in order, change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Swap off / unmount and reset devices in use when their configuration differs
    #[arg(long)]
    pub force: bool,
    /// Undo what earlier applies changed (from the saved undo list)
    #[arg(long, conflicts_with_all = ["dry_run", "force"])]
    pub revert: bool,
    /// Work on a fixture tree instead of the running kernel
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let sys = Sys::new(&args.root);
    if args.revert {
        if !sys.is_fixture() && !is_root() {
            anyhow::bail!("reverting changes the kernel's settings and needs root");
        }
        let n = apply::revert(&sys, &mut |l| println!("{l}")).map_err(anyhow::Error::msg)?;
        println!("reverted ({n} operations)");
        return Ok(());
    }
    let path = args.config.context("a configuration file is needed")?;
    let cfg = config::load(&path)?;
    let plan = apply::plan(&sys, &cfg, Options { force: args.force })?;
    for n in &plan.notes {
        println!("# {n}");
    }
    if plan.steps.is_empty() {
        println!("nothing to do: the system already matches {}", path.display());
        return Ok(());
    }
    if args.dry_run {
        for s in &plan.steps {
            println!("{}", s.op);
        }
        return Ok(());
    }
    if !sys.is_fixture() && !is_root() {
        anyhow::bail!("applying changes the kernel's settings and needs root (use --dry-run to see the {} change(s))", plan.steps.len());
    }
    apply::execute(&sys, &plan, &mut |l| println!("{l}"))?;
    println!("applied {} change(s); `zmem apply --revert` undoes them", plan.steps.len());
    Ok(())
}

/// Whether this process runs as root (owner of /proc/self).
fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}
