//! A ublk request (the kernel's `ublksrv_io_desc`: an op, its flags, a start
//! sector and a sector count) as the command both transports run on the
//! engine ([`zmem_nbd::Command`], executed by [`zmem_nbd::execute_io`]), and
//! the engine's answer as the result the kernel completes the request with.
//!
//! The kernel's request ops map one to one: READ, WRITE (FUA: flushed before
//! it completes), FLUSH, DISCARD (freed slots, as zram's discard) and
//! WRITE_ZEROES (freed slots, or with NOUNMAP pages written as zeros and
//! stored same-filled, as NBD's NO_HOLE). Anything else (zoned ops,
//! WRITE_SAME) is refused with EOPNOTSUPP.

use libublk::sys;
use zmem_device::IoError;
use zmem_nbd::Command;

/// Bytes in the kernel's sector, the unit of `start_sector` and `nr_sectors`.
pub const SECTOR: u64 = 512;

/// One request as the kernel describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// `op_flags`: the op in the low 8 bits, `UBLK_IO_F_*` above.
    pub op_flags: u32,
    pub start_sector: u64,
    pub nr_sectors: u32,
}

impl From<&sys::ublksrv_io_desc> for Request {
    fn from(d: &sys::ublksrv_io_desc) -> Self {
        Request {
            op_flags: d.op_flags,
            start_sector: d.start_sector,
            nr_sectors: d.nr_sectors,
        }
    }
}

/// The command for a request on a device of `size` bytes whose I/O buffer
/// holds `max_bytes`; a refusal is the negative errno the kernel gets.
pub fn command(r: &Request, size: u64, max_bytes: u32) -> Result<Command, i32> {
    let op = r.op_flags & 0xff;
    if op == sys::UBLK_IO_OP_FLUSH {
        return Ok(Command::Flush);
    }
    let offset = r.start_sector.checked_mul(SECTOR).ok_or(-libc::EINVAL)?;
    let bytes = r.nr_sectors as u64 * SECTOR;
    let len = u32::try_from(bytes).map_err(|_| -libc::EINVAL)?;
    if len == 0 || offset.checked_add(bytes).is_none_or(|end| end > size) {
        // The block layer never sends these (it checks the capacity); a
        // request that says otherwise is answered, not served.
        return Err(-libc::EINVAL);
    }
    let data = matches!(op, sys::UBLK_IO_OP_READ | sys::UBLK_IO_OP_WRITE);
    if data && len > max_bytes {
        return Err(-libc::EINVAL);
    }
    Ok(match op {
        sys::UBLK_IO_OP_READ => Command::Read { offset, len },
        sys::UBLK_IO_OP_WRITE => Command::Write {
            offset,
            len,
            fua: r.op_flags & sys::UBLK_IO_F_FUA != 0,
        },
        sys::UBLK_IO_OP_DISCARD => Command::Trim { offset, len },
        sys::UBLK_IO_OP_WRITE_ZEROES => Command::WriteZeroes {
            offset,
            len,
            no_hole: r.op_flags & sys::UBLK_IO_F_NOUNMAP != 0,
            fast: false,
        },
        _ => return Err(-libc::EOPNOTSUPP),
    })
}

/// How many bytes of the request's buffer the command moves (what a READ
/// or WRITE completes with; every other op completes with 0).
pub fn data_bytes(cmd: &Command) -> usize {
    match *cmd {
        Command::Read { len, .. } | Command::Write { len, .. } => len as usize,
        _ => 0,
    }
}

/// The engine's failure as the kernel's errno, which the block layer turns
/// into the request's status: ENOSPC at mem_limit (BLK_STS_NOSPC: a file
/// system sees "no space", as NBD's client does, docs/serve.md "Errors"),
/// EINVAL out of range, EIO for corrupt data or a backing device error.
pub fn errno(e: &IoError) -> i32 {
    match e {
        IoError::OutOfRange { .. } | IoError::Unaligned { .. } => -libc::EINVAL,
        IoError::NoSpace(_) => -libc::ENOSPC,
        IoError::Io(_) => -libc::EIO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn req(op: u32, flags: u32, sector: u64, sectors: u32) -> Request {
        Request {
            op_flags: op | flags,
            start_sector: sector,
            nr_sectors: sectors,
        }
    }

    #[test]
    fn reads_and_writes_map_to_byte_ranges() {
        assert_eq!(
            command(&req(sys::UBLK_IO_OP_READ, 0, 8, 8), MIB, 4096),
            Ok(Command::Read {
                offset: 4096,
                len: 4096
            })
        );
        assert_eq!(
            command(
                &req(sys::UBLK_IO_OP_WRITE, sys::UBLK_IO_F_FUA, 0, 16),
                MIB,
                8192
            ),
            Ok(Command::Write {
                offset: 0,
                len: 8192,
                fua: true
            })
        );
        let w = command(&req(sys::UBLK_IO_OP_WRITE, 0, 0, 8), MIB, 4096).unwrap();
        assert_eq!(data_bytes(&w), 4096);
    }

    #[test]
    fn discard_write_zeroes_and_flush() {
        assert_eq!(
            command(&req(sys::UBLK_IO_OP_DISCARD, 0, 0, 2048), MIB, 4096),
            Ok(Command::Trim {
                offset: 0,
                len: MIB as u32
            })
        );
        let z = command(
            &req(sys::UBLK_IO_OP_WRITE_ZEROES, sys::UBLK_IO_F_NOUNMAP, 8, 8),
            MIB,
            4096,
        );
        assert_eq!(
            z,
            Ok(Command::WriteZeroes {
                offset: 4096,
                len: 4096,
                no_hole: true,
                fast: false
            })
        );
        assert_eq!(data_bytes(&z.unwrap()), 0);
        let f = command(&req(sys::UBLK_IO_OP_FLUSH, 0, 0, 0), MIB, 4096);
        assert_eq!(f, Ok(Command::Flush));
    }

    #[test]
    fn refusals_are_negative_errnos() {
        // Past the end, zero length, a payload larger than the buffer.
        let end = MIB / SECTOR;
        assert_eq!(
            command(&req(sys::UBLK_IO_OP_READ, 0, end, 8), MIB, 4096),
            Err(-libc::EINVAL)
        );
        assert_eq!(
            command(&req(sys::UBLK_IO_OP_READ, 0, 0, 0), MIB, 4096),
            Err(-libc::EINVAL)
        );
        assert_eq!(
            command(&req(sys::UBLK_IO_OP_WRITE, 0, 0, 16), MIB, 4096),
            Err(-libc::EINVAL)
        );
        // A start sector whose byte offset overflows.
        assert_eq!(
            command(&req(sys::UBLK_IO_OP_READ, 0, u64::MAX / 2, 8), MIB, 4096),
            Err(-libc::EINVAL)
        );
        for op in [sys::UBLK_IO_OP_WRITE_SAME, sys::UBLK_IO_OP_ZONE_APPEND] {
            assert_eq!(
                command(&req(op, 0, 0, 8), MIB, 4096),
                Err(-libc::EOPNOTSUPP)
            );
        }
    }

    #[test]
    fn engine_failures_become_errnos() {
        assert_eq!(errno(&IoError::NoSpace("full".into())), -libc::ENOSPC);
        assert_eq!(errno(&IoError::Io("bad".into())), -libc::EIO);
        let r = IoError::OutOfRange {
            offset: 0,
            len: 1,
            size: 0,
        };
        assert_eq!(errno(&r), -libc::EINVAL);
    }
}
