//! `zmem policy --once` on fixture trees.

mod serve_common;

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serve_common::spawn_serve;
use zmem_files::testutil::ScratchDir;

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ops/admin/tests/fixtures")
        .join(case)
}

fn zmem(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn once_runs_one_round_and_remembers_backoff() {
    let (_scratch, root) = ScratchDir::with_copy("cli-policy", &fixture("15-policy/root"));
    let r = root.to_str().unwrap();
    let (ok, out, err) = zmem(&["policy", "--once", "--root", r, "--now", "1700000000"]);
    assert!(ok, "{err}");
    assert!(
        out.contains(
            "2023-11-14T22:13:20Z zram0: write recompress type=huge_idle threshold=1024: ok"
        ),
        "{out}"
    );
    assert!(
        out.contains("zram0: write writeback huge_idle: ok"),
        "{out}"
    );
    let log = fs::read_to_string(root.join("zmem-fixture.log")).unwrap();
    assert!(
        log.contains("write /sys/block/zram0/writeback_limit_enable 1"),
        "{log}"
    );
    // The next round, 1 minute later, backs off (state kept under run/zmem in the tree).
    let (ok, out, _) = zmem(&["policy", "--once", "--root", r, "--now", "1700000060"]);
    assert!(ok);
    assert!(
        out.contains("recompression backs off for 29 min")
            && out.contains("writeback backs off for 9 min"),
        "{out}"
    );
}

/// The state of a device that is gone is dropped at the next round, so a
/// device hot-added later under its name does not inherit its backoffs or
/// its daily writeback count; the devices still there keep theirs.
#[test]
fn a_removed_device_s_state_is_forgotten() {
    let (_scratch, root) = ScratchDir::with_copy("cli-policy-gone", &fixture("15-policy/root"));
    let r = root.to_str().unwrap();
    let (ok, _, err) = zmem(&["policy", "--once", "--root", r, "--now", "1700000000"]);
    assert!(ok, "{err}");
    let state = root.join("run/zmem/policy.state");
    let mut text = fs::read_to_string(&state).unwrap();
    assert!(text.contains("zram0\tlast_writeback\t1700000000"), "{text}");
    text.push_str("zram7\tlast_writeback\t1699990000\nzram7\twritten\t1699990000\t4096\n");
    fs::write(&state, text).unwrap();
    let (ok, out, err) = zmem(&["policy", "--once", "--root", r, "--now", "1700000060"]);
    assert!(ok, "{err}");
    assert!(out.contains("writeback backs off for 9 min"), "{out}");
    let text = fs::read_to_string(&state).unwrap();
    assert!(!text.contains("zram7"), "{text}");
    assert!(text.contains("zram0\tlast_writeback\t1700000000"), "{text}");
}

#[test]
fn dry_run_writes_nothing() {
    let (_scratch, root) = ScratchDir::with_copy("cli-policy-dry", &fixture("15-policy/root"));
    let (ok, out, err) = zmem(&[
        "policy",
        "--once",
        "--dry-run",
        "--root",
        root.to_str().unwrap(),
        "--now",
        "1700000000",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("write writeback huge_idle: ok (dry run)"),
        "{out}"
    );
    assert!(!root.join("zmem-fixture.log").exists(), "dry run wrote");
}

#[test]
fn bad_policy_key_is_reported_with_its_line() {
    let dir = ScratchDir::new("cli-policy-bad");
    let conf = dir.join("p.conf");
    fs::write(&conf, "[policy]\nwriteback-backoff = 10 minutes\n").unwrap();
    let (ok, _, err) = zmem(&[
        "policy",
        "--once",
        "--config",
        conf.to_str().unwrap(),
        "--root",
        dir.path().to_str().unwrap(),
    ]);
    assert!(
        !ok && err.contains("p.conf:2: writeback-backoff must be a duration"),
        "{err}"
    );
}

/// A stand-in `zmem serve` control socket that records the writes it gets.
fn recording_ctl(path: &Path, writes: std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Write};
    let l = std::os::unix::net::UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        let attrs = [
            (
                "mm_stat",
                "104857600 26214400 28311552 0 28311552 0 0 100 100",
            ),
            ("disksize", "1073741824"),
            ("comp_algorithm", "lz4 [zstd] "),
            ("recomp_algorithm", "#1: lz4 [zstd] deflate "),
            ("backing_dev", "/var/lib/zmem/vm1.backing"),
            ("bd_stat", "0 0 0"),
            ("idle", ""),
            ("recompress", ""),
            ("writeback", ""),
            ("writeback_limit", "0"),
            ("writeback_limit_enable", "0"),
        ];
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let mut req = String::new();
            let _ = BufReader::new(&s).read_line(&mut req);
            let req = req.trim_end().to_string();
            let reply = if req == "list" {
                format!(
                    "ok\n{}\n",
                    attrs.iter().map(|a| a.0).collect::<Vec<_>>().join("\n")
                )
            } else if let Some(a) = req.strip_prefix("read ") {
                match attrs.iter().find(|x| x.0 == a) {
                    Some((_, v)) => format!("ok\n{v}\n"),
                    None => format!("err ENOENT no attribute {a}\n"),
                }
            } else if let Some(rest) = req.strip_prefix("write ") {
                writes.lock().unwrap().push(rest.to_string());
                "ok\n".to_string()
            } else {
                "err EINVAL bad request\n".into()
            };
            let _ = s.write_all(reply.as_bytes());
        }
    });
}

#[test]
fn serve_devices_get_the_same_actions_through_their_control_socket() {
    let (_scratch, root) = ScratchDir::with_copy("cli-policy-serve", &fixture("01-basic/root"));
    fs::create_dir_all(root.join("run/zmem")).unwrap();
    let writes = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    recording_ctl(&root.join("run/zmem/vm1.ctl"), writes.clone());
    let conf = root.join("p.conf");
    // serve-sockets is a path inside the root.
    fs::write(&conf, "[policy]\nserve-sockets = /run/zmem\n").unwrap();
    let (ok, out, err) = zmem(&[
        "policy",
        "--once",
        "--config",
        conf.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
        "--now",
        "1700000000",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("serve:vm1: write recompress type=huge_idle threshold=1024: ok"),
        "{out}"
    );
    // zram0 of the fixture is uninitialised: nothing to do there.
    assert!(out.contains("zram0: empty, nothing to do"), "{out}");
    let w = writes.lock().unwrap().clone();
    // Memory utilisation of the fixture is 50%: idle ages 5078 s (recompression) and 73478 s
    // (writeback); a fill of 100 MiB of 1 GiB gives 5 + 295 × 100/1024 = 33.8 MiB = 8655 pages.
    assert_eq!(
        w,
        [
            "idle 5078",
            "recompress type=huge_idle threshold=1024",
            "recompress type=idle threshold=1024",
            "recompress type=huge threshold=1024",
            "idle 73478",
            "writeback_limit_enable 1",
            "writeback_limit 8655",
            "writeback huge_idle",
            "writeback idle",
            "writeback huge",
        ]
    );
}

/// The policy daemon drives a real `zmem serve` device (lz4 primary, zstd
/// secondary, a backing file) through its control socket: with idle ages of
/// 0 s one round recompresses and writes back for real, within the round's
/// writeback limit, and every byte still reads back over NBD.
#[test]
fn policy_round_on_a_real_served_device_recompresses_and_writes_back() {
    let (scratch, root) = ScratchDir::with_copy("cli-policy-real", &fixture("01-basic/root"));
    fs::create_dir_all(root.join("run/zmem")).unwrap();
    let backing = root.join("backing.img");
    fs::File::create(&backing)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let sock = root.join("nbd.sock");
    let ctl = root.join("run/zmem/vm1.ctl");
    let listen = format!("unix:{}", sock.display());
    let args: Vec<&OsStr> = [
        "--size", "16M", "--algo", "lz4", "--recomp", "zstd", "--export", "vm1",
    ]
    .iter()
    .map(OsStr::new)
    .chain([
        "--backing-dev".as_ref(),
        backing.as_os_str(),
        "--ctl".as_ref(),
        ctl.as_os_str(),
    ])
    .chain(["--listen".as_ref(), listen.as_ref()])
    .collect();
    let (serve, _) = spawn_serve(&args, None);
    // The server's sockets and backing file are in `scratch`: removed only
    // after the server is gone.
    struct Kill {
        child: std::process::Child,
        _scratch: ScratchDir,
    }
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
    let _serve = Kill {
        child: serve,
        _scratch: scratch,
    };
    // 2 MiB of word salad (lz4 stores 1.5-2.5 KiB a page, zstd less) and 256 KiB of random
    // (huge) pages.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let words = [
        "policy ",
        "drives ",
        "zmem ",
        "serve ",
        "through ",
        "its ",
        "control ",
        "socket ",
        "idle ",
        "slot ",
        "handle ",
        "zspage ",
        "recompress ",
        "writeback ",
        "the ",
        "a ",
        "of ",
        "page ",
        "\n",
        "42 ",
    ];
    let mut data = Vec::new();
    while data.len() < 2 << 20 {
        data.extend_from_slice(words[(rand() % words.len() as u64) as usize].as_bytes());
    }
    data.truncate(2 << 20);
    data.extend((0..(256 << 10)).map(|_| rand() as u8));
    let mut c = zmem_nbd::Client::connect(&sock, "vm1").unwrap();
    c.stream()
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    assert_eq!(c.write(0, &data).unwrap(), 0);
    let ctl = root.join("run/zmem/vm1.ctl");
    let mm = |field: usize| -> u64 {
        let (ok, out, err) = zmem(&["ctl", ctl.to_str().unwrap(), "mm_stat"]);
        assert!(ok, "{err}");
        out.split_whitespace().nth(field).unwrap().parse().unwrap()
    };
    let compr_before = mm(1);
    let conf = root.join("p.conf");
    fs::write(
        &conf,
        "[policy]\nserve-sockets = /run/zmem\nrecompress-idle-min = 0s\nrecompress-idle-max = 0s\n\
         writeback-idle-min = 0s\nwriteback-idle-max = 0s\nwriteback-min-per-round = 4K\n\
         writeback-max-per-round = 400K\n",
    )
    .unwrap();
    let (ok, out, err) = zmem(&[
        "policy",
        "--once",
        "--config",
        conf.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
        "--now",
        "1700000000",
    ]);
    assert!(ok, "{out}\n{err}");
    println!("{out}");
    assert!(
        out.contains("serve:vm1: write recompress type=huge_idle threshold=1024: ok"),
        "{out}"
    );
    assert!(
        out.contains("serve:vm1: write writeback huge_idle"),
        "{out}"
    );
    assert!(out.contains("serve:vm1: wrote back"), "{out}");
    // Recompression shrank what stays in RAM; writeback moved pages to the file.
    let (_, bd, _) = zmem(&["ctl", ctl.to_str().unwrap(), "bd_stat"]);
    let bd: Vec<u64> = bd.split_whitespace().map(|v| v.parse().unwrap()).collect();
    assert!(bd[2] > 0, "pages written back: {bd:?}\n{out}");
    assert!(
        bd[2] <= 100,
        "the round's writeback_limit (400 KiB at most = 100 pages): {bd:?}\n{out}"
    );
    assert!(
        mm(1) < compr_before,
        "compr_data_size {} -> {}\n{out}",
        compr_before,
        mm(1)
    );
    assert!(
        c.read(0, data.len() as u32).unwrap().unwrap() == data,
        "data changed after the policy round"
    );
    c.disconnect().unwrap();
}
