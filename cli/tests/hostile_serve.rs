//! Hostile input, round 3 (issue 35), `zmem serve`'s part: a backing device
//! or file is claimed as the kernel claims it (never a mounted device, never
//! a file holding data, a symbolic link said), zbud stores incompressible
//! pages, names, sizes and addresses are checked, a control request without
//! a reply is a timeout, a stopped server costs a scrape little, and SIGTERM
//! under heavy writers ends within seconds. Every wait is bounded.

mod serve_common;

use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serve_common::{
    exists, have, is_root, output_within, spawn_serve, tmpdir, wait_within, Served,
};
use zmem_files::testutil::{skip, ScratchDir};

const LIMIT: Duration = Duration::from_secs(60);

/// `zmem serve --no-ctl ARGS`, which must fail within [`LIMIT`]; its stderr.
fn refused(args: &[&str]) -> String {
    let out = output_within(
        Command::new(env!("CARGO_BIN_EXE_zmem"))
            .args(["serve", "--no-ctl"])
            .args(args),
        LIMIT,
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} was accepted: {err}");
    err
}

/// `zmem serve ARGS` started (its stdout said it listens), stderr to a file.
fn spawn(args: &[&str], stderr: &Path) -> Child {
    spawn_serve(args, Some(stderr)).0
}

fn sigterm(child: &Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
}

/// A file of `blocks` pages of text, as a user's data.
fn precious(path: &Path, blocks: usize) -> Vec<u8> {
    let data: Vec<u8> = b"precious user data, block after block\n"
        .iter()
        .copied()
        .cycle()
        .take(blocks * 4096)
        .collect();
    std::fs::write(path, &data).unwrap();
    data
}

#[test]
fn a_backing_file_holding_data_is_refused_even_through_a_symlink() {
    let d = tmpdir("h35-file");
    let (file, link) = (d.join("data"), d.join("link"));
    let kept = precious(&file, 292);
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let sock = format!("unix:{}", d.join("s").display());
    for mode in ["zram", "zswap"] {
        let err = refused(
            &[
                "--size",
                "16M",
                "--mode",
                mode,
                "--backing-dev",
                link.to_str().unwrap(),
                "--listen",
                &sock,
                "--maint",
            ]
            .into_iter()
            .filter(|a| mode == "zram" || *a != "--maint")
            .collect::<Vec<_>>(),
        );
        assert!(
            err.contains("a symbolic link to") && err.contains("data") && err.contains("--force"),
            "{mode}: {err}"
        );
    }
    assert!(
        std::fs::read(&file).unwrap() == kept,
        "the file was changed"
    );
    // Data beyond the first MiB counts too.
    let f = std::fs::File::create(&file).unwrap();
    f.set_len(8 << 20).unwrap();
    f.write_all_at(b"x", 6 << 20).unwrap();
    let err = refused(&[
        "--size",
        "16M",
        "--backing-dev",
        file.to_str().unwrap(),
        "--listen",
        &sock,
    ]);
    assert!(err.contains("offset 6291456"), "{err}");
}

#[test]
fn a_clean_backing_file_is_claimed_and_not_shared() {
    let d = tmpdir("h35-clean");
    let file = d.join("clean");
    std::fs::File::create(&file)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let s = Served::start("16M", &["--backing-dev", file.to_str().unwrap()]);
    let sock = format!("unix:{}", d.join("s2").display());
    let err = refused(&[
        "--size",
        "16M",
        "--backing-dev",
        file.to_str().unwrap(),
        "--listen",
        &sock,
    ]);
    assert!(
        err.contains("in use"),
        "a second server on the same file: {err}"
    );
    let (ok, err) = s.stop();
    assert!(
        ok && err.contains("regular file") && err.contains("locked"),
        "{err}"
    );
}

/// A loop device over a file in a scratch directory, detached on drop
/// (after unmounting what the test mounted).
struct Loop {
    dev: String,
    mnt: PathBuf,
    _dir: ScratchDir,
}

impl Loop {
    fn new() -> Option<Loop> {
        let dir = ScratchDir::new("h35-loop");
        let img = dir.join("img");
        std::fs::File::create(&img)
            .unwrap()
            .set_len(64 << 20)
            .unwrap();
        let out = output_within(
            Command::new("losetup").args(["--find", "--show"]).arg(&img),
            LIMIT,
        );
        if !out.status.success() {
            return None;
        }
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let mnt = dir.join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        Some(Loop {
            dev,
            mnt,
            _dir: dir,
        })
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg(&self.mnt)
            .stderr(Stdio::null())
            .status();
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

#[test]
fn a_mounted_or_formatted_block_device_is_refused() {
    if !is_root() || !have("losetup") || !have("mkfs.ext4") {
        return skip("SKIP a_mounted_or_formatted_block_device_is_refused: needs root, losetup and mkfs.ext4");
    }
    let Some(lo) = Loop::new() else {
        return skip("SKIP a_mounted_or_formatted_block_device_is_refused: losetup failed");
    };
    let d = tmpdir("h35-blk");
    let sock = format!("unix:{}", d.join("s").display());
    let mkfs = output_within(Command::new("mkfs.ext4").args(["-q", "-F", &lo.dev]), LIMIT);
    assert!(mkfs.status.success(), "{mkfs:?}");
    let mount = output_within(Command::new("mount").arg(&lo.dev).arg(&lo.mnt), LIMIT);
    if !mount.status.success() {
        return skip("SKIP a_mounted_or_formatted_block_device_is_refused: mount failed");
    }
    std::fs::write(lo.mnt.join("f"), b"mine").unwrap();
    let err = refused(&[
        "--size",
        "16M",
        "--backing-dev",
        &lo.dev,
        "--listen",
        &sock,
        "--maint",
    ]);
    assert!(err.contains("is mounted"), "{err}");
    let umount = output_within(Command::new("umount").arg(&lo.mnt), LIMIT);
    assert!(umount.status.success(), "{umount:?}");
    let err = refused(&["--size", "16M", "--backing-dev", &lo.dev, "--listen", &sock]);
    assert!(
        err.contains("ext2/3/4 filesystem") && err.contains("--force"),
        "{err}"
    );
    // Held by another (an O_EXCL open elsewhere, as a mount holds it): EBUSY.
    let stderr = d.join("err");
    let mut held = spawn(
        &[
            "--size",
            "16M",
            "--backing-dev",
            &lo.dev,
            "--force",
            "--no-ctl",
            "--listen",
            &sock,
        ],
        &stderr,
    );
    let sock2 = format!("unix:{}", d.join("s2").display());
    let err = refused(&[
        "--size",
        "16M",
        "--backing-dev",
        &lo.dev,
        "--force",
        "--listen",
        &sock2,
    ]);
    assert!(err.contains("in use"), "{err}");
    sigterm(&held);
    wait_within(&mut held, LIMIT, "zmem serve after SIGTERM");
}

/// A page that compresses to nothing (xorshift bytes).
fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn zbud_stores_incompressible_pages() {
    let s = Served::start("16M", &["--allocator", "zbud"]);
    let mut c = zmem_nbd::Client::connect(&s.sock, "zmem").unwrap();
    let data = random_bytes(1 << 20, 35);
    assert_eq!(c.write(0, &data).unwrap(), 0, "the write failed (EIO = 5)");
    assert_eq!(c.read(0, 1 << 20).unwrap().unwrap(), data);
    drop(c);
    let (ok, err) = s.stop();
    assert!(ok, "{err}");
}

#[test]
fn names_sizes_and_addresses_are_checked() {
    let d = tmpdir("h35-args");
    let sock = format!("unix:{}", d.join("s").display());
    let err = refused(&["--size", "4", "--listen", &sock]);
    assert!(err.contains("below one page"), "{err}");
    for bad in ["../evil", "a/b", "..", "", "x y"] {
        let err = refused(&["--size", "16M", "--export", bad, "--listen", &sock]);
        assert!(err.contains("--export"), "{bad:?}: {err}");
    }
    let missing = d.join("no/such/dir");
    let err = refused(&[
        "--size",
        "16M",
        "--listen",
        &format!("unix:{}/x.sock", missing.display()),
    ]);
    assert!(err.contains("does not exist"), "{err}");
    assert!(!exists(&d.join("no")), "the directory tree was created");
    let err = refused(&["--size", "16M", "--listen", "tcp:127.0.0.1:0"]);
    assert!(
        err.contains("--allow-tcp") && err.contains("any local user"),
        "{err}"
    );
    let stderr = d.join("err");
    let mut child = spawn(
        &[
            "--size",
            "16M",
            "--no-ctl",
            "--listen",
            "tcp:127.0.0.1:0",
            "--allow-tcp",
        ],
        &stderr,
    );
    sigterm(&child);
    wait_within(&mut child, LIMIT, "zmem serve after SIGTERM");
    let err = std::fs::read_to_string(&stderr).unwrap();
    assert!(err.contains("every local user can read and write"), "{err}");
}

#[test]
fn a_control_request_without_a_reply_is_a_timeout_not_eagain() {
    let d = tmpdir("h35-ctl");
    let path = d.join("slow.ctl");
    let l = UnixListener::bind(&path).unwrap();
    // Accepts, takes the request, never answers (a server busy for longer).
    let t = std::thread::spawn(move || {
        let s = l.accept().map(|(s, _)| s);
        std::thread::sleep(Duration::from_secs(4));
        drop(s);
    });
    let start = Instant::now();
    let out = output_within(
        Command::new(env!("CARGO_BIN_EXE_zmem"))
            .args(["ctl", "--timeout", "1s"])
            .arg(&path)
            .args(["writeback", "idle"]),
        LIMIT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("ETIMEDOUT") && err.contains("was sent") && !err.contains("EAGAIN"),
        "{err}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    t.join().unwrap();
}

/// Second pass: `zmem ctl` pointed at a socket that is not zmem's. A server that streams
/// without end is cut at the reply bound, one that answers bytes that are not a reply, or
/// closes at once, is an error naming why; each within a second or two, nothing hangs.
#[test]
fn ctl_against_a_socket_that_is_not_zmem_s_is_a_bounded_error() {
    let d = tmpdir("h35-foreign");
    type Talk = fn(std::os::unix::net::UnixStream);
    let cases: [(&str, Talk, &str); 3] = [
        (
            "endless",
            |mut s| {
                let chunk = vec![b'x'; 1 << 16];
                while std::io::Write::write_all(&mut s, &chunk).is_ok() {}
            },
            "reply longer than",
        ),
        (
            "garbage",
            |mut s| {
                let _ = std::io::Read::read(&mut s, &mut [0u8; 4096]);
                let _ = std::io::Write::write_all(&mut s, b"\xff\xfe\x00garbage\n");
            },
            "not UTF-8",
        ),
        ("closes", |s| drop(s), "control socket"),
    ];
    for (name, talk, want) in cases {
        let talk: Talk = talk;
        let path = d.join(&format!("{name}.ctl"));
        let l = UnixListener::bind(&path).unwrap();
        let t = std::thread::spawn(move || {
            if let Ok((s, _)) = l.accept() {
                talk(s);
            }
        });
        let start = Instant::now();
        let out = output_within(
            Command::new(env!("CARGO_BIN_EXE_zmem"))
                .arg("ctl")
                .arg(&path)
                .arg("mm_stat"),
            LIMIT,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}: {err}");
        assert!(err.contains(want), "{name}: {err}");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{name}: {:?}",
            start.elapsed()
        );
        t.join().unwrap();
    }
}

/// Second pass: a `--ctl` or `--listen unix:` path that exists as a regular file or a
/// symbolic link is refused, the file and the link's target untouched (only a stale socket
/// is replaced).
#[test]
fn a_socket_path_that_is_a_file_or_a_link_is_refused() {
    let d = tmpdir("h35-sockpath");
    let target = d.join("target");
    std::fs::write(&target, b"precious").unwrap();
    let file = d.join("file.sock");
    std::fs::write(&file, b"precious").unwrap();
    let link = d.join("link.sock");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let free = format!("unix:{}", d.join("free.sock").display());
    for p in [&file, &link] {
        let p = p.to_str().unwrap();
        for args in [
            vec![
                "--size",
                "16M",
                "--listen",
                &format!("unix:{p}"),
                "--no-ctl",
            ],
            vec!["--size", "16M", "--listen", &free, "--ctl", p],
        ] {
            let out = output_within(
                Command::new(env!("CARGO_BIN_EXE_zmem"))
                    .arg("serve")
                    .args(&args),
                LIMIT,
            );
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{args:?} served");
            assert!(
                err.contains("exists and is not a socket"),
                "{args:?}: {err}"
            );
        }
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"precious");
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn stopped_servers_cost_a_scrape_little() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../ops/admin/tests/fixtures/15-policy/root");
    let (_scratch, root) = ScratchDir::with_copy("h35-scrape", &fixture);
    std::fs::create_dir_all(root.join("run/zmem")).unwrap();
    // Three servers that accept connections (the kernel's backlog) and never answer,
    // as a SIGSTOPped `zmem serve`.
    let held: Vec<UnixListener> = (0..3)
        .map(|i| UnixListener::bind(root.join(format!("run/zmem/stopped{i}.ctl"))).unwrap())
        .collect();
    let start = Instant::now();
    let out = output_within(
        Command::new(env!("CARGO_BIN_EXE_zmem"))
            .args(["exporter", "--once", "--root"])
            .arg(&root),
        LIMIT,
    );
    let took = start.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(took < Duration::from_secs(4), "the scrape took {took:?}");
    assert!(
        text.contains("zmem_zram_orig_data_bytes{device=\"zram0\""),
        "{text}"
    );
    assert!(text.contains("zmem_exporter_read_errors 3"), "{text}");
    drop(held);
}

/// Text of pseudo-random words: slow to compress at zstd's highest levels.
fn words(len: usize, seed: u64) -> Vec<u8> {
    const W: [&str; 8] = [
        "swap ", "page ", "zram ", "slot ", "idle ", "huge ", "pool ", "zstd ",
    ];
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(W[(x % 8) as usize].as_bytes());
        v.extend_from_slice(format!("{} ", x % 1000).as_bytes());
    }
    v.truncate(len);
    v
}

#[test]
fn sigterm_under_heavy_writers_ends_within_seconds() {
    let data = std::sync::Arc::new(words(32 << 20, 35));
    let d = tmpdir("h35-term");
    let sock = d.join("s");
    let stderr = d.join("err");
    let mut child = spawn(
        &[
            "--size",
            "512M",
            "--algo",
            "zstd",
            "--params",
            "level=22",
            "--no-ctl",
            "--listen",
            &format!("unix:{}", sock.display()),
        ],
        &stderr,
    );
    let writers: Vec<_> = (0..16)
        .map(|i| {
            let (sock, data) = (sock.clone(), data.clone());
            std::thread::spawn(move || {
                let Ok(mut c) = zmem_nbd::Client::connect(&sock, "zmem") else {
                    return;
                };
                let _ = c.write(i * (32 << 20), &data);
            })
        })
        .collect();
    // Every 32 MiB request read whole and running (each takes tens of seconds at level 22).
    std::thread::sleep(Duration::from_secs(4));
    let start = Instant::now();
    sigterm(&child);
    wait_within(&mut child, LIMIT, "zmem serve after SIGTERM");
    let took = start.elapsed();
    eprintln!("SIGTERM to exit: {took:?}");
    for w in writers {
        let _ = w.join();
    }
    assert!(
        took < Duration::from_secs(6),
        "SIGTERM took {took:?} (documented: about 2 s): {}",
        std::fs::read_to_string(&stderr).unwrap_or_default()
    );
}

#[test]
fn one_client_cannot_take_every_connection() {
    let s = Served::start("16M", &["--max-connections-per-client", "4"]);
    let mut held: Vec<zmem_nbd::Client> = (0..4)
        .map(|_| zmem_nbd::Client::connect(&s.sock, "zmem").unwrap())
        .collect();
    assert!(
        zmem_nbd::Client::connect(&s.sock, "zmem").is_err(),
        "a fifth idle connection of the same user was served"
    );
    held.pop();
    // A slot of its own is free again once one of its connections ends.
    let deadline = Instant::now() + LIMIT;
    while zmem_nbd::Client::connect(&s.sock, "zmem").is_err() {
        assert!(Instant::now() < deadline, "no connection after one ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(held);
    let (ok, err) = s.stop();
    assert!(ok, "{err}");
}

/// `KEY:` of /proc/PID/status, in KiB.
fn status_kib(pid: u32, key: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let l = s.lines().find(|l| l.starts_with(key)).unwrap();
    l.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A READ request's header (magic, flags, type, cookie, offset, length).
fn read_request(cookie: u64, offset: u64, len: u32) -> Vec<u8> {
    use zmem_nbd::proto::{CMD_READ, REQUEST_MAGIC};
    let mut h = REQUEST_MAGIC.to_be_bytes().to_vec();
    h.extend_from_slice(&0u16.to_be_bytes());
    h.extend_from_slice(&CMD_READ.to_be_bytes());
    h.extend_from_slice(&cookie.to_be_bytes());
    h.extend_from_slice(&offset.to_be_bytes());
    h.extend_from_slice(&len.to_be_bytes());
    h
}

/// Finding 15, the part left open: unread replies were bounded per connection only, so 16
/// clients that each ask for 32 MiB READs and read nothing held 16 × 32 MiB. Now all
/// connections share `--max-inflight-total`: the server's peak memory stays near it, a small
/// request of another client is still served at once, and the hogs are cut at their reply
/// deadline.
#[test]
fn unread_replies_of_many_clients_share_one_budget() {
    let s = Served::start(
        "64M",
        &[
            "--max-connections-per-client",
            "32",
            "--max-inflight-total",
            "64M",
            "--threads",
            "4",
            "--reply-timeout",
            "4s",
            "-v",
        ],
    );
    let pid = s.child.id();
    let before = status_kib(pid, "VmRSS:");
    let mut hogs = Vec::new();
    for c in 0..16u64 {
        let mut h = zmem_nbd::Client::connect(&s.sock, "zmem").unwrap();
        for i in 0..4 {
            let r = read_request(c * 4 + i, 0, 32 << 20);
            std::io::Write::write_all(h.stream(), &r).unwrap();
        }
        hogs.push(h);
    }
    std::thread::sleep(Duration::from_millis(2500));
    let grown_mib = status_kib(pid, "VmHWM:").saturating_sub(before) / 1024;
    assert!(
        grown_mib < 200,
        "16 clients that read no replies grew the server by {grown_mib} MiB (budget 64 MiB)"
    );
    // A swap-sized request of someone else is served while the budget is taken.
    let mut other = zmem_nbd::Client::connect(&s.sock, "zmem").unwrap();
    other
        .stream()
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let t = Instant::now();
    assert!(other.read(0, 4096).expect("a 4 KiB read answered").is_ok());
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    let deadline = Instant::now() + LIMIT;
    while !std::fs::read_to_string(s.path("stderr"))
        .unwrap_or_default()
        .contains("reply not taken in time")
    {
        assert!(Instant::now() < deadline, "the hogs were never cut");
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(hogs);
    let (ok, err) = s.stop();
    assert!(ok, "{err}");
}
