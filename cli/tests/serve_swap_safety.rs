//! `zmem serve` safe as swap, driven as a user runs it: `--swap` refuses to
//! start without PR_SET_IO_FLUSHER and mlockall and names what is missing;
//! `--block-only` (and the default) start anyway and say they are not
//! swap-safe; with the privileges, every thread of the server is an IO
//! flusher and a 256 GiB device locks only what it touches. The unprivileged
//! runs use `setpriv` to become nobody (root needed to do that).

mod serve_common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serve_common::{is_root, output_within, tmpdir, wait_within};
use zmem_files::testutil::skip;

const NOBODY: &str = "65534";

/// `zmem serve ARGS…`, as nobody through setpriv when `as_nobody`.
fn serve_cmd(as_nobody: bool, args: &[&str]) -> Command {
    let zmem = env!("CARGO_BIN_EXE_zmem");
    let mut c = if as_nobody {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid",
            NOBODY,
            "--regid",
            NOBODY,
            "--clear-groups",
            "--",
            zmem,
        ]);
        c
    } else {
        Command::new(zmem)
    };
    c.arg("serve").args(args);
    c
}

/// Whether the test can become nobody: root, setpriv present.
fn can_drop_privileges(test: &str) -> bool {
    if !is_root() {
        skip(&format!(
            "SKIP {test}: needs root to run zmem serve as nobody"
        ));
        return false;
    }
    let ok = Command::new("setpriv")
        .args([
            "--reuid",
            NOBODY,
            "--regid",
            NOBODY,
            "--clear-groups",
            "true",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        skip(&format!(
            "SKIP {test}: setpriv cannot run a command as nobody here"
        ));
    }
    ok
}

/// A directory nobody may put its socket in (inside a scratch directory it
/// may only pass through).
fn nobody_dir(scratch: &Path) -> std::path::PathBuf {
    std::fs::set_permissions(scratch, std::fs::Permissions::from_mode(0o711)).unwrap();
    let d = scratch.join("nobody");
    std::fs::create_dir(&d).unwrap();
    let id: u32 = NOBODY.parse().unwrap();
    std::os::unix::fs::chown(&d, Some(id), Some(id)).unwrap();
    d
}

/// Start it, wait for `listening on`, and give back the child and its stderr
/// file's text so far (the startup lines come before the listening line).
fn start(mut cmd: Command, stderr: &Path) -> (Child, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(stderr).unwrap())
        .spawn()
        .expect("run zmem serve");
    let mut line = String::new();
    let _ = BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
    let text = std::fs::read_to_string(stderr).unwrap_or_default();
    if !line.starts_with("listening on") {
        let _ = child.kill();
        let _ = child.wait();
        panic!("zmem serve did not start: {line:?}; stderr: {text}");
    }
    (child, text)
}

fn stop(mut child: Child) {
    let _ = child.kill();
    wait_within(
        &mut child,
        Duration::from_secs(30),
        "zmem serve after SIGKILL",
    );
}

#[test]
fn swap_is_refused_to_an_unprivileged_user_naming_what_is_missing() {
    if !can_drop_privileges("swap_is_refused_to_an_unprivileged_user_naming_what_is_missing") {
        return;
    }
    let scratch = tmpdir("swapsafe");
    let dir = nobody_dir(scratch.path());
    let listen = format!("unix:{}", dir.join("nbd.sock").display());
    let out = output_within(
        &mut serve_cmd(
            true,
            &["--swap", "--size", "16M", "--listen", &listen, "--no-ctl"],
        ),
        Duration::from_secs(60),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "started as nobody with --swap: {err}"
    );
    assert!(err.contains("--swap: not swap-safe: "), "{err}");
    assert!(
        err.contains("PR_SET_IO_FLUSHER needs CAP_SYS_RESOURCE"),
        "{err}"
    );
    if zmem_host::memlock_limit().unwrap().is_some() {
        assert!(
            err.contains("mlockall needs CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK"),
            "{err}"
        );
    }
    assert!(err.contains("--block-only"), "the way out is named: {err}");
    assert!(!dir.join("nbd.sock").exists(), "refused before binding");
}

#[test]
fn block_only_and_the_default_serve_an_unprivileged_user_and_say_so() {
    if !can_drop_privileges("block_only_and_the_default_serve_an_unprivileged_user_and_say_so") {
        return;
    }
    let scratch = tmpdir("swapsafe");
    let dir = nobody_dir(scratch.path());
    let listen = format!("unix:{}", dir.join("nbd.sock").display());
    let base = ["--size", "16M", "--listen", &listen, "--no-ctl"];
    let (child, err) = start(
        serve_cmd(true, &[&["--block-only"][..], &base].concat()),
        &scratch.join("block-only.err"),
    );
    stop(child);
    assert!(
        err.contains("zmem serve: block-only (--block-only): not swap-safe"),
        "{err}"
    );
    let (child, err) = start(serve_cmd(true, &base), &scratch.join("default.err"));
    stop(child);
    assert!(
        err.contains("zmem serve: not swap-safe (PR_SET_IO_FLUSHER needs CAP_SYS_RESOURCE"),
        "{err}"
    );
    assert!(err.contains("serving as a block device only"), "{err}");
}

/// The task flags IO_FLUSHER sets (PF_MEMALLOC_NOIO | PF_LOCAL_THROTTLE), read
/// off a thread of this process before and after it sets them.
fn io_flusher_mask() -> u64 {
    fn flags() -> u64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        task_flags(&stat)
    }
    std::thread::spawn(|| {
        let before = flags();
        zmem_host::set_io_flusher(true).unwrap();
        flags() & !before
    })
    .join()
    .unwrap()
}

/// Field 9 (flags) of a /proc/…/stat line; the name in field 2 may hold spaces.
fn task_flags(stat: &str) -> u64 {
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    rest.split(' ').nth(6).unwrap().parse().unwrap()
}

#[test]
fn with_the_privileges_every_thread_is_an_io_flusher_and_locking_is_on_fault() {
    use zmem_host::{has_capability, CAP_IPC_LOCK, CAP_SYS_RESOURCE};
    let test = "with_the_privileges_every_thread_is_an_io_flusher_and_locking_is_on_fault";
    if !is_root() {
        return skip(&format!("SKIP {test}: not root"));
    }
    let scratch = tmpdir("swapsafe");
    let listen = format!("unix:{}", scratch.join("nbd.sock").display());
    let args = ["--swap", "--size", "256G", "--listen", &listen, "--no-ctl"];
    if !has_capability(CAP_SYS_RESOURCE) || !has_capability(CAP_IPC_LOCK) {
        // Root without one of them (a container): refused, naming only that.
        let out = output_within(&mut serve_cmd(false, &args), Duration::from_secs(60));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        let flusher = err.contains("PR_SET_IO_FLUSHER needs CAP_SYS_RESOURCE");
        assert_eq!(flusher, !has_capability(CAP_SYS_RESOURCE), "{err}");
        return skip(&format!(
            "SKIP {test}: root without CAP_SYS_RESOURCE or CAP_IPC_LOCK (refusal checked)"
        ));
    }
    let (child, err) = start(serve_cmd(false, &args), &scratch.join("swap.err"));
    // A connection, so its threads exist too.
    let _client = std::os::unix::net::UnixStream::connect(scratch.join("nbd.sock")).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let pid = child.id();
    let mask = io_flusher_mask();
    let tasks: Vec<(String, u64)> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
        .map(|s| {
            (
                s[s.find('(').unwrap()..=s.rfind(')').unwrap()].to_string(),
                task_flags(&s),
            )
        })
        .collect();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    stop(child);
    assert!(
        err.contains("zmem serve: swap-safe: PR_SET_IO_FLUSHER set"),
        "{err}"
    );
    assert!(
        mask != 0 && tasks.len() >= 2,
        "mask {mask:#x}, tasks {tasks:?}"
    );
    for (name, flags) in &tasks {
        assert_eq!(flags & mask, mask, "thread {name} is not an IO flusher");
    }
    let kib = |key: &str| -> u64 {
        let l = status.lines().find(|l| l.starts_with(key)).unwrap();
        l.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    // Locked (VmLck counts locked mappings whole, the 2 GiB slot table of a
    // 256 GiB device included), but resident only where touched.
    assert!(kib("VmLck:") >= 2 << 20, "{status}");
    assert!(kib("VmRSS:") < 256 << 10, "{status}");
}
