//! The fixed newstyle handshake: greeting, client flags, then options until
//! the client picks the export (NBD_OPT_GO or the old NBD_OPT_EXPORT_NAME) or
//! leaves (NBD_OPT_ABORT, EOF).
//!
//! Options we do not implement (STARTTLS, STRUCTURED_REPLY, meta contexts,
//! extended headers, …) get NBD_REP_ERR_UNSUP; malformed ones
//! NBD_REP_ERR_INVALID; an unknown export NBD_REP_ERR_UNKNOWN. Option data of
//! any length is drained in small chunks, never buffered whole.

use std::io::{self, Read, Write};

use crate::proto::*;

/// What the server offers: one export.
#[derive(Debug, Clone)]
pub struct Export {
    /// Export name; the empty name (the client's default) also selects it.
    pub name: String,
    pub description: String,
    pub size: u64,
    /// Transmission flags.
    pub flags: u16,
    pub min_block: u32,
    pub preferred_block: u32,
    pub max_payload: u32,
}

impl Export {
    fn matches(&self, name: &[u8]) -> bool {
        name.is_empty() || name == self.name.as_bytes()
    }
}

/// How a handshake ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Transmission phase starts.
    Transmission,
    /// The client aborted or sent something we cannot continue from; close.
    Closed,
}

/// Option data longer than this is drained and answered NBD_REP_ERR_TOO_BIG.
const MAX_OPTION_DATA: u32 = 64 * 1024;

/// Read and throw away `n` bytes.
pub fn drain<R: Read>(r: &mut R, mut n: u64) -> io::Result<()> {
    let mut scratch = [0u8; 8192];
    while n > 0 {
        let k = n.min(scratch.len() as u64) as usize;
        r.read_exact(&mut scratch[..k])?;
        n -= k as u64;
    }
    Ok(())
}

/// Run the handshake on a connection. I/O errors (the client went away) are
/// returned as `Err`; protocol violations that end the connection as
/// `Ok(Outcome::Closed)`. `shutting_down` makes GO/EXPORT_NAME refuse.
pub fn negotiate<S: Read + Write>(
    s: &mut S,
    export: &Export,
    shutting_down: &dyn Fn() -> bool,
) -> io::Result<Outcome> {
    s.write_all(&greeting())?;
    s.flush()?;
    let mut cf = [0u8; 4];
    s.read_exact(&mut cf)?;
    let client_flags = u32::from_be_bytes(cf);
    if client_flags & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
        // Unknown client flags: the protocol says close.
        return Ok(Outcome::Closed);
    }
    let no_zeroes = client_flags & FLAG_C_NO_ZEROES != 0;
    loop {
        let mut h = [0u8; OPTION_LEN];
        s.read_exact(&mut h)?;
        let Some(opt) = parse_option_header(&h) else {
            return Ok(Outcome::Closed);
        };
        if opt.option == OPT_EXPORT_NAME {
            return export_name(s, export, opt.length, no_zeroes, shutting_down);
        }
        if opt.length > MAX_OPTION_DATA {
            drain(s, opt.length as u64)?;
            reply(s, opt.option, REP_ERR_TOO_BIG, b"option data too long")?;
            continue;
        }
        let mut data = vec![0u8; opt.length as usize];
        s.read_exact(&mut data)?;
        match opt.option {
            OPT_ABORT => {
                // The client may already have closed; ignore errors.
                let _ = reply(s, opt.option, REP_ACK, &[]);
                return Ok(Outcome::Closed);
            }
            OPT_LIST => {
                if !data.is_empty() {
                    reply(
                        s,
                        opt.option,
                        REP_ERR_INVALID,
                        b"NBD_OPT_LIST takes no data",
                    )?;
                    continue;
                }
                reply(
                    s,
                    opt.option,
                    REP_SERVER,
                    &rep_server(export.name.as_bytes(), export.description.as_bytes()),
                )?;
                reply(s, opt.option, REP_ACK, &[])?;
            }
            OPT_INFO | OPT_GO => {
                if info_or_go(s, export, opt.option, &data, shutting_down)? {
                    return Ok(Outcome::Transmission);
                }
            }
            OPT_STARTTLS => reply(s, opt.option, REP_ERR_POLICY, b"TLS is not supported")?,
            OPT_STRUCTURED_REPLY => reply(
                s,
                opt.option,
                REP_ERR_UNSUP,
                b"structured replies are not supported",
            )?,
            _ => reply(s, opt.option, REP_ERR_UNSUP, b"unknown option")?,
        }
    }
}

/// NBD_OPT_EXPORT_NAME: no way to send an error, so an unusable name closes
/// the connection; a good one gets the export's size and flags and starts
/// transmission.
fn export_name<S: Read + Write>(
    s: &mut S,
    export: &Export,
    length: u32,
    no_zeroes: bool,
    shutting_down: &dyn Fn() -> bool,
) -> io::Result<Outcome> {
    if length as usize > MAX_STRING {
        return Ok(Outcome::Closed);
    }
    let mut name = vec![0u8; length as usize];
    s.read_exact(&mut name)?;
    if !export.matches(&name) || shutting_down() {
        return Ok(Outcome::Closed);
    }
    let mut b = Vec::with_capacity(10 + 124);
    b.extend_from_slice(&export.size.to_be_bytes());
    b.extend_from_slice(&export.flags.to_be_bytes());
    if !no_zeroes {
        b.extend_from_slice(&[0u8; 124]);
    }
    s.write_all(&b)?;
    s.flush()?;
    Ok(Outcome::Transmission)
}

/// NBD_OPT_INFO and NBD_OPT_GO: the export's information (block sizes
/// always, name and description when asked); true when GO succeeded and
/// transmission starts.
fn info_or_go<S: Read + Write>(
    s: &mut S,
    export: &Export,
    option: u32,
    data: &[u8],
    shutting_down: &dyn Fn() -> bool,
) -> io::Result<bool> {
    let req = match parse_info_request(data) {
        Ok(r) => r,
        Err(why) => {
            reply(s, option, REP_ERR_INVALID, why.as_bytes())?;
            return Ok(false);
        }
    };
    if !export.matches(&req.name) {
        reply(s, option, REP_ERR_UNKNOWN, b"no such export")?;
        return Ok(false);
    }
    if option == OPT_GO && shutting_down() {
        reply(s, option, REP_ERR_SHUTDOWN, b"server is shutting down")?;
        return Ok(false);
    }
    reply(s, option, REP_INFO, &info_export(export.size, export.flags))?;
    // Block sizes are sent whether asked or not (the protocol allows it).
    let sizes = info_block_size(export.min_block, export.preferred_block, export.max_payload);
    reply(s, option, REP_INFO, &sizes)?;
    if req.requests.contains(&INFO_NAME) {
        reply(s, option, REP_INFO, &info_name(export.name.as_bytes()))?;
    }
    if req.requests.contains(&INFO_DESCRIPTION) {
        reply(
            s,
            option,
            REP_INFO,
            &info_description(export.description.as_bytes()),
        )?;
    }
    reply(s, option, REP_ACK, &[])?;
    Ok(option == OPT_GO)
}

fn reply<W: Write>(w: &mut W, option: u32, reply_type: u32, payload: &[u8]) -> io::Result<()> {
    w.write_all(&option_reply(option, reply_type, payload))?;
    w.flush()
}
