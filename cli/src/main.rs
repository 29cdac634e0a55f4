//! `zmem`: compressed memory for Linux, the command line.
//!
//! Each command's arguments are parsed in `cmd/` (one file per command, `zmem bench`'s modes
//! as subcommands in `cmd/bench.rs`), the work is done by the library crates (codec, zpool,
//! zram, zswap, nbd, serve, conf, policy, ops, corpus, lab, verdict, report, trial, tune, on
//! units, host, device and kernel: ARCHITECTURE.md), and what stays here is glue: the flags
//! and their checks, the progress bar (`cmd/lab_run.rs`) and printing (`output`).

use clap::{CommandFactory, Parser, Subcommand};

mod args;
mod cmd;
mod output;

/// Compressed memory for Linux: a zram/zswap engine you can embed or serve,
/// a lab that measures every algorithm on your own memory (beside the kernel's
/// zram), and ops tools for the kernel's own zram and zswap.
#[derive(Parser, Debug)]
#[command(name = "zmem", version, about, long_about = None, propagate_version = true)]
#[command(
    after_help = "Start with `zmem bench` (which configuration to use, measured on this machine's memory) \
or `zmem status` (what the kernel's zram and zswap are doing now)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The main job: the configuration to use on this machine, measured on its memory (the
    /// verdict); its subcommands are the lab's other measurements beside the kernel's zram
    /// (device, floor, codecs, full, recomp, fastpath, writeback, zswap, verdict)
    ///
    /// With no subcommand: up to 64 MiB of this machine's memory (every process as root, your own
    /// processes otherwise) plus synthetic pages, every algorithm this kernel offers in
    /// interleaved rounds until the decision is settled or --budget is spent, and the verdict
    /// with a new private config file to apply (docs/lab.md); the options below are its own. Each
    /// subcommand has its own flags (`zmem bench MODE --help`).
    Bench(Box<cmd::bench::Bench>),
    /// List every compression algorithm with its parameters and defaults
    Codecs(cmd::codecs::Args),
    /// Capture a corpus of 4 KiB pages from process memory or a zram device
    Capture(cmd::capture::Args),
    /// Make or inspect corpora (synthetic page files)
    Corpus(cmd::corpus::Args),
    /// Train a zstd dictionary for pages
    Dict(cmd::dict::Args),
    /// Recommend a zram/zswap configuration for a corpus, with reasons
    Recommend(cmd::recommend::Args),
    /// Run a workload under real memory pressure against swap configurations
    Trial(cmd::trial::Args),
    /// Prove the recommendation on your own workload under real memory pressure: predicted
    /// beside measured ranks, and the winner as one config file
    Tune(cmd::tune::Args),
    /// Serve a zmem device over NBD (qemu, nbdcopy, fio, nbdfuse, nbd-client)
    Serve(Box<cmd::serve::Args>),
    /// Read or write attributes of a zram device or a `zmem serve` device
    Ctl(cmd::ctl::Args),
    /// Show what the kernel's zram devices and zswap are doing
    Status(cmd::status::Args),
    /// Apply a zram-generator.conf (plus zmem extensions) to the running kernel
    Apply(cmd::apply::Args),
    /// Write files that make a configuration survive a reboot
    Persist(cmd::persist::Args),
    /// Serve Prometheus metrics for zram, zswap and zmem serve devices
    Exporter(cmd::exporter::Args),
    /// Run idle marking, recompression and writeback on a policy
    Policy(cmd::policy::Args),
    /// Name each problem of the zram, zswap and swap set-up with the command that fixes it
    Doctor(cmd::doctor::Args),
    /// Print the completion script for bash, zsh or fish (`zmem completions bash >
    /// /usr/share/bash-completion/completions/zmem`)
    Completions(cmd::completions::Args),
    /// Write the man pages (zmem.1, zmem-COMMAND.1) into a directory
    Man(cmd::man::Args),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(a) => cmd::bench::run(*a),
        Command::Codecs(a) => cmd::codecs::run(a),
        Command::Capture(a) => cmd::capture::run(a),
        Command::Corpus(a) => cmd::corpus::run(a),
        Command::Dict(a) => cmd::dict::run(a),
        Command::Recommend(a) => cmd::recommend::run(a),
        Command::Trial(a) => cmd::trial::run(a),
        Command::Tune(a) => cmd::tune::run(a),
        Command::Serve(a) => cmd::serve::run(*a),
        Command::Ctl(a) => cmd::ctl::run(a),
        Command::Status(a) => cmd::status::run(a),
        Command::Apply(a) => cmd::apply::run(a),
        Command::Persist(a) => cmd::persist::run(a),
        Command::Exporter(a) => cmd::exporter::run(a),
        Command::Policy(a) => cmd::policy::run(a),
        Command::Doctor(a) => cmd::doctor::run(a),
        Command::Completions(a) => cmd::completions::run(a, Cli::command()),
        Command::Man(a) => cmd::man::run(a, Cli::command()),
    };
    // Process-long locks (trial, policy) are let go, and their files removed.
    zmem_files::release_process_locks();
    if let Err(e) = result {
        eprintln!("zmem: error: {e:#}");
        std::process::exit(1);
    }
}
