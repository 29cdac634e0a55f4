//! What a trial's `--config` means as a configuration file: the zmem.conf values
//! (zmem-conf's model) that set a machine up the way the trial ran, which `zmem tune`
//! writes for its winner and `zmem apply` takes.

use zmem_conf::{Algo, Algorithms, Config, DeviceConfig, DiskSwap, Entry, SizeExpr};

use crate::config::{SwapConfig, TrialConfig, DISK_PRIORITY, ZRAM_PRIORITY};

const MIB: u64 = 1 << 20;

impl SwapConfig {
    /// This configuration as zmem.conf values. `zram:ALGO[:SIZE]` is a `[zram0]` with
    /// `compression-algorithm = ALGO` at swap priority 100, `zram-size` the SIZE in MiB
    /// (zram-generator's default without one), and zswap off (trials refuse to run with
    /// zswap on in front of zram); `zswap:COMPRESSOR[:POOL%]` is zswap on with that
    /// compressor (and `max_pool_percent`); `disk` is zswap off. A tier with a disk behind it
    /// has `[disk-swap]` at priority 10 on `disk`, the swap area that takes the trial's swap
    /// file's place (none when `disk` is `None`). `none` is an empty file.
    pub fn to_conf(&self, disk: Option<&str>) -> Config {
        let mut c = Config::new(format!("--config {self}"));
        match self {
            SwapConfig::None => return c,
            SwapConfig::Zram { algo, size } | SwapConfig::ZramDisk { algo, size } => {
                let mut d = DeviceConfig::new(0, 0);
                if let Some(bytes) = size {
                    let mib = match bytes % MIB {
                        0 => (bytes / MIB).to_string(),
                        _ => (*bytes as f64 / MIB as f64).to_string(),
                    };
                    d.zram_size = SizeExpr::parse(&mib, 0).expect("a number parses");
                }
                d.algorithms = Some(Algorithms::new(Algo::named(algo.as_str())));
                d.swap_priority = ZRAM_PRIORITY;
                c.devices.push(d);
                c.zswap.push(Entry::new("enabled", "N"));
            }
            SwapConfig::Zswap {
                compressor,
                pool_percent,
            } => {
                c.zswap.push(Entry::new("enabled", "Y"));
                c.zswap.push(Entry::new("compressor", compressor.as_str()));
                if let Some(p) = pool_percent {
                    c.zswap.push(Entry::new("max_pool_percent", p.to_string()));
                }
            }
            SwapConfig::Disk => c.zswap.push(Entry::new("enabled", "N")),
        }
        if self.uses_disk() {
            c.disk_swap = disk.map(|d| DiskSwap::new(d, DISK_PRIORITY));
        }
        c
    }
}

impl TrialConfig {
    /// [`SwapConfig::to_conf`] with this configuration's sysctls as `[sysctl]`.
    pub fn to_conf(&self, disk: Option<&str>) -> Config {
        let mut c = self.swap.to_conf(disk);
        c.file = format!("--config {self}").into();
        if let Some(v) = self.swappiness {
            c.sysctls.push(Entry::new("vm.swappiness", v.to_string()));
        }
        if let Some(v) = self.page_cluster {
            c.sysctls.push(Entry::new("vm.page-cluster", v.to_string()));
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Each kind of `--config`, rendered and read back by the reader `zmem apply` uses.
    #[test]
    fn each_config_is_a_file_apply_reads() {
        for (spec, disk, want) in [
            ("none", None, ""),
            ("disk", Some("/dev/vdb"), "[zswap]\nenabled = N\n\n[disk-swap]\ndevice = /dev/vdb\npriority = 10\n"),
            ("zram:lz4", None, "[zram0]\nzram-size = min(ram / 2, 4096)\ncompression-algorithm = lz4\nswap-priority = 100\n\n[zswap]\nenabled = N\n"),
            ("zram:zstd:1536K+disk,swappiness=180", None, "[zram0]\nzram-size = 1.5\ncompression-algorithm = zstd\nswap-priority = 100\n\n[sysctl]\nvm.swappiness = 180\n\n[zswap]\nenabled = N\n"),
            ("zram:lzo:64M+disk", Some("/swapfile"), "[zram0]\nzram-size = 64\n"),
            ("zswap:lzo:20%,page-cluster=0", Some("/dev/vdb"), "[sysctl]\nvm.page-cluster = 0\n\n[zswap]\nenabled = Y\ncompressor = lzo\nmax_pool_percent = 20\n\n[disk-swap]\ndevice = /dev/vdb\npriority = 10\n"),
        ] {
            let c: TrialConfig = spec.parse().unwrap();
            let model = c.to_conf(disk);
            let text = model.render();
            assert!(text.starts_with(want), "{spec}: {text:?}");
            let back = zmem_conf::parse(&text, Path::new("t.conf")).unwrap();
            assert!(back.warnings.is_empty(), "{spec}: {:?}", back.warnings);
            assert_eq!(back.render(), text, "{spec}");
        }
    }
}
