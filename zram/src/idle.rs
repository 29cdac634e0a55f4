//! Idle tracking (spec §6): the device clock for ac_time and `mark_idle`.

use std::sync::OnceLock;
use std::time::Instant;

use crate::device::Meta;
use crate::slot::Flag;

static EPOCH: OnceLock<Instant> = OnceLock::new();

/// Nanoseconds on the device clock (monotonic, never 0).
#[inline]
pub fn now_ns() -> u64 {
    let e = *EPOCH.get_or_init(Instant::now);
    e.elapsed().as_nanos() as u64 + 1
}

impl Meta {
    /// `mark_idle`: for every allocated slot that is not WB and not SAME, set
    /// IDLE if `cutoff` is None ("all") or its ac_time is strictly older than
    /// `cutoff`, else clear IDLE. Returns the number of slots now idle.
    pub(crate) fn mark_idle(&self, cutoff: Option<i128>) -> u64 {
        let mut n = 0;
        for s in self.table.iter() {
            let mut g = s.lock();
            if !g.allocated() || g.test(Flag::Wb) || g.test(Flag::Same) {
                continue;
            }
            let idle = match cutoff {
                None => true,
                Some(c) => c > g.ac_time() as i128,
            };
            if idle {
                g.set(Flag::Idle);
                n += 1;
            } else {
                g.clear(Flag::Idle);
            }
        }
        n
    }
}
