//! NBD protocol constants and the wire codec (big-endian, as in the NBD
//! protocol document `doc/proto.md`): handshake magics and flags, option and
//! option-reply headers, the 28-byte request header and the 16-byte simple
//! reply header. Pure functions, no I/O.

/// "NBDMAGIC": first word the server sends.
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// "IHAVEOPT": newstyle negotiation magic (server greeting and every option).
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
/// Magic of every option reply.
pub const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Magic of every transmission request.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Magic of a simple reply.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

// Handshake flags (server) and client flags.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
pub const FLAG_NO_ZEROES: u16 = 1 << 1;
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1 << 0;
pub const FLAG_C_NO_ZEROES: u32 = 1 << 1;

// Options.
pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_LIST: u32 = 3;
pub const OPT_STARTTLS: u32 = 5;
pub const OPT_INFO: u32 = 6;
pub const OPT_GO: u32 = 7;
pub const OPT_STRUCTURED_REPLY: u32 = 8;

// Option reply types.
pub const REP_ACK: u32 = 1;
pub const REP_SERVER: u32 = 2;
pub const REP_INFO: u32 = 3;
const REP_FLAG_ERROR: u32 = 1 << 31;
pub const REP_ERR_UNSUP: u32 = REP_FLAG_ERROR | 1;
pub const REP_ERR_POLICY: u32 = REP_FLAG_ERROR | 2;
pub const REP_ERR_INVALID: u32 = REP_FLAG_ERROR | 3;
pub const REP_ERR_UNKNOWN: u32 = REP_FLAG_ERROR | 6;
pub const REP_ERR_SHUTDOWN: u32 = REP_FLAG_ERROR | 7;
pub const REP_ERR_TOO_BIG: u32 = REP_FLAG_ERROR | 9;

// NBD_REP_INFO types.
pub const INFO_EXPORT: u16 = 0;
pub const INFO_NAME: u16 = 1;
pub const INFO_DESCRIPTION: u16 = 2;
pub const INFO_BLOCK_SIZE: u16 = 3;

// Transmission flags.
pub const TF_HAS_FLAGS: u16 = 1 << 0;
pub const TF_READ_ONLY: u16 = 1 << 1;
pub const TF_SEND_FLUSH: u16 = 1 << 2;
pub const TF_SEND_FUA: u16 = 1 << 3;
pub const TF_SEND_TRIM: u16 = 1 << 5;
pub const TF_SEND_WRITE_ZEROES: u16 = 1 << 6;
pub const TF_CAN_MULTI_CONN: u16 = 1 << 8;
pub const TF_SEND_FAST_ZERO: u16 = 1 << 11;

// Commands.
pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;
pub const CMD_WRITE_ZEROES: u16 = 6;

// Command flags.
pub const CMD_FLAG_FUA: u16 = 1 << 0;
pub const CMD_FLAG_NO_HOLE: u16 = 1 << 1;
pub const CMD_FLAG_DF: u16 = 1 << 2;
pub const CMD_FLAG_REQ_ONE: u16 = 1 << 3;
pub const CMD_FLAG_FAST_ZERO: u16 = 1 << 4;

// Errors a client may see (NBD error values, the Linux errno numbers).
pub const NBD_EPERM: u32 = 1;
pub const NBD_EIO: u32 = 5;
pub const NBD_ENOMEM: u32 = 12;
pub const NBD_EINVAL: u32 = 22;
pub const NBD_ENOSPC: u32 = 28;
pub const NBD_EOVERFLOW: u32 = 75;
pub const NBD_ENOTSUP: u32 = 95;
pub const NBD_ESHUTDOWN: u32 = 108;

/// Bytes of a request header.
pub const REQUEST_LEN: usize = 28;
/// Bytes of a simple reply header.
pub const REPLY_LEN: usize = 16;
/// Bytes of an option header (IHAVEOPT, option, length).
pub const OPTION_LEN: usize = 16;
/// Longest export name or option string we accept (NBD_MAX_STRING).
pub const MAX_STRING: usize = 4096;

/// The server's greeting: NBDMAGIC, IHAVEOPT, handshake flags.
pub fn greeting() -> [u8; 18] {
    let mut b = [0u8; 18];
    b[..8].copy_from_slice(&NBDMAGIC.to_be_bytes());
    b[8..16].copy_from_slice(&IHAVEOPT.to_be_bytes());
    b[16..].copy_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    b
}

/// An option header sent by the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionHeader {
    pub option: u32,
    pub length: u32,
}

/// Parse an option header; `None` when the magic is wrong (the client is not
/// speaking newstyle negotiation: the server must disconnect).
pub fn parse_option_header(b: &[u8; OPTION_LEN]) -> Option<OptionHeader> {
    let magic = u64::from_be_bytes(b[..8].try_into().unwrap());
    (magic == IHAVEOPT).then(|| OptionHeader {
        option: u32::from_be_bytes(b[8..12].try_into().unwrap()),
        length: u32::from_be_bytes(b[12..16].try_into().unwrap()),
    })
}

/// Encode an option reply: header plus payload.
pub fn option_reply(option: u32, reply_type: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(20 + payload.len());
    v.extend_from_slice(&OPT_REPLY_MAGIC.to_be_bytes());
    v.extend_from_slice(&option.to_be_bytes());
    v.extend_from_slice(&reply_type.to_be_bytes());
    v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    v.extend_from_slice(payload);
    v
}

/// The body of NBD_OPT_INFO / NBD_OPT_GO: an export name and the info types
/// the client asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfoRequest {
    pub name: Vec<u8>,
    pub requests: Vec<u16>,
}

/// Parse the data of NBD_OPT_INFO / NBD_OPT_GO: `u32 name length, name,
/// u16 count, count × u16`. Lengths must add up exactly.
pub fn parse_info_request(d: &[u8]) -> Result<InfoRequest, &'static str> {
    if d.len() < 6 {
        return Err("option data shorter than 6 bytes");
    }
    let nlen = u32::from_be_bytes(d[..4].try_into().unwrap()) as usize;
    if nlen > MAX_STRING {
        return Err("export name longer than 4096 bytes");
    }
    let rest = &d[4..];
    if rest.len() < nlen + 2 {
        return Err("export name length runs past the option data");
    }
    let name = rest[..nlen].to_vec();
    let count = u16::from_be_bytes(rest[nlen..nlen + 2].try_into().unwrap()) as usize;
    let list = &rest[nlen + 2..];
    if list.len() != count * 2 {
        return Err("information request count does not match the option length");
    }
    let requests = list
        .chunks_exact(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    Ok(InfoRequest { name, requests })
}

/// NBD_INFO_EXPORT payload: type, size, transmission flags.
pub fn info_export(size: u64, flags: u16) -> [u8; 12] {
    let mut b = [0u8; 12];
    b[..2].copy_from_slice(&INFO_EXPORT.to_be_bytes());
    b[2..10].copy_from_slice(&size.to_be_bytes());
    b[10..].copy_from_slice(&flags.to_be_bytes());
    b
}

/// NBD_INFO_BLOCK_SIZE payload: minimum, preferred, maximum payload.
pub fn info_block_size(min: u32, preferred: u32, max: u32) -> [u8; 14] {
    let mut b = [0u8; 14];
    b[..2].copy_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
    b[2..6].copy_from_slice(&min.to_be_bytes());
    b[6..10].copy_from_slice(&preferred.to_be_bytes());
    b[10..].copy_from_slice(&max.to_be_bytes());
    b
}

/// NBD_INFO_NAME payload.
pub fn info_name(name: &[u8]) -> Vec<u8> {
    let mut v = INFO_NAME.to_be_bytes().to_vec();
    v.extend_from_slice(name);
    v
}

/// NBD_INFO_DESCRIPTION payload.
pub fn info_description(text: &[u8]) -> Vec<u8> {
    let mut v = INFO_DESCRIPTION.to_be_bytes().to_vec();
    v.extend_from_slice(text);
    v
}

/// NBD_REP_SERVER payload for NBD_OPT_LIST: name length, name, description.
pub fn rep_server(name: &[u8], description: &[u8]) -> Vec<u8> {
    let mut v = (name.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(name);
    v.extend_from_slice(description);
    v
}

/// A transmission request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub flags: u16,
    pub command: u16,
    pub cookie: u64,
    pub offset: u64,
    pub length: u32,
}

/// Parse a request header; `None` when the magic is wrong (the stream can no
/// longer be trusted: the server disconnects).
pub fn parse_request(b: &[u8; REQUEST_LEN]) -> Option<Request> {
    let magic = u32::from_be_bytes(b[..4].try_into().unwrap());
    (magic == REQUEST_MAGIC).then(|| Request {
        flags: u16::from_be_bytes(b[4..6].try_into().unwrap()),
        command: u16::from_be_bytes(b[6..8].try_into().unwrap()),
        cookie: u64::from_be_bytes(b[8..16].try_into().unwrap()),
        offset: u64::from_be_bytes(b[16..24].try_into().unwrap()),
        length: u32::from_be_bytes(b[24..28].try_into().unwrap()),
    })
}

/// Encode a request header (for clients and tests).
pub fn encode_request(r: &Request) -> [u8; REQUEST_LEN] {
    let mut b = [0u8; REQUEST_LEN];
    b[..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
    b[4..6].copy_from_slice(&r.flags.to_be_bytes());
    b[6..8].copy_from_slice(&r.command.to_be_bytes());
    b[8..16].copy_from_slice(&r.cookie.to_be_bytes());
    b[16..24].copy_from_slice(&r.offset.to_be_bytes());
    b[24..].copy_from_slice(&r.length.to_be_bytes());
    b
}

/// Write a simple reply header into `b[..16]`.
pub fn put_simple_reply(b: &mut [u8], error: u32, cookie: u64) {
    b[..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    b[4..8].copy_from_slice(&error.to_be_bytes());
    b[8..16].copy_from_slice(&cookie.to_be_bytes());
}

/// Parse a simple reply header: (error, cookie); `None` on a wrong magic.
pub fn parse_simple_reply(b: &[u8; REPLY_LEN]) -> Option<(u32, u64)> {
    let magic = u32::from_be_bytes(b[..4].try_into().unwrap());
    (magic == SIMPLE_REPLY_MAGIC).then(|| {
        (
            u32::from_be_bytes(b[4..8].try_into().unwrap()),
            u64::from_be_bytes(b[8..16].try_into().unwrap()),
        )
    })
}

/// The NBD error a client sees for an engine errno.
pub fn nbd_error(e: zmem_kernel::Errno) -> u32 {
    use zmem_kernel::Errno::*;
    match e {
        EPERM | EACCES => NBD_EPERM,
        ENOMEM => NBD_ENOMEM,
        EINVAL | ERANGE | E2BIG => NBD_EINVAL,
        ENOSPC => NBD_ENOSPC,
        EOPNOTSUPP => NBD_ENOTSUP,
        _ => NBD_EIO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trip() {
        let r = Request {
            flags: 3,
            command: CMD_WRITE,
            cookie: 0xdead_beef_0102,
            offset: 4096,
            length: 512,
        };
        assert_eq!(parse_request(&encode_request(&r)), Some(r));
        let mut b = encode_request(&r);
        b[0] ^= 1;
        assert_eq!(parse_request(&b), None);
    }

    #[test]
    fn info_request_lengths() {
        let mut d = 3u32.to_be_bytes().to_vec();
        d.extend_from_slice(b"abc");
        d.extend_from_slice(&1u16.to_be_bytes());
        d.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        let r = parse_info_request(&d).unwrap();
        assert_eq!(
            (r.name.as_slice(), r.requests.as_slice()),
            (&b"abc"[..], &[INFO_BLOCK_SIZE][..])
        );
        assert!(parse_info_request(&d[..d.len() - 1]).is_err());
        let mut long = d.clone();
        long.push(0);
        assert!(parse_info_request(&long).is_err());
        let mut huge = u32::MAX.to_be_bytes().to_vec();
        huge.extend_from_slice(&[0, 0]);
        assert!(parse_info_request(&huge).is_err());
    }

    #[test]
    fn greeting_bytes() {
        let g = greeting();
        assert_eq!(&g[..8], b"NBDMAGIC");
        assert_eq!(&g[8..16], b"IHAVEOPT");
        assert_eq!(u16::from_be_bytes([g[16], g[17]]), 3);
    }
}
