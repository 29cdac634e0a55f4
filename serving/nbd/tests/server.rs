//! The server end to end over a Unix socket with the crate's own client:
//! commands, pipelining and several clients, bad input of every kind,
//! mem_limit, shutdown, and the control socket.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

use common::*;
use zmem_device::BlockDevice;
use zmem_nbd::proto::*;
use zmem_nbd::{Control, CtlServer};

const MIB: u64 = 1 << 20;

#[test]
fn commands_round_trip() {
    let srv = start(device(16 * MIB, 0));
    let mut c = connect(&srv.sock, "zmem");
    assert_eq!(c.size, 16 * MIB);
    assert_eq!(c.block_size, Some((512, 4096, 32 << 20)));
    assert!(
        c.flags & TF_SEND_WRITE_ZEROES != 0
            && c.flags & TF_SEND_FAST_ZERO != 0
            && c.flags & TF_CAN_MULTI_CONN != 0
    );
    let data: Vec<u8> = (0..4).flat_map(page).collect();
    assert_eq!(c.write(8192, &data).unwrap(), 0);
    assert_eq!(c.read(8192, data.len() as u32).unwrap().unwrap(), data);
    // A 512-byte write inside a page (read-modify-write).
    assert_eq!(c.write(8192 + 1024, &[0xab; 512]).unwrap(), 0);
    let back = c.read(8192, 4096).unwrap().unwrap();
    assert_eq!(&back[1024..1536], &[0xab; 512][..]);
    assert_eq!(&back[..1024], &data[..1024]);
    assert_eq!(&back[1536..], &data[1536..4096]);
    // Flush, trim, write-zeroes (plain, NO_HOLE, FAST_ZERO; partial pages).
    assert_eq!(c.request(CMD_FLUSH, 0, 0, 0, &[], 0).unwrap().0, 0);
    assert_eq!(c.request(CMD_TRIM, 0, 8192, 4096, &[], 0).unwrap().0, 0);
    assert_eq!(c.read(8192, 4096).unwrap().unwrap(), vec![0u8; 4096]);
    assert_eq!(
        c.request(
            CMD_WRITE_ZEROES,
            CMD_FLAG_FAST_ZERO,
            12288 + 512,
            4096,
            &[],
            0
        )
        .unwrap()
        .0,
        0
    );
    let back = c.read(12288, 8192).unwrap().unwrap();
    assert_eq!(&back[..512], &data[4096..4608]);
    assert_eq!(&back[512..4608], &[0u8; 4096][..]);
    assert_eq!(&back[4608..], &data[8192 + 512..12288]);
    assert_eq!(
        c.request(CMD_WRITE_ZEROES, CMD_FLAG_NO_HOLE, 16384, 4096, &[], 0)
            .unwrap()
            .0,
        0
    );
    assert_eq!(c.read(16384, 4096).unwrap().unwrap(), vec![0u8; 4096]);
    // The default (empty) export name selects the same device.
    let mut c2 = connect(&srv.sock, "");
    assert_eq!(
        c2.read(12288, 512).unwrap().unwrap(),
        data[4096..4608].to_vec()
    );
    c.disconnect().unwrap();
    c2.disconnect().unwrap();
}

#[test]
fn pipelined_requests_from_several_clients() {
    let srv = start(device(64 * MIB, 0));
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let sock = srv.sock.clone();
            std::thread::spawn(move || {
                let mut c = connect(&sock, "zmem");
                // 64 writes sent before any reply is read (more than the in-flight window).
                let base = t * 16 * MIB;
                let mut out = Vec::new();
                for i in 0..64u64 {
                    let r = Request {
                        flags: 0,
                        command: CMD_WRITE,
                        cookie: 1000 + i,
                        offset: base + i * 4096,
                        length: 4096,
                    };
                    out.extend_from_slice(&encode_request(&r));
                    out.extend_from_slice(&page(t * 100 + i));
                }
                let s = c.stream();
                let mut w = s.try_clone().unwrap();
                let writer = std::thread::spawn(move || w.write_all(&out).unwrap());
                let mut cookies = Vec::new();
                for _ in 0..64 {
                    let mut h = [0u8; REPLY_LEN];
                    s.read_exact(&mut h).unwrap();
                    let (err, cookie) = parse_simple_reply(&h).unwrap();
                    assert_eq!(err, 0);
                    cookies.push(cookie);
                }
                writer.join().unwrap();
                cookies.sort();
                assert_eq!(cookies, (1000..1064).collect::<Vec<_>>());
                for i in 0..64u64 {
                    assert_eq!(
                        c.read(base + i * 4096, 4096).unwrap().unwrap(),
                        page(t * 100 + i),
                        "client {t} page {i}"
                    );
                }
                c.disconnect().unwrap();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn bad_requests_get_errors_and_leave_data_alone() {
    let srv = start(device(4 * MIB, 0));
    let mut c = connect(&srv.sock, "zmem");
    assert_eq!(c.write(0, &page(7)).unwrap(), 0);
    let size = c.size;
    // Unknown command, flags, unaligned, zero length, out of range, DF without structured replies.
    assert_eq!(c.request(42, 0, 0, 4096, &[], 0).unwrap().0, NBD_EINVAL);
    assert_eq!(
        c.request(CMD_READ, 1 << 12, 0, 4096, &[], 0).unwrap().0,
        NBD_EINVAL
    );
    assert_eq!(
        c.request(CMD_READ, CMD_FLAG_DF, 0, 4096, &[], 0).unwrap().0,
        NBD_EINVAL
    );
    assert_eq!(
        c.request(CMD_READ, 0, 100, 4096, &[], 0).unwrap().0,
        NBD_EINVAL
    );
    assert_eq!(c.request(CMD_READ, 0, 0, 0, &[], 0).unwrap().0, NBD_EINVAL);
    assert_eq!(
        c.request(CMD_READ, 0, size, 4096, &[], 0).unwrap().0,
        NBD_EINVAL
    );
    assert_eq!(
        c.request(CMD_READ, 0, u64::MAX - 511, 512, &[], 0)
            .unwrap()
            .0,
        NBD_EINVAL
    );
    assert_eq!(
        c.request(CMD_TRIM, 0, size - 4096, 8192, &[], 0).unwrap().0,
        NBD_EINVAL
    );
    assert_eq!(
        c.request(CMD_WRITE_ZEROES, 0, size, 512, &[], 0).unwrap().0,
        NBD_ENOSPC
    );
    // Writes beyond the end, unaligned or oversized: the payload is drained, the stream stays in step.
    assert_eq!(
        c.request(CMD_WRITE, 0, size - 512, 4096, &page(1), 0)
            .unwrap()
            .0,
        NBD_ENOSPC
    );
    assert_eq!(
        c.request(CMD_WRITE, 0, 3, 4096, &page(2), 0).unwrap().0,
        NBD_EINVAL
    );
    let big = vec![0x55u8; (32 << 20) + 4096];
    assert_eq!(
        c.request(CMD_WRITE, 0, 0, big.len() as u32, &big, 0)
            .unwrap()
            .0,
        NBD_EINVAL
    );
    assert_eq!(
        c.request(CMD_READ, 0, 0, (32 << 20) + 512, &[], 0)
            .unwrap()
            .0,
        NBD_EINVAL
    );
    assert_eq!(c.read(0, 4096).unwrap().unwrap(), page(7));
    c.disconnect().unwrap();

    // A bad magic ends the connection (no way to resynchronise); others carry on.
    let mut c = connect(&srv.sock, "zmem");
    c.stream().write_all(&[0u8; REQUEST_LEN]).unwrap();
    let mut b = [0u8; 1];
    assert_eq!(
        c.stream().read(&mut b).unwrap(),
        0,
        "server closes after a bad magic"
    );

    // Disconnect in the middle of a write payload and in the middle of a header.
    let mut c = connect(&srv.sock, "zmem");
    let r = Request {
        flags: 0,
        command: CMD_WRITE,
        cookie: 9,
        offset: 0,
        length: 8192,
    };
    c.stream().write_all(&encode_request(&r)).unwrap();
    c.stream().write_all(&[0xee; 1000]).unwrap();
    drop(c);
    let mut c = connect(&srv.sock, "zmem");
    c.stream().write_all(&encode_request(&r)[..10]).unwrap();
    drop(c);
    let mut c = connect(&srv.sock, "zmem");
    assert_eq!(
        c.read(0, 4096).unwrap().unwrap(),
        page(7),
        "a half-sent write changed nothing"
    );
}

fn raw_handshake(sock: &std::path::Path, client_flags: u32) -> UnixStream {
    let mut s = UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut g = [0u8; 18];
    s.read_exact(&mut g).unwrap();
    assert_eq!(&g[..8], b"NBDMAGIC");
    s.write_all(&client_flags.to_be_bytes()).unwrap();
    s
}

fn send_opt(s: &mut UnixStream, opt: u32, data: &[u8]) {
    let mut b = IHAVEOPT.to_be_bytes().to_vec();
    b.extend_from_slice(&opt.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    s.write_all(&b).unwrap();
}

fn read_rep(s: &mut UnixStream) -> (u32, u32, Vec<u8>) {
    let mut h = [0u8; 20];
    s.read_exact(&mut h).unwrap();
    assert_eq!(
        u64::from_be_bytes(h[..8].try_into().unwrap()),
        OPT_REPLY_MAGIC
    );
    let len = u32::from_be_bytes(h[16..20].try_into().unwrap());
    let mut p = vec![0u8; len as usize];
    s.read_exact(&mut p).unwrap();
    (
        u32::from_be_bytes(h[8..12].try_into().unwrap()),
        u32::from_be_bytes(h[12..16].try_into().unwrap()),
        p,
    )
}

fn info_data(name: &[u8], reqs: &[u16]) -> Vec<u8> {
    let mut d = (name.len() as u32).to_be_bytes().to_vec();
    d.extend_from_slice(name);
    d.extend_from_slice(&(reqs.len() as u16).to_be_bytes());
    for r in reqs {
        d.extend_from_slice(&r.to_be_bytes());
    }
    d
}

#[test]
fn handshake_options() {
    let srv = start(device(MIB, 0));
    let mut s = raw_handshake(&srv.sock, FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES);
    // LIST: one server entry, then ACK; with data: INVALID.
    send_opt(&mut s, OPT_LIST, &[]);
    let (o, t, p) = read_rep(&mut s);
    assert_eq!((o, t), (OPT_LIST, REP_SERVER));
    assert_eq!(&p[..4], &4u32.to_be_bytes());
    assert_eq!(&p[4..8], b"zmem");
    assert_eq!(read_rep(&mut s).1, REP_ACK);
    send_opt(&mut s, OPT_LIST, b"x");
    assert_eq!(read_rep(&mut s).1, REP_ERR_INVALID);
    // Unknown options and structured replies: UNSUP; an oversized option: TOO_BIG.
    send_opt(&mut s, 12345, b"whatever");
    assert_eq!(read_rep(&mut s).1, REP_ERR_UNSUP);
    send_opt(&mut s, OPT_STRUCTURED_REPLY, &[]);
    assert_eq!(read_rep(&mut s).1, REP_ERR_UNSUP);
    send_opt(&mut s, 77, &vec![1u8; 200_000]);
    assert_eq!(read_rep(&mut s).1, REP_ERR_TOO_BIG);
    // INFO: malformed, unknown export, then good (EXPORT + BLOCK_SIZE + NAME, ACK).
    send_opt(&mut s, OPT_INFO, &[0, 0, 0, 9, b'a']);
    assert_eq!(read_rep(&mut s).1, REP_ERR_INVALID);
    send_opt(&mut s, OPT_INFO, &info_data(b"nope", &[]));
    assert_eq!(read_rep(&mut s).1, REP_ERR_UNKNOWN);
    send_opt(
        &mut s,
        OPT_INFO,
        &info_data(b"zmem", &[INFO_NAME, INFO_BLOCK_SIZE]),
    );
    let mut types = Vec::new();
    loop {
        let (_, t, p) = read_rep(&mut s);
        if t == REP_ACK {
            break;
        }
        assert_eq!(t, REP_INFO);
        types.push(u16::from_be_bytes([p[0], p[1]]));
        if types.last() == Some(&INFO_EXPORT) {
            assert_eq!(u64::from_be_bytes(p[2..10].try_into().unwrap()), MIB);
        }
    }
    assert_eq!(types, vec![INFO_EXPORT, INFO_BLOCK_SIZE, INFO_NAME]);
    // ABORT: ACK and close.
    send_opt(&mut s, OPT_ABORT, &[]);
    assert_eq!(read_rep(&mut s).1, REP_ACK);
    let mut b = [0u8; 1];
    assert_eq!(s.read(&mut b).unwrap(), 0);

    // Unknown client flags: the server closes.
    let mut s = raw_handshake(&srv.sock, 1 << 7);
    assert_eq!(s.read(&mut b).unwrap_or(0), 0);
    // Old-style EXPORT_NAME (with the 124 zero bytes, no NO_ZEROES flag).
    let mut s = raw_handshake(&srv.sock, FLAG_C_FIXED_NEWSTYLE);
    send_opt(&mut s, OPT_EXPORT_NAME, b"zmem");
    let mut r = [0u8; 10 + 124];
    s.read_exact(&mut r).unwrap();
    assert_eq!(u64::from_be_bytes(r[..8].try_into().unwrap()), MIB);
    assert!(r[10..].iter().all(|&x| x == 0));
    // EXPORT_NAME of an unknown export: closed.
    let mut s = raw_handshake(&srv.sock, FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES);
    send_opt(&mut s, OPT_EXPORT_NAME, b"other");
    assert_eq!(s.read(&mut b).unwrap_or(0), 0);
}

#[test]
fn over_mem_limit_writes_fail_enospc_and_stored_data_stays() {
    // Incompressible pages into a 1 MiB pool: the limit is hit long before the 32 MiB device is full.
    let srv = start(device(32 * MIB, MIB));
    let mut c = connect(&srv.sock, "zmem");
    let mut rnd = 0x1234_5678_9abc_def1u64;
    let mut random_page = || {
        (0..4096)
            .map(|_| {
                rnd ^= rnd << 13;
                rnd ^= rnd >> 7;
                rnd ^= rnd << 17;
                rnd as u8
            })
            .collect::<Vec<u8>>()
    };
    let mut stored = Vec::new();
    let mut enospc = false;
    for i in 0..(32 * MIB / 4096) {
        let p = random_page();
        match c.write(i * 4096, &p).unwrap() {
            0 => stored.push((i, p)),
            NBD_ENOSPC => {
                enospc = true;
                break;
            }
            e => panic!("write {i}: unexpected error {e}"),
        }
    }
    assert!(enospc, "a write beyond mem_limit must fail with ENOSPC");
    assert!(!stored.is_empty());
    // Zero pages still fit (same-filled, no pool memory); everything stored reads back.
    let (i_fail, _) = (stored.len() as u64, ());
    assert_eq!(c.write(i_fail * 4096, &[0u8; 4096]).unwrap(), 0);
    for (i, p) in &stored {
        assert_eq!(&c.read(i * 4096, 4096).unwrap().unwrap(), p, "page {i}");
    }
    assert_eq!(
        c.write((i_fail + 1) * 4096, &random_page()).unwrap(),
        NBD_ENOSPC
    );
}

#[test]
fn shutdown_finishes_in_flight_requests_and_closes() {
    let mut srv = start(device(16 * MIB, 0));
    let mut c = connect(&srv.sock, "zmem");
    let n = 32u64;
    let mut out = Vec::new();
    for i in 0..n {
        let r = Request {
            flags: 0,
            command: CMD_WRITE,
            cookie: i,
            offset: i * 65536,
            length: 65536,
        };
        out.extend_from_slice(&encode_request(&r));
        out.extend_from_slice(&vec![i as u8 + 1; 65536]);
    }
    c.stream().write_all(&out).unwrap();
    // Read the first reply, so the requests are being served, then stop the server.
    let mut h = [0u8; REPLY_LEN];
    c.stream().read_exact(&mut h).unwrap();
    srv.shutdown();
    // Every reply the server sent is whole, and the connection then ends cleanly.
    let mut rest = Vec::new();
    c.stream().read_to_end(&mut rest).unwrap();
    assert_eq!(rest.len() % REPLY_LEN, 0);
    let mut replies = vec![parse_simple_reply(&h).unwrap()];
    for ch in rest.chunks(REPLY_LEN) {
        replies.push(parse_simple_reply(ch.try_into().unwrap()).unwrap());
    }
    assert!(replies.iter().all(|&(e, _)| e == 0));
    // Every acknowledged write is stored.
    for &(_, cookie) in &replies {
        let mut b = vec![0u8; 65536];
        srv.dev.read_at(cookie * 65536, &mut b).unwrap();
        assert!(b.iter().all(|&x| x == cookie as u8 + 1), "write {cookie}");
    }
    assert!(!srv.sock.exists(), "socket file removed");
}

#[test]
fn control_socket() {
    let dir = tmpdir("ctl");
    let path = dir.join("dev.ctl");
    let dev = device(8 * MIB, 0);
    dev.write_at(0, &page(3)).unwrap();
    let d: Arc<dyn BlockDevice> = dev.clone();
    let ctl = CtlServer::start(
        &path,
        Control {
            dev: d,
            names: vec!["disksize".into(), "mm_stat".into(), "mem_limit".into()],
        },
        Default::default(),
    )
    .unwrap();
    let ask = |req: &[u8]| {
        let mut s = UnixStream::connect(&path).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        s.write_all(req).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let mut r = String::new();
        s.read_to_string(&mut r).unwrap();
        r
    };
    assert_eq!(ask(b"read disksize\n"), format!("ok\n{}\n", 8 * MIB));
    assert_eq!(
        ask(b"read mm_stat\n"),
        format!("ok\n{}", dev.attr_read("mm_stat").unwrap())
    );
    assert_eq!(ask(b"list\n"), "ok\ndisksize\nmm_stat\nmem_limit\n");
    assert_eq!(ask(b"write mem_limit 4M\n"), "ok\n");
    assert_eq!(dev.mm_stat().mem_limit, 4 * MIB);
    assert!(ask(b"write mem_limit banana\n").starts_with("err EINVAL "));
    assert!(ask(b"write disksize 1G\n").starts_with("err EBUSY "));
    assert!(ask(b"read nonsense\n").starts_with("err ENOENT "));
    assert!(ask(b"frobnicate\n").starts_with("err EINVAL "));
    assert!(ask(&[0xff, 0xfe, b'\n']).starts_with("err EINVAL "));
    assert!(ask(&vec![b'x'; 70_000]).starts_with("err EINVAL "));
    // Through the kernel crate's client (what zmem ctl, exporter and policy use).
    let c = zmem_device::CtlClient::new(&path);
    use zmem_device::AttrTarget;
    assert_eq!(c.read_attr("disksize").unwrap(), (8 * MIB).to_string());
    assert_eq!(
        c.write_attr("mem_limit", "x").unwrap_err().errno,
        zmem_kernel::Errno::EINVAL
    );
    drop(ctl);
    assert!(!path.exists());
}
