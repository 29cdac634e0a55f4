//! What `zmem serve --ublk` asks of the kernel's ublk driver, checked before
//! anything is created: the device id, queues and their depth, and the
//! queue limits the block layer gets (`ublk_params`: 4096-byte logical and
//! physical blocks, the device size, discard and write-zeroes).

use libublk::sys;

/// Bytes in a block of the device: its logical and physical block size,
/// the engine's page.
pub const BLOCK: u64 = 4096;
/// Largest request the kernel sends (each tag's I/O buffer).
pub const IO_BUF_BYTES: u32 = 512 << 10;
/// Largest discard or write-zeroes request, in sectors (1 GiB: the block
/// layer splits larger ones; the engine's request length is 32 bits).
pub const MAX_DISCARD_SECTORS: u32 = (1 << 30) / 512;
/// The driver's limits (`UBLK_MAX_NR_QUEUES`, `UBLK_MAX_QUEUE_DEPTH`).
pub const MAX_QUEUES: u16 = 4096;
pub const MAX_DEPTH: u16 = 4096;
/// Tags per queue unless `--queue-depth` says otherwise.
pub const DEFAULT_DEPTH: u16 = 128;

/// How the device is created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// `/dev/ublkbN`'s N (`--ublk-id`); `None`: the driver picks one.
    pub id: Option<u32>,
    /// Hardware queues, each served by one thread (`--queues`; `None`: one
    /// per CPU).
    pub queues: Option<u16>,
    /// Tags (requests in flight) per queue (`--queue-depth`).
    pub depth: u16,
    /// Attach to the existing device `id` left by a server that died
    /// (START/END_USER_RECOVERY) instead of adding a new one.
    pub recover: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            id: None,
            queues: None,
            depth: DEFAULT_DEPTH,
            recover: false,
        }
    }
}

impl Options {
    /// The queue count: `--queues`, or one per CPU.
    pub fn nr_queues(&self) -> u16 {
        self.queues.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get().min(MAX_QUEUES as usize) as u16)
        })
    }

    /// The options and the device size checked, with the flag to change
    /// for each refusal.
    pub fn check(&self, size: u64) -> Result<(), String> {
        if let Some(q) = self.queues {
            if !(1..=MAX_QUEUES).contains(&q) {
                return Err(format!("--queues {q}: 1 to {MAX_QUEUES}"));
            }
        }
        if !(1..=MAX_DEPTH).contains(&self.depth) {
            return Err(format!("--queue-depth {}: 1 to {MAX_DEPTH}", self.depth));
        }
        if let Some(id) = self.id {
            // The driver's ids are below UBLK_MAX_UBLKS (1 << MINORBITS).
            if id >= 1 << 20 {
                return Err(format!("--ublk-id {id}: below {}", 1 << 20));
            }
        }
        if self.recover && self.id.is_none() {
            return Err("recovering a ublk device needs its id (--ublk-id N)".into());
        }
        if size == 0 || !size.is_multiple_of(BLOCK) {
            return Err(format!(
                "--size {size}: a ublk device is a whole number of {BLOCK}-byte blocks, at least one"
            ));
        }
        Ok(())
    }
}

/// The queue limits of a device of `size` bytes whose requests are at most
/// `io_buf_bytes`. A volatile cache with FUA: flushes and FUA writes reach
/// the engine (zswap's backing file syncs on them; zram's flush is free).
pub fn params(size: u64, io_buf_bytes: u32) -> sys::ublk_params {
    let shift = BLOCK.trailing_zeros() as u8;
    sys::ublk_params {
        types: sys::UBLK_PARAM_TYPE_BASIC | sys::UBLK_PARAM_TYPE_DISCARD,
        basic: sys::ublk_param_basic {
            attrs: sys::UBLK_ATTR_VOLATILE_CACHE | sys::UBLK_ATTR_FUA,
            logical_bs_shift: shift,
            physical_bs_shift: shift,
            io_opt_shift: shift,
            io_min_shift: shift,
            max_sectors: io_buf_bytes >> 9,
            dev_sectors: size >> 9,
            ..Default::default()
        },
        discard: sys::ublk_param_discard {
            discard_granularity: BLOCK as u32,
            max_discard_sectors: MAX_DISCARD_SECTORS,
            max_write_zeroes_sectors: MAX_DISCARD_SECTORS,
            // The driver takes single-segment discards only.
            max_discard_segments: 1,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The recovery flags to create the device with, from the driver's
/// features: USER_RECOVERY keeps `/dev/ublkbN` with its I/O queued when the
/// server dies, REISSUE hands requests the dead server had taken to the
/// next one (engine writes are idempotent). Empty where the driver has
/// neither (then a dead server's device fails its I/O and is deleted).
pub fn recovery_flags(driver_features: u64) -> u64 {
    let want = (sys::UBLK_F_USER_RECOVERY | sys::UBLK_F_USER_RECOVERY_REISSUE) as u64;
    if driver_features & sys::UBLK_F_USER_RECOVERY as u64 == 0 {
        return 0;
    }
    driver_features & want
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_describe_a_4k_device_with_discard() {
        let p = params(256 << 20, IO_BUF_BYTES);
        assert_eq!(p.basic.logical_bs_shift, 12);
        assert_eq!(p.basic.physical_bs_shift, 12);
        assert_eq!(p.basic.dev_sectors, (256 << 20) / 512);
        assert_eq!(p.basic.max_sectors, 1024);
        assert_ne!(p.types & sys::UBLK_PARAM_TYPE_DISCARD, 0);
        assert_eq!(p.discard.discard_granularity, 4096);
        assert_eq!(p.discard.max_discard_segments, 1);
        assert!(p.discard.max_write_zeroes_sectors > 0);
        // Every limit the kernel checks: the largest discard fits the
        // engine's 32-bit request length, in whole blocks.
        assert!((p.discard.max_discard_sectors as u64) * 512 <= u32::MAX as u64);
        assert_eq!((p.discard.max_discard_sectors as u64 * 512) % BLOCK, 0);
    }

    #[test]
    fn refusals_name_the_flag() {
        let ok = Options::default();
        assert_eq!(ok.check(1 << 20), Ok(()));
        assert!(ok.check(0).unwrap_err().contains("--size"));
        assert!(ok.check(4096 + 512).unwrap_err().contains("--size"));
        let q = Options {
            queues: Some(0),
            ..Options::default()
        };
        assert!(q.check(1 << 20).unwrap_err().contains("--queues"));
        let d = Options {
            depth: 0,
            ..Options::default()
        };
        assert!(d.check(1 << 20).unwrap_err().contains("--queue-depth"));
        let d = Options {
            depth: MAX_DEPTH + 1,
            ..Options::default()
        };
        assert!(d.check(1 << 20).unwrap_err().contains("--queue-depth"));
        let r = Options {
            recover: true,
            ..Options::default()
        };
        assert!(r.check(1 << 20).unwrap_err().contains("--ublk-id"));
        let i = Options {
            id: Some(1 << 20),
            ..Options::default()
        };
        assert!(i.check(1 << 20).unwrap_err().contains("--ublk-id"));
    }

    #[test]
    fn queues_default_to_one_per_cpu() {
        let cpus = std::thread::available_parallelism().unwrap().get() as u16;
        assert_eq!(Options::default().nr_queues(), cpus);
        let two = Options {
            queues: Some(2),
            ..Options::default()
        };
        assert_eq!(two.nr_queues(), 2);
    }

    #[test]
    fn recovery_only_where_the_driver_has_it() {
        let rec = sys::UBLK_F_USER_RECOVERY as u64;
        let reissue = sys::UBLK_F_USER_RECOVERY_REISSUE as u64;
        assert_eq!(recovery_flags(0), 0);
        assert_eq!(recovery_flags(reissue), 0);
        assert_eq!(recovery_flags(rec), rec);
        assert_eq!(recovery_flags(rec | reissue | 1), rec | reissue);
    }
}
