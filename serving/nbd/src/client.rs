//! A small synchronous NBD client (fixed newstyle, NBD_OPT_GO, simple
//! replies, one request at a time) for tests and tools. Real clients (qemu,
//! libnbd, the kernel) are what the integration tests drive; this one can
//! also send what they never would.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

use crate::proto::*;

pub struct Client {
    s: UnixStream,
    pub size: u64,
    pub flags: u16,
    /// (min, preferred, max) if the server sent NBD_INFO_BLOCK_SIZE.
    pub block_size: Option<(u32, u32, u32)>,
    cookie: u64,
}

fn proto_err(m: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, m.into())
}

impl Client {
    /// Connect and select `export` with NBD_OPT_GO.
    pub fn connect(path: &Path, export: &str) -> io::Result<Client> {
        let mut s = UnixStream::connect(path)?;
        let mut g = [0u8; 18];
        s.read_exact(&mut g)?;
        if g[..16] != greeting()[..16] {
            return Err(proto_err("bad greeting"));
        }
        s.write_all(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes())?;
        let mut data = (export.len() as u32).to_be_bytes().to_vec();
        data.extend_from_slice(export.as_bytes());
        data.extend_from_slice(&1u16.to_be_bytes());
        data.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        send_option(&mut s, OPT_GO, &data)?;
        let (mut size, mut flags, mut block_size) = (None, 0, None);
        loop {
            let (rtype, payload) = read_option_reply(&mut s, OPT_GO)?;
            match rtype {
                REP_ACK => break,
                REP_INFO if payload.len() >= 2 => {
                    let t = u16::from_be_bytes([payload[0], payload[1]]);
                    if t == INFO_EXPORT && payload.len() == 12 {
                        size = Some(u64::from_be_bytes(payload[2..10].try_into().unwrap()));
                        flags = u16::from_be_bytes([payload[10], payload[11]]);
                    } else if t == INFO_BLOCK_SIZE && payload.len() == 14 {
                        let w =
                            |i: usize| u32::from_be_bytes(payload[i..i + 4].try_into().unwrap());
                        block_size = Some((w(2), w(6), w(10)));
                    }
                }
                t if t & (1 << 31) != 0 => {
                    return Err(proto_err(format!(
                        "NBD_OPT_GO refused ({t:#x}): {}",
                        String::from_utf8_lossy(&payload)
                    )))
                }
                _ => {}
            }
        }
        let size = size.ok_or_else(|| proto_err("no NBD_INFO_EXPORT"))?;
        Ok(Client {
            s,
            size,
            flags,
            block_size,
            cookie: 0,
        })
    }

    /// Send a raw request (header plus payload) and read the simple reply:
    /// the NBD error (0 = success) and, for a successful read, `read_len` bytes.
    pub fn request(
        &mut self,
        command: u16,
        flags: u16,
        offset: u64,
        length: u32,
        payload: &[u8],
        read_len: usize,
    ) -> io::Result<(u32, Vec<u8>)> {
        self.cookie += 1;
        let r = Request {
            flags,
            command,
            cookie: self.cookie,
            offset,
            length,
        };
        let mut b = encode_request(&r).to_vec();
        b.extend_from_slice(payload);
        self.s.write_all(&b)?;
        let mut h = [0u8; REPLY_LEN];
        self.s.read_exact(&mut h)?;
        let (err, cookie) = parse_simple_reply(&h).ok_or_else(|| proto_err("bad reply magic"))?;
        if cookie != self.cookie {
            return Err(proto_err("reply cookie does not match"));
        }
        let mut data = Vec::new();
        if err == 0 && read_len > 0 {
            data = vec![0u8; read_len];
            self.s.read_exact(&mut data)?;
        }
        Ok((err, data))
    }

    pub fn read(&mut self, offset: u64, len: u32) -> io::Result<Result<Vec<u8>, u32>> {
        let (e, d) = self.request(CMD_READ, 0, offset, len, &[], len as usize)?;
        Ok(if e == 0 { Ok(d) } else { Err(e) })
    }

    pub fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<u32> {
        Ok(self
            .request(CMD_WRITE, 0, offset, data.len() as u32, data, 0)?
            .0)
    }

    pub fn stream(&mut self) -> &mut UnixStream {
        &mut self.s
    }

    /// NBD_CMD_DISC, then close.
    pub fn disconnect(mut self) -> io::Result<()> {
        let r = Request {
            flags: 0,
            command: CMD_DISC,
            cookie: 0,
            offset: 0,
            length: 0,
        };
        self.s.write_all(&encode_request(&r))?;
        self.s.shutdown(std::net::Shutdown::Both)
    }
}

fn send_option(s: &mut UnixStream, option: u32, data: &[u8]) -> io::Result<()> {
    let mut b = IHAVEOPT.to_be_bytes().to_vec();
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    s.write_all(&b)
}

fn read_option_reply(s: &mut UnixStream, option: u32) -> io::Result<(u32, Vec<u8>)> {
    let mut h = [0u8; 20];
    s.read_exact(&mut h)?;
    if u64::from_be_bytes(h[..8].try_into().unwrap()) != OPT_REPLY_MAGIC
        || u32::from_be_bytes(h[8..12].try_into().unwrap()) != option
    {
        return Err(proto_err("bad option reply"));
    }
    let rtype = u32::from_be_bytes(h[12..16].try_into().unwrap());
    let len = u32::from_be_bytes(h[16..20].try_into().unwrap());
    if len > 1 << 20 {
        return Err(proto_err("option reply too long"));
    }
    let mut p = vec![0u8; len as usize];
    s.read_exact(&mut p)?;
    Ok((rtype, p))
}
