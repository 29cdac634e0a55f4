//! `zmem persist` checks the programs that read its files at boot: with
//! zram-generator and systemd in the tree it says what each does (exit 0);
//! without them it still writes the files, names what is missing and the
//! package to install, never promises the devices at boot, and exits 3.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use zmem_files::testutil::ScratchDir;

const GENERATOR: &str = "usr/lib/systemd/system-generators/zram-generator";
const SYSCTL: &str = "lib/systemd/systemd-sysctl";

fn persist(conf: &Path, root: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
        .arg("persist")
        .arg(conf)
        .arg("--root")
        .arg(root)
        .args(extra)
        .output()
        .expect("run zmem")
}

fn plant(root: &Path, program: &str) {
    let p = root.join(program);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, "").unwrap();
}

fn config(d: &ScratchDir) -> std::path::PathBuf {
    let conf = d.join("zmem.conf");
    fs::write(
        &conf,
        "[zram0]\nzram-size = ram / 2\ncompression-algorithm = lz4\n\n[sysctl]\nvm.swappiness = 180\n",
    )
    .unwrap();
    conf
}

#[test]
fn without_zram_generator_the_files_are_written_and_boot_is_not_promised() {
    let d = ScratchDir::new("persist-nogen");
    let (conf, root) = (config(&d), d.join("root"));
    plant(&root, SYSCTL);
    let o = persist(&conf, &root, &[]);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(3), "{out}{err}");
    assert!(root.join("etc/systemd/zram-generator.conf").is_file());
    assert!(root.join("etc/sysctl.d/90-zmem.conf").is_file());
    assert!(
        out.contains("not at boot: zram-generator is not installed"),
        "{out}"
    );
    assert!(
        out.contains("Debian/Ubuntu: systemd-zram-generator; Fedora: zram-generator"),
        "{out}"
    );
    assert!(
        out.contains("at boot: systemd-sysctl sets the sysctls"),
        "{out}"
    );
    assert!(
        !out.lines()
            .any(|l| l.starts_with("at boot: zram-generator")),
        "{out}"
    );
    assert!(err.contains("exit status 3"), "{err}");
    // --dry-run says the same and writes nothing (exit 0: nothing was promised).
    let d2 = d.join("dry");
    let o = persist(&conf, &d2, &["--dry-run"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("not at boot: zram-generator is not installed"),
        "{out}"
    );
    assert!(!d2.join("etc").exists());
}

#[test]
fn with_zram_generator_and_systemd_boot_applies_the_files() {
    let d = ScratchDir::new("persist-gen");
    let (conf, root) = (config(&d), d.join("root"));
    // Debian 12 installs the generator under /lib; any of its places will do.
    plant(&root, "lib/systemd/system-generators/zram-generator");
    plant(&root, SYSCTL);
    let o = persist(&conf, &root, &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains(
            "at boot: zram-generator creates the zram devices (/etc/systemd/zram-generator.conf)"
        ),
        "{out}"
    );
    assert!(!out.contains("not at boot"), "{out}");
    assert!(out.contains("at boot: systemd-sysctl"), "{out}");
    // Without systemd-sysctl the sysctls are the missing part.
    fs::remove_file(root.join(SYSCTL)).unwrap();
    plant(&root, GENERATOR);
    let o = persist(&conf, &root, &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{out}");
    assert!(
        out.contains("not at boot: systemd-sysctl is not installed: nothing sets the sysctls"),
        "{out}"
    );
}

#[test]
fn persist_never_writes_through_a_symbolic_link() {
    use std::os::unix::fs::PermissionsExt;
    let d = ScratchDir::new("persist-link");
    let (conf, root) = (config(&d), d.join("root"));
    plant(&root, GENERATOR);
    plant(&root, SYSCTL);
    let victim = d.join("victim");
    fs::write(&victim, "keep\n").unwrap();
    fs::create_dir_all(root.join("etc/sysctl.d")).unwrap();
    std::os::unix::fs::symlink(&victim, root.join("etc/sysctl.d/90-zmem.conf")).unwrap();
    for force in [&[][..], &["--force"][..]] {
        let o = persist(&conf, &root, force);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{force:?}");
        assert!(err.contains("symbolic link"), "{err}");
    }
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep\n");
    // Without the link: written, readable by the boot-time programs (0644).
    fs::remove_file(root.join("etc/sysctl.d/90-zmem.conf")).unwrap();
    let o = persist(&conf, &root, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in [
        "etc/systemd/zram-generator.conf",
        "etc/sysctl.d/90-zmem.conf",
    ] {
        let m = fs::metadata(root.join(f)).unwrap().permissions().mode() & 0o777;
        assert_eq!(m, 0o644, "{f}: {m:o}");
    }
}
