//! Which algorithms this kernel's zram offers, and how that is known, without
//! needing root where the machine allows it. In order:
//!
//! 1. an existing zram device's `comp_algorithm` (world-readable);
//! 2. a temporary hot-added device's `comp_algorithm` (root);
//! 3. the kernel's build configuration (`/boot/config-$(uname -r)`, else
//!    `/proc/config.gz`): from 6.12 zram's own backends, one
//!    `CONFIG_ZRAM_BACKEND_*` option each (the codec registry's
//!    `zram_kconfig`); before 6.12 zram took the crypto API compressors its
//!    backend table names, each built with the `CONFIG_CRYPTO_*` option of
//!    the same name (`CONFIG_ZRAM_BACKEND_LZO` ↔ `CONFIG_CRYPTO_LZO`, which
//!    also builds lzo-rle), `=y` or a loadable `=m`;
//! 4. else unknown: no algorithms, and the reasons each way failed.

use std::io::Read;

use zmem_host::Sys;
use zmem_kernel::KernelVersion;

/// The algorithms this kernel's zram offers (kernel names, in the order the
/// source lists them; empty when unknown) and how they were found out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offered {
    pub algorithms: Vec<String>,
    /// `read from /sys/block/zram0/comp_algorithm`, or why it is unknown.
    pub source: String,
}

impl Offered {
    /// Whether the list was found out (not empty).
    pub fn is_known(&self) -> bool {
        !self.algorithms.is_empty()
    }

    /// Whether the kernel's zram offers `algo` (false when unknown).
    pub fn has(&self, algo: &str) -> bool {
        self.algorithms.iter().any(|a| a == algo)
    }
}

/// What this kernel's zram offers, found out the first way that works (see
/// the module doc). Creates (and removes) a zram device only when root and
/// no device exists to read.
pub fn offered() -> Offered {
    offered_on(&Sys::real(), hot_added)
}

/// The algorithms of a temporary hot-added device, or why there is none.
fn hot_added() -> Result<Vec<String>, String> {
    zmem_host::HotDevice::available().map_err(|e| e.to_string())?;
    let d = zmem_host::HotDevice::create_journaled().map_err(|e| e.to_string())?;
    d.algorithms()
        .map_err(|e| format!("reading {}/comp_algorithm: {e}", d.sys_path().display()))
}

/// [`offered`] on `sys`, with `hot` standing for the hot-added device.
pub(crate) fn offered_on(sys: &Sys, hot: impl FnOnce() -> Result<Vec<String>, String>) -> Offered {
    let device = match existing_device(sys) {
        Ok(o) => return o,
        Err(e) => e,
    };
    let hot = match hot() {
        Ok(a) if !a.is_empty() => {
            return Offered {
                algorithms: a,
                source:
                    "read from a temporary zram device's comp_algorithm (hot-added and removed)"
                        .into(),
            }
        }
        Ok(_) => "a temporary zram device listed no algorithms".to_string(),
        Err(e) => format!("no temporary zram device ({e})"),
    };
    match from_config(sys) {
        Ok(o) => o,
        Err(config) => Offered {
            algorithms: Vec::new(),
            source: format!("unknown: {device}; {hot}; {config}"),
        },
    }
}

/// The first existing zram device's comp_algorithm, or why there is none.
fn existing_device(sys: &Sys) -> Result<Offered, String> {
    let devices: Vec<String> = sys
        .list("/sys/block")
        .map_err(|e| format!("listing /sys/block: {e}"))?
        .into_iter()
        .filter(|n| n.starts_with("zram"))
        .collect();
    let mut why = "no zram device exists".to_string();
    for n in devices {
        let path = format!("/sys/block/{n}/comp_algorithm");
        match sys.read(&path) {
            Ok(text) => {
                let algorithms = zmem_kernel::parse_comp_algorithm(&text).0;
                if !algorithms.is_empty() {
                    return Ok(Offered {
                        algorithms,
                        source: format!("read from {path}"),
                    });
                }
                why = format!("{path} lists no algorithm");
            }
            Err(e) => why = format!("cannot read {path}: {e}"),
        }
    }
    Err(why)
}

/// The running kernel's configuration text and where it came from.
fn config_text(sys: &Sys, release: &str) -> Result<(String, String), String> {
    let boot = format!("/boot/config-{release}");
    if let Ok(t) = std::fs::read_to_string(sys.path(&boot)) {
        return Ok((t, boot));
    }
    let gz = "/proc/config.gz";
    let f = std::fs::File::open(sys.path(gz))
        .map_err(|e| format!("no kernel config ({boot}: not readable; {gz}: {e})"))?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(f)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot decompress {gz}: {e}"))?;
    Ok((text, gz.to_string()))
}

/// The algorithms the kernel's configuration builds into zram.
fn from_config(sys: &Sys) -> Result<Offered, String> {
    let release = sys
        .read("/proc/sys/kernel/osrelease")
        .map_err(|e| format!("cannot read /proc/sys/kernel/osrelease: {e}"))?;
    let release = release.trim();
    let version = KernelVersion::parse(release)
        .ok_or_else(|| format!("cannot parse the kernel release {release:?}"))?;
    let (text, path) = config_text(sys, release)?;
    let algorithms = config_algorithms(&text, version).map_err(|e| format!("{path}: {e}"))?;
    let how = if version >= ZRAM_BACKENDS {
        "CONFIG_ZRAM_BACKEND_*"
    } else {
        "the crypto API compressors, CONFIG_CRYPTO_*"
    };
    Ok(Offered {
        algorithms,
        source: format!("from the kernel's config {path} ({how}; no zram device to read)"),
    })
}

/// The first kernel with zram's own backends (`CONFIG_ZRAM_BACKEND_*`).
const ZRAM_BACKENDS: KernelVersion = KernelVersion::new(6, 12);
/// The first kernel whose zram takes crypto API compressors by name.
const ZRAM_CRYPTO: KernelVersion = KernelVersion::new(4, 7);

/// Whether `option` is built in or a module in the config text.
fn enabled(text: &str, option: &str) -> bool {
    text.lines().any(|l| {
        l.trim()
            .strip_prefix(option)
            .and_then(|r| r.strip_prefix('='))
            .is_some_and(|v| v == "y" || v == "m")
    })
}

/// The algorithms a kernel `version` built with this config offers in zram,
/// in the registry's order; an error when the config has no zram or does not
/// say.
pub(crate) fn config_algorithms(text: &str, version: KernelVersion) -> Result<Vec<String>, String> {
    if !enabled(text, "CONFIG_ZRAM") {
        return Err("CONFIG_ZRAM is not set: this kernel has no zram".into());
    }
    if version < ZRAM_CRYPTO {
        return Err(format!(
            "kernel {version} predates zram's crypto API backends ({ZRAM_CRYPTO}); its config does not list zram's algorithms"
        ));
    }
    let mut v = Vec::new();
    for b in zmem_codec::all() {
        let info = b.info();
        let (Some(span), Some(kconfig)) = (info.zram, info.zram_kconfig) else {
            continue;
        };
        if !span.contains(version) {
            continue;
        }
        let option = if version >= ZRAM_BACKENDS {
            kconfig.to_string()
        } else {
            kconfig.replace("CONFIG_ZRAM_BACKEND_", "CONFIG_CRYPTO_")
        };
        if enabled(text, &option) {
            v.push(info.name.to_string());
        }
    }
    if v.is_empty() {
        return Err("CONFIG_ZRAM is set but no algorithm zram knows is enabled".into());
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use zmem_files::testutil::ScratchDir;

    /// This machine's kind of config: 6.18 with the lzo and lz4 backends, and
    /// crypto deflate and lzo (which zram no longer uses).
    const NEW: &str = "\
CONFIG_ZRAM=y
CONFIG_ZRAM_BACKEND_LZ4=y
# CONFIG_ZRAM_BACKEND_LZ4HC is not set
# CONFIG_ZRAM_BACKEND_ZSTD is not set
CONFIG_ZRAM_BACKEND_LZO=y
CONFIG_ZRAM_DEF_COMP=\"lzo-rle\"
CONFIG_CRYPTO_DEFLATE=y
CONFIG_CRYPTO_LZO=y
";

    /// A 6.1 distribution config: zram a module, compressors through the crypto API.
    const OLD: &str = "\
CONFIG_ZRAM=m
CONFIG_ZRAM_DEF_COMP_LZORLE=y
CONFIG_CRYPTO_LZO=y
CONFIG_CRYPTO_LZ4=m
CONFIG_CRYPTO_LZ4HC=m
# CONFIG_CRYPTO_842 is not set
CONFIG_CRYPTO_ZSTD=m
";

    fn v(major: u16, minor: u16) -> KernelVersion {
        KernelVersion::new(major, minor)
    }

    #[test]
    fn config_6_12_on_uses_zram_backends() {
        assert_eq!(
            config_algorithms(NEW, v(6, 18)).unwrap(),
            ["lzo-rle", "lzo", "lz4"]
        );
        // The crypto options do not count any more: deflate is not offered.
        assert!(!config_algorithms(NEW, v(6, 12))
            .unwrap()
            .contains(&"deflate".into()));
    }

    #[test]
    fn config_before_6_12_uses_crypto_options() {
        assert_eq!(
            config_algorithms(OLD, v(6, 1)).unwrap(),
            ["lzo-rle", "lzo", "lz4", "lz4hc", "zstd"]
        );
        // lzo-rle came in 5.1; zstd's zram entry in 4.14.
        assert_eq!(
            config_algorithms(OLD, v(4, 19)).unwrap(),
            ["lzo", "lz4", "lz4hc", "zstd"]
        );
        // The same config read as 6.12 has no backend options: nothing offered.
        assert!(config_algorithms(OLD, v(6, 12))
            .unwrap_err()
            .contains("no algorithm"));
    }

    #[test]
    fn config_without_zram_or_too_old_says_why() {
        let no = "# CONFIG_ZRAM is not set\nCONFIG_CRYPTO_LZO=y\n";
        assert!(config_algorithms(no, v(6, 18))
            .unwrap_err()
            .contains("no zram"));
        // A commented-out line or a prefix of another option is not the option.
        assert!(config_algorithms("CONFIG_ZRAM_WRITEBACK=y\n", v(6, 18)).is_err());
        assert!(config_algorithms(OLD, v(4, 4))
            .unwrap_err()
            .contains("predates"));
    }

    fn tree(name: &str, release: &str) -> (ScratchDir, Sys) {
        let d = ScratchDir::new(name);
        let root = d.join("root");
        std::fs::create_dir_all(root.join("proc/sys/kernel")).unwrap();
        std::fs::create_dir_all(root.join("sys/block/loop0")).unwrap();
        std::fs::write(
            root.join("proc/sys/kernel/osrelease"),
            format!("{release}\n"),
        )
        .unwrap();
        (d, Sys::new(root))
    }

    fn no_hot() -> Result<Vec<String>, String> {
        Err("not running as root".into())
    }

    #[test]
    fn existing_device_comes_first() {
        let (_d, sys) = tree("offered-dev", "6.18.1");
        std::fs::create_dir_all(sys.path("/sys/block/zram0")).unwrap();
        std::fs::write(
            sys.path("/sys/block/zram0/comp_algorithm"),
            "lzo [lz4] zstd\n",
        )
        .unwrap();
        std::fs::create_dir_all(sys.path("/boot")).unwrap();
        std::fs::write(sys.path("/boot/config-6.18.1"), NEW).unwrap();
        let o = offered_on(&sys, || panic!("no device needed"));
        assert_eq!(o.algorithms, ["lzo", "lz4", "zstd"]);
        assert_eq!(o.source, "read from /sys/block/zram0/comp_algorithm");
        assert!(o.has("lz4") && !o.has("lz4hc"));
    }

    #[test]
    fn hot_added_device_then_boot_config_then_proc_config_gz() {
        let (_d, sys) = tree("offered-cfg", "6.18.1-test");
        let o = offered_on(&sys, || Ok(vec!["lzo".into(), "deflate".into()]));
        assert_eq!(o.algorithms, ["lzo", "deflate"]);
        assert!(o.source.contains("temporary"), "{}", o.source);

        let gz = std::fs::File::create(sys.path("/proc/config.gz")).unwrap();
        let mut enc = flate2::write::GzEncoder::new(gz, flate2::Compression::default());
        enc.write_all(NEW.as_bytes()).unwrap();
        enc.finish().unwrap();
        let o = offered_on(&sys, no_hot);
        assert_eq!(o.algorithms, ["lzo-rle", "lzo", "lz4"]);
        assert!(o.source.contains("/proc/config.gz"), "{}", o.source);

        std::fs::create_dir_all(sys.path("/boot")).unwrap();
        std::fs::write(
            sys.path("/boot/config-6.18.1-test"),
            OLD.replace("=m", "=n"),
        )
        .unwrap();
        let o = offered_on(&sys, no_hot);
        assert_eq!(o.algorithms, Vec::<String>::new(), "/boot/config-* wins");
        assert!(o.source.starts_with("unknown: no zram device exists; no temporary zram device (not running as root); /boot/config-6.18.1-test: "), "{}", o.source);
    }

    #[test]
    fn nothing_to_read_is_unknown_with_every_reason() {
        let (_d, sys) = tree("offered-none", "6.18.1");
        std::fs::create_dir_all(sys.path("/sys/block/zram0")).unwrap();
        let o = offered_on(&sys, no_hot);
        assert!(!o.is_known());
        assert!(
            o.source
                .contains("cannot read /sys/block/zram0/comp_algorithm")
                && o.source.contains("not running as root")
                && o.source.contains("no kernel config"),
            "{}",
            o.source
        );
    }

    #[test]
    fn this_kernels_config_agrees_with_its_device() {
        let sys = Sys::real();
        let Ok(dev) = existing_device(&sys) else {
            return zmem_files::testutil::skip(
                "SKIP this_kernels_config_agrees_with_its_device: no zram device to compare with",
            );
        };
        match from_config(&sys) {
            Ok(cfg) => {
                let sorted = |mut v: Vec<String>| {
                    v.sort();
                    v
                };
                assert_eq!(
                    sorted(cfg.algorithms),
                    sorted(dev.algorithms),
                    "{} against {}",
                    cfg.source,
                    dev.source
                );
            }
            Err(e) => zmem_files::testutil::skip(&format!(
                "SKIP this_kernels_config_agrees_with_its_device: {e}"
            )),
        }
    }
}
