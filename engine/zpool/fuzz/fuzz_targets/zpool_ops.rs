//! Random operation sequences (alloc, write, read, free, compact, stale and
//! forged handles) against each allocator and a HashMap model. The hint
//! `write` returns is where `read` finds the object until something may have
//! moved it (a compaction; in z3fold also a free, which compacts the page it
//! was in), and prefetching a hint never faults, also once it is stale (its
//! object freed or moved, its pages given back).
//!
//! Run: `cd engine/zpool/fuzz && cargo +nightly fuzz run zpool_ops -- -max_total_time=60`
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::collections::HashMap;
use std::num::NonZeroU64;
use zmem_zpool::{create, Handle, ObjHint, ZpoolError};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, mut ops)) = data.split_first() else {
        return;
    };
    let name = ["zsmalloc", "zbud", "z3fold"][sel as usize % 3];
    let chain = 4 + (sel as usize / 3) % 13;
    let pool = create(name, chain).unwrap();
    let mut live: HashMap<Handle, Vec<u8>> = HashMap::new();
    let mut order: Vec<Handle> = Vec::new();
    let mut freed: Vec<Handle> = Vec::new();
    // Each handle's hint, and how many moves were possible when it was written.
    let mut hints: HashMap<Handle, (ObjHint, usize)> = HashMap::new();
    let mut moves = 0;
    while let [op, a, b, rest @ ..] = ops {
        ops = rest;
        let arg = u16::from_le_bytes([*a, *b]) as usize;
        match op % 7 {
            0 | 1 => {
                let size = arg % 4200;
                match pool.malloc(size) {
                    Ok(h) => {
                        let data: Vec<u8> = (0..size).map(|i| (i as u8) ^ *op).collect();
                        let hint = pool.write(h, &data).unwrap();
                        hints.insert(h, (hint, moves));
                        assert!(live.insert(h, data).is_none());
                        order.push(h);
                    }
                    Err(ZpoolError::ZeroSize) => assert_eq!(size, 0),
                    Err(ZpoolError::TooLarge { .. }) => assert!(size > pool.max_alloc()),
                    Err(e) => panic!("{e}"),
                }
            }
            2 if !order.is_empty() => {
                let h = order.swap_remove(arg % order.len());
                live.remove(&h);
                pool.free(h).unwrap();
                freed.push(h);
                if name == "z3fold" {
                    moves += 1;
                }
            }
            3 if !order.is_empty() => {
                let h = order[arg % order.len()];
                let (hint, at) = hints[&h];
                hint.prefetch(live[&h].len());
                let mut got = Vec::new();
                let mut addr = 0;
                pool.read(h, &mut |b| {
                    addr = b.as_ptr() as usize as u64;
                    got.extend_from_slice(b)
                })
                .unwrap();
                assert_eq!(&got, &live[&h]);
                if at == moves {
                    assert_eq!(hint.raw(), addr, "nothing moved it since the write");
                }
            }
            4 => {
                pool.compact();
                moves += 1;
            }
            5 if !freed.is_empty() => {
                let h = freed[arg % freed.len()];
                hints[&h].0.prefetch(4096);
                assert!(matches!(pool.free(h), Err(ZpoolError::BadHandle(_))));
                assert!(matches!(
                    pool.read(h, &mut |_| ()),
                    Err(ZpoolError::BadHandle(_))
                ));
            }
            6 => {
                let v = u64::from(*a) << 56 | (arg as u64) << 18 | 1;
                let h = Handle(NonZeroU64::new(v).unwrap());
                if !live.contains_key(&h) {
                    assert!(pool.free(h).is_err());
                }
            }
            _ => {}
        }
        let st = pool.stats();
        assert_eq!(st.objects, live.len() as u64);
        assert_eq!(
            st.bytes_stored,
            live.values().map(|v| v.len() as u64).sum::<u64>()
        );
        assert!(st.pages * 4096 >= st.bytes_stored + st.internal_frag);
    }
    for (h, data) in &live {
        let mut got = Vec::new();
        pool.read(*h, &mut |b| got.extend_from_slice(b)).unwrap();
        assert_eq!(&got, data);
    }
});
