//! Idle tracking (zram_drv.c: `idle_store`, `mark_idle`): the device clock for ac_time and `mark_idle`.

use std::sync::OnceLock;
use std::time::Instant;

use crate::device::{Meta, Zram};
use crate::slot::Flag;
use zmem_kernel::{AttrError, Errno};

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

impl Zram {
    /// Engine form of `idle`: mark every slot idle (`None`, as `idle all`) or
    /// those not accessed for `age_secs` seconds (clearing IDLE on younger
    /// ones). Returns the number of slots idle afterwards. Not initialised →
    /// EINVAL; an age without access-time tracking → EINVAL.
    pub fn mark_idle(&self, age_secs: Option<u64>) -> Result<u64, AttrError> {
        let cutoff = match age_secs {
            None => None,
            Some(_) if !self.tracks_access_time() => {
                return Err(AttrError::new(
                    Errno::EINVAL,
                    "idle by age needs access-time tracking, off on this device",
                ))
            }
            Some(age) => {
                let c = now_ns() as i128 - age.saturating_mul(1_000_000_000) as i128;
                // A cutoff of 0 means "all", as in the kernel.
                (c != 0).then_some(c)
            }
        };
        let g = self.meta();
        let m = g
            .as_deref()
            .ok_or_else(|| AttrError::new(Errno::EINVAL, "device is not initialized"))?;
        Ok(m.mark_idle(cutoff))
    }
}
