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

/// Nanoseconds in a second: 7.3 keeps access times in whole seconds.
const NS: u64 = 1_000_000_000;

impl Meta {
    /// `mark_idle`: for every allocated slot that is not WB and not SAME, set
    /// IDLE if `cutoff` is None ("all") or its ac_time is strictly older than
    /// `cutoff` (ns; with `seconds`, both in whole seconds as 7.3 compares
    /// them), else clear IDLE. Returns the number of slots now idle.
    pub(crate) fn mark_idle(&self, cutoff: Option<i128>, seconds: bool) -> u64 {
        let unit = if seconds { NS } else { 1 };
        let mut n = 0;
        for s in self.table.iter() {
            let mut g = s.lock();
            if !g.allocated() || g.test(Flag::Wb) || g.test(Flag::Same) {
                continue;
            }
            let idle = match cutoff {
                None => true,
                Some(c) => c > (g.ac_time() / unit * unit) as i128,
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
    /// EINVAL; an age without access-time tracking → EINVAL. As 7.3 (whole
    /// seconds, [`KernelModel::seconds_ac_time`](zmem_kernel::KernelModel::seconds_ac_time)):
    /// an age of the device clock's uptime or more changes nothing and
    /// returns `None` (before the initialisation check, as the kernel);
    /// an age above u32 is EINVAL.
    pub fn mark_idle(&self, age_secs: Option<u64>) -> Result<Option<u64>, AttrError> {
        let seconds = self.kernel.seconds_ac_time();
        let cutoff = match age_secs {
            None => None,
            Some(_) if !self.tracks_access_time() => {
                return Err(AttrError::new(
                    Errno::EINVAL,
                    "idle by age needs access-time tracking, off on this device",
                ))
            }
            Some(age) if seconds => {
                if age > u32::MAX as u64 {
                    return Err(AttrError::new(
                        Errno::EINVAL,
                        format!("idle age {age} is above u32 seconds"),
                    ));
                }
                let uptime = now_ns() / NS;
                if age >= uptime {
                    return Ok(None);
                }
                Some(((uptime - age) * NS) as i128)
            }
            Some(age) => {
                let c = now_ns() as i128 - age.saturating_mul(NS) as i128;
                // A cutoff of 0 means "all", as in the kernel.
                (c != 0).then_some(c)
            }
        };
        let g = self.meta();
        let m = g
            .as_deref()
            .ok_or_else(|| AttrError::new(Errno::EINVAL, "device is not initialized"))?;
        Ok(Some(m.mark_idle(cutoff, seconds)))
    }
}
