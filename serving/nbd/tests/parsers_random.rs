//! Random and mutated bytes into every parser and into a whole connection
//! (handshake + requests, run on a real device): nothing panics, and replies
//! stay well-formed.

mod common;

use proptest::prelude::*;
use zmem_nbd::decode_request as decode;
use zmem_nbd::proto::*;
use zmem_nbd::{serve_bytes, Options};

/// A valid client prefix: flags, then NBD_OPT_GO for the default export.
fn go_prefix() -> Vec<u8> {
    let mut v = (FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES)
        .to_be_bytes()
        .to_vec();
    v.extend_from_slice(&IHAVEOPT.to_be_bytes());
    v.extend_from_slice(&OPT_GO.to_be_bytes());
    v.extend_from_slice(&6u32.to_be_bytes());
    v.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    v
}

fn request(command: u16, flags: u16, offset: u64, length: u32) -> Vec<u8> {
    encode_request(&Request {
        flags,
        command,
        cookie: 5,
        offset,
        length,
    })
    .to_vec()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_into_parsers(data in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse_info_request(&data);
        let _ = zmem_device::ctl::parse_request(&data);
        if data.len() >= REQUEST_LEN {
            if let Some(r) = parse_request(data[..REQUEST_LEN].try_into().unwrap()) {
                let _ = decode(&r, 1 << 20, 1 << 16);
            }
        }
        if data.len() >= OPTION_LEN {
            let _ = parse_option_header(data[..OPTION_LEN].try_into().unwrap());
        }
    }

    #[test]
    fn random_headers_decode_consistently(flags in any::<u16>(), command in 0u16..10, offset in any::<u64>(), length in any::<u32>()) {
        let r = Request { flags, command, cookie: 1, offset, length };
        match decode(&r, 1 << 20, 1 << 16) {
            Ok(zmem_nbd::Command::Read { offset, len }) | Ok(zmem_nbd::Command::Write { offset, len, .. }) => {
                prop_assert!(offset + len as u64 <= 1 << 20 && len <= 1 << 16 && offset % 512 == 0 && len % 512 == 0);
            }
            Ok(_) => {}
            Err(e) => {
                let expected = if command == CMD_WRITE { length as u64 } else { 0 };
                prop_assert_eq!(e.drain, expected);
            }
        }
    }

    #[test]
    fn random_handshake_bytes(data in proptest::collection::vec(any::<u8>(), 0..512), keep_magic in any::<bool>()) {
        let dev = common::device(1 << 20, 0);
        let mut input = Vec::new();
        if keep_magic {
            input.extend_from_slice(&FLAG_C_FIXED_NEWSTYLE.to_be_bytes());
            input.extend_from_slice(&IHAVEOPT.to_be_bytes());
        }
        input.extend_from_slice(&data);
        let out = serve_bytes(&*dev, &Options::default(), &input);
        prop_assert!(out.starts_with(&greeting()));
    }

    #[test]
    fn random_requests_after_go(reqs in proptest::collection::vec((0u16..9, any::<u16>(), 0u64..(2 << 20), 0u32..20_000, any::<u8>()), 0..24), tail in proptest::collection::vec(any::<u8>(), 0..64)) {
        let dev = common::device(1 << 20, 0);
        let mut input = go_prefix();
        let mut sent = Vec::new();
        for (cmd, flags, off, len, fill) in reqs {
            // Mostly sector-aligned requests, some not, flags mostly clear.
            let (off, len) = if fill % 4 == 0 { (off, len) } else { (off & !511, len & !511) };
            let flags = if fill % 3 == 0 { flags } else { 0 };
            input.extend_from_slice(&request(cmd, flags, off, len));
            if cmd == CMD_WRITE {
                input.extend(std::iter::repeat_n(fill, len as usize));
            }
            if cmd == CMD_DISC {
                break;
            }
            sent.push((cmd, len));
        }
        input.extend_from_slice(&tail);
        let out = serve_bytes(&*dev, &Options::default(), &input);
        // Skip the handshake: greeting, then option replies up to the ACK.
        let mut pos = 18;
        loop {
            prop_assert!(out.len() >= pos + 20);
            let len = u32::from_be_bytes(out[pos + 16..pos + 20].try_into().unwrap()) as usize;
            let t = u32::from_be_bytes(out[pos + 12..pos + 16].try_into().unwrap());
            pos += 20 + len;
            if t == REP_ACK {
                break;
            }
        }
        // One well-formed reply per request sent (replies are in order here),
        // read data only after a successful READ.
        for (cmd, len) in sent {
            let h: [u8; REPLY_LEN] = out[pos..pos + REPLY_LEN].try_into().unwrap();
            let (err, cookie) = parse_simple_reply(&h).expect("reply magic");
            prop_assert_eq!(cookie, 5);
            pos += REPLY_LEN;
            if cmd == CMD_READ && err == 0 {
                pos += len as usize;
            }
        }
        // The random tail may hold at most a few more whole replies.
        prop_assert!(pos <= out.len());
    }
}
