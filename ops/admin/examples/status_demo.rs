//! Scratch run behind the sample in docs/ops.md: a hot-added zram swap device with real
//! swapped-out pages, shown by `zmem status`.
//!
//! As root: `cargo run -p zmem-admin --example status_demo`. It hot-adds a 512 MiB lz4
//! device, swaps on it at priority 0, runs a Python process that fills 256 MiB of mixed pages
//! (zero, text-like, random) inside a cgroup-v1 memory limit of 64 MiB so the kernel swaps
//! most of it out, prints the status, then kills the process, swaps off and removes the
//! device (HotDevice's drop) and the cgroup.

use std::fs;
use std::process::{Command, Stdio};
use std::time::Duration;

use zmem_admin::status;
use zmem_host::HotDevice;
use zmem_host::Sys;

const CG: &str = "/sys/fs/cgroup/memory/zmem-status-demo";

const FILL: &str = r#"
import os, random, sys, time
random.seed(1)
words = b"the quick brown fox jumps over the lazy dog while swap pages compress ".split()
pages = []
for i in range(65536):
    k = i % 4
    if k == 0:
        p = bytes(4096)
    elif k == 3 and i % 8 == 3:
        p = os.urandom(4096)
    else:
        s = b" ".join(random.choice(words) + str(random.randrange(1000)).encode() for _ in range(700))
        p = s[:4096].ljust(4096, b".")
    pages.append(bytearray(p))
sys.stdout.write("filled\n"); sys.stdout.flush()
time.sleep(120)
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    HotDevice::available()?;
    let dev = HotDevice::with_config("lz4", 512 << 20)?;
    let path = dev.dev_path().to_str().unwrap().to_string();
    let ok = |c: &mut Command| c.status().map(|s| s.success()).unwrap_or(false);
    if !ok(Command::new("mkswap").arg(&path).stdout(Stdio::null()))
        || !ok(Command::new("swapon").args(["-p", "0", &path]))
    {
        return Err("mkswap/swapon failed".into());
    }
    fs::create_dir_all(CG)?;
    fs::write(
        format!("{CG}/memory.limit_in_bytes"),
        (64u64 << 20).to_string(),
    )?;
    let mut child = Command::new("python3")
        .args(["-c", FILL])
        .stdout(Stdio::piped())
        .spawn()?;
    fs::write(format!("{CG}/cgroup.procs"), child.id().to_string())?;
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line)?;
    std::thread::sleep(Duration::from_secs(2));
    let st = status::collect(&Sys::real(), true)?;
    // Only this device and zswap: other zram devices on the machine belong to others.
    let mut mine = st.clone();
    mine.devices.retain(|d| d.id == dev.id());
    print!("{}", status::render_text(&mine));
    let _ = child.kill();
    let _ = child.wait();
    let _ = Command::new("swapoff").arg(&path).status();
    let _ = fs::remove_dir(CG);
    Ok(())
}
