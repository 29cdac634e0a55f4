//! The memory-limited cgroup a workload runs in: cgroup v2 where the unified
//! hierarchy has the memory controller, otherwise cgroup v1's memory
//! controller. One cgroup per run, created empty, removed after (whatever is
//! still in it is killed first).
//!
//! The RAM limit is set at creation (v1 `memory.limit_in_bytes`, v2
//! `memory.max`); v1's `memory.memsw.limit_in_bytes` is left unlimited. The
//! settings only cgroup v2 has (`memory.swap.max`, `memory.zswap.max`,
//! `memory.zswap.writeback`) are the caller's choice, written with
//! [`Cgroup::set_v2`] where this kernel has the file; they live in the
//! cgroup, so the cgroup's removal (journaled before it is created) is their
//! undo. [`Cgroup::pressure`] reads the cgroup's memory pressure (v2).

use std::io;
use std::path::PathBuf;

use crate::cgroup_psi::{parse_pressure, PsiFile};
use crate::Sys;
use zmem_kernel::proc::parse_mountinfo;

use crate::knob;

/// Which cgroup interface holds the memory controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CgroupVersion {
    V1,
    V2,
}

/// Where trial cgroups are created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryHierarchy {
    pub version: CgroupVersion,
    /// The parent directory new cgroups go into (a kernel path for [`Sys`]).
    pub parent: String,
    /// cgroup v2 as most distributions boot it without systemd's slices: the
    /// memory controller is available but not enabled for children. This is
    /// the `cgroup.subtree_control` to write `+memory` to, through a guard
    /// that writes `-memory` back (`Guard::enable_memory_controller`).
    pub enable: Option<String>,
}

/// This process's cgroup path in the v1 hierarchy with `controller`, or in v2 (`None`).
fn own_cgroup(proc_self_cgroup: &str, controller: Option<&str>) -> Option<String> {
    for line in proc_self_cgroup.lines() {
        let mut f = line.splitn(3, ':');
        let (_id, ctrls, path) = (f.next()?, f.next()?, f.next()?);
        match controller {
            None if ctrls.is_empty() => return Some(path.to_string()),
            Some(c) if ctrls.split(',').any(|x| x == c) => return Some(path.to_string()),
            _ => {}
        }
    }
    None
}

fn controllers(sys: &Sys, abs: &str) -> Vec<String> {
    sys.read(abs)
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// `dir/name` for kernel paths (`dir` may end in `/`, as a mount point `/` does).
fn join(dir: &str, name: &str) -> String {
    format!(
        "{}/{}",
        dir.trim_end_matches('/'),
        name.trim_start_matches('/')
    )
}

/// The tightest memory limit on this process: its own memory cgroup's and every ancestor's
/// (`memory.max` on cgroup v2, `memory.limit_in_bytes` on v1), with the cgroup that sets it;
/// `None` when nothing limits it (`max`, v1's page-rounded LONG_MAX) or no hierarchy is mounted.
pub fn own_memory_limit(sys: &Sys) -> Option<(String, u64)> {
    let info = sys.read("/proc/self/mountinfo").ok()?;
    let own = sys.read("/proc/self/cgroup").ok()?;
    let mounts = parse_mountinfo(&info);
    let v2 = mounts.iter().find(|m| {
        m.2 == "cgroup2"
            && controllers(sys, &join(&m.1, "cgroup.controllers"))
                .iter()
                .any(|c| c == "memory")
    });
    let (dir, file) = if let Some(m) = v2 {
        let rel = own_cgroup(&own, None)?;
        (
            join(&m.1, rel.strip_prefix(m.0.as_str()).unwrap_or(&rel)),
            "memory.max",
        )
    } else {
        let m = mounts
            .iter()
            .find(|m| m.2 == "cgroup" && m.3.split(',').any(|o| o == "memory"))?;
        let rel = own_cgroup(&own, Some("memory"))?;
        let dir = join(&m.1, rel.strip_prefix(m.0.as_str()).unwrap_or(&rel));
        (dir, "memory.limit_in_bytes")
    };
    let mut best: Option<(String, u64)> = None;
    let mut at = dir.trim_end_matches('/').to_string();
    loop {
        let limit = sys
            .read(&join(&at, file))
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|&v| v < 1 << 62);
        if let Some(v) = limit {
            if best.as_ref().is_none_or(|b| v < b.1) {
                best = Some((at.clone(), v));
            }
        }
        match at.rsplit_once('/') {
            Some((up, _)) if !up.is_empty() && sys.exists(&join(up, file)) => at = up.to_string(),
            _ => break,
        }
    }
    best
}

/// Find where to create memory-limited cgroups, or say exactly why we cannot.
///
/// * v2 (preferred when it has the memory controller): new cgroups go directly
///   below the cgroup2 mount, which needs `memory` in the mount's
///   `cgroup.subtree_control`; where it is missing, [`MemoryHierarchy::enable`]
///   names the file, and the caller's guard enables it and undoes that after.
/// * v1: new cgroups go below this process's own memory cgroup, so the
///   workload stays inside whatever limits zmem itself runs under.
pub fn detect(sys: &Sys) -> Result<MemoryHierarchy, String> {
    let info = sys
        .read("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let own = sys.read("/proc/self/cgroup").unwrap_or_default();
    let ms = parse_mountinfo(&info);
    let mut why = Vec::new();
    for (_root, point, fstype, _opts) in ms.iter().filter(|m| m.2 == "cgroup2") {
        let _ = fstype;
        let mp = point.clone();
        if controllers(sys, &join(&mp, "cgroup.controllers"))
            .iter()
            .any(|c| c == "memory")
        {
            if controllers(sys, &join(&mp, "cgroup.subtree_control"))
                .iter()
                .any(|c| c == "memory")
            {
                return Ok(MemoryHierarchy {
                    version: CgroupVersion::V2,
                    parent: mp,
                    enable: None,
                });
            }
            // The controller is there, only not enabled for children: the
            // caller enables it (and undoes that after).
            return Ok(MemoryHierarchy {
                version: CgroupVersion::V2,
                enable: Some(join(&mp, "cgroup.subtree_control")),
                parent: mp,
            });
        } else {
            why.push(format!("cgroup v2 at {point} has no memory controller"));
        }
    }
    for (root, point, _fstype, opts) in ms.iter().filter(|m| m.2 == "cgroup") {
        if !opts.split(',').any(|o| o == "memory") {
            continue;
        }
        let mp = point.clone();
        let mut parent = mp.clone();
        if let Some(p) = own_cgroup(&own, Some("memory")) {
            // The path in /proc/self/cgroup is relative to the hierarchy's root;
            // the mount may show a sub-tree of it (mount root `root`).
            let rel = p.strip_prefix(root.as_str()).unwrap_or(&p);
            let cand = join(&mp, rel).trim_end_matches('/').to_string();
            if sys.path(&cand).is_dir() {
                parent = cand;
            }
        }
        if !sys.exists(&join(&parent, "memory.limit_in_bytes")) {
            why.push(format!(
                "cgroup v1 memory at {parent} has no memory.limit_in_bytes"
            ));
            continue;
        }
        return Ok(MemoryHierarchy {
            version: CgroupVersion::V1,
            parent,
            enable: None,
        });
    }
    if why.is_empty() {
        why.push(
            "no cgroup v1 memory controller and no cgroup v2 mount in /proc/self/mountinfo".into(),
        );
    }
    Err(format!("no usable memory cgroup: {}", why.join("; ")))
}

/// A cgroup zmem created for one run.
#[derive(Debug)]
pub struct Cgroup {
    sys: Sys,
    /// Kernel path of the cgroup directory.
    path: String,
    version: CgroupVersion,
    removed: bool,
}

impl Cgroup {
    /// Create `name` below the hierarchy's parent with a RAM limit of `limit`
    /// bytes. `swappiness` sets v1's per-cgroup memory.swappiness (v2 has none;
    /// it uses vm.swappiness).
    pub fn create(
        sys: &Sys,
        h: &MemoryHierarchy,
        name: &str,
        limit: u64,
        swappiness: Option<u32>,
    ) -> io::Result<Self> {
        let path = join(&h.parent, name);
        sys.create_dir(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("mkdir {path}: {e}")))?;
        let cg = Cgroup {
            sys: sys.clone(),
            path,
            version: h.version,
            removed: false,
        };
        let setup = || -> io::Result<()> {
            match cg.version {
                CgroupVersion::V1 => {
                    cg.write("memory.limit_in_bytes", &limit.to_string())?;
                    if let Some(s) = swappiness {
                        cg.write("memory.swappiness", &s.to_string())?;
                    }
                }
                CgroupVersion::V2 => {
                    cg.write("memory.max", &limit.to_string())?;
                    // Kill the whole workload on OOM, not one random process of it.
                    if cg.sys.exists(&cg.file("memory.oom.group")) {
                        cg.write("memory.oom.group", "1")?;
                    }
                }
            }
            Ok(())
        };
        setup()?; // on error, dropping `cg` removes it again
        Ok(cg)
    }

    fn file(&self, name: &str) -> String {
        join(&self.path, name)
    }

    fn write(&self, file: &str, v: &str) -> io::Result<()> {
        let p = self.file(file);
        self.sys
            .write(&p, v)
            .map_err(|e| io::Error::new(e.kind(), format!("writing {v} to {p}: {e}")))
    }

    fn read(&self, file: &str) -> Option<String> {
        self.sys.read(&self.file(file)).ok()
    }

    /// The cgroup's directory (a kernel path for [`Sys`]).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Which interface it is.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// `cgroup.procs` (a process joins by writing its pid, or `0` for itself).
    pub fn procs_file(&self) -> PathBuf {
        self.sys.path(&self.file("cgroup.procs"))
    }

    /// Peak RAM usage in bytes (v1 memory.max_usage_in_bytes, v2 memory.peak).
    pub fn peak(&self) -> Option<u64> {
        let f = match self.version {
            CgroupVersion::V1 => "memory.max_usage_in_bytes",
            CgroupVersion::V2 => "memory.peak",
        };
        self.read(f)?.trim().parse().ok()
    }

    /// How many processes the OOM killer killed in this cgroup.
    pub fn oom_kills(&self) -> u64 {
        let f = match self.version {
            CgroupVersion::V1 => "memory.oom_control",
            CgroupVersion::V2 => "memory.events",
        };
        self.read(f)
            .and_then(|s| {
                s.lines().find_map(|l| {
                    l.strip_prefix("oom_kill ")
                        .and_then(|v| v.trim().parse().ok())
                })
            })
            .unwrap_or(0)
    }

    /// Write a setting only cgroup v2 has (`memory.swap.max`,
    /// `memory.zswap.max`, `memory.zswap.writeback`, Documentation/admin-guide/cgroup-v2.rst)
    /// where this kernel has its file. `Ok(false)` on cgroup v1 and where the
    /// kernel has no such file (memory.zswap.max before 5.19,
    /// memory.zswap.writeback before 6.8, no memory.swap.max without swap
    /// accounting). No undo is recorded: the file goes with the cgroup.
    pub fn set_v2(&self, file: &str, value: &str) -> io::Result<bool> {
        if self.version != CgroupVersion::V2 || !self.sys.exists(&self.file(file)) {
            return Ok(false);
        }
        self.write(file, value)?;
        Ok(true)
    }

    /// A setting of this cgroup as it reads now (`None` without the file).
    pub fn setting(&self, file: &str) -> Option<String> {
        self.read(file).map(|s| s.trim().to_string())
    }

    /// The cgroup's memory pressure (`memory.pressure`, cgroup v2 with
    /// CONFIG_PSI); `None` on v1, which has no per-cgroup pressure file.
    pub fn pressure(&self) -> Option<PsiFile> {
        if self.version != CgroupVersion::V2 {
            return None;
        }
        parse_pressure(&self.read("memory.pressure")?)
    }

    /// Kill everything left in the cgroup and remove it (dropping does the
    /// same, without reporting errors).
    pub fn remove(mut self) -> io::Result<()> {
        self.removed = true;
        knob::remove_cgroup(&self.sys, &self.path).map(|_| ())
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        if !self.removed {
            self.removed = true;
            if let Err(e) = knob::remove_cgroup(&self.sys, &self.path) {
                eprintln!("zmem: cleanup failed: {e} — remove it by hand");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use zmem_kernel::proc::unescape_mount;

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    /// A hybrid machine (this one: v1 memory, a cgroup2 without controllers): the tightest of
    /// this process's memory cgroup and its ancestors.
    #[test]
    fn own_memory_limit_is_the_tightest_on_the_path() {
        let d = zmem_files::testutil::ScratchDir::new("own-memory-limit");
        let put = |abs: &str, text: &str| {
            let p = d.path().join(abs.trim_start_matches('/'));
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        };
        put("/proc/self/mountinfo", MOUNTINFO);
        put("/proc/self/cgroup", "5:memory:/a/b\n2:cpu:/\n0::/x\n");
        put("/sys/fs/cgroup/unified/cgroup.controllers", "");
        put(
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "9223372036854771712\n",
        );
        put(
            "/sys/fs/cgroup/memory/a/memory.limit_in_bytes",
            "201326592\n",
        );
        put(
            "/sys/fs/cgroup/memory/a/b/memory.limit_in_bytes",
            "9223372036854771712\n",
        );
        let sys = Sys::new(d.path());
        assert_eq!(
            own_memory_limit(&sys),
            Some(("/sys/fs/cgroup/memory/a".to_string(), 192 << 20))
        );
        put(
            "/sys/fs/cgroup/memory/a/memory.limit_in_bytes",
            "9223372036854771712\n",
        );
        assert_eq!(own_memory_limit(&sys), None);
        // cgroup v2 with the memory controller: memory.max, `max` is no limit.
        put("/sys/fs/cgroup/unified/cgroup.controllers", "cpu memory\n");
        put("/sys/fs/cgroup/unified/memory.max", "max\n");
        put("/sys/fs/cgroup/unified/x/memory.max", "67108864\n");
        assert_eq!(
            own_memory_limit(&sys),
            Some(("/sys/fs/cgroup/unified/x".to_string(), 64 << 20))
        );
    }

    #[test]
    fn parses_mountinfo_and_own_cgroup() {
        let m = parse_mountinfo(MOUNTINFO);
        assert_eq!(m.len(), 4);
        assert_eq!(
            m[2],
            (
                "/".into(),
                "/sys/fs/cgroup/memory".into(),
                "cgroup".into(),
                "rw,memory".into()
            )
        );
        assert_eq!(m[3].2, "cgroup2");
        let own = "9:name=systemd:/\n4:memory:/process_api/abc\n2:cpu,cpuacct:/\n0::/\n";
        assert_eq!(
            own_cgroup(own, Some("memory")).as_deref(),
            Some("/process_api/abc")
        );
        assert_eq!(own_cgroup(own, Some("cpuacct")).as_deref(), Some("/"));
        assert_eq!(own_cgroup(own, None).as_deref(), Some("/"));
        assert_eq!(unescape_mount("/mnt/a\\040b"), "/mnt/a b");
    }

    fn fake(v2_memory: bool) -> (PathBuf, Sys) {
        fake_named(v2_memory, if v2_memory { "v2" } else { "v1" })
    }

    /// A fixture tree of its own (`tag` keeps parallel tests apart).
    fn fake_named(v2_memory: bool, tag: &str) -> (PathBuf, Sys) {
        let root = std::env::temp_dir().join(format!("zmem-cg-test.{}.{tag}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let h = Sys::new(&root);
        fs::create_dir_all(h.path("/proc/self")).unwrap();
        fs::write(h.path("/proc/self/mountinfo"), MOUNTINFO).unwrap();
        fs::write(
            h.path("/proc/self/cgroup"),
            "4:memory:/process_api/abc\n0::/\n",
        )
        .unwrap();
        let v1 = h.path("/sys/fs/cgroup/memory/process_api/abc");
        fs::create_dir_all(&v1).unwrap();
        fs::write(v1.join("memory.limit_in_bytes"), "9223372036854771712\n").unwrap();
        let v2 = h.path("/sys/fs/cgroup/unified");
        fs::create_dir_all(&v2).unwrap();
        let c = if v2_memory { "cpu memory pids\n" } else { "\n" };
        fs::write(v2.join("cgroup.controllers"), c).unwrap();
        fs::write(v2.join("cgroup.subtree_control"), c).unwrap();
        (root, h)
    }

    #[test]
    fn detects_v1_below_own_cgroup_when_v2_has_no_memory() {
        let (root, h) = fake(false);
        let m = detect(&h).unwrap();
        assert_eq!(m.version, CgroupVersion::V1);
        assert_eq!(m.parent, "/sys/fs/cgroup/memory/process_api/abc");
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn prefers_v2_with_memory() {
        let (root, h) = fake(true);
        let m = detect(&h).unwrap();
        assert_eq!(m.version, CgroupVersion::V2);
        assert_eq!(m.parent, "/sys/fs/cgroup/unified");
        fs::remove_dir_all(root).unwrap();
    }

    /// cgroup v2 as booted without systemd: memory available, not enabled
    /// for children. Detected with the file to enable it in; a guard enables
    /// it and writes `-memory` back when unwound.
    #[test]
    fn v2_without_memory_in_subtree_control_is_enabled_and_undone() {
        let (root, h) = fake_named(true, "v2-enable");
        fs::write(
            h.path("/sys/fs/cgroup/unified/cgroup.subtree_control"),
            "cpu\n",
        )
        .unwrap();
        let m = detect(&h).unwrap();
        assert_eq!(m.version, CgroupVersion::V2);
        let file = "/sys/fs/cgroup/unified/cgroup.subtree_control";
        assert_eq!(m.enable.as_deref(), Some(file));
        let mut g = crate::Guard::new(&h, "test");
        g.enable_memory_controller(&m).unwrap();
        // The fixture is a plain file: it holds the last write.
        assert_eq!(fs::read_to_string(h.path(file)).unwrap().trim(), "+memory");
        assert!(g.unwind().is_empty());
        assert_eq!(fs::read_to_string(h.path(file)).unwrap().trim(), "-memory");
        fs::remove_dir_all(root).unwrap();
    }

    /// A cgroup of `version` at `dir` of a fixture tree (the fixture's
    /// mkdir makes a plain directory, not the kernel's files).
    fn made(h: &Sys, dir: &str, version: CgroupVersion, files: &[(&str, &str)]) -> Cgroup {
        fs::create_dir_all(h.path(dir)).unwrap();
        for (f, v) in files {
            fs::write(h.path(dir).join(f), format!("{v}\n")).unwrap();
        }
        Cgroup {
            sys: h.clone(),
            path: dir.into(),
            version,
            removed: true,
        }
    }

    #[test]
    fn v2_settings_are_written_where_the_kernel_has_them() {
        let (root, h) = fake_named(true, "v2-set");
        let dir = "/sys/fs/cgroup/unified/zmem-trial.1.1";
        // 6.1: memory.zswap.max but no memory.zswap.writeback (6.8+).
        let cg = made(
            &h,
            dir,
            CgroupVersion::V2,
            &[("memory.swap.max", "max"), ("memory.zswap.max", "max")],
        );
        assert!(cg.set_v2("memory.swap.max", "0").unwrap());
        assert!(cg.set_v2("memory.zswap.max", "13421772").unwrap());
        assert!(!cg.set_v2("memory.zswap.writeback", "1").unwrap());
        assert_eq!(cg.setting("memory.swap.max").as_deref(), Some("0"));
        assert_eq!(cg.setting("memory.zswap.max").as_deref(), Some("13421772"));
        assert_eq!(cg.setting("memory.zswap.writeback"), None);
        assert_eq!(cg.pressure(), None, "no memory.pressure: no PSI");
        fs::write(
            h.path(dir).join("memory.pressure"),
            "some avg10=2.00 avg60=0.50 avg300=0.10 total=3000000\nfull avg10=1.00 avg60=0.25 avg300=0.05 total=1500000\n",
        )
        .unwrap();
        let p = cg.pressure().unwrap();
        assert_eq!(
            (p.some.total_us, p.full.unwrap().total_us),
            (3_000_000, 1_500_000)
        );
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn v1_has_no_v2_settings_and_no_pressure_file() {
        let (root, h) = fake_named(false, "v1-set");
        let dir = "/sys/fs/cgroup/memory/process_api/abc/zmem-trial.1.1";
        // Even a file of that name is not written on v1.
        let cg = made(
            &h,
            dir,
            CgroupVersion::V1,
            &[
                ("memory.swap.max", "max"),
                ("memory.pressure", "some avg10=0 avg60=0 avg300=0 total=1"),
            ],
        );
        assert!(!cg.set_v2("memory.swap.max", "0").unwrap());
        assert_eq!(cg.setting("memory.swap.max").as_deref(), Some("max"));
        assert_eq!(cg.pressure(), None);
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn says_why_when_nothing_is_usable() {
        let root = std::env::temp_dir().join(format!("zmem-cg-test-none.{}", std::process::id()));
        let h = Sys::new(&root);
        fs::create_dir_all(h.path("/proc/self")).unwrap();
        fs::write(
            h.path("/proc/self/mountinfo"),
            "41 31 0:38 / /cg rw - cgroup2 cgroup2 rw\n",
        )
        .unwrap();
        let e = detect(&h).unwrap_err();
        assert!(e.contains("/cg has no memory controller"), "{e}");
        fs::remove_dir_all(root).unwrap();
    }
}
