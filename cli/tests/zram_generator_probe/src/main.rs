//! zram-generator-probe ROOT OUT: what zram-generator 1.2.1 does on a fixture root, by its
//! own code (the functions its `main` calls, in the mode `ZRAM_GENERATOR_ROOT` selects):
//! `kernel_zram_option`, `read_all_devices` and `run_generator` writing the units into OUT;
//! then one line per device with the values `--setup-device` writes to sysfs (which it
//! cannot be pointed away from). Errors: `error: ...` and exit status 1. Nothing on the host
//! is changed: `run_generator` gets the devices without their algorithms, as its only host
//! action in test mode is `modprobe crypto-ALGO`.

use std::path::Path;
use zram_generator::{config, generator};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (root, out) = (Path::new(&args[1]), Path::new(&args[2]));
    let kernel_override = match config::kernel_zram_option(root) {
        Some(false) => {
            println!("disabled");
            return;
        }
        Some(true) => true,
        None => false,
    };
    let mut devices = match config::read_all_devices(root, kernel_override) {
        Ok(d) => d,
        Err(e) => fail(e),
    };
    let mut lines = Vec::new();
    for d in &mut devices {
        let algos = &d.compression_algorithms;
        let list: Vec<String> = algos
            .compression_algorithms
            .iter()
            .map(|(a, p)| format!("{a}({p})"))
            .collect();
        lines.push(format!(
            "device\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            d.name,
            d.disksize,
            d.mem_limit,
            list.join(" "),
            algos.recompression_global,
            d.writeback_dev.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            d.effective_fs_type(),
            d.host_memory_limit_mb.map(|m| m.to_string()).unwrap_or_default(),
        ));
        // run_generator runs `modprobe crypto-ALGO` for algorithms missing from /proc/crypto
        // even in its test mode; the units do not depend on the algorithms, so none are left.
        d.compression_algorithms = Default::default();
    }
    if let Err(e) = generator::run_generator(&devices, out, true) {
        fail(e)
    }
    for l in lines {
        println!("{l}");
    }
}

fn fail(e: anyhow::Error) -> ! {
    println!("error\t{}", format!("{e:#}").replace('\n', " "));
    std::process::exit(1)
}
