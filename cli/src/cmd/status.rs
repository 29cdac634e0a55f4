//! `zmem status`: what the kernel's zram devices and zswap are doing now.

use std::path::PathBuf;

use zmem_admin::status;
use zmem_host::Sys;

/// Arguments of `zmem status`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// One JSON document instead of text (sizes in bytes)
    #[arg(long)]
    pub json: bool,
    /// Print again every SECONDS until interrupted
    #[arg(long, value_name = "SECONDS")]
    pub watch: Option<u64>,
    /// Read a fixture tree instead of the running kernel
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// Do not mount debugfs read-only for the zswap counters when it is not mounted
    #[arg(long)]
    pub no_debugfs: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let sys = Sys::new(&args.root);
    if args.watch == Some(0) {
        anyhow::bail!("--watch needs a period of at least 1 second");
    }
    loop {
        let st = status::collect(&sys, !args.no_debugfs)?;
        if args.json {
            out(&format!("{}\n", status::to_json(&st)));
        } else {
            if args.watch.is_some() {
                // Clear the screen and print the time, like watch(1).
                out("\x1b[2J\x1b[H");
                out(&format!(
                    "zmem status, every {} s (Ctrl-C to stop)\n\n",
                    args.watch.unwrap_or(0)
                ));
            }
            out(&status::render_text(&st));
        }
        match args.watch {
            Some(s) => std::thread::sleep(std::time::Duration::from_secs(s)),
            None => return Ok(()),
        }
    }
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
