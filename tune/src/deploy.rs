//! Step 5: the winner as the one file `zmem recommend --out-dir` writes
//! (zram-generator.conf sections, `[sysctl]`, `[zswap]`, `[disk-swap]`),
//! which `zmem apply` and `zmem persist` take unchanged. Nothing is applied
//! here.

use std::fmt::Write as _;

use zmem_trial::{SwapConfig, TrialConfig};
use zmem_verdict::{sizes, zram_section};

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

fn sysctl(c: &TrialConfig) -> String {
    let mut s = String::new();
    if c.swappiness.is_none() && c.page_cluster.is_none() {
        return s;
    }
    let _ = writeln!(s, "[sysctl]");
    if let Some(v) = c.swappiness {
        let _ = writeln!(s, "vm.swappiness = {v}");
    }
    if let Some(v) = c.page_cluster {
        let _ = writeln!(s, "vm.page-cluster = {v}");
    }
    s
}

/// `[disk-swap]` for the disk tier behind zram or zswap: the machine's own
/// swap area when it has one, else a comment saying what to add.
fn disk_tier(m: &Machine) -> String {
    match m.disk_swap.first() {
        Some(d) => format!("[disk-swap]\ndevice = {d}\npriority = 10\n"),
        None => "# The trial had a disk swap file behind this tier; this machine has no disk swap now.\n\
# Create one (e.g. mkswap /var/swapfile) and add:  [disk-swap]  device = /var/swapfile\n"
            .into(),
    }
}

/// The config file for `winner`.
pub fn config_file(winner: &TrialConfig, why: &Why, m: &Machine) -> String {
    let from = format!(
        "`zmem tune` ({winner} won: {:.2} s median on {})",
        why.wall_s, why.trial
    );
    // The marker line zmem recognises as its own (zram_section writes it too).
    let header = format!("# zram-generator.conf from {from}\n");
    let mut f = String::new();
    match &winner.swap {
        SwapConfig::Zram { algo, .. } | SwapConfig::ZramDisk { algo, .. } => {
            let sz = sizes(m.ram_mib, why.ratio);
            f.push_str(&zram_section(&from, algo, m.ram_mib, &sz, None));
            f.push_str(&sysctl(winner));
            if matches!(winner.swap, SwapConfig::ZramDisk { .. }) {
                f.push_str(&disk_tier(m));
            }
            if m.zswap_enabled {
                f.push_str("[zswap]\nenabled = N\n");
            }
        }
        SwapConfig::Zswap {
            compressor,
            pool_percent,
        } => {
            f.push_str(&header);
            let _ = writeln!(f, "[zswap]\nenabled = Y\ncompressor = {compressor}");
            if let Some(p) = pool_percent {
                let _ = writeln!(f, "max_pool_percent = {p}");
            }
            f.push_str(&sysctl(winner));
            f.push_str(&disk_tier(m));
        }
        SwapConfig::Disk => {
            f.push_str(&header);
            f.push_str("# Disk swap alone: no zram device and zswap off.\n");
            f.push_str(&sysctl(winner));
            f.push_str(&disk_tier(m));
            if m.zswap_enabled {
                f.push_str("[zswap]\nenabled = N\n");
            }
        }
        SwapConfig::None => {
            f.push_str(&header);
            f.push_str(
                "# No swap: the workload ran best (or only) without it; nothing to set up.\n",
            );
        }
    }
    f
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
