//! What the tests of commands that change machine-wide state (swap areas,
//! zram devices, zswap, sysctls, cgroups) share: one lock, the checks that
//! the machine can run them, and a snapshot of everything they may touch.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::Mutex;
use std::thread::JoinHandle;

/// The tests change machine-wide state (swap areas): one at a time.
pub static MACHINE: Mutex<()> = Mutex::new(());

pub fn zmem() -> Command {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
}

pub use zmem_files::euid_is_root as is_root;

pub fn zswap_enabled() -> bool {
    fs::read_to_string("/sys/module/zswap/parameters/enabled")
        .map(|s| s.trim() == "Y")
        .unwrap_or(false)
}

pub fn active_swaps() -> Vec<String> {
    fs::read_to_string("/proc/swaps")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Why this machine cannot run the trial tests, if it cannot.
pub fn skip_reason() -> Option<String> {
    if !is_root() {
        return Some("needs root".into());
    }
    if !Path::new("/sys/class/zram-control/hot_add").exists() {
        return Some("kernel zram not loaded (/sys/class/zram-control/hot_add missing)".into());
    }
    if !Path::new("/sys/module/zswap/parameters/enabled").exists() {
        return Some("kernel has no zswap".into());
    }
    if !fs::read_to_string("/proc/crypto")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("name") && l.ends_with(": lzo"))
    {
        return Some("no lzo in /proc/crypto for zswap".into());
    }
    if !fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .contains("cgroup")
    {
        return Some("no cgroup mounts".into());
    }
    let swaps = active_swaps();
    if !swaps.is_empty() {
        return Some(format!(
            "swap is already active ({}); the trial would refuse",
            swaps.join(", ")
        ));
    }
    if zswap_enabled() {
        return Some("zswap is already enabled; the trial would refuse".into());
    }
    None
}

#[macro_export]
macro_rules! skip_unless_ready {
    ($name:expr) => {
        if let Some(why) = $crate::machine_common::skip_reason() {
            zmem_files::testutil::skip(&format!("SKIP {}: {why}", $name));
            return;
        }
    };
}

/// Directories trial cgroups can appear in: this process's v1 memory cgroup,
/// and the cgroup2 mount roots.
pub fn cgroup_parents() -> Vec<PathBuf> {
    let mut v = Vec::new();
    let own = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for (_, mount_point, fstype, options) in zmem_kernel::proc::parse_mountinfo(&info) {
        let mp = PathBuf::from(mount_point);
        if fstype == "cgroup2" {
            v.push(mp);
        } else if fstype == "cgroup" && options.split(',').any(|o| o == "memory") {
            v.push(mp.clone());
            if let Some(p) = own.lines().find_map(|l| {
                let f: Vec<&str> = l.splitn(3, ':').collect();
                (f.len() == 3 && f[1].split(',').any(|c| c == "memory")).then(|| f[2].to_string())
            }) {
                v.push(mp.join(p.trim_start_matches('/')));
            }
        }
    }
    v
}

pub fn subdirs(p: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(p)
        .map(|it| {
            it.filter_map(|e| e.ok())
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Everything a trial may touch, as text.
pub fn snapshot() -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    m.insert(
        "/proc/swaps".into(),
        fs::read_to_string("/proc/swaps").unwrap_or_default(),
    );
    let zram: Vec<String> = subdirs(Path::new("/sys/block"))
        .into_iter()
        .filter(|d| d.starts_with("zram"))
        .collect();
    m.insert("zram devices".into(), zram.join(" "));
    for e in fs::read_dir("/sys/module/zswap/parameters").unwrap() {
        let p = e.unwrap().path();
        m.insert(
            p.display().to_string(),
            fs::read_to_string(&p).unwrap_or_default(),
        );
    }
    for k in ["/proc/sys/vm/swappiness", "/proc/sys/vm/page-cluster"] {
        m.insert(k.into(), fs::read_to_string(k).unwrap_or_default());
    }
    for p in cgroup_parents() {
        m.insert(format!("cgroups in {}", p.display()), subdirs(&p).join(" "));
    }
    let leftovers: Vec<String> = fs::read_dir("/var/tmp")
        .map(|it| {
            it.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("zmem-trial."))
                .collect()
        })
        .unwrap_or_default();
    m.insert("swap files in /var/tmp".into(), leftovers.join(" "));
    m
}

pub fn assert_same(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) {
    for (k, v) in before {
        assert_eq!(after.get(k), Some(v), "{k} changed");
    }
    assert_eq!(before.len(), after.len(), "set of snapshot keys changed");
}

/// Start `cmd` with its stderr read line by line: each line arrives on the
/// receiver as it is printed, and the handle returns all of them at the end.
pub fn spawn_watching_stderr(cmd: &mut Command) -> (Child, Receiver<String>, JoinHandle<String>) {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    (child, rx, reader)
}

/// Whether a trial cgroup (`zmem-trial.*`) below `parents` has a process in it.
pub fn a_trial_workload_runs(parents: &[PathBuf]) -> bool {
    parents.iter().any(|p| {
        subdirs(p)
            .iter()
            .filter(|d| d.starts_with("zmem-trial."))
            .any(|d| {
                fs::read_to_string(p.join(d).join("cgroup.procs"))
                    .is_ok_and(|s| !s.trim().is_empty())
            })
    })
}
