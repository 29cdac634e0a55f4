// Round 4's attacker: an unprivileged user (`nobody`, uid 65534) acting
// beside root, through `setpriv`, and the places the test shares with it.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use zmem_files::testutil::{skip, ScratchDir};

/// The attacker's uid.
pub const NOBODY: u32 = 65534;

/// `setpriv … PROGRAM` running as `nobody`, or `None` (said as `SKIP test: …`)
/// when this test does not run as root or setpriv is missing.
pub fn as_nobody(test: &str, program: &str) -> Option<Command> {
    if !zmem_files::euid_is_root() {
        skip(&format!(
            "SKIP {test}: needs root (the attack runs as nobody via setpriv)"
        ));
        return None;
    }
    let have = Command::new("setpriv")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        skip(&format!("SKIP {test}: setpriv (util-linux) is missing"));
        return None;
    }
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", program]);
    Some(c)
}

pub fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The scratch directory opened for `nobody` to pass through (0711), with
/// `shared` (1777, sticky as /tmp: anyone may put a file there) and `theirs`
/// (nobody's own directory, 0755) inside.
pub struct Places {
    pub scratch: ScratchDir,
    pub shared: PathBuf,
    pub theirs: PathBuf,
}

pub fn places(tag: &str) -> Places {
    let scratch = ScratchDir::new(tag);
    chmod(scratch.path(), 0o711);
    let shared = scratch.join("shared");
    std::fs::create_dir(&shared).unwrap();
    chmod(&shared, 0o1777);
    let theirs = scratch.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
    Places {
        scratch,
        shared,
        theirs,
    }
}

/// `python3` for an attacker's script, if this machine has one in /usr/bin
/// (root's own may live where nobody cannot run it).
pub fn python(test: &str) -> Option<&'static str> {
    let p = "/usr/bin/python3";
    if Path::new(p).exists() {
        Some(p)
    } else {
        skip(&format!(
            "SKIP {test}: /usr/bin/python3 is missing (the attacker's socket)"
        ));
        None
    }
}
