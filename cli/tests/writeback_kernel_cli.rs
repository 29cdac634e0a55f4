//! `zmem bench writeback`'s kernel rows from the command line: SKIP with the
//! kernel's reason where its zram has no writeback (this machine's 6.18),
//! a comparison where it has (in the VM lab: `scripts/vm-checks/30-writeback.sh`,
//! or this test with `ZMEM_TEST_BACKING_DEV=/dev/X` naming an empty block
//! device), and the backing device's safety checks.

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use zmem_files::testutil::skip;

/// Run zmem, killed after `secs`.
fn zmem(args: &[&str], secs: u64) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run zmem");
    let (mut out, mut err) = (c.stdout.take().unwrap(), c.stderr.take().unwrap());
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        out.read_to_end(&mut v).map(|_| v)
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        err.read_to_end(&mut v).map(|_| v)
    });
    let t = Instant::now();
    let status = loop {
        if let Some(s) = c.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(secs) {
            let _ = c.kill();
            panic!("zmem {args:?} ran longer than {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: o.join().unwrap().unwrap(),
        stderr: e.join().unwrap().unwrap(),
    }
}

fn kernel_rows(args: &[&str]) -> serde_json::Value {
    let mut a = vec!["bench", "writeback", "--format", "json"];
    a.extend_from_slice(args);
    let o = zmem(&a, 300);
    assert!(
        o.status.success(),
        "{a:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    v[0]["kernel"].clone()
}

fn text(v: &serde_json::Value, k: &str) -> String {
    v[k].as_str().unwrap_or_default().to_string()
}

#[test]
fn kernel_rows_skip_with_the_kernels_reason_or_compare() {
    let backing = std::env::var("ZMEM_TEST_BACKING_DEV").ok();
    let mut args = vec![];
    if let Some(b) = &backing {
        args = vec!["--backing-dev", b.as_str()];
    }
    let k = kernel_rows(&args);
    let (verdict, reason) = (text(&k, "verdict"), text(&k, "reason"));
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(text(&k, "kernel"), release.trim());
    if !zmem_files::euid_is_root() {
        assert_eq!(verdict, "SKIP");
        assert!(reason.contains("not running as root"), "{reason}");
        return skip("SKIP kernel_rows_skip_with_the_kernels_reason_or_compare: not root");
    }
    if !std::path::Path::new("/sys/class/zram-control/hot_add").exists() {
        assert_eq!(verdict, "SKIP");
        assert!(reason.contains("zram"), "{reason}");
        return skip("SKIP kernel_rows_skip_with_the_kernels_reason_or_compare: no kernel zram");
    }
    let attrs: Vec<String> = k["attrs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    if !attrs.iter().any(|a| a == "backing_dev") {
        assert_eq!(verdict, "SKIP", "{k}");
        assert!(
            reason.contains("CONFIG_ZRAM_WRITEBACK") && reason.contains(release.trim()),
            "{reason}"
        );
        assert!(k["steps"].as_array().unwrap().is_empty());
        return skip(&format!(
            "SKIP kernel_rows_skip_with_the_kernels_reason_or_compare: compared only on a kernel with writeback ({reason})"
        ));
    }
    if backing.is_none() {
        assert_eq!(verdict, "SKIP", "{k}");
        assert!(reason.contains("--backing-dev"), "{reason}");
        return skip("SKIP kernel_rows_skip_with_the_kernels_reason_or_compare: this kernel has writeback; set ZMEM_TEST_BACKING_DEV=/dev/X (an empty block device) to compare");
    }
    assert_eq!(verdict, "PASS", "{k:#}");
    let steps = k["steps"].as_array().unwrap();
    assert!(steps.len() >= 10, "{k:#}");
    let last = &steps[steps.len() - 1];
    assert_eq!(last["kernel"]["bd_reads"], last["engine"]["bd_reads"]);
    assert!(last["kernel"]["bd_count"].as_u64().unwrap() > 0, "{last}");
}

#[test]
fn no_kernel_says_so() {
    let k = kernel_rows(&["--no-kernel"]);
    assert_eq!(text(&k, "verdict"), "SKIP");
    assert!(text(&k, "reason").contains("--no-kernel"), "{k}");
}

/// A loop device over a file with an ext4 superblock magic: refused (and
/// left untouched) without --force.
#[test]
fn a_block_device_holding_a_filesystem_is_refused() {
    let name = "a_block_device_holding_a_filesystem_is_refused";
    if !zmem_files::euid_is_root() {
        return skip(&format!("SKIP {name}: not root (needs a loop device)"));
    }
    let file = std::env::temp_dir().join(format!("zmem-wbk-loop-{}", std::process::id()));
    let mut img = vec![0u8; 8 << 20];
    img[0x438] = 0x53;
    img[0x439] = 0xef;
    std::fs::write(&file, &img).unwrap();
    let o = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(&file)
        .output();
    let dev = match o {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        o => {
            let _ = std::fs::remove_file(&file);
            return skip(&format!("SKIP {name}: losetup failed: {o:?}"));
        }
    };
    let o = zmem(
        &["bench", "writeback", "--backing-dev", &dev, "--no-kernel"],
        120,
    );
    let _ = Command::new("losetup").args(["-d", &dev]).status();
    let after = std::fs::read(&file).unwrap();
    let _ = std::fs::remove_file(&file);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains(&dev) && err.contains("ext2/3/4") && err.contains("--force"),
        "{err}"
    );
    assert!(after == img, "the device was written to");
}
