//! `zmem serve --ublk` as a user runs it: the refusals (flags that conflict,
//! bad sizes and queue options, no ublk driver) everywhere, and, where
//! /dev/ublk-control exists and we are root, the block device itself: data
//! written to /dev/ublkbN reads back, the control socket shows it, and
//! SIGTERM deletes the device. The host has no ublk driver: that part prints
//! SKIP here and runs in the VM lab's 7.3 guest (scripts/vm-checks/60-serve-ublk.sh).

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use zmem_files::testutil::{skip, ScratchDir};

/// `zmem ARGS…`, killed (and the test failed) if it runs over 20 s: a
/// refusal that is not one would otherwise serve forever.
fn zmem(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run zmem");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(out) => out.expect("wait for zmem"),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("zmem {args:?} still running after 20 s");
        }
    }
}

fn refused(args: &[&str]) -> String {
    let out = zmem(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} was accepted: {err}");
    assert!(out.stdout.is_empty(), "{args:?} printed {:?}", out.stdout);
    err
}

fn driver() -> bool {
    std::path::Path::new("/dev/ublk-control").exists()
}

#[test]
fn ublk_conflicts_with_listen_and_its_flags_need_it() {
    let e = refused(&[
        "serve",
        "--ublk",
        "--listen",
        "unix:/tmp/x.sock",
        "--size",
        "1M",
    ]);
    assert!(e.contains("--listen") && e.contains("--ublk"), "{e}");
    for flag in [
        ["--ublk-id", "3"],
        ["--queues", "2"],
        ["--queue-depth", "8"],
    ] {
        let e = refused(&[
            "serve",
            "--listen",
            "unix:/tmp/x.sock",
            "--size",
            "1M",
            flag[0],
            flag[1],
        ]);
        assert!(e.contains(flag[0]) && e.contains("--ublk"), "{flag:?}: {e}");
    }
    let e = refused(&["serve", "--ublk", "--size", "1M", "--ublk-recover"]);
    assert!(e.contains("--ublk-id"), "{e}");
    // --ublk-recover is --recover's old name: under --listen it recovers
    // an NBD server's store, and a made-up export has none.
    let e = refused(&[
        "serve",
        "--listen",
        "unix:/tmp/x.sock",
        "--size",
        "1M",
        "--export",
        "serve-ublk-test-none",
        "--ublk-recover",
    ]);
    assert!(e.contains("nothing to recover"), "{e}");
    // Neither transport.
    let e = refused(&["serve", "--size", "1M"]);
    assert!(e.contains("--listen"), "{e}");
}

#[test]
fn bad_sizes_and_queue_options_are_refused_before_anything_is_made() {
    for (args, flag) in [
        (&["--size", "0"][..], "--size"),
        (&["--size", "100"][..], "--size"),
        (&["--size", "1M", "--queue-depth", "0"][..], "--queue-depth"),
        (
            &["--size", "1M", "--queue-depth", "5000"][..],
            "--queue-depth",
        ),
        (&["--size", "1M", "--queues", "0"][..], "--queues"),
    ] {
        let mut a = vec!["serve", "--ublk", "--no-ctl"];
        a.extend_from_slice(args);
        let e = refused(&a);
        assert!(e.contains(flag), "{a:?}: {e}");
    }
}

#[test]
fn no_driver_or_no_root_is_refused_with_the_fix() {
    if driver() && zmem_files::euid_is_root() {
        skip("SKIP no_driver_or_no_root_is_refused_with_the_fix: the ublk driver is loaded and we are root (nothing to refuse)");
        return;
    }
    let e = refused(&["serve", "--ublk", "--size", "64M", "--no-ctl"]);
    let want = if zmem_files::euid_is_root() {
        "modprobe ublk_drv"
    } else {
        "needs root"
    };
    assert!(e.contains(want), "{e}");
}

/// The first stdout line of a server, within a time limit.
fn first_line(out: std::process::ChildStdout) -> Option<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(out).read_line(&mut line);
        let _ = tx.send(line);
    });
    rx.recv_timeout(Duration::from_secs(60)).ok()
}

#[test]
fn ublk_device_serves_the_engine_and_sigterm_deletes_it() {
    if !driver() || !zmem_files::euid_is_root() {
        skip("SKIP ublk_device_serves_the_engine_and_sigterm_deletes_it: needs root and /dev/ublk-control (modprobe ublk_drv); the VM lab's serve-ublk check runs it");
        return;
    }
    let dir = ScratchDir::new("serve-ublk");
    let ctl = dir.path().join("dev.ctl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(["serve", "--ublk", "--size", "16M", "--queues", "1", "--ctl"])
        .arg(&ctl)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run zmem serve");
    let line = first_line(child.stdout.take().unwrap()).unwrap_or_default();
    let Some(dev) = line.trim().strip_prefix("serving ").map(str::to_owned) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("no 'serving /dev/ublkbN' line: {line:?}");
    };
    assert!(dev.starts_with("/dev/ublkb"), "{dev}");
    let page: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
    {
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&dev)
            .unwrap();
        f.seek(SeekFrom::Start(1 << 20)).unwrap();
        f.write_all(&page).unwrap();
        f.sync_all().unwrap();
    }
    // Read through a fresh open after dropping the page cache's copy.
    let _ = Command::new("blockdev")
        .args(["--flushbufs", &dev])
        .status();
    let mut back = vec![0u8; 4096];
    let mut f = std::fs::File::open(&dev).unwrap();
    f.seek(SeekFrom::Start(1 << 20)).unwrap();
    f.read_exact(&mut back).unwrap();
    drop(f);
    assert_eq!(back, page);
    let mm = zmem(&["ctl", ctl.to_str().unwrap(), "mm_stat"]);
    let text = String::from_utf8_lossy(&mm.stdout).into_owned();
    let orig: u64 = text.split_whitespace().next().unwrap().parse().unwrap();
    assert!(orig >= 4096, "mm_stat: {text}");
    let pid = child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("zmem serve --ublk still running 30 s after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!std::path::Path::new(&dev).exists(), "{dev} left behind");
}
