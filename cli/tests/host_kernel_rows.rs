//! The kernel rows of `zmem bench` go through the host layer: each zram device
//! they hot-add keeps a crash journal while it exists, so a bench killed with
//! SIGKILL leaves nothing that `zmem trial --recover` cannot remove (root only).

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use zmem_files::testutil::ScratchDir;

/// 48 pages of text, zeros and noise.
fn corpus(dir: &ScratchDir) -> std::path::PathBuf {
    let mut data = Vec::new();
    let mut x = 0x1234_5678_9abc_def1u64;
    for i in 0..48u32 {
        for j in 0..512u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let w = match i % 3 {
                0 => 0,
                1 => u64::from(j % 7) * 0x0101_0101,
                _ => x,
            };
            data.extend_from_slice(&w.to_le_bytes());
        }
    }
    let p = dir.join("corpus");
    std::fs::write(&p, data).unwrap();
    p
}

#[test]
fn a_bench_killed_while_its_kernel_device_exists_is_recovered() {
    if let Err(e) = zmem_host::HotDevice::available() {
        zmem_files::testutil::skip(&format!(
            "SKIP a_bench_killed_while_its_kernel_device_exists_is_recovered: {e}"
        ));
        return;
    }
    let dir = ScratchDir::new("host-kernel-rows");
    let c = corpus(&dir);
    for n in [1, 2, 3] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_zmem"))
            .args(["bench", "device", c.to_str().unwrap(), "--algo", "lz4"])
            .args(["--requests", "50", "--format", "json"])
            .env("ZMEM_TEST_PAUSE_AT", n.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            use std::io::BufRead;
            for l in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        let want = format!("zmem: paused after journal record {n}");
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut hit = false;
        while !hit && Instant::now() < deadline {
            if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
                hit = l == want;
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();
        assert!(hit, "@{n}: the bench never paused");
        // The devices this bench journaled (`PID.zramN.journal`), each with its sysfs
        // directory's inode: other work may add, remove and renumber devices meanwhile.
        let pid = child.id();
        let mine: Vec<(String, u64)> = std::fs::read_dir("/run/zmem-trial")
            .unwrap()
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let dev = name
                    .strip_prefix(&format!("{pid}."))?
                    .strip_suffix(".journal")?
                    .to_string();
                let ino = std::fs::metadata(format!("/sys/block/{dev}")).ok()?.ino();
                Some((dev, ino))
            })
            .collect();
        assert!(!mine.is_empty(), "@{n}: the killed bench left no device");
        assert!(Path::new("/run/zmem-trial").is_dir());
        let out = Command::new(env!("CARGO_BIN_EXE_zmem"))
            .args(["trial", "--recover"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("reset and removed zram"),
            "@{n}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let left: Vec<&String> = mine
            .iter()
            .filter(|(dev, ino)| {
                std::fs::metadata(format!("/sys/block/{dev}")).is_ok_and(|m| m.ino() == *ino)
            })
            .map(|(dev, _)| dev)
            .collect();
        assert!(left.is_empty(), "@{n}: {left:?} not removed by --recover");
    }
}
