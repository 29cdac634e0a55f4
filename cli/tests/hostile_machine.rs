//! Issue 35, round 3, "the machine": no signal, config or second instance leaves the machine
//! changed. Each test drives the `zmem` binary as a user does: fixture trees (`--root`) for
//! the planner's bounds and the policy lock, the real kernel (root, zram) for signals and the
//! trial lock, skipped otherwise. Everything that could hang runs under a deadline.

mod serve_common;

use std::ffi::OsStr;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serve_common::spawn_serve;
use zmem_files::testutil::{skip, ScratchDir};

/// The tests that take the machine's trial lock, or leave a journal that makes a trial or tune
/// refuse, run one at a time.
static TRIAL_LOCK_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ops/admin/tests/fixtures")
        .join(case)
}

fn zmem_cmd() -> Command {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
}

/// Run `zmem ARGS` to its end, failing the test if it takes longer than `limit`.
fn zmem_within(limit: Duration, args: &[&str]) -> (bool, String, String) {
    let mut child = zmem_cmd()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read both pipes on threads so a full pipe never stalls the child.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let status = wait_within(&mut child, limit)
        .unwrap_or_else(|| panic!("zmem {args:?} still running after {limit:?}"));
    (
        status.success(),
        t_out.join().unwrap(),
        t_err.join().unwrap(),
    )
}

/// Wait for `child` up to `limit`; on timeout it is killed and `None` returned.
fn wait_within(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// A child killed when the test ends, however it ends.
struct Reaped(Child);
impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn apply_dry_run(root: &Path, conf_text: &str, extra: &[&str]) -> (bool, String, String) {
    let conf = root.join("t.conf");
    fs::write(&conf, conf_text).unwrap();
    let mut args = vec![
        "apply",
        conf.to_str().unwrap(),
        "--dry-run",
        "--root",
        root.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    zmem_within(Duration::from_secs(60), &args)
}

/// Finding 5: `[zram99999]` made the planner's search for free ids cubic (hours); any u32
/// passed the parser. Now planning is linear, and an id the kernel cannot create (above its
/// largest minor) is refused, naming the bound.
#[test]
fn a_far_zram_id_plans_in_linear_time_and_an_impossible_one_is_refused() {
    let (_s, root) = ScratchDir::with_copy("hostile-far-id", &fixture("01-basic/root"));
    let (ok, out, err) = apply_dry_run(&root, "[zram99999]\nzram-size = 64\n", &[]);
    assert!(ok, "{err}");
    let hot_adds = out.lines().filter(|l| l.starts_with("hot_add ")).count();
    // The fixture has zram0: hot_add makes zram1 .. zram99999.
    assert_eq!(hot_adds, 99_999, "{}", &out[..out.len().min(2000)]);
    assert!(
        out.contains("first creates 99998 devices, zram1 to zram99998"),
        "{}",
        &out[..out.len().min(2000)]
    );
    let (ok, _, err) = apply_dry_run(&root, "[zram1048576]\nzram-size = 64\n", &[]);
    assert!(!ok);
    assert!(
        err.contains("at most 1048575 (MINORMASK"),
        "the error names the kernel's bound: {err}"
    );
}

/// Finding 6: the kernel's slot table is 16 bytes per 4 KiB page (24 where it tracks access
/// times), so `ram * 256` asked for all of RAM and was accepted. Now all of RAM is refused
/// outright, more than 1/16 of it without --force (with the numbers), and --force sets it up
/// with a warning.
#[test]
fn a_device_whose_slot_table_takes_a_large_share_of_ram_needs_force() {
    let (_s, root) = ScratchDir::with_copy("hostile-table", &fixture("01-basic/root"));
    // The fixture's MemTotal is 8 GiB: ram = 8192 MiB.
    let (ok, _, err) = apply_dry_run(&root, "[zram0]\nzram-size = ram * 256\n", &["--force"]);
    assert!(
        !ok && err.contains("more than this machine could hold"),
        "{err}"
    );
    let (ok, _, err) = apply_dry_run(&root, "[zram0]\nzram-size = ram * 32\n", &[]);
    assert!(!ok, "ram * 32 (a 1 GiB slot table on 8 GiB) was accepted");
    for want in [
        "t.conf:2",
        "disksize 262144 MiB",
        "slot table of up to 1536 MiB",
        "1/16 of this machine's 8192 MiB",
        "--force",
    ] {
        assert!(err.contains(want), "{want}: {err}");
    }
    // Two devices count together.
    let two = "[zram0]\nzram-size = ram * 6\n[zram1]\nzram-size = ram * 6\n";
    let (ok, _, err) = apply_dry_run(&root, two, &[]);
    assert!(
        !ok && err.contains("the devices up to zram1 together"),
        "{err}"
    );
    let (ok, out, err) = apply_dry_run(&root, "[zram0]\nzram-size = ram * 32\n", &["--force"]);
    assert!(ok, "{err}");
    assert!(out.contains("# warning (--force): zram0"), "{out}");
    let (ok, _, err) = apply_dry_run(&root, "[zram0]\nzram-size = ram * 10\n", &[]);
    assert!(ok, "a table of 480 MiB on 8 GiB is within the bound: {err}");
}

/// Finding 10: two `zmem policy` daemons on one state file each counted only their own
/// writeback against the daily limit. The second now refuses, naming the first's pid.
#[test]
fn a_second_policy_daemon_on_one_state_file_is_refused() {
    let (_s, root) = ScratchDir::with_copy("hostile-policy", &fixture("01-basic/root"));
    let r = root.to_str().unwrap();
    let first = zmem_cmd()
        .args(["policy", "--root", r])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = first.id();
    let first = Reaped(first);
    let lock = root.join("run/zmem/policy.state.lock");
    let end = Instant::now() + Duration::from_secs(30);
    while fs::read_to_string(&lock).unwrap_or_default().trim() != pid.to_string() {
        assert!(Instant::now() < end, "the first daemon never took its lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (ok, _, err) = zmem_within(Duration::from_secs(30), &["policy", "--once", "--root", r]);
    assert!(!ok, "a second daemon ran beside the first");
    assert!(
        err.contains(&format!("another zmem policy (pid {pid}) is running")),
        "{err}"
    );
    // --dry-run writes nothing and may run beside it.
    let (ok, _, err) = zmem_within(
        Duration::from_secs(30),
        &["policy", "--once", "--dry-run", "--root", r],
    );
    assert!(ok, "{err}");
    drop(first);
    let (ok, _, err) = zmem_within(Duration::from_secs(30), &["policy", "--once", "--root", r]);
    assert!(ok, "the lock outlived its daemon: {err}");
}

/// Second pass: the directory of the policy's lock and state (`/run/zmem`) made before zmem
/// by someone else. A link to another directory, a directory others may write, or (root) one
/// another user owns is refused naming why, and nothing is put in it: whoever controls it could
/// swap the lock or a control socket root connects to. Before, `create_dir_all` took any of
/// them and the lock went through the link.
#[test]
fn a_run_dir_that_is_a_link_or_not_zmem_s_alone_is_refused() {
    let (s, root) = ScratchDir::with_copy("hostile-rundir", &fixture("01-basic/root"));
    let r = root.to_str().unwrap();
    let elsewhere = s.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    fs::create_dir(root.join("run")).unwrap();
    let run = root.join("run/zmem");
    let mut cases: Vec<(&str, &str)> = vec![("link", "symbolic link"), ("0777", "mode 777")];
    if zmem_files::euid_is_root() {
        cases.push(("nobody", "owned by uid 65534"));
    }
    for (case, want) in cases {
        let _ = fs::remove_file(&run);
        let _ = fs::remove_dir(&run);
        match case {
            "link" => std::os::unix::fs::symlink(&elsewhere, &run).unwrap(),
            _ => {
                fs::create_dir(&run).unwrap();
                use std::os::unix::fs::PermissionsExt;
                fs::set_permissions(&run, fs::Permissions::from_mode(0o777)).unwrap();
                if case == "nobody" {
                    std::os::unix::fs::chown(&run, Some(65534), Some(65534)).unwrap();
                    fs::set_permissions(&run, fs::Permissions::from_mode(0o755)).unwrap();
                }
            }
        }
        let (ok, _, err) = zmem_within(Duration::from_secs(30), &["policy", "--once", "--root", r]);
        assert!(!ok, "{case}: policy ran with its lock there");
        assert!(
            err.contains("run/zmem") && err.contains(want),
            "{case}: {err}"
        );
        assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0, "{case}");
        if case != "link" {
            assert_eq!(
                fs::read_dir(&run).unwrap().count(),
                0,
                "{case}: wrote into it"
            );
        }
    }
    // zmem's own: made where missing (0755 less the umask), and used.
    fs::remove_dir(&run).unwrap();
    let (ok, _, err) = zmem_within(Duration::from_secs(30), &["policy", "--once", "--root", r]);
    assert!(ok, "{err}");
    use std::os::unix::fs::MetadataExt;
    let md = fs::symlink_metadata(&run).unwrap();
    assert!(md.is_dir() && md.mode() & 0o022 == 0, "{:o}", md.mode());
}

/// Finding 10, second half: `zmem serve --maint` maintains its device itself, so `zmem policy`
/// leaves it alone (before, both ran rounds on it).
#[test]
fn policy_skips_a_served_device_that_maintains_itself() {
    let (scratch, root) = ScratchDir::with_copy("hostile-maint", &fixture("01-basic/root"));
    fs::create_dir_all(root.join("run/zmem")).unwrap();
    let sock = scratch.path().join("nbd.sock");
    let ctl = root.join("run/zmem/vm1.ctl");
    let listen = format!("unix:{}", sock.display());
    let args: Vec<&OsStr> = [
        "--size", "16M", "--algo", "lz4", "--export", "vm1", "--maint",
    ]
    .iter()
    .map(OsStr::new)
    .chain([
        "--ctl".as_ref(),
        ctl.as_os_str(),
        "--listen".as_ref(),
        listen.as_ref(),
    ])
    .collect();
    let serve = Reaped(spawn_serve(&args, None).0);
    let conf = root.join("p.conf");
    fs::write(&conf, "[policy]\nserve-sockets = /run/zmem\n").unwrap();
    let (ok, out, err) = zmem_within(
        Duration::from_secs(60),
        &[
            "policy",
            "--once",
            "--config",
            conf.to_str().unwrap(),
            "--root",
            root.to_str().unwrap(),
        ],
    );
    drop(serve);
    assert!(ok, "{err}");
    assert!(
        out.contains("serve:vm1: skipped, its zmem serve maintains it"),
        "{out}"
    );
    assert!(!out.contains("serve:vm1: write"), "{out}");
}

/// Whether this process may create kernel zram devices; prints the SKIP line when not.
fn kernel_zram(test: &str) -> bool {
    match zmem_host::HotDevice::available() {
        Ok(()) => true,
        Err(e) => {
            skip(&format!("SKIP {test}: {e}"));
            false
        }
    }
}

/// 4 MiB of pages that compress like text, as a corpus file.
fn corpus(dir: &Path) -> PathBuf {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let words = [
        "slot ", "handle ", "zspage ", "idle ", "the ", "page ", "\n", "42 ",
    ];
    let mut data = Vec::with_capacity(4 << 20);
    while data.len() < 4 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        data.extend_from_slice(words[(x % words.len() as u64) as usize].as_bytes());
    }
    data.truncate(4 << 20);
    let p = dir.join("pages.bin");
    fs::write(&p, data).unwrap();
    p
}

/// Start `zmem ARGS` paused right after its first journal record (a kernel row's device is
/// hot-added and journaled), and return it with that device's id.
fn paused_at_first_device(args: &[&str]) -> (Reaped, u32) {
    let (child, ids) = paused_at(args, &[("ZMEM_TEST_PAUSE_AT", "1")], 1);
    (child, ids[0])
}

/// Start `zmem ARGS` with `env` (a `ZMEM_TEST_PAUSE_AT` hook), wait until it says it paused
/// after journal record `record`, and return it with the ids of the devices its journals
/// hold then (at least one, each present).
fn paused_at(args: &[&str], env: &[(&str, &str)], record: u32) -> (Reaped, Vec<u32>) {
    let mut child = zmem_cmd()
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let pid = child.id();
    let child = Reaped(child);
    let (tx, rx) = std::sync::mpsc::channel();
    let want = format!("paused after journal record {record}");
    let log = std::thread::spawn(move || {
        let mut all = String::new();
        for l in BufReader::new(err).lines().map_while(Result::ok) {
            if l.contains(&want) {
                let _ = tx.send(());
            }
            all += &l;
            all.push('\n');
        }
        all
    });
    if rx.recv_timeout(Duration::from_secs(180)).is_err() {
        drop(child);
        panic!(
            "zmem {args:?} never paused at record {record}: {}",
            log.join().unwrap_or_default()
        );
    }
    let ids: Vec<u32> = fs::read_dir("/run/zmem-trial")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| {
            n.strip_prefix(&format!("{pid}.zram"))?
                .strip_suffix(".journal")?
                .parse()
                .ok()
        })
        .collect();
    assert!(!ids.is_empty(), "zmem {args:?}: no device's journal");
    for id in &ids {
        assert!(Path::new(&format!("/sys/block/zram{id}")).exists());
    }
    (child, ids)
}

/// zswap's parameters a trial or `bench zswap --kernel` changes and must restore.
fn zswap_params() -> Vec<String> {
    let zswap = Path::new("/sys/module/zswap/parameters");
    ["enabled", "compressor", "max_pool_percent"]
        .iter()
        .map(|k| fs::read_to_string(zswap.join(k)).unwrap_or_default())
        .collect()
}

fn send(child: &Reaped, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &child.0.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{sig}");
}

/// Finding 4: bench, recommend (and tune's kernel rows) left a kernel zram device full of
/// captured memory when stopped by SIGTERM or SIGHUP (only Ctrl-C cleaned up). Now INT, TERM
/// and HUP remove it and exit with 128 + the signal.
#[test]
fn term_hup_and_int_remove_the_kernel_rows_devices() {
    let test = "term_hup_and_int_remove_the_kernel_rows_devices";
    if !kernel_zram(test) {
        return;
    }
    let scratch = ScratchDir::new("hostile-signals");
    let c = corpus(scratch.path());
    let c = c.to_str().unwrap();
    let bench = ["bench", "device", c, "--algo", "lzo"];
    let recommend = ["recommend", c, "--algo", "lzo,lz4", "--rounds", "1"];
    for (args, sig, code) in [
        (&bench[..], "TERM", 143),
        (&bench[..], "HUP", 129),
        (&bench[..], "INT", 130),
        (&recommend[..], "TERM", 143),
        (&recommend[..], "HUP", 129),
    ] {
        let (mut child, id) = paused_at_first_device(args);
        send(&child, sig);
        let status = wait_within(&mut child.0, Duration::from_secs(60))
            .unwrap_or_else(|| panic!("{args:?} did not exit on SIG{sig}"));
        assert_eq!(status.code(), Some(code), "{args:?} SIG{sig}");
        assert!(
            !Path::new(&format!("/sys/block/zram{id}")).exists(),
            "{args:?}: SIG{sig} left zram{id}"
        );
        let pid = child.0.id();
        assert!(
            !Path::new(&format!("/run/zmem-trial/{pid}.zram{id}.journal")).exists(),
            "its journal is gone with it"
        );
    }
}

/// Why `zmem tune` would refuse on this machine (its preflight: active swap, zswap on), or
/// cannot make kernel zram devices; prints the SKIP line then.
fn tune_refused(test: &str) -> bool {
    if !kernel_zram(test) {
        return true;
    }
    let swaps = fs::read_to_string("/proc/swaps").unwrap_or_default();
    let zswap = fs::read_to_string("/sys/module/zswap/parameters/enabled").unwrap_or_default();
    let why = if swaps.lines().count() > 1 {
        "swap is active; tune would refuse"
    } else if zswap.trim() == "Y" {
        "zswap is enabled; tune would refuse"
    } else {
        return false;
    };
    skip(&format!("SKIP {test}: {why}"));
    true
}

/// The zram devices there are now, by id.
fn zram_ids() -> Vec<u32> {
    let mut v: Vec<u32> = fs::read_dir("/sys/block")
        .unwrap()
        .filter_map(|e| {
            e.ok()?
                .file_name()
                .to_str()?
                .strip_prefix("zram")?
                .parse()
                .ok()
        })
        .collect();
    v.sort();
    v
}

/// A zram device's configuration and use, to see it untouched.
fn zram_state(id: u32) -> Vec<String> {
    ["disksize", "comp_algorithm", "mm_stat", "initstate"]
        .iter()
        .map(|a| fs::read_to_string(format!("/sys/block/zram{id}/{a}")).unwrap_or_default())
        .collect()
}

/// When a test fails with a paused zmem's devices still there, `--recover` removes them.
struct RecoverOnPanic;
impl Drop for RecoverOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = zmem_cmd().args(["tune", "--recover"]).status();
        }
    }
}

/// SIGTERM and SIGHUP during `zmem tune`'s lab step, while its kernel rows hold zram devices
/// (`ZMEM_TEST_PAUSE_IN=lab`, the signal watch active: SIGTERM paused right after the lab's
/// first journaled device, SIGHUP after the second, the first open and filled by its row): the
/// signal undoes them and exits with 128 + the signal, every device it added is gone with its
/// journal, the kernel's own zram0 is as it was. Before `undoing_while` the signal only raised
/// a flag that tune read when the trials started: the paused run never exited; before the
/// signal let go of the run's own descriptors, the open device stayed (`SIGHUP left zram1`).
#[test]
fn term_and_hup_in_tunes_lab_step_remove_its_devices() {
    let test = "term_and_hup_in_tunes_lab_step_remove_its_devices";
    let _one = TRIAL_LOCK_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    if tune_refused(test) {
        return;
    }
    let _recover = RecoverOnPanic;
    let scratch = ScratchDir::new("hostile-tune-signals");
    let c = corpus(scratch.path());
    let args = [
        "tune",
        "--memory",
        "64M",
        "--corpus",
        c.to_str().unwrap(),
        "--rounds",
        "1",
        "--requests",
        "200",
        "--repeat",
        "1",
        "--candidates",
        "1",
    ];
    for (sig, code, record) in [("TERM", 143, "1"), ("HUP", 129, "2")] {
        let devices = zram_ids();
        let zram0 = zram_state(0);
        let env = [
            ("ZMEM_TEST_PAUSE_IN", "lab"),
            ("ZMEM_TEST_PAUSE_AT", record),
        ];
        let (mut child, ids) = paused_at(&args, &env, record.parse().unwrap());
        send(&child, sig);
        let status = wait_within(&mut child.0, Duration::from_secs(60))
            .unwrap_or_else(|| panic!("tune did not exit on SIG{sig} in its lab step"));
        assert_eq!(status.code(), Some(code), "SIG{sig}");
        for id in ids {
            assert!(
                !Path::new(&format!("/sys/block/zram{id}")).exists(),
                "SIG{sig} left zram{id}"
            );
        }
        assert_eq!(
            zram_ids(),
            devices,
            "SIG{sig}: every device it added is gone"
        );
        let pid = child.0.id();
        let left: Vec<String> = fs::read_dir("/run/zmem-trial")
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .filter(|n| n.starts_with(&format!("{pid}.")))
                    .collect()
            })
            .unwrap_or_default();
        assert!(left.is_empty(), "SIG{sig} left journals {left:?}");
        assert_eq!(zram_state(0), zram0, "SIG{sig}: the kernel's zram0 changed");
    }
}

/// Finding 4, SIGKILL: nothing runs in the process, so the device stays; `--recover` (of
/// bench and recommend too, as of trial and tune) removes it from its journal.
#[test]
fn recover_removes_what_a_killed_bench_or_recommend_left() {
    let test = "recover_removes_what_a_killed_bench_or_recommend_left";
    // Its killed run's journal, until `--recover`, makes a tune or trial beside it refuse.
    let _one = TRIAL_LOCK_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    if !kernel_zram(test) {
        return;
    }
    let scratch = ScratchDir::new("hostile-sigkill");
    let c = corpus(scratch.path());
    let c = c.to_str().unwrap();
    for (args, recover) in [
        (&["bench", "device", c, "--algo", "lzo"][..], "bench"),
        (
            &["recommend", c, "--algo", "lzo,lz4", "--rounds", "1"][..],
            "recommend",
        ),
    ] {
        let (mut child, id) = paused_at_first_device(args);
        send(&child, "KILL");
        wait_within(&mut child.0, Duration::from_secs(30)).expect("SIGKILL ends it");
        assert!(
            Path::new(&format!("/sys/block/zram{id}")).exists(),
            "SIGKILL runs nothing: zram{id} is still there"
        );
        // --recover waits its turn behind a running trial (the trial test runs beside this one).
        let end = Instant::now() + Duration::from_secs(120);
        let (ok, out, err) = loop {
            let r = zmem_within(Duration::from_secs(60), &[recover, "--recover"]);
            if r.0
                || !r
                    .2
                    .contains("another zmem that changes swap and zswap is running")
                || Instant::now() > end
            {
                break r;
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        assert!(ok, "{err}");
        assert!(
            out.contains(&format!("reset and removed zram{id}")),
            "{recover} --recover: {out}"
        );
        assert!(!Path::new(&format!("/sys/block/zram{id}")).exists());
    }
}

/// Finding 7: a second trial with --force ran beside the first, each journaling the other's
/// zswap values as the ones to restore (zswap was left changed). Now the second is refused,
/// --force or not, naming the first; the first finishes and restores everything.
#[test]
fn a_second_trial_is_refused_even_with_force() {
    let test = "a_second_trial_is_refused_even_with_force";
    let _one = TRIAL_LOCK_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    if !zmem_files::euid_is_root() {
        skip(&format!("SKIP {test}: not root"));
        return;
    }
    let params = zswap_params;
    let before = params();
    let first = zmem_cmd()
        .args([
            "trial", "--memory", "64M", "--config", "none", "--repeat", "1", "--force",
        ])
        .args(["--", "sleep", "6"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = first.id();
    let mut first = Reaped(first);
    let lock = Path::new("/run/zmem/trial.lock");
    let end = Instant::now() + Duration::from_secs(30);
    while fs::read_to_string(lock).unwrap_or_default().trim() != pid.to_string() {
        if let Some(s) = first.0.try_wait().unwrap() {
            let mut e = String::new();
            let _ = std::io::Read::read_to_string(first.0.stderr.as_mut().unwrap(), &mut e);
            skip(&format!(
                "SKIP {test}: the first trial cannot run here ({s}): {e}"
            ));
            return;
        }
        assert!(Instant::now() < end, "the first trial never took the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (ok, _, err) = zmem_within(
        Duration::from_secs(60),
        &[
            "trial",
            "--memory",
            "64M",
            "--config",
            "zswap:deflate:15",
            "--repeat",
            "1",
            "--force",
            "--",
            "true",
        ],
    );
    assert!(!ok, "a second trial ran beside the first");
    assert!(
        err.contains(&format!(
            "another zmem that changes swap and zswap is running (pid {pid}: zmem trial"
        )),
        "{err}"
    );
    assert!(
        !err.contains("swapoff"),
        "no running trial's file is called a leftover: {err}"
    );
    let status = wait_within(&mut first.0, Duration::from_secs(120)).expect("the first trial ends");
    assert!(status.success(), "the first trial failed");
    assert_eq!(params(), before, "zswap is as it was");
}

/// Round 3, second pass: `bench zswap --kernel` changed zswap, page-cluster and swap without the
/// trial lock, so a trial beside it journaled its values as the ones to restore. Now it takes the
/// lock and is refused while another process holds it, naming the holder, zswap untouched.
#[test]
fn a_kernel_zswap_bench_is_refused_while_a_trial_holds_the_lock() {
    let test = "a_kernel_zswap_bench_is_refused_while_a_trial_holds_the_lock";
    let _one = TRIAL_LOCK_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    if !zmem_files::euid_is_root() {
        skip(&format!("SKIP {test}: not root"));
        return;
    }
    let params = zswap_params;
    let before = params();
    // Another trial's hold on the lock (this test process stands in for it).
    let end = Instant::now() + Duration::from_secs(120);
    let lock = loop {
        match zmem_files::InstanceLock::acquire(Path::new(zmem_files::TRIAL_LOCK)) {
            Ok(l) => break l,
            Err(e) => {
                assert!(Instant::now() < end, "the trial lock never came free: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    };
    let scratch = ScratchDir::new("hostile-zswap-lock");
    let dir = scratch.path().to_str().unwrap().to_string();
    let (ok, _, err) = zmem_within(
        Duration::from_secs(60),
        &["bench", "zswap", "--accesses", "300", "--swap-dir", &dir],
    );
    drop(lock);
    assert!(!ok, "the kernel zswap bench ran beside a held trial lock");
    assert!(
        err.contains(&format!(
            "another zmem that changes swap and zswap is running (pid {}: hostile_machine",
            std::process::id()
        )),
        "{err}"
    );
    assert_eq!(params(), before, "zswap is as it was");
}
