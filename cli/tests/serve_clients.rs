//! `zmem serve` driven by real NBD clients: nbdinfo, qemu-img, fio's nbd
//! engine, and a filesystem through nbdfuse. Each test skips (printing why)
//! when its tool is missing.

mod serve_common;

use std::process::Command;
use std::time::Duration;

use serve_common::*;

#[test]
fn serve_nbdinfo_shows_size_and_block_sizes() {
    if !have("nbdinfo") {
        zmem_files::testutil::skip(
            "SKIP serve_nbdinfo_shows_size_and_block_sizes: nbdinfo (libnbd-bin) not installed",
        );
        return;
    }
    let s = Served::start("48M", &[]);
    let out = run(Command::new("nbdinfo").arg(s.uri()));
    for want in [
        "export-size: 50331648",
        "block_size_minimum: 512",
        "block_size_preferred: 4096",
        "block_size_maximum: 33554432",
        "can_trim: true",
        "can_zero: true",
        "can_fast_zero: true",
        "can_flush: true",
        "can_multi_conn: true",
    ] {
        assert!(out.contains(want), "nbdinfo output lacks {want:?}:\n{out}");
    }
    let list = run(Command::new("nbdinfo").arg("--list").arg(s.uri()));
    assert!(list.contains("export=\"zmem\""), "{list}");
    let (ok, err) = s.stop();
    assert!(ok, "{err}");
    assert!(err.contains("final mm_stat"), "{err}");
}

#[test]
fn serve_qemu_img_convert_round_trip() {
    if !have("qemu-img") {
        zmem_files::testutil::skip(
            "SKIP serve_qemu_img_convert_round_trip: qemu-img (qemu-utils) not installed",
        );
        return;
    }
    let s = Served::start("32M", &[]);
    let img = s.path("in.img");
    let data = mixed_bytes(32 << 20, 42);
    std::fs::write(&img, &data).unwrap();
    run(Command::new("qemu-img")
        .args(["convert", "-n", "-f", "raw", "-O", "raw"])
        .arg(&img)
        .arg(s.uri()));
    let back = s.path("out.img");
    run(Command::new("qemu-img")
        .args(["convert", "-f", "raw", "-O", "raw"])
        .arg(s.uri())
        .arg(&back));
    let got = std::fs::read(&back).unwrap();
    assert_eq!(got.len(), data.len());
    assert!(
        got == data,
        "bytes differ after qemu-img convert into the export and back"
    );
    // The device holds it compressed: mm_stat orig_data_size counts the non-zero pages.
    let mm = run(Command::new(env!("CARGO_BIN_EXE_zmem"))
        .arg("ctl")
        .arg(&s.ctl)
        .arg("mm_stat"));
    let f: Vec<u64> = mm.split_whitespace().map(|v| v.parse().unwrap()).collect();
    assert!(f[0] > 0 && f[1] < f[0], "mm_stat {mm}");
    let (ok, err) = s.stop();
    assert!(ok, "{err}");
}

fn fio_nbd() -> Option<&'static str> {
    if !have("fio") {
        return Some("fio not installed");
    }
    let out = Command::new("fio").arg("--enghelp").output().ok()?;
    if !String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.trim() == "nbd")
    {
        return Some("this fio has no nbd engine");
    }
    None
}

#[test]
fn serve_fio_randwrite_then_randread_verify() {
    if let Some(why) = fio_nbd() {
        zmem_files::testutil::skip(&format!(
            "SKIP serve_fio_randwrite_then_randread_verify: {why}"
        ));
        return;
    }
    let s = Served::start("128M", &[]);
    let job = |extra: &[&str]| {
        let mut c = Command::new("fio");
        c.args([
            "--name=zmem",
            "--ioengine=nbd",
            "--rw=randwrite",
            "--bs=4k",
            "--iodepth=16",
            "--size=64M",
            "--verify=crc32c",
            "--randseed=1234",
            "--buffer_compress_percentage=60",
            "--refill_buffers",
        ])
        .arg(format!("--uri={}", s.uri()))
        .args(extra)
        // fio leaves verify state files in its working directory.
        .current_dir(&s.dir);
        c
    };
    // Write pass (no verify yet), then a separate run that only reads and
    // verifies what the first one wrote.
    let w = run(&mut job(&["--do_verify=0"]));
    assert!(w.contains("err= 0"), "{w}");
    let r = run(&mut job(&["--verify_only"]));
    assert!(r.contains("err= 0") && !r.contains("verify: bad"), "{r}");
    // And a mixed run with verify inline, two jobs on two connections.
    let m = run(Command::new("fio")
        .args([
            "--name=mixed",
            "--ioengine=nbd",
            "--rw=randwrite",
            "--bs=16k",
            "--iodepth=8",
            "--size=32M",
            "--offset_increment=48M",
            "--numjobs=2",
            "--verify=crc32c",
            "--do_verify=1",
        ])
        .arg(format!("--uri={}", s.uri()))
        .current_dir(&s.dir));
    assert!(m.contains("err= 0") && !m.contains("verify: bad"), "{m}");
    let (ok, err) = s.stop();
    assert!(ok, "{err}");
}

#[test]
fn serve_filesystem_round_trip_through_nbdfuse() {
    let name = "serve_filesystem_round_trip_through_nbdfuse";
    for t in ["nbdfuse", "mkfs.ext4", "e2fsck", "fusermount3"] {
        if !have(t) && Command::new(t).arg("-V").output().is_err() {
            zmem_files::testutil::skip(&format!("SKIP {name}: {t} not installed"));
            return;
        }
    }
    if !is_root() {
        zmem_files::testutil::skip(&format!("SKIP {name}: mounting needs root"));
        return;
    }
    if !exists(std::path::Path::new("/dev/fuse"))
        || !exists(std::path::Path::new("/dev/loop-control"))
    {
        zmem_files::testutil::skip(&format!("SKIP {name}: no /dev/fuse or /dev/loop-control"));
        return;
    }
    let s = Served::start("128M", &[]);
    let fuse_dir = s.path("fuse");
    let mnt = s.path("mnt");
    std::fs::create_dir_all(&fuse_dir).unwrap();
    std::fs::create_dir_all(&mnt).unwrap();
    let fuse = Command::new("nbdfuse")
        .arg(&fuse_dir)
        .arg(s.uri())
        .spawn()
        .unwrap();
    // Whatever happens below (a failed assertion included), the loop mount and
    // the FUSE mount are taken down and nbdfuse is reaped.
    let mut guard = MountGuard {
        mnt: mnt.clone(),
        fuse_dir: fuse_dir.clone(),
        fuse,
    };
    let file = fuse_dir.join("nbd");
    let mut ready = false;
    for _ in 0..200 {
        if std::fs::metadata(&file)
            .map(|m| m.len() == 128 << 20)
            .unwrap_or(false)
        {
            ready = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if !ready {
        zmem_files::testutil::skip(&format!(
            "SKIP {name}: nbdfuse did not mount (FUSE unavailable in this environment?)"
        ));
        return;
    }
    run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&file));
    let mounted = output_within(
        Command::new("mount")
            .args(["-o", "loop"])
            .arg(&file)
            .arg(&mnt),
        COMMAND_LIMIT,
    );
    if !mounted.status.success() {
        zmem_files::testutil::skip(&format!(
            "SKIP {name}: loop mount refused: {}",
            String::from_utf8_lossy(&mounted.stderr).trim()
        ));
        return;
    }
    // A tree of files: text, zeros, random, nested directories.
    let mut files = Vec::new();
    for d in 0..4 {
        for f in 0..8 {
            let rel = format!("d{d}/sub{}/f{f}.bin", f % 2);
            let data = mixed_bytes(((d * 8 + f) % 5 + 1) * 50_000, (d * 8 + f) as u64 + 1);
            let p = mnt.join(&rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, &data).unwrap();
            files.push((rel, data));
        }
    }
    let um = |m: &std::path::Path| run(Command::new("umount").arg(m));
    um(&mnt);
    run(Command::new("e2fsck").args(["-f", "-n"]).arg(&file));
    run(Command::new("mount")
        .args(["-o", "loop"])
        .arg(&file)
        .arg(&mnt));
    for (rel, data) in &files {
        assert!(
            std::fs::read(mnt.join(rel)).unwrap() == *data,
            "{rel} differs after remount"
        );
    }
    um(&mnt);
    guard.unmount_fuse();
    let (ok, err) = s.stop();
    assert!(ok, "{err}");
}

/// The filesystem test's mounts: a loop mount at `mnt` of the file that
/// nbdfuse exposes in `fuse_dir`.
struct MountGuard {
    mnt: std::path::PathBuf,
    fuse_dir: std::path::PathBuf,
    fuse: std::process::Child,
}

impl MountGuard {
    /// Unmount the FUSE directory (nbdfuse then exits) and reap nbdfuse.
    fn unmount_fuse(&mut self) {
        let _ = output_within(
            Command::new("fusermount3").arg("-u").arg(&self.fuse_dir),
            Duration::from_secs(30),
        );
        if wait_exit(&mut self.fuse, Duration::from_secs(30)).is_none() {
            let _ = self.fuse.kill();
            let _ = self.fuse.wait();
        }
    }
}

impl Drop for MountGuard {
    fn drop(&mut self) {
        if let Ok(None) = self.fuse.try_wait() {
            // Lazy unmounts: they cannot hang on a dead server.
            let _ = Command::new("umount").arg("-l").arg(&self.mnt).output();
            let _ = Command::new("fusermount3")
                .arg("-u")
                .arg("-z")
                .arg(&self.fuse_dir)
                .output();
            let _ = self.fuse.kill();
            let _ = self.fuse.wait();
        }
    }
}

fn wait_exit(child: &mut std::process::Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}
