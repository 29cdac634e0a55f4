//! `zmem persist`: the files that make a configuration survive a reboot, written into a root
//! tree: zram-generator.conf for the devices, a sysctl.d file, a tmpfiles.d file for zswap, a
//! swap unit for the disk tier, and a unit running `zmem policy` when there is a [policy].
//! [`partners`] says which program reads each file at boot and whether it is installed in the
//! tree (zram-generator for the devices, systemd-sysctl, systemd-tmpfiles, systemd for units).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use zmem_conf::Config;

pub const MARK: &str = "# Written by `zmem persist`";

/// Where the policy daemon's copy of the configuration goes.
const POLICY_CONF: &str = "/etc/zmem/zmem.conf";

/// The policy daemon's unit as the Debian package installs it: `persist` writes this same unit
/// (its `ExecStart` naming the running binary) when the package's is not installed.
const POLICY_UNIT: &str = include_str!("../../../packaging/systemd/zmem-policy.service");

/// Where a package installs the policy daemon's unit.
const PACKAGED_POLICY_UNIT: [&str; 2] = [
    "/usr/lib/systemd/system/zmem-policy.service",
    "/lib/systemd/system/zmem-policy.service",
];

/// The package's zmem-policy.service in the tree under `root`, if installed.
pub fn packaged_policy_unit(root: &Path) -> Option<PathBuf> {
    let sys = zmem_host::Sys::new(root);
    PACKAGED_POLICY_UNIT
        .iter()
        .map(|p| sys.path(p))
        .find(|p| p.is_file())
}

/// [`POLICY_UNIT`] for `zmem_binary`, marked as persist's: a binary in a home directory stays
/// readable to the unit (`ProtectHome=read-only`).
fn policy_unit(src: &str, zmem_binary: &str) -> String {
    let mut unit = format!("{MARK} from {src}.\n");
    let in_home = zmem_binary.starts_with("/home/") || zmem_binary.starts_with("/root/");
    for line in POLICY_UNIT.lines() {
        match line.strip_prefix("ExecStart=/usr/bin/zmem ") {
            Some(rest) => unit.push_str(&format!("ExecStart={zmem_binary} {rest}")),
            None if in_home && line == "ProtectHome=yes" => unit.push_str("ProtectHome=read-only"),
            None => unit.push_str(line),
        }
        unit.push('\n');
    }
    unit
}

/// A file to write: path inside the root tree, contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    pub path: String,
    pub contents: String,
}

/// systemd path escaping (`systemd-escape --path`).
pub fn escape_path(p: &str) -> String {
    let t = p.trim_matches('/');
    if t.is_empty() {
        return "-".into();
    }
    let mut out = String::new();
    for (i, c) in t.chars().enumerate() {
        match c {
            '/' => out.push('-'),
            c if c.is_ascii_alphanumeric() || c == '_' || (c == '.' && i > 0) => out.push(c),
            c => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            }
        }
    }
    out
}

/// The files for a configuration (nothing written yet). The policy daemon's unit is among them
/// unless `packaged_unit` (the package's [`packaged_policy_unit`] is installed: enable that).
pub fn files(cfg: &Config, zmem_binary: &str, packaged_unit: bool) -> Vec<File> {
    let src = cfg.file.display();
    let mut v = Vec::new();
    if !cfg.devices.is_empty() {
        let mut s = format!("{MARK} from {src}; read by systemd's zram-generator at boot.\n");
        for d in &cfg.devices {
            if d.fs_type == "none" {
                s.push_str(&format!(
                    "\n# [{}] has fs-type = none (a zmem extension) and is not created at boot.\n",
                    d.name
                ));
                continue;
            }
            s.push_str(&format!("\n[{}]\n", d.name));
            for (k, val) in &d.raw {
                s.push_str(&format!("{k} = {val}\n"));
            }
        }
        v.push(File {
            path: "/etc/systemd/zram-generator.conf".into(),
            contents: s,
        });
    }
    if !cfg.sysctls.is_empty() {
        let mut s = format!("{MARK} from {src}.\n");
        for e in &cfg.sysctls {
            s.push_str(&format!("{} = {}\n", e.key, e.value));
        }
        v.push(File {
            path: "/etc/sysctl.d/90-zmem.conf".into(),
            contents: s,
        });
    }
    if !cfg.zswap.is_empty() {
        let mut s =
            format!("{MARK} from {src}: zswap parameters, set by systemd-tmpfiles at boot.\n");
        // compressor before enabled, so the first pool is created with the right compressor.
        let mut entries: Vec<_> = cfg.zswap.iter().collect();
        entries.sort_by_key(|e| e.key == "enabled");
        for e in entries {
            s.push_str(&format!(
                "w- /sys/module/zswap/parameters/{} - - - - {}\n",
                e.key, e.value
            ));
        }
        v.push(File {
            path: "/etc/tmpfiles.d/zmem-zswap.conf".into(),
            contents: s,
        });
    }
    if let Some(ds) = &cfg.disk_swap {
        let unit = format!("{}.swap", escape_path(&ds.device));
        let s = format!(
            "{MARK} from {src}: the disk tier below zram.\n[Unit]\nDescription=zmem disk swap tier {}\n\n[Swap]\nWhat={}\nPriority={}\n\n[Install]\nWantedBy=swap.target\n",
            ds.device, ds.device, ds.priority
        );
        v.push(File {
            path: format!("/etc/systemd/system/{unit}"),
            contents: s,
        });
    }
    if !cfg.policy.is_empty() {
        // The policy daemon's copy of the config, marked as zmem's like every other file.
        let mut conf = format!("{MARK} from {src}: `zmem policy`'s configuration.\n");
        if let Ok(text) = fs::read_to_string(&cfg.file) {
            conf.push_str(&text);
        }
        v.push(File {
            path: POLICY_CONF.into(),
            contents: conf,
        });
        if !packaged_unit {
            v.push(File {
                path: "/etc/systemd/system/zmem-policy.service".into(),
                contents: policy_unit(&src.to_string(), zmem_binary),
            });
        }
    }
    v
}

/// Write the files under `root` through zmem's one output writer, all or nothing: every target
/// is checked first, then every file written beside its target, then all renamed into place; a
/// refusal or failure at any one leaves every file as it was (`zmem_files::write_outputs`). Each is
/// mode 0644, never written through a symbolic link (at a file or at its directory), never over
/// another user's file, and never over a file zmem did not write (its first line) unless `force`.
/// Every error names its file.
pub fn write(root: &Path, files: &[File], force: bool) -> io::Result<Vec<PathBuf>> {
    let sys = zmem_host::Sys::new(root);
    let paths: Vec<PathBuf> = files.iter().map(|f| sys.path(&f.path)).collect();
    // zmem's when marked; the policy config's copy also when it holds exactly the config
    // without the mark (the source itself, `zmem persist /etc/zmem/zmem.conf`).
    let judges: Vec<_> = files
        .iter()
        .map(|f| {
            let unmarked = match f.path == POLICY_CONF {
                true => f.contents.split_once('\n').map(|(_, rest)| rest),
                false => None,
            };
            move |old: &[u8]| {
                old.starts_with(MARK.as_bytes()) || unmarked.is_some_and(|u| old == u.as_bytes())
            }
        })
        .collect();
    let outputs: Vec<_> = files
        .iter()
        .zip(&paths)
        .zip(&judges)
        .map(|((f, p), ours)| zmem_files::OutputFile {
            path: p,
            bytes: f.contents.as_bytes(),
            replace: match force {
                true => zmem_files::Replace::Always,
                false => zmem_files::Replace::IfOurs(ours),
            },
            readers: zmem_files::Readers::Everyone,
        })
        .collect();
    for p in &paths {
        check_above(root, p)
            .map_err(|e| io::Error::new(e.kind(), format!("{e} (nothing was written)")))?;
    }
    zmem_files::write_outputs(&outputs).map_err(|e| match e.kind() {
        io::ErrorKind::AlreadyExists => io::Error::new(
            e.kind(),
            format!("{e}; use --force to replace it (nothing was written)"),
        ),
        _ => io::Error::new(e.kind(), format!("{e} (nothing was written)")),
    })?;
    Ok(paths)
}

/// Every directory above `target` (the writer checks its own directory):
/// in a tree (`--root TREE`), none a symbolic link (it would lead out of the
/// tree) nor one another user could change (`zmem_files::trusted_in_tree`);
/// on `/`, the nearest existing directory and those above it as
/// `zmem_files::trusted_dir` checks them.
fn check_above(root: &Path, target: &Path) -> io::Result<()> {
    if root != Path::new("/") {
        return zmem_files::trusted_in_tree(root, target);
    }
    let mut dir = target.parent();
    while let Some(d) = dir.filter(|d| std::fs::symlink_metadata(d).is_err()) {
        dir = d.parent();
    }
    zmem_files::trusted_dir(dir.unwrap_or(root)).map(|_| ())
}

/// A program that reads persisted files at boot.
#[derive(Debug, PartialEq, Eq)]
pub struct Partner {
    pub name: &'static str,
    /// Where it is installed (any one of them), absolute in the tree.
    pub paths: &'static [&'static str],
    /// What it does with the files at boot.
    pub does: &'static str,
    /// The package that provides it.
    pub install: &'static str,
}

/// systemd's zram generator (zram-generator.conf): where distributions install it.
pub const ZRAM_GENERATOR: Partner = Partner {
    name: "zram-generator",
    paths: &[
        "/usr/lib/systemd/system-generators/zram-generator",
        "/lib/systemd/system-generators/zram-generator",
        "/usr/local/lib/systemd/system-generators/zram-generator",
        "/etc/systemd/system-generators/zram-generator",
        "/run/systemd/system-generators/zram-generator",
    ],
    does: "creates the zram devices",
    install: "Debian/Ubuntu: systemd-zram-generator; Fedora: zram-generator; Arch: zram-generator",
};

const SYSTEMD_PKG: &str = "systemd (its package on Debian/Ubuntu, Fedora and Arch)";

/// systemd-sysctl (sysctl.d).
pub const SYSTEMD_SYSCTL: Partner = Partner {
    name: "systemd-sysctl",
    paths: &[
        "/usr/lib/systemd/systemd-sysctl",
        "/lib/systemd/systemd-sysctl",
    ],
    does: "sets the sysctls",
    install: SYSTEMD_PKG,
};

/// systemd-tmpfiles (tmpfiles.d: the zswap parameters).
pub const SYSTEMD_TMPFILES: Partner = Partner {
    name: "systemd-tmpfiles",
    paths: &["/usr/bin/systemd-tmpfiles", "/bin/systemd-tmpfiles"],
    does: "sets the zswap parameters",
    install: SYSTEMD_PKG,
};

/// systemd itself (the swap unit, the policy service and its config).
pub const SYSTEMD: Partner = Partner {
    name: "systemd",
    paths: &["/usr/lib/systemd/systemd", "/lib/systemd/systemd"],
    does: "starts the units once enabled with `systemctl enable`",
    install: SYSTEMD_PKG,
};

/// The program that reads `path` (a [`File`]'s path) at boot.
fn partner_of(path: &str) -> &'static Partner {
    if path == "/etc/systemd/zram-generator.conf" {
        &ZRAM_GENERATOR
    } else if path.starts_with("/etc/sysctl.d/") {
        &SYSTEMD_SYSCTL
    } else if path.starts_with("/etc/tmpfiles.d/") {
        &SYSTEMD_TMPFILES
    } else {
        &SYSTEMD
    }
}

/// One partner, the files it reads and where it was found in the tree (`None`: not installed).
#[derive(Debug)]
pub struct PartnerCheck {
    pub partner: &'static Partner,
    pub files: Vec<String>,
    pub found: Option<PathBuf>,
}

/// For each program that reads some of `files` at boot, whether it is installed under `root`
/// (a regular file at one of its paths), in the order the files come.
pub fn partners(root: &Path, files: &[File]) -> Vec<PartnerCheck> {
    let sys = zmem_host::Sys::new(root);
    let mut out: Vec<PartnerCheck> = Vec::new();
    for f in files {
        let p = partner_of(&f.path);
        if let Some(c) = out.iter_mut().find(|c| c.partner == p) {
            c.files.push(f.path.clone());
            continue;
        }
        let found = p.paths.iter().map(|x| sys.path(x)).find(|x| x.is_file());
        out.push(PartnerCheck {
            partner: p,
            files: vec![f.path.clone()],
            found,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str) -> File {
        File {
            path: path.into(),
            contents: String::new(),
        }
    }

    #[test]
    fn each_file_names_the_program_that_reads_it_and_whether_it_is_installed() {
        let d = zmem_files::testutil::ScratchDir::new("persist-partners");
        let fs = [
            file("/etc/systemd/zram-generator.conf"),
            file("/etc/sysctl.d/90-zmem.conf"),
            file("/etc/systemd/system/swapfile.swap"),
            file("/etc/systemd/system/zmem-policy.service"),
        ];
        let c = partners(d.path(), &fs);
        let names: Vec<_> = c.iter().map(|c| c.partner.name).collect();
        assert_eq!(names, ["zram-generator", "systemd-sysctl", "systemd"]);
        assert!(c.iter().all(|c| c.found.is_none()));
        assert_eq!(c[2].files.len(), 2);
        // Any one of the generator's places will do (here /lib, as Debian 12 installs it).
        let g = d.join("lib/systemd/system-generators");
        fs::create_dir_all(&g).unwrap();
        fs::write(g.join("zram-generator"), "").unwrap();
        let c = partners(d.path(), &fs);
        assert_eq!(
            c[0].found.as_deref(),
            Some(g.join("zram-generator").as_path())
        );
        assert!(c[1].found.is_none());
    }

    #[test]
    fn the_policy_config_copy_replaces_its_source_or_zmem_s_copy_only() {
        let d = zmem_files::testutil::ScratchDir::new("persist-copy");
        let src = d.join("zmem.conf");
        fs::write(&src, "[policy]\nwriteback = no\n").unwrap();
        let cfg = zmem_conf::load(&src).unwrap();
        let fs_ = files(&cfg, "/usr/bin/zmem", false);
        let copy = d.join("root/etc/zmem/zmem.conf");
        fs::create_dir_all(copy.parent().unwrap()).unwrap();
        // The source itself (persisting /etc/zmem/zmem.conf): replaced by the marked copy.
        fs::write(&copy, "[policy]\nwriteback = no\n").unwrap();
        write(&d.join("root"), &fs_, false).unwrap();
        let text = fs::read_to_string(&copy).unwrap();
        assert!(text.starts_with(MARK), "{text}");
        assert!(text.ends_with("[policy]\nwriteback = no\n"), "{text}");
        let kv = |c: &zmem_conf::Config| {
            let v: Vec<_> = c
                .policy
                .iter()
                .map(|e| (e.key.clone(), e.value.clone()))
                .collect();
            v
        };
        assert_eq!(kv(&zmem_conf::load(&copy).unwrap()), kv(&cfg));
        // An admin's other config there: refused, and the unit beside it not written either.
        fs::write(&copy, "[policy]\nwriteback = yes\n").unwrap();
        fs::remove_file(d.join("root/etc/systemd/system/zmem-policy.service")).unwrap();
        let e = write(&d.join("root"), &fs_, false).unwrap_err().to_string();
        assert!(
            e.contains("not written by zmem") && e.contains("--force"),
            "{e}"
        );
        assert!(!d
            .join("root/etc/systemd/system/zmem-policy.service")
            .exists());
        assert_eq!(
            fs::read_to_string(&copy).unwrap(),
            "[policy]\nwriteback = yes\n"
        );
    }

    #[test]
    fn the_policy_unit_is_the_package_s_unless_the_package_s_is_installed() {
        let d = zmem_files::testutil::ScratchDir::new("persist-unit");
        let src = d.join("zmem.conf");
        fs::write(&src, "[policy]\nwriteback = no\n").unwrap();
        let cfg = zmem_conf::load(&src).unwrap();
        let unit = |fs_: &[File]| {
            fs_.iter()
                .find(|f| f.path == "/etc/systemd/system/zmem-policy.service")
                .map(|f| f.contents.clone())
        };
        let u = unit(&files(&cfg, "/usr/local/bin/zmem", false)).expect("a unit");
        assert!(u.starts_with(MARK), "{u}");
        assert!(u.contains("\nExecStart=/usr/local/bin/zmem policy --config /etc/zmem/zmem.conf\n"));
        assert!(u.contains("\nProtectHome=yes\n") && u.contains("\nCapabilityBoundingSet=\n"));
        // Everything else is the package's unit, line for line.
        let body: Vec<_> = u
            .lines()
            .skip(1)
            .filter(|l| !l.starts_with("ExecStart="))
            .collect();
        let pkg: Vec<_> = POLICY_UNIT
            .lines()
            .filter(|l| !l.starts_with("ExecStart="))
            .collect();
        assert_eq!(body, pkg);
        let home = unit(&files(&cfg, "/root/.cargo/bin/zmem", false)).unwrap();
        assert!(home.contains("\nProtectHome=read-only\n"), "{home}");
        // The package's unit installed: persist writes none (the config copy still).
        assert_eq!(unit(&files(&cfg, "/usr/bin/zmem", true)), None);
        assert!(files(&cfg, "/usr/bin/zmem", true)
            .iter()
            .any(|f| f.path == POLICY_CONF));
        assert_eq!(packaged_policy_unit(d.path()), None);
        let lib = d.join("lib/systemd/system");
        fs::create_dir_all(&lib).unwrap();
        fs::write(lib.join("zmem-policy.service"), POLICY_UNIT).unwrap();
        assert_eq!(
            packaged_policy_unit(d.path()),
            Some(lib.join("zmem-policy.service"))
        );
    }

    #[test]
    fn escaping() {
        assert_eq!(escape_path("/swapfile"), "swapfile");
        assert_eq!(escape_path("/dev/vdb2"), "dev-vdb2");
        assert_eq!(escape_path("/var/swap-file"), "var-swap\\x2dfile");
    }
}
