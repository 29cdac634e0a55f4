//! Bad files as inputs and outputs: every corpus command refuses a FIFO,
//! a character device, a directory, an empty file and a partial page the
//! same way, quickly (a FIFO must not hang `open`, `/dev/zero` must not be
//! read until memory runs out); outputs never overwrite data zmem did not
//! create; captures are private.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use zmem_files::testutil::ScratchDir;

/// Runs zmem, failing the test if it takes more than 20 s (a hang).
fn zmem(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run zmem");
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("zmem {args:?} hung for 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn dir(tag: &str) -> ScratchDir {
    ScratchDir::new(&format!("hostile-{tag}"))
}

fn mkfifo(p: &Path) {
    let st = Command::new("mkfifo")
        .arg(p)
        .status()
        .expect("mkfifo (coreutils)");
    assert!(st.success());
}

/// The corpus commands, with `{}` for the corpus path.
const CORPUS_COMMANDS: &[&[&str]] = &[
    &["corpus", "info", "{}"],
    &["bench", "codecs", "--algo", "lz4", "{}"],
    &[
        "recommend",
        "--no-kernel",
        "--algo",
        "lz4",
        "--fs-read",
        "100",
        "{}",
    ],
    &["dict", "train", "-o", "/nonexistent-dir/d", "{}"],
];

fn refused_by_all(corpus: &Path, want: &str) {
    let c = corpus.to_str().unwrap();
    for cmd in CORPUS_COMMANDS {
        let args: Vec<&str> = cmd.iter().map(|a| if *a == "{}" { c } else { a }).collect();
        let o = zmem(&args);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} accepted {c}");
        assert!(e.contains(want) && e.contains(c), "{args:?}: {e}");
    }
}

#[test]
fn fifo_char_device_and_directory_are_refused_without_hanging() {
    let d = dir("kinds");
    let fifo = d.join("pipe");
    mkfifo(&fifo);
    refused_by_all(&fifo, "is a FIFO");
    refused_by_all(Path::new("/dev/zero"), "is a character device");
    refused_by_all(d.path(), "is a directory");
}

#[test]
fn empty_and_partial_pages_are_refused_by_every_command() {
    let d = dir("len");
    let empty = d.join("empty");
    std::fs::write(&empty, b"").unwrap();
    refused_by_all(&empty, "is empty");
    let partial = d.join("partial");
    std::fs::write(&partial, vec![7u8; 4095]).unwrap();
    refused_by_all(&partial, "not a multiple of 4096");
}

#[test]
fn outputs_never_overwrite_foreign_data_and_captures_are_private() {
    let d = dir("out");
    let foreign = d.join("notes.txt");
    std::fs::write(&foreign, b"my notes\n").unwrap();
    let f = foreign.to_str().unwrap();
    let me = std::process::id().to_string();
    for args in [
        &["capture", "--pid", &me, "--max", "1M", "-o", f][..],
        &["corpus", "gen", "text", "--size", "64K", "-o", f][..],
    ] {
        let o = zmem(args);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && e.contains("--force"),
            "{args:?}: {e}"
        );
        assert_eq!(std::fs::read(&foreign).unwrap(), b"my notes\n", "{args:?}");
    }
    // A corpus zmem made may be replaced; the capture is 0600 whatever the umask.
    let c = d.join("c.pages");
    let cs = c.to_str().unwrap();
    assert!(zmem(&["corpus", "gen", "text", "--size", "64K", "-o", cs])
        .status
        .success());
    let o = zmem(&["capture", "--pid", &me, "--max", "1M", "-o", cs]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for p in [c.clone(), d.join("c.pages.json")] {
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{} is {mode:o}", p.display());
    }
    // --force replaces foreign data deliberately.
    let o = zmem(&["corpus", "gen", "text", "--size", "64K", "--force", "-o", f]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::metadata(&foreign).unwrap().len(), 65536);
    // A dictionary output that is not a dictionary is refused too.
    let o = zmem(&["dict", "train", "-o", cs, cs]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a zstd dictionary"));
}

/// Round 3, second pass: `zmem doctor --root` on a tree someone else made. A link out of the
/// tree is not followed (an ordinary user's tree must not make root read /etc/shadow), a FIFO
/// where a file or a leftover journal goes does not hang it, a huge file is not read whole,
/// garbage is not a crash.
#[test]
fn doctor_reads_a_hostile_tree_only_inside_it_and_never_hangs() {
    let clean =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../ops/admin/tests/fixtures/doctor/clean/root");
    let (_d, root) = ScratchDir::with_copy("hostile-doctor", &clean);
    let outside = dir("doctor-outside");
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "MemTotal: 1 kB\n").unwrap();
    let root_s = root.to_str().unwrap();
    // A leftover journal that is a FIFO, and garbage in a zram attribute.
    std::fs::create_dir_all(root.join("run/zmem-trial")).unwrap();
    mkfifo(&root.join("run/zmem-trial/999999.journal"));
    let dev = std::fs::read_dir(root.join("sys/block"))
        .unwrap()
        .flatten()
        .next();
    if let Some(dev) = dev {
        let _ = std::fs::write(dev.path().join("mm_stat"), "\u{ff}garbage 1e99 -5\n");
        let _ = std::fs::write(dev.path().join("disksize"), "99999999999999999999999999\n");
    }
    let out = zmem(&["doctor", "--root", root_s]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().is_some(), "doctor crashed: {err}");
    assert!(!err.contains("panicked"), "{err}");
    // /proc/meminfo a link out of the tree: refused, naming where it leads.
    let meminfo = root.join("proc/meminfo");
    std::fs::remove_file(&meminfo).unwrap();
    std::os::unix::fs::symlink(&secret, &meminfo).unwrap();
    let out = zmem(&["doctor", "--root", root_s]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("leads out of the tree"), "{err}");
    // A FIFO, and a huge file.
    std::fs::remove_file(&meminfo).unwrap();
    mkfifo(&meminfo);
    let err = String::from_utf8_lossy(&zmem(&["doctor", "--root", root_s]).stderr).into_owned();
    assert!(err.contains("not a regular file"), "{err}");
    std::fs::remove_file(&meminfo).unwrap();
    std::fs::write(&meminfo, vec![b'x'; 3 << 20]).unwrap();
    let err = String::from_utf8_lossy(&zmem(&["doctor", "--root", root_s]).stderr).into_owned();
    assert!(err.contains("larger than"), "{err}");
}
