//! Step 5: the winner as the one file `zmem recommend --out-dir` writes
//! (zram-generator.conf sections, `[sysctl]`, `[zswap]`, `[disk-swap]`),
//! which `zmem apply` and `zmem persist` take unchanged. Nothing is applied
//! here.

use zmem_conf::{Config, Writer};
use zmem_trial::{SwapConfig, TrialConfig};
use zmem_verdict::{device_section, sizes};

/// What the file is written for, besides the winner.
#[derive(Debug, Clone)]
pub struct Machine {
    /// This machine's RAM (MemTotal), MiB: zram sizes scale from it.
    pub ram_mib: u64,
    /// Swap areas other than zram active now (from /proc/swaps).
    pub disk_swap: Vec<String>,
    /// Whether zswap is enabled now.
    pub zswap_enabled: bool,
}

/// Why the file says what it says, for its header.
#[derive(Debug, Clone)]
pub struct Why {
    /// `memalloc 256M under 128 MiB`.
    pub trial: String,
    /// The winner's measured median wall time, s.
    pub wall_s: f64,
    /// The effective ratio of the winner's algorithm on the workload's pages.
    pub ratio: f64,
}

/// `[disk-swap]` for the disk tier behind zram or zswap: the machine's own
/// swap area when it has one, else a comment saying what to add.
fn disk_tier(w: &mut Writer, c: &Config) {
    match &c.disk_swap {
        Some(d) => w.disk_swap(d),
        None => w.comment(
            "The trial had a disk swap file behind this tier; this machine has no disk swap now.\n\
             Create one (e.g. mkswap /var/swapfile) and add:  [disk-swap]  device = /var/swapfile",
        ),
    };
}

/// The config file for `winner`: what its `--config` means as a file
/// ([`TrialConfig::to_conf`]), zram sized for this machine as `zmem recommend` sizes it.
pub fn config_file(winner: &TrialConfig, why: &Why, m: &Machine) -> String {
    let from = format!(
        "`zmem tune` ({winner} won: {:.2} s median on {})",
        why.wall_s, why.trial
    );
    let mut c = winner.to_conf(m.disk_swap.first().map(String::as_str));
    if !m.zswap_enabled {
        // Off on this machine already: nothing to write for it.
        c.zswap
            .retain(|e| (e.key.as_str(), e.value.as_str()) != ("enabled", "N"));
    }
    // The marker line zmem recognises as its own (device_section writes it too).
    let header = format!("zram-generator.conf from {from}");
    let mut w = Writer::new();
    match &winner.swap {
        SwapConfig::Zram { .. } | SwapConfig::ZramDisk { .. } => {
            let sz = sizes(m.ram_mib, why.ratio);
            device_section(&mut w, &from, m.ram_mib, &sz, c.devices.remove(0));
            w.sysctls(&c.sysctls);
            if winner.swap.uses_disk() {
                disk_tier(&mut w, &c);
            }
            w.zswap(&c.zswap);
        }
        SwapConfig::Zswap { .. } => {
            w.comment(&header).zswap(&c.zswap).sysctls(&c.sysctls);
            disk_tier(&mut w, &c);
        }
        SwapConfig::Disk => {
            w.comment(&header)
                .comment("Disk swap alone: no zram device and zswap off.")
                .sysctls(&c.sysctls);
            disk_tier(&mut w, &c);
            w.zswap(&c.zswap);
        }
        SwapConfig::None => {
            w.comment(&header)
                .comment("No swap: the workload ran best (or only) without it; nothing to set up.");
        }
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why() -> Why {
        Why {
            trial: "memalloc 256M under 128 MiB".into(),
            wall_s: 2.5,
            ratio: 2.2,
        }
    }

    fn machine(disk: bool, zswap: bool) -> Machine {
        Machine {
            ram_mib: 8192,
            disk_swap: if disk {
                vec!["/dev/vdb".into()]
            } else {
                vec![]
            },
            zswap_enabled: zswap,
        }
    }

    #[test]
    fn a_zram_winner_is_a_zram_generator_section_with_its_sysctls() {
        let c: TrialConfig = "zram:lz4,swappiness=180,page-cluster=0".parse().unwrap();
        let f = config_file(&c, &why(), &machine(false, true));
        assert!(f.starts_with("# zram-generator.conf from `zmem tune` (zram:lz4,swappiness=180,page-cluster=0 won"), "{f}");
        for want in [
            "[zram0]",
            "compression-algorithm = lz4",
            "zram-size = floor(min(ram * 0.5 * 2.20, ram * 2))",
            "[sysctl]\nvm.swappiness = 180\nvm.page-cluster = 0",
            "[zswap]\nenabled = N",
        ] {
            assert!(f.contains(want), "{want} not in\n{f}");
        }
        assert!(!f.contains("[disk-swap]"));
    }

    #[test]
    fn tiers_with_a_disk_name_the_machines_disk_swap_or_say_what_to_add() {
        let c: TrialConfig = "zswap:lzo,swappiness=150".parse().unwrap();
        let f = config_file(&c, &why(), &machine(true, false));
        assert!(
            f.contains("[zswap]\nenabled = Y\ncompressor = lzo\n"),
            "{f}"
        );
        assert!(
            f.contains("[disk-swap]\ndevice = /dev/vdb\npriority = 10"),
            "{f}"
        );
        let c: TrialConfig = "zram:lzo:64M+disk".parse().unwrap();
        let f = config_file(&c, &why(), &machine(false, false));
        assert!(
            f.contains("# Create one") && !f.contains("[disk-swap]\n"),
            "{f}"
        );
        assert!(!f.contains("[sysctl]"));
    }
}
