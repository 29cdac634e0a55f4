//! `zmem exporter`: Prometheus metrics for zram, zswap and `zmem serve` devices.

use std::net::TcpListener;
use std::path::PathBuf;

use anyhow::Context;
use zmem_admin::exporter;
use zmem_host::Sys;

/// Arguments of `zmem exporter`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to serve /metrics on (port 0 picks a free port and prints it)
    #[arg(long, default_value = "127.0.0.1:9877")]
    pub listen: String,
    /// Print the metrics once to stdout and exit (for node_exporter's textfile collector)
    #[arg(long)]
    pub once: bool,
    /// Directory with `zmem serve` control sockets (*.ctl)
    #[arg(long, default_value = "/run/zmem")]
    pub ctl_dir: String,
    /// Scrapes served at once; more are answered 503
    #[arg(long, default_value_t = exporter::HttpLimits::default().max_connections)]
    pub max_connections: usize,
    /// A scrape must send its request and take its answer within this time
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = crate::args::duration)]
    pub timeout: std::time::Duration,
    /// Stop after answering this many requests
    #[arg(long, hide = true)]
    pub max_requests: Option<usize>,
    /// Read a fixture tree instead of the running kernel
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let sys = Sys::new(&args.root);
    if args.once {
        out(&exporter::collect(&sys, &args.ctl_dir));
        return Ok(());
    }
    let l = TcpListener::bind(&args.listen)
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    {
        // Tell where it listens; the server keeps going even if nobody reads stdout.
        use std::io::Write;
        let mut o = std::io::stdout().lock();
        let _ = writeln!(
            o,
            "zmem exporter listening on http://{}/metrics",
            l.local_addr()?
        );
        let _ = o.flush();
    }
    let limits = exporter::HttpLimits {
        max_connections: args.max_connections.max(1),
        deadline: args.timeout,
    };
    exporter::serve(l, &sys, &args.ctl_dir, limits, args.max_requests)?;
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
