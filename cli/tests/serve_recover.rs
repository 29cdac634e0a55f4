// `zmem serve` survives a crash: a server killed with SIGKILL while a writer
// runs is served again by `zmem serve --recover` from its keeper's store,
// every acknowledged write reading back byte-exact and mm_stat agreeing; and
// the refusals (the old server alive, options that differ, nothing kept).

mod serve_common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serve_common::{spawn_serve, tmpdir, wait_within};
use zmem_nbd::proto::CMD_TRIM;

const PAGE: usize = 4096;
/// Pages the writer touches (of the device's 16384): overwrites are common.
const SPAN: u64 = 3000;
const LIMIT: Duration = Duration::from_secs(60);

/// What a page holds, as the client was told.
#[derive(Clone, PartialEq, Debug)]
enum Page {
    Absent,
    Data(Vec<u8>),
}

impl Page {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Page::Absent => vec![0; PAGE],
            Page::Data(d) => d.clone(),
        }
    }
}

/// xorshift64*
fn next(s: &mut u64) -> u64 {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    s.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// Operation `k`'s page: compressible text, same-filled (zero or not),
/// incompressible, or `None` for a discard.
fn content(seed: &mut u64, k: u64) -> Option<Vec<u8>> {
    match next(seed) % 8 {
        0 => None,
        1 | 2 => Some(
            (0..PAGE / 8)
                .flat_map(|_| (next(seed) % 1000).to_le_bytes())
                .collect(),
        ),
        3 => Some(vec![(k % 3) as u8 * 0x55; PAGE]),
        4 => Some((0..PAGE).map(|_| next(seed) as u8).collect()),
        _ => Some(
            format!("page written by op {k:>10} ")
                .bytes()
                .cycle()
                .take(PAGE)
                .collect(),
        ),
    }
}

/// The writer's view: the acknowledged contents, and the one operation in
/// flight (its page may hold the old or the new contents).
struct Model {
    pages: Vec<Page>,
    inflight: Option<(u64, Page)>,
}

/// Write and discard through one NBD connection until the server dies.
fn writer(sock: PathBuf, model: Arc<Mutex<Model>>, acked: Arc<AtomicUsize>, halt: Arc<AtomicBool>) {
    let mut c = zmem_nbd::Client::connect(&sock, "zmem").expect("connect");
    c.stream().set_read_timeout(Some(LIMIT)).unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for k in 0.. {
        if halt.load(Ordering::Relaxed) {
            break;
        }
        let idx = next(&mut seed) % SPAN;
        let new = content(&mut seed, k);
        let page = new.clone().map_or(Page::Absent, Page::Data);
        model.lock().unwrap().inflight = Some((idx, page.clone()));
        let off = idx * PAGE as u64;
        let r = match &new {
            Some(d) => c.write(off, d),
            None => c
                .request(CMD_TRIM, 0, off, PAGE as u32, &[], 0)
                .map(|r| r.0),
        };
        match r {
            Ok(0) => {}
            Ok(e) => panic!("op {k} at page {idx}: NBD error {e}"),
            Err(_) => return, // the server died: the in-flight op stays unknown
        }
        let mut m = model.lock().unwrap();
        m.pages[idx as usize] = page;
        m.inflight = None;
        acked.fetch_add(1, Ordering::Relaxed);
    }
}

/// `zmem serve ARGS` that must fail: its stderr (within the time limit).
fn refused(dir: &Path, args: &[&OsStr]) -> String {
    let err = dir.join("refused.stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .arg("serve")
        .args(args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let st = wait_within(&mut child, LIMIT, "zmem serve --recover (refused)");
    let text = std::fs::read_to_string(&err).unwrap();
    assert!(!st.success(), "accepted: {args:?}: {text}");
    text
}

/// The keeper's pid, from what a server said on stderr.
fn keeper_pid(stderr: &Path) -> Option<i32> {
    let t = std::fs::read_to_string(stderr).ok()?;
    let at = t.find("the keeper (pid ")? + "the keeper (pid ".len();
    t[at..].split(')').next()?.parse().ok()
}

/// Ends a keeper the test left behind (a failed test), by its pid.
struct KeeperGone(Option<i32>);

impl Drop for KeeperGone {
    fn drop(&mut self) {
        if let Some(p) = self.0 {
            if Path::new(&format!("/proc/{p}")).exists() {
                let _ = Command::new("kill").arg(p.to_string()).status();
            }
        }
    }
}

fn mm_stat(ctl: &Path) -> Vec<u64> {
    let out = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .arg("ctl")
        .arg(ctl)
        .arg("mm_stat")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(|f| f.parse().unwrap())
        .collect()
}

#[test]
fn a_killed_server_is_recovered_with_every_acknowledged_write() {
    let scratch = tmpdir("recover");
    let dir = scratch.path();
    let listen = format!("unix:{}", dir.join("nbd.sock").display());
    let ctl = dir.join("dev.ctl");
    // The server's flags, with --size and --algo as given, then `extra`.
    let args = |size: &'static str, algo: &'static str, extra: &[&'static str]| -> Vec<&OsStr> {
        let head = [
            "--size",
            size,
            "--algo",
            algo,
            "--export",
            "zmem",
            "--block-only",
            "--listen",
        ];
        let mut v: Vec<&OsStr> = head.into_iter().map(OsStr::new).collect();
        v.extend([OsStr::new(&listen), OsStr::new("--ctl"), ctl.as_os_str()]);
        v.extend(extra.iter().map(|x| OsStr::new(*x)));
        v
    };
    let base = args("64M", "lz4", &[]);
    let with = |extra: &[&'static str]| args("64M", "lz4", extra);
    let err_a = dir.join("a.stderr");
    let (mut a, _) = spawn_serve(&base, Some(&err_a));
    let mut gone = KeeperGone(keeper_pid(&err_a));
    assert!(
        gone.0.is_some(),
        "{}",
        std::fs::read_to_string(&err_a).unwrap()
    );
    assert!(dir.join("zmem.keep").exists());

    let model = Arc::new(Mutex::new(Model {
        pages: vec![Page::Absent; SPAN as usize],
        inflight: None,
    }));
    let acked = Arc::new(AtomicUsize::new(0));
    let halt = Arc::new(AtomicBool::new(false));
    let w = {
        let (m, n, h) = (model.clone(), acked.clone(), halt.clone());
        let sock = dir.join("nbd.sock");
        std::thread::spawn(move || writer(sock, m, n, h))
    };
    let t0 = Instant::now();
    while acked.load(Ordering::Relaxed) < 2500 {
        assert!(t0.elapsed() < LIMIT, "the writer made no progress");
        std::thread::sleep(Duration::from_millis(5));
    }
    // The old server runs: its store is not handed out.
    let e = refused(dir, &with(&["--recover"]));
    assert!(e.contains("still running"), "{e}");

    a.kill().unwrap(); // SIGKILL, the writer mid-stream
    a.wait().unwrap();
    halt.store(true, Ordering::Relaxed);
    w.join().expect("writer");
    let done = acked.load(Ordering::Relaxed);
    assert!(done >= 2500);

    // Options that differ are named.
    let e = refused(dir, &args("64M", "lzo-rle", &["--recover"]));
    assert!(e.contains("--algo differs"), "{e}");
    let e = refused(dir, &args("32M", "lz4", &["--recover"]));
    assert!(e.contains("--size differs"), "{e}");

    let err_b = dir.join("b.stderr");
    let (b, _) = spawn_serve(&with(&["--recover"]), Some(&err_b));
    let mut b = scopeguard(b);
    let said = std::fs::read_to_string(&err_b).unwrap();
    assert!(said.contains("zmem serve: recovered "), "{said}");
    check_contents(&dir.join("nbd.sock"), &model.lock().unwrap());
    check_mm_stat(&mm_stat(&ctl), &model.lock().unwrap());

    // A clean stop ends the keeper: nothing is left to recover.
    Command::new("kill")
        .arg(b.id().to_string())
        .status()
        .unwrap();
    assert!(wait_within(&mut b, LIMIT, "the recovered server").success());
    let t0 = Instant::now();
    while dir.join("zmem.keep").exists() && t0.elapsed() < LIMIT {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!dir.join("zmem.keep").exists(), "the keeper stayed");
    let e = refused(dir, &with(&["--recover"]));
    assert!(e.contains("nothing to recover"), "{e}");
    gone.0 = None;
    eprintln!("{done} operations acknowledged before SIGKILL; {said}");
}

/// A child killed if the test fails before it is waited for.
fn scopeguard(c: std::process::Child) -> Killed {
    Killed(c)
}

struct Killed(std::process::Child);

impl std::ops::Deref for Killed {
    type Target = std::process::Child;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Killed {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Every page reads back as acknowledged; the one in flight old or new.
fn check_contents(sock: &Path, m: &Model) {
    let mut c = zmem_nbd::Client::connect(sock, "zmem").expect("connect to the recovered server");
    c.stream().set_read_timeout(Some(LIMIT)).unwrap();
    for (i, want) in m.pages.iter().enumerate() {
        let got = c.read((i * PAGE) as u64, PAGE as u32).unwrap().unwrap();
        let ok = got == want.bytes()
            || matches!(&m.inflight, Some((j, p)) if *j as usize == i && got == p.bytes());
        assert!(ok, "page {i} differs from what was acknowledged");
    }
    let _ = c.disconnect();
}

/// mm_stat's orig_data_size counts the held pages and same_pages the
/// same-filled ones, the in-flight page either way.
fn check_mm_stat(f: &[u64], m: &Model) {
    let same = |p: &Page| matches!(p, Page::Data(d) if d.chunks(8).all(|w| w == &d[..8]));
    let held = m.pages.iter().filter(|p| **p != Page::Absent).count() as i64;
    let same_n = m.pages.iter().filter(|p| same(p)).count() as i64;
    let pages = (f[0] / PAGE as u64) as i64;
    let slack = m.inflight.is_some() as i64;
    assert!(
        (pages - held).abs() <= slack,
        "mm_stat {f:?}: {pages} pages stored, {held} acknowledged"
    );
    assert!(
        (f[5] as i64 - same_n).abs() <= slack,
        "mm_stat {f:?}: same_pages, {same_n} acknowledged"
    );
    assert!(f[1] > 0 && f[1] < f[0], "mm_stat {f:?}");
}
