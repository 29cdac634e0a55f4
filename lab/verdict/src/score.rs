//! The weighted score and the "best for" lines.
//!
//! As in the published fio comparisons (weights latency 0.4, ratio 0.4,
//! throughput 0.2), each metric is normalised against the best value among the
//! rows being compared, so every term lies in (0, 1] and the weights mean what
//! they say:
//!
//! ```text
//! score = w_latency · (min latency / latency)
//!       + w_ratio   · (ratio / max ratio)
//!       + w_throughput · (throughput / max throughput)
//! ```
//!
//! (The original script used `max latency / latency`, which is unbounded and
//! lets the latency term outweigh the others whatever the weights; dividing the
//! best latency instead keeps the same ranking within the latency term.)

use std::fmt;
use std::str::FromStr;

use anyhow::{bail, Result};
use serde::Serialize;

/// Weights of the score.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Weights {
    pub latency: f64,
    pub ratio: f64,
    pub throughput: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            latency: 0.4,
            ratio: 0.4,
            throughput: 0.2,
        }
    }
}

/// The form `--weights` expects, for error messages.
pub const WEIGHTS_FORM: &str =
    "latency=W,ratio=W,throughput=W with non-negative numbers, not all zero (missing keys count 0), e.g. latency=0.4,ratio=0.4,throughput=0.2";

impl FromStr for Weights {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        let mut w = Weights {
            latency: 0.0,
            ratio: 0.0,
            throughput: 0.0,
        };
        let mut seen = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((k, v)) = part.split_once('=') else {
                bail!("bad --weights {s:?}: {part:?} is not key=value; expected {WEIGHTS_FORM}");
            };
            let k = k.trim();
            let v: f64 = match v.trim().parse() {
                Ok(v) if f64::is_finite(v) && v >= 0.0 => v,
                _ => bail!("bad --weights {s:?}: {v:?} is not a non-negative number; expected {WEIGHTS_FORM}"),
            };
            if seen.contains(&k.to_string()) {
                bail!("bad --weights {s:?}: {k} given twice; expected {WEIGHTS_FORM}");
            }
            seen.push(k.to_string());
            match k {
                "latency" => w.latency = v,
                "ratio" => w.ratio = v,
                "throughput" => w.throughput = v,
                _ => bail!("bad --weights {s:?}: unknown key {k:?}; expected {WEIGHTS_FORM}"),
            }
        }
        if w.latency + w.ratio + w.throughput <= 0.0 {
            bail!("bad --weights {s:?}: all weights are zero; expected {WEIGHTS_FORM}");
        }
        Ok(w)
    }
}

impl fmt::Display for Weights {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "latency={},ratio={},throughput={}",
            self.latency, self.ratio, self.throughput
        )
    }
}

/// The measured figures of one candidate (algorithm at a page-cluster, on a target).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metrics {
    /// Higher is better (MiB/s).
    pub throughput: f64,
    /// Higher is better.
    pub ratio: f64,
    /// Lower is better (ns).
    pub latency: f64,
    /// Higher is better.
    pub iops: f64,
}

impl Metrics {
    fn valid(&self) -> bool {
        [self.throughput, self.ratio, self.latency, self.iops]
            .iter()
            .all(|v| v.is_finite() && *v > 0.0)
    }
}

/// Scores of `items` (None for items without complete, positive figures).
pub fn scores(items: &[Option<Metrics>], w: &Weights) -> Vec<Option<f64>> {
    let ok: Vec<&Metrics> = items.iter().flatten().filter(|m| m.valid()).collect();
    if ok.is_empty() {
        return vec![None; items.len()];
    }
    let max_tp = ok.iter().map(|m| m.throughput).fold(0.0, f64::max);
    let max_ratio = ok.iter().map(|m| m.ratio).fold(0.0, f64::max);
    let min_lat = ok.iter().map(|m| m.latency).fold(f64::INFINITY, f64::min);
    items
        .iter()
        .map(|m| {
            let m = m.as_ref().filter(|m| m.valid())?;
            Some(
                w.latency * (min_lat / m.latency)
                    + w.ratio * (m.ratio / max_ratio)
                    + w.throughput * (m.throughput / max_tp),
            )
        })
        .collect()
}

/// Indexes of the best item for each goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BestFor {
    pub throughput: usize,
    pub latency: usize,
    pub iops: usize,
    pub ratio: usize,
    pub overall: usize,
}

/// The best items (first wins ties). None if no item has complete figures.
pub fn best_for(items: &[Option<Metrics>], scores: &[Option<f64>]) -> Option<BestFor> {
    let pick = |key: &dyn Fn(&Metrics, f64) -> f64| -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        for (i, (m, s)) in items.iter().zip(scores).enumerate() {
            if let (Some(m), Some(s)) = (m, s) {
                let v = key(m, *s);
                if best.is_none_or(|(_, b)| v > b) {
                    best = Some((i, v));
                }
            }
        }
        best.map(|b| b.0)
    };
    Some(BestFor {
        throughput: pick(&|m, _| m.throughput)?,
        latency: pick(&|m, _| -m.latency)?,
        iops: pick(&|m, _| m.iops)?,
        ratio: pick(&|m, _| m.ratio)?,
        overall: pick(&|_, s| s)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(tp: f64, ratio: f64, lat: f64) -> Option<Metrics> {
        Some(Metrics {
            throughput: tp,
            ratio,
            latency: lat,
            iops: tp * 256.0,
        })
    }

    #[test]
    fn weights_parse_and_reject() {
        assert_eq!(
            "latency=0.4,ratio=0.4,throughput=0.2"
                .parse::<Weights>()
                .unwrap(),
            Weights::default()
        );
        let w: Weights = "ratio=1".parse().unwrap();
        assert_eq!((w.latency, w.ratio, w.throughput), (0.0, 1.0, 0.0));
        for bad in [
            "",
            "ratio",
            "ratio=x",
            "ratio=-1",
            "speed=1",
            "ratio=0",
            "ratio=1,ratio=2",
            "ratio=inf",
        ] {
            let e = bad.parse::<Weights>().unwrap_err().to_string();
            assert!(e.contains("latency=W,ratio=W,throughput=W"), "{bad}: {e}");
        }
    }

    #[test]
    fn score_by_hand() {
        // The r/Fedora page-cluster 0 numbers: (MiB/s, ratio, mean ns).
        let items = [m(7943.0, 2.63, 1708.0), m(2612.0, 3.37, 5714.0), None];
        let s = scores(&items, &Weights::default());
        let lz4 = 0.4 * 1.0 + 0.4 * (2.63 / 3.37) + 0.2 * 1.0;
        let zstd = 0.4 * (1708.0 / 5714.0) + 0.4 * 1.0 + 0.2 * (2612.0 / 7943.0);
        assert!((s[0].unwrap() - lz4).abs() < 1e-12);
        assert!((s[1].unwrap() - zstd).abs() < 1e-12);
        assert_eq!(s[2], None);
        let b = best_for(&items, &s).unwrap();
        assert_eq!(
            (b.throughput, b.latency, b.iops, b.ratio, b.overall),
            (0, 0, 0, 1, 0)
        );
        // All weight on ratio: zstd wins overall.
        let s = scores(&items, &"ratio=1".parse().unwrap());
        assert_eq!(best_for(&items, &s).unwrap().overall, 1);
    }

    #[test]
    fn nothing_to_score() {
        let items = [
            None,
            Some(Metrics {
                throughput: 0.0,
                ratio: 1.0,
                latency: 1.0,
                iops: 1.0,
            }),
        ];
        let s = scores(&items, &Weights::default());
        assert_eq!(s, vec![None, None]);
        assert_eq!(best_for(&items, &s), None);
    }
}
