//! zram-generator's own files: the one main `zram-generator.conf` and the drop-ins of
//! `zram-generator.conf.d/`, found and ordered as zram-generator's `locate_fragments`
//! (src/config.rs) does, and the `systemd.zram` option of the kernel command line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{read_lines, read_text, sections, Config, ConfigError};

/// The directories zram-generator reads, lowest precedence first (zram-generator.conf(5)).
pub const BASE_DIRS: [&str; 4] = ["/usr/lib", "/usr/local/lib", "/etc", "/run"];

/// The files zram-generator reads under `root`, in reading order, as absolute paths inside
/// the root (`/etc/systemd/zram-generator.conf`), as its `locate_fragments` (src/config.rs)
/// and liboverdrop 0.1's `scan` find them:
///
/// * the main file: only one, from the directory of highest precedence where it exists
///   (`/run` over `/etc` over `/usr/local/lib` over `/usr/lib`), symlinks followed: a
///   symlink to `/dev/null` is an empty file, so it masks the main files below it;
/// * then the drop-ins `*.conf` of every `systemd/zram-generator.conf.d/`, sorted by file
///   name whatever their directory; a name in a directory of higher precedence replaces the
///   same name in a lower one; names starting with `.` are skipped; anything but a regular
///   file is skipped, symlinks included, and a symlink to exactly `/dev/null` also removes
///   the same name from the directories below (masking).
///
/// Later files override earlier ones key by key.
pub fn locate_fragments(root: &Path) -> Vec<PathBuf> {
    let mut dropins: BTreeMap<String, PathBuf> = BTreeMap::new();
    for base in BASE_DIRS {
        let dir = format!("{base}/systemd/zram-generator.conf.d");
        let Ok(entries) = std::fs::read_dir(inside(root, &dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || !name.ends_with(".conf") || name == ".conf" {
                continue;
            }
            // DirEntry::file_type does not follow symlinks (liboverdrop: `entry.metadata()`).
            let Ok(t) = e.file_type() else { continue };
            if t.is_file() {
                dropins.insert(name.clone(), PathBuf::from(format!("{dir}/{name}")));
            } else if std::fs::read_link(e.path()).is_ok_and(|l| l == Path::new("/dev/null")) {
                dropins.remove(&name);
            }
        }
    }
    let main = BASE_DIRS
        .iter()
        .rev()
        .map(|base| PathBuf::from(format!("{base}/systemd/zram-generator.conf")))
        .find(|p| inside(root, &p.to_string_lossy()).exists());
    main.into_iter().chain(dropins.into_values()).collect()
}

/// The symlinked drop-ins zram-generator skips (and zmem with it), to warn about: a
/// symlink is how people expect to enable a shared file, and it silently does nothing.
pub fn skipped_dropins(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for base in BASE_DIRS {
        let dir = format!("{base}/systemd/zram-generator.conf.d");
        let Ok(entries) = std::fs::read_dir(inside(root, &dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let link = std::fs::read_link(e.path());
            if name.starts_with('.') || !name.ends_with(".conf") || link.is_err() {
                continue;
            }
            if link.is_ok_and(|l| l != Path::new("/dev/null")) {
                out.push(PathBuf::from(format!("{dir}/{name}")));
            }
        }
    }
    out
}

/// `path` (absolute) inside `root`.
fn inside(root: &Path, path: &str) -> PathBuf {
    root.join(path.trim_start_matches('/'))
}

/// Read zram-generator's configuration under `root` ([`locate_fragments`]) into one
/// [`Config`]; errors and warnings name the files as absolute paths inside the root. With
/// no file at all, the configuration is empty (zram-generator: "No configuration found.").
/// As zram-generator, nothing is read when the root's /proc/cmdline has `systemd.zram=0`.
pub fn load_system(root: &Path, strict: bool) -> Result<Config, ConfigError> {
    let files = locate_fragments(root);
    let first = files
        .first()
        .cloned()
        .unwrap_or_else(|| PathBuf::from("/etc/systemd/zram-generator.conf"));
    let cmdline = std::fs::read_to_string(inside(root, "/proc/cmdline")).unwrap_or_default();
    if kernel_zram_option(&cmdline) == Some(false) {
        let mut cfg = Config::new(&first);
        cfg.warnings.push(ConfigError {
            file: PathBuf::from("/proc/cmdline"),
            line: 0,
            reason: "systemd.zram=0: zram-generator reads no configuration file and sets up no zram device; neither does zmem".into(),
        });
        return Ok(cfg);
    }
    let mut reader = sections::Reader::new(&first, strict);
    for f in &files {
        let path = inside(root, &f.to_string_lossy());
        let text = if std::fs::canonicalize(&path).is_ok_and(|p| p == Path::new("/dev/null")) {
            String::new()
        } else {
            read_text(&path).map_err(|e| ConfigError {
                file: f.clone(),
                ..e
            })?
        };
        reader.next_file(f);
        read_lines(&mut reader, &text)?;
    }
    let mut cfg = reader.finish()?;
    for f in skipped_dropins(root) {
        cfg.warnings.push(ConfigError {
            file: f,
            line: 0,
            reason: "a symlink: zram-generator skips symlinked drop-ins (only regular files and links to /dev/null count), so it is not read, at boot either".into(),
        });
    }
    Ok(cfg)
}

/// The `systemd.zram` option of a kernel command line (/proc/cmdline), as zram-generator's
/// `kernel_has_option` reads it: the last word that is `systemd.zram`, `systemd.zram=1|yes|
/// true|on` (`Some(true)`: add a default zram0) or `systemd.zram=0|no|false|off`
/// (`Some(false)`: no zram devices); words with any other value are skipped.
pub fn kernel_zram_option(cmdline: &str) -> Option<bool> {
    const WORD: &str = "systemd.zram";
    cmdline
        .split_whitespace()
        .rev()
        .find_map(|w| match w.strip_prefix(WORD)? {
            "" | "=1" | "=yes" | "=true" | "=on" => Some(true),
            "=0" | "=no" | "=false" | "=off" => Some(false),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdline_option_last_word_wins() {
        assert_eq!(kernel_zram_option("foo=1 systemd.zram=0"), Some(false));
        assert_eq!(kernel_zram_option("\n\nsystemd.zram\n\n"), Some(true));
        assert_eq!(
            kernel_zram_option("systemd.zram=0 systemd.zram=on"),
            Some(true)
        );
        assert_eq!(
            kernel_zram_option("systemd.zram=1 systemd.zram=x"),
            Some(true)
        );
        assert_eq!(kernel_zram_option("systemd.zramx=0 quiet"), None);
        assert_eq!(kernel_zram_option(""), None);
    }

    #[test]
    fn fragments_in_zram_generators_order() {
        let root = std::env::temp_dir().join(format!("zmem-fragments-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let w = |p: &str, t: &str| {
            let p = inside(&root, p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        };
        w("/usr/lib/systemd/zram-generator.conf", "[zram0]\n");
        w(
            "/etc/systemd/zram-generator.conf",
            "[zram0]\nzram-size = 1\n",
        );
        w(
            "/usr/lib/systemd/zram-generator.conf.d/10-a.conf",
            "[zram0]\nzram-size = 2\n",
        );
        w("/etc/systemd/zram-generator.conf.d/10-a.conf", "");
        w(
            "/run/systemd/zram-generator.conf.d/05-b.conf",
            "[zram1]\nzram-size = -1\n",
        );
        w(
            "/etc/systemd/zram-generator.conf.d/.hidden.conf",
            "[zram9]\n",
        );
        w("/etc/systemd/zram-generator.conf.d/notes.txt", "[zram9]\n");
        let got: Vec<String> = locate_fragments(&root)
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(
            got,
            [
                "/etc/systemd/zram-generator.conf",
                "/run/systemd/zram-generator.conf.d/05-b.conf",
                "/etc/systemd/zram-generator.conf.d/10-a.conf",
            ]
        );
        let cfg = load_system(&root, false).unwrap();
        let ids: Vec<u32> = cfg.devices.iter().map(|d| d.id).collect();
        assert_eq!(ids, [0, 1]);
        // Masking with /dev/null; a symlinked drop-in is skipped (and warned about).
        let link = |to: &str, p: &str| std::os::unix::fs::symlink(to, inside(&root, p)).unwrap();
        link("/dev/null", "/run/systemd/zram-generator.conf");
        link("/dev/null", "/run/systemd/zram-generator.conf.d/10-a.conf");
        link(
            "../../../usr/lib/systemd/zram-generator.conf",
            "/etc/systemd/zram-generator.conf.d/20-c.conf",
        );
        let got: Vec<String> = locate_fragments(&root)
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(
            got,
            [
                "/run/systemd/zram-generator.conf",
                "/run/systemd/zram-generator.conf.d/05-b.conf",
            ]
        );
        let masked = load_system(&root, false).unwrap();
        let ids: Vec<u32> = masked.devices.iter().map(|d| d.id).collect();
        assert_eq!(ids, [1], "the main files and 10-a.conf are masked");
        assert!(masked.warnings[0]
            .reason
            .contains("skips symlinked drop-ins"));
        assert_eq!(cfg.devices[0].zram_size.source, "1");
        // An expression names the file it came from (the error appears only when applied).
        let z1 = &cfg.devices[1].zram_size;
        let e = cfg.expr_err(z1, "zram-size: negative").to_string();
        assert_eq!(
            e,
            "/run/systemd/zram-generator.conf.d/05-b.conf:2: zram-size: negative"
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
