//! Which configurations the trials run: the prediction's best `K` (each
//! with the sysctls the lab recommends for it), then the baselines — disk
//! swap alone, and what the machine runs now when it runs anything.

use serde::Serialize;
use zmem_trial::{SwapConfig, TrialConfig};
use zmem_verdict::swappiness;

use crate::predict::{Costs, ModelInputs, Prediction};

/// Why a configuration is trialed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Among the prediction's best `K`.
    Predicted,
    /// Disk swap alone, the baseline every user has.
    Baseline,
    /// What this machine runs now.
    Current,
}

/// A configuration to trial, with its prediction.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub role: Role,
    pub prediction: Prediction,
}

impl Candidate {
    pub fn config(&self) -> &TrialConfig {
        &self.prediction.config
    }
}

/// The costs the prediction used for `swap`'s compressed tier.
fn costs_of<'a>(swap: &SwapConfig, m: &'a ModelInputs) -> Option<&'a Costs> {
    match swap {
        SwapConfig::Zram { algo, .. } | SwapConfig::ZramDisk { algo, .. } => {
            m.zram.iter().find(|(a, _)| a == algo).map(|x| &x.1)
        }
        SwapConfig::Zswap { compressor, .. } => {
            m.zswap.iter().find(|(a, _)| a == compressor).map(|x| &x.1)
        }
        _ => None,
    }
}

/// The sysctls the lab recommends for a configuration: vm.swappiness from
/// its swap-in speed against the filesystem's (`zmem recommend`'s formula,
/// 200·x/(x+1)) and page-cluster 0 for zram (a synchronous device: a page is
/// read alone). The disk and `none` keep the machine's values.
pub fn with_sysctls(p: &mut Prediction, m: &ModelInputs) {
    let Some(c) = costs_of(&p.config.swap, m) else {
        return;
    };
    let x = c.read_mibps() / m.disk.read_mibps().max(1e-9);
    p.config.swappiness = Some(swappiness(x));
    if p.config.swap.zram_algo().is_some() {
        p.config.page_cluster = Some(0);
    }
}

fn is_baseline(c: &SwapConfig) -> bool {
    matches!(c, SwapConfig::Disk | SwapConfig::None)
}

/// Two configurations of the same algorithm predicted alike (zram with and
/// without the disk behind it, when nothing spills): trial only the first.
fn same_experiment(a: &Prediction, b: &Prediction) -> bool {
    let algo = |p: &Prediction| p.config.swap.zram_algo().map(String::from);
    algo(a).is_some() && algo(a) == algo(b) && a.rank == b.rank
}

/// The same kind of tier with the same algorithm, whatever the sizes.
fn same_tier(a: &SwapConfig, b: &SwapConfig) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
        && a.zram_algo() == b.zram_algo()
        && a.zswap_compressor() == b.zswap_compressor()
}

/// The best `k` of `predictions` (sorted best first), then the baselines.
pub fn choose(
    predictions: &[Prediction],
    k: usize,
    current: Option<&SwapConfig>,
) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    for p in predictions.iter().filter(|p| !is_baseline(&p.config.swap)) {
        if out.len() == k {
            break;
        }
        if out.iter().any(|c| same_experiment(&c.prediction, p)) {
            continue;
        }
        out.push(Candidate {
            role: Role::Predicted,
            prediction: p.clone(),
        });
    }
    let mut add = |swap: &SwapConfig, role: Role| {
        if out.iter().any(|c| &c.config().swap == swap) {
            return;
        }
        let found = predictions
            .iter()
            .find(|p| &p.config.swap == swap)
            .or_else(|| predictions.iter().find(|p| same_tier(&p.config.swap, swap)));
        if let Some(p) = found {
            out.push(Candidate {
                role,
                prediction: p.clone(),
            });
        }
    };
    add(&SwapConfig::Disk, Role::Baseline);
    if let Some(c) = current {
        add(c, Role::Current);
    }
    out
}

/// What this machine swaps to now, as a trial configuration: zram (with the
/// disk behind it when there is disk swap too), zswap in front of disk swap,
/// or disk swap alone; `None` when nothing is swapped to.
pub fn current(sys: &zmem_host::Sys) -> Option<SwapConfig> {
    let areas: Vec<String> = sys.swaps().ok()?.into_iter().map(|a| a.device).collect();
    let zram = areas.iter().find_map(|a| {
        let dev = a.strip_prefix("/dev/")?;
        dev.starts_with("zram").then(|| {
            let sel = sys
                .read(&format!("/sys/block/{dev}/comp_algorithm"))
                .unwrap_or_default();
            sel.split_whitespace()
                .find(|w| w.starts_with('['))
                .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
                .unwrap_or_else(|| zmem_codec::ZRAM_DEFAULT.name.into())
        })
    });
    let disk = areas.iter().any(|a| !a.starts_with("/dev/zram"));
    let zswap_on = sys
        .read("/sys/module/zswap/parameters/enabled")
        .is_ok_and(|v| v.trim() == "Y");
    match (zram, disk) {
        (Some(algo), false) => Some(SwapConfig::Zram { algo, size: None }),
        (Some(algo), true) => Some(SwapConfig::ZramDisk { algo, size: None }),
        (None, true) if zswap_on => Some(SwapConfig::Zswap {
            compressor: sys
                .read("/sys/module/zswap/parameters/compressor")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| zmem_codec::ZSWAP_DEFAULT.name.into()),
            pool_percent: None,
        }),
        (None, true) => Some(SwapConfig::Disk),
        (None, false) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::predict;

    fn inputs() -> ModelInputs {
        crate::predict::sample_inputs(100, 64)
    }

    #[test]
    fn best_k_then_baselines_without_repeating_an_experiment() {
        let m = inputs();
        let mut v = predict(&m);
        for p in &mut v {
            with_sysctls(p, &m);
        }
        let c = choose(
            &v,
            3,
            Some(&SwapConfig::Zram {
                algo: "lzo".into(),
                size: None,
            }),
        );
        let names: Vec<String> = c.iter().map(|c| c.config().swap.to_string()).collect();
        // zram:lz4+disk is predicted like zram:lz4 (nothing spills): not trialed twice.
        assert_eq!(names, ["zram:lz4", "zram:lzo", "zswap:lzo", "disk"]);
        assert_eq!(c[3].role, Role::Baseline);
        assert_eq!(c[0].config().page_cluster, Some(0));
        // x = (4096 B / 2 µs) / (4096 B / 100 µs) = 50 → swappiness 196.
        assert_eq!(c[0].config().swappiness, Some(196));
        assert_eq!(c[3].config().swappiness, None);
        let c = choose(
            &v,
            1,
            Some(&SwapConfig::Zswap {
                compressor: "lzo".into(),
                pool_percent: None,
            }),
        );
        let roles: Vec<Role> = c.iter().map(|c| c.role).collect();
        assert_eq!(roles, [Role::Predicted, Role::Baseline, Role::Current]);
    }

    #[test]
    fn the_machines_current_swap() {
        let root = std::env::temp_dir().join(format!("zmem-tune-cur.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let sys = zmem_host::Sys::new(&root);
        let w = |p: &str, s: &str| {
            std::fs::create_dir_all(sys.path(p).parent().unwrap()).unwrap();
            std::fs::write(sys.path(p), s).unwrap();
        };
        w("/proc/swaps", "Filename Type Size Used Priority\n");
        w("/sys/module/zswap/parameters/enabled", "N\n");
        assert_eq!(current(&sys), None);
        w(
            "/proc/swaps",
            "Filename Type Size Used Priority\n/dev/zram0 partition 8 0 100\n",
        );
        w("/sys/block/zram0/comp_algorithm", "lzo [lz4] zstd\n");
        assert_eq!(
            current(&sys),
            Some(SwapConfig::Zram {
                algo: "lz4".into(),
                size: None
            })
        );
        w(
            "/proc/swaps",
            "Filename Type Size Used Priority\n/swapfile file 8 0 -2\n",
        );
        assert_eq!(current(&sys), Some(SwapConfig::Disk));
        w("/sys/module/zswap/parameters/enabled", "Y\n");
        w("/sys/module/zswap/parameters/compressor", "zstd\n");
        assert_eq!(
            current(&sys),
            Some(SwapConfig::Zswap {
                compressor: "zstd".into(),
                pool_percent: None
            })
        );
        std::fs::remove_dir_all(root).unwrap();
    }
}
