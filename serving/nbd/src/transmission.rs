//! Transmission phase: turning a request header into a checked command (or
//! the error the client gets), and running a command on the device.
//!
//! Rules (NBD protocol, "Request types" and "Error values"):
//! * unknown command → EINVAL; unknown or misplaced flags → EINVAL;
//! * zero length, or offset/length not a multiple of 512 → EINVAL;
//! * beyond the end: reads and trims EINVAL, writes and write-zeroes ENOSPC;
//! * a READ/WRITE longer than the advertised maximum payload → EINVAL (a
//!   WRITE's payload is still drained, so the stream stays in step).

use zmem_device::BlockDevice;

use crate::proto::*;

/// Sector size: the minimum block size we advertise.
pub const SECTOR: u64 = 512;

/// A checked command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Read {
        offset: u64,
        len: u32,
    },
    /// The payload (`len` bytes) follows the header.
    Write {
        offset: u64,
        len: u32,
        fua: bool,
    },
    Flush,
    Trim {
        offset: u64,
        len: u32,
    },
    WriteZeroes {
        offset: u64,
        len: u32,
        no_hole: bool,
        fast: bool,
    },
    Disconnect,
}

/// A request the server refuses: the error to send, and how many payload
/// bytes follow the header and must be drained first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    pub error: u32,
    pub drain: u64,
    pub why: &'static str,
}

/// Check a request against the export size and maximum payload.
pub fn decode(r: &Request, size: u64, max_payload: u32) -> Result<Command, Refusal> {
    let drain = if r.command == CMD_WRITE {
        r.length as u64
    } else {
        0
    };
    let refuse = |error, why| Err(Refusal { error, drain, why });
    let known =
        CMD_FLAG_FUA | CMD_FLAG_NO_HOLE | CMD_FLAG_DF | CMD_FLAG_REQ_ONE | CMD_FLAG_FAST_ZERO;
    if r.flags & !known != 0 {
        return refuse(NBD_EINVAL, "unknown command flags");
    }
    // DF and REQ_ONE only mean something with structured replies / block
    // status, which we do not negotiate.
    if r.flags & (CMD_FLAG_DF | CMD_FLAG_REQ_ONE) != 0 {
        return refuse(NBD_EINVAL, "flag needs structured replies");
    }
    if r.command != CMD_WRITE_ZEROES && r.flags & (CMD_FLAG_NO_HOLE | CMD_FLAG_FAST_ZERO) != 0 {
        return refuse(NBD_EINVAL, "NO_HOLE/FAST_ZERO only apply to WRITE_ZEROES");
    }
    match r.command {
        CMD_DISC => return Ok(Command::Disconnect),
        CMD_FLUSH => return Ok(Command::Flush),
        CMD_READ | CMD_WRITE | CMD_TRIM | CMD_WRITE_ZEROES => {}
        _ => return refuse(NBD_EINVAL, "unknown command"),
    }
    let len = r.length;
    if len == 0 {
        return refuse(NBD_EINVAL, "zero-length request");
    }
    if !r.offset.is_multiple_of(SECTOR) || !(len as u64).is_multiple_of(SECTOR) {
        return refuse(NBD_EINVAL, "offset or length not a multiple of 512");
    }
    if matches!(r.command, CMD_READ | CMD_WRITE) && len > max_payload {
        return refuse(NBD_EINVAL, "payload larger than the maximum block size");
    }
    let in_range = r
        .offset
        .checked_add(len as u64)
        .is_some_and(|end| end <= size);
    if !in_range {
        let error = if matches!(r.command, CMD_WRITE | CMD_WRITE_ZEROES) {
            NBD_ENOSPC
        } else {
            NBD_EINVAL
        };
        return refuse(error, "beyond the end of the export");
    }
    let offset = r.offset;
    Ok(match r.command {
        CMD_READ => Command::Read { offset, len },
        CMD_WRITE => Command::Write {
            offset,
            len,
            fua: r.flags & CMD_FLAG_FUA != 0,
        },
        CMD_TRIM => Command::Trim { offset, len },
        _ => Command::WriteZeroes {
            offset,
            len,
            no_hole: r.flags & CMD_FLAG_NO_HOLE != 0,
            fast: r.flags & CMD_FLAG_FAST_ZERO != 0,
        },
    })
}

/// [`execute`] with the device's own error (for counting and logging).
pub fn execute_io(
    dev: &dyn BlockDevice,
    cmd: &Command,
    buf: &mut [u8],
) -> Result<(), zmem_device::IoError> {
    match *cmd {
        Command::Read { offset, .. } => dev.read_at(offset, buf),
        Command::Write { offset, fua, .. } => {
            dev.write_at(offset, buf)
                .and_then(|()| if fua { dev.flush() } else { Ok(()) })
        }
        Command::Flush => dev.flush(),
        Command::Trim { offset, len } => dev.discard(offset, len as u64),
        Command::WriteZeroes {
            offset,
            len,
            no_hole,
            ..
        } => {
            // Zeroing is always at least as fast as writing zeros here (whole
            // pages become same-filled or free slots), so FAST_ZERO never
            // needs to fail. NO_HOLE: write zero pages (stored same-filled, as
            // the kernel stores a written page of zeros) instead of
            // discarding.
            if no_hole {
                write_zero_pages(dev, offset, len as u64)
            } else {
                dev.write_zeroes(offset, len as u64)
            }
        }
        Command::Disconnect => Ok(()),
    }
}

fn write_zero_pages(
    dev: &dyn BlockDevice,
    offset: u64,
    len: u64,
) -> Result<(), zmem_device::IoError> {
    const CHUNK: u64 = 64 * 1024;
    static ZEROS: [u8; CHUNK as usize] = [0u8; CHUNK as usize];
    let mut pos = offset;
    let end = offset + len;
    while pos < end {
        let n = (end - pos).min(CHUNK);
        dev.write_at(pos, &ZEROS[..n as usize])?;
        pos += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(command: u16, flags: u16, offset: u64, length: u32) -> Request {
        Request {
            flags,
            command,
            cookie: 1,
            offset,
            length,
        }
    }

    #[test]
    fn decode_rules() {
        let size = 1 << 20;
        let max = 1 << 16;
        assert_eq!(
            decode(&req(CMD_READ, 0, 0, 4096), size, max),
            Ok(Command::Read {
                offset: 0,
                len: 4096
            })
        );
        assert_eq!(
            decode(&req(CMD_READ, 0, 1, 4096), size, max)
                .unwrap_err()
                .error,
            NBD_EINVAL
        );
        assert_eq!(
            decode(&req(CMD_READ, 0, size, 512), size, max)
                .unwrap_err()
                .error,
            NBD_EINVAL
        );
        let w = decode(&req(CMD_WRITE, 0, size, 512), size, max).unwrap_err();
        assert_eq!((w.error, w.drain), (NBD_ENOSPC, 512));
        let w = decode(&req(CMD_WRITE, 0, 0, max + 512), size, max).unwrap_err();
        assert_eq!((w.error, w.drain), (NBD_EINVAL, max as u64 + 512));
        assert_eq!(
            decode(&req(CMD_WRITE_ZEROES, 0, u64::MAX - 511, 512), size, max)
                .unwrap_err()
                .error,
            NBD_ENOSPC
        );
        assert_eq!(
            decode(&req(99, 0, 0, 0), size, max).unwrap_err().error,
            NBD_EINVAL
        );
        assert_eq!(
            decode(&req(CMD_READ, 1 << 9, 0, 512), size, max)
                .unwrap_err()
                .error,
            NBD_EINVAL
        );
        assert_eq!(
            decode(&req(CMD_READ, CMD_FLAG_FAST_ZERO, 0, 512), size, max)
                .unwrap_err()
                .error,
            NBD_EINVAL
        );
        assert_eq!(
            decode(&req(CMD_READ, 0, 0, 0), size, max)
                .unwrap_err()
                .error,
            NBD_EINVAL
        );
        assert_eq!(
            decode(&req(CMD_FLUSH, 0, 0, 0), size, max),
            Ok(Command::Flush)
        );
        assert_eq!(
            decode(&req(CMD_DISC, 0, 0, 0), size, max),
            Ok(Command::Disconnect)
        );
        // Large trims and write-zeroes are fine (no payload).
        assert!(decode(&req(CMD_TRIM, 0, 0, size as u32), size, max).is_ok());
        assert_eq!(
            decode(
                &req(
                    CMD_WRITE_ZEROES,
                    CMD_FLAG_FAST_ZERO | CMD_FLAG_NO_HOLE,
                    4096,
                    8192
                ),
                size,
                max
            ),
            Ok(Command::WriteZeroes {
                offset: 4096,
                len: 8192,
                no_hole: true,
                fast: true
            })
        );
    }
}
