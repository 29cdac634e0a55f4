//! Pool limit and hysteresis (6.10+ `zswap_check_limits`).
//!
//! `cur` = pool pages; `max` = RAM pages × `max_pool_percent` / 100 (or the
//! `max_pool_bytes` limit); `accept` = `max` × `accept_threshold_percent` / 100.
//! `cur ≥ max` counts `pool_limit_hit` and sets FULL; FULL clears only when
//! `cur ≤ accept`; stores are refused while FULL.

use crate::params::Params;
use crate::PAGE_SIZE;

/// The limit in pages for a RAM size and the parameters.
pub fn max_pages(ram_bytes: u64, p: &Params) -> u64 {
    if p.max_pool_bytes > 0 {
        return p.max_pool_bytes / PAGE_SIZE as u64;
    }
    (ram_bytes / PAGE_SIZE as u64).saturating_mul(p.max_pool_percent as u64) / 100
}

/// The accept threshold in pages.
pub fn accept_pages(ram_bytes: u64, p: &Params) -> u64 {
    max_pages(ram_bytes, p).saturating_mul(p.accept_threshold_percent as u64) / 100
}

/// The FULL state of the hysteresis.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub reached_full: bool,
}

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Below the limit (and not held back by hysteresis).
    Accept,
    /// `cur ≥ max`: counted in `pool_limit_hit`.
    LimitHit,
    /// Below `max` but above `accept` after the limit was hit.
    Hysteresis,
}

impl Limit {
    /// `zswap_check_limits`.
    pub fn check(&mut self, cur: u64, max: u64, accept: u64) -> Check {
        if cur >= max {
            self.reached_full = true;
            Check::LimitHit
        } else if self.reached_full && cur <= accept {
            self.reached_full = false;
            Check::Accept
        } else if self.reached_full {
            Check::Hysteresis
        } else {
            Check::Accept
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hysteresis_rules() {
        let mut l = Limit::default();
        assert_eq!(l.check(5, 10, 9), Check::Accept);
        assert_eq!(l.check(10, 10, 9), Check::LimitHit);
        assert_eq!(l.check(9, 10, 8), Check::Hysteresis);
        assert_eq!(l.check(8, 10, 8), Check::Accept);
        assert_eq!(l.check(9, 10, 8), Check::Accept);
    }

    #[test]
    fn limits() {
        let p = Params {
            max_pool_percent: 20,
            accept_threshold_percent: 90,
            ..Params::default()
        };
        assert_eq!(max_pages(1000 * 4096, &p), 200);
        assert_eq!(accept_pages(1000 * 4096, &p), 180);
        let p = Params {
            max_pool_bytes: 64 * 4096,
            ..p
        };
        assert_eq!(max_pages(1 << 40, &p), 64);
    }
}
