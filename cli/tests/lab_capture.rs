//! `zmem capture` of a real running program, then `zmem bench full` on that
//! corpus: the complete table, the best-for lines and the recommendation.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};

fn zmem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .output()
        .expect("run zmem")
}

use zmem_files::euid_is_root as is_root;
use zmem_files::testutil::ScratchDir;

/// A Python process holding recognisable data until its stdin closes.
struct Holder(std::process::Child);

impl Holder {
    fn spawn() -> Option<Holder> {
        let prog = r#"
import sys
words = [b"zmem-marker-%06d " % i for i in range(200000)]
blob = b"".join(words)
table = list(range(300000))
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.read()
"#;
        let mut c = Command::new("python3")
            .args(["-c", prog])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .ok()?;
        let mut line = String::new();
        BufReader::new(c.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .ok()?;
        (line.trim() == "ready").then_some(Holder(c))
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        if let Some(mut i) = self.0.stdin.take() {
            let _ = i.write_all(b"");
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn capture_python_then_full_bench_table_best_for_and_recommendation() {
    let Some(h) = Holder::spawn() else {
        zmem_files::testutil::skip("SKIP capture_python_then_full_bench_table_best_for_and_recommendation: python3 not available");
        return;
    };
    let pid = h.0.id().to_string();
    let dir = ScratchDir::new("lab-capture");
    let out = dir.join("py.pages");
    let o = zmem(&[
        "capture",
        "--pid",
        &pid,
        "--max",
        "24M",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("python"), "{text}");
    let data = std::fs::read(&out).unwrap();
    assert_eq!(data.len() % 4096, 0);
    assert!(data.len() >= 2 << 20, "captured {} bytes", data.len());
    // The capture is sampled to --max in 64 KiB blocks, so look for the
    // Python data as a whole (400,000 markers), not for one particular marker.
    let needle = b"zmem-marker-";
    let hits = data.windows(needle.len()).filter(|w| w == needle).count();
    println!("{hits} markers captured");
    assert!(
        hits >= 10_000,
        "the Python bytes are in the capture ({hits} markers found)"
    );
    let side = std::fs::read_to_string(format!("{}.json", out.display())).unwrap();
    assert!(
        side.contains(&format!("\"pids\": [\n    {pid}\n  ]")) || side.contains(&pid),
        "{side}"
    );
    assert!(side.contains("\"source\": \"pid\""), "{side}");
    drop(h);

    let report = dir.join("py.html");
    let o = zmem(&[
        "bench",
        "full",
        out.to_str().unwrap(),
        "--algo",
        "lz4,lzo,zstd",
        "--requests",
        "500",
        "--min-time-ms",
        "10",
        "--fs-read",
        "50",
        "--ram",
        "8G",
        "--report",
        report.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for want in [
        "read MiB/s",
        "IOPS",
        "p99 µs",
        "zstd+dict",
        "best for throughput",
        "best for latency",
        "best for IOPS",
        "best for ratio",
        "best for overall",
        "recommendation",
        "vm.swappiness",
        "[zram0]",
        "vm.page-cluster",
        "RAM − disksize/ratio + disksize",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    for pc in 0..4 {
        assert!(
            text.lines().any(|l| l.starts_with("engine")
                && l.contains(" lz4 ")
                && l.split_whitespace().nth(2) == Some(&pc.to_string())),
            "lz4 pc{pc}\n{text}"
        );
    }
    if is_root() && std::path::Path::new("/sys/class/zram-control/hot_add").exists() {
        assert!(
            text.lines().any(|l| l.starts_with("kernel")),
            "kernel rows side by side as root\n{text}"
        );
    } else {
        zmem_files::testutil::skip("SKIP kernel rows part: not root or no kernel zram");
    }
    assert!(std::fs::read_to_string(&report)
        .unwrap()
        .contains("id=\"chart-pareto\""));
}

#[test]
fn capture_errors_are_clear() {
    let dir = ScratchDir::new("lab-capture");
    let out = dir.join("bad.pages");
    let o = zmem(&["capture", "--pid", "4000000", "-o", out.to_str().unwrap()]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("no process with PID 4000000"), "{e}");
    assert!(!out.exists(), "no corpus left behind");
    let o = zmem(&["capture", "-o", out.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--pid"));
    let o = zmem(&[
        "capture",
        "--device",
        "/dev/null",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a zram device"));
    // A kernel thread has no memory map.
    let o = zmem(&["capture", "--pid", "2", "-o", out.to_str().unwrap()]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("PID 2"), "{e}");
}

#[test]
fn capture_all_lists_what_it_skipped_or_takes_everything() {
    let dir = ScratchDir::new("lab-capture");
    let out = dir.join("all.pages");
    let o = zmem(&[
        "capture",
        "--all",
        "--max",
        "2M",
        "-o",
        out.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j = String::from_utf8_lossy(&o.stdout);
    let pages: u64 = std::fs::metadata(&out).unwrap().len() / 4096;
    assert!(pages > 0 && pages <= 512, "{pages}");
    assert!(j.contains("\"skipped\""), "{j}");
    if !is_root() {
        assert!(
            j.contains("permission denied"),
            "not root: other users' processes are skipped with the reason\n{j}"
        );
    }
}

#[test]
fn capture_device_dumps_a_hot_added_zram_device() {
    let dev = match zmem_host::HotDevice::with_config("lz4", 4 << 20) {
        Ok(d) => d,
        Err(e) => {
            zmem_files::testutil::skip(&format!(
                "SKIP capture_device_dumps_a_hot_added_zram_device: {e}"
            ));
            return;
        }
    };
    // Write recognisable pages to our own device.
    let mut pages = vec![0u8; 64 * 4096];
    for (i, p) in pages.chunks_mut(4096).enumerate() {
        for (j, b) in p.iter_mut().enumerate() {
            *b = ((i * 7 + j / 64) % 251) as u8;
        }
    }
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(dev.dev_path())
            .unwrap();
        f.write_all(&pages).unwrap();
        f.sync_all().unwrap();
    }
    let dir = ScratchDir::new("lab-capture");
    let out = dir.join("dev.pages");
    let o = zmem(&[
        "capture",
        "--device",
        dev.dev_path().to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let data = std::fs::read(&out).unwrap();
    assert_eq!(data.len(), 4 << 20, "every slot of the 4 MiB device");
    assert_eq!(&data[..pages.len()], &pages[..]);
    let side = std::fs::read_to_string(format!("{}.json", out.display())).unwrap();
    assert!(side.contains("mm_stat at capture"), "{side}");
}
