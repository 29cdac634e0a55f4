//! Model-based property tests: random sequences of alloc, write, read, free,
//! compact and bad handles against a HashMap reference model, for each
//! allocator, with the accounting invariants checked after every step.

use proptest::prelude::*;
use std::collections::HashMap;
use std::num::NonZeroU64;
use zmem_zpool::{create, Handle, PoolStats, Zpool, ZpoolError, ZsPool, PAGE_SIZE};

#[derive(Debug, Clone)]
enum Op {
    Alloc(usize),
    Write(usize, u8),
    Read(usize),
    Free(usize),
    Compact,
    /// Use a freed handle again.
    Stale(usize),
    /// A made-up handle value.
    Forged(u64),
    /// Write of the wrong length.
    BadWrite(usize),
}

fn size_strategy() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 1usize..=200,
        4 => 200usize..=2000,
        2 => 2000usize..=PAGE_SIZE,
        1 => prop_oneof![Just(0usize), Just(PAGE_SIZE + 1), Just(1usize << 20)],
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => size_strategy().prop_map(Op::Alloc),
        4 => (any::<usize>(), any::<u8>()).prop_map(|(i, s)| Op::Write(i, s)),
        3 => any::<usize>().prop_map(Op::Read),
        5 => any::<usize>().prop_map(Op::Free),
        1 => Just(Op::Compact),
        1 => any::<usize>().prop_map(Op::Stale),
        1 => any::<u64>().prop_map(Op::Forged),
        1 => any::<usize>().prop_map(Op::BadWrite),
    ]
}

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| seed.wrapping_mul(31).wrapping_add((i * 7 + i / 251) as u8))
        .collect()
}

struct Model {
    live: HashMap<Handle, Vec<u8>>,
    order: Vec<Handle>,
    freed: Vec<Handle>,
}

fn read_all(pool: &dyn Zpool, h: Handle) -> Result<Vec<u8>, ZpoolError> {
    let mut out = Vec::new();
    pool.read(h, &mut |b| out.extend_from_slice(b))?;
    Ok(out)
}

/// Runs `ops` against `pool`; `extra` checks allocator-specific invariants.
fn run(
    pool: &dyn Zpool,
    ops: &[Op],
    extra: &dyn Fn(&dyn Zpool, &Model, &PoolStats),
) -> Result<(), TestCaseError> {
    let mut m = Model {
        live: HashMap::new(),
        order: Vec::new(),
        freed: Vec::new(),
    };
    let mut last_compacted = 0;
    for op in ops {
        match *op {
            Op::Alloc(size) => match pool.malloc(size) {
                Ok(h) => {
                    prop_assert!(size >= 1 && size <= pool.max_alloc());
                    prop_assert_eq!(pool.obj_size(h).unwrap(), size);
                    // Unwritten bytes are unspecified; give them known content.
                    let data = pattern(size as u8, size);
                    pool.write(h, &data).unwrap();
                    prop_assert!(m.live.insert(h, data).is_none(), "handle handed out twice");
                    m.order.push(h);
                }
                Err(ZpoolError::ZeroSize) => prop_assert_eq!(size, 0),
                Err(ZpoolError::TooLarge { size: s, max }) => {
                    prop_assert_eq!(s, size);
                    prop_assert_eq!(max, pool.max_alloc());
                    prop_assert!(size > max);
                }
                Err(e) => prop_assert!(false, "unexpected error {e}"),
            },
            Op::Write(i, seed) if !m.order.is_empty() => {
                let h = m.order[i % m.order.len()];
                let data = pattern(seed, m.live[&h].len());
                pool.write(h, &data).unwrap();
                m.live.insert(h, data);
            }
            Op::Read(i) if !m.order.is_empty() => {
                let h = m.order[i % m.order.len()];
                prop_assert_eq!(&read_all(pool, h).unwrap(), &m.live[&h]);
            }
            Op::Free(i) if !m.order.is_empty() => {
                let h = m.order.swap_remove(i % m.order.len());
                m.live.remove(&h);
                pool.free(h).unwrap();
                m.freed.push(h);
            }
            Op::Compact => {
                let before = pool.total_pages();
                let freed = pool.compact();
                prop_assert_eq!(pool.total_pages(), before - freed);
            }
            Op::Stale(i) if !m.freed.is_empty() => {
                let h = m.freed[i % m.freed.len()];
                prop_assert!(matches!(pool.free(h), Err(ZpoolError::BadHandle(_))));
                prop_assert!(matches!(
                    pool.read(h, &mut |_| ()),
                    Err(ZpoolError::BadHandle(_))
                ));
                prop_assert!(matches!(pool.write(h, &[0]), Err(ZpoolError::BadHandle(_))));
                prop_assert!(matches!(pool.obj_size(h), Err(ZpoolError::BadHandle(_))));
            }
            Op::Forged(v) => {
                let h = Handle(NonZeroU64::new(v | 1).unwrap());
                if !m.live.contains_key(&h) {
                    prop_assert!(matches!(pool.free(h), Err(ZpoolError::BadHandle(_))));
                    prop_assert!(matches!(
                        pool.read(h, &mut |_| ()),
                        Err(ZpoolError::BadHandle(_))
                    ));
                }
            }
            Op::BadWrite(i) if !m.order.is_empty() => {
                let h = m.order[i % m.order.len()];
                let size = m.live[&h].len();
                let r = pool.write(h, &vec![0xEE; size + 1]);
                prop_assert_eq!(
                    r,
                    Err(ZpoolError::SizeMismatch {
                        size,
                        got: size + 1
                    })
                );
            }
            _ => {}
        }
        // Invariants after every step.
        let st = pool.stats();
        prop_assert_eq!(st.objects, m.live.len() as u64);
        prop_assert_eq!(
            st.bytes_stored,
            m.live.values().map(|v| v.len() as u64).sum::<u64>()
        );
        prop_assert_eq!(st.pages, pool.total_pages());
        prop_assert!(st.pages * PAGE_SIZE as u64 >= st.bytes_stored + st.internal_frag);
        prop_assert!(st.pages_compacted >= last_compacted);
        last_compacted = st.pages_compacted;
        if m.live.is_empty() {
            prop_assert_eq!(st.pages, 0, "empty pool keeps pages");
        }
        extra(pool, &m, &st);
    }
    // No object lost or corrupted.
    for (h, data) in &m.live {
        prop_assert_eq!(&read_all(pool, *h).unwrap(), data);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn zsmalloc_model(ops in prop::collection::vec(op_strategy(), 1..300), chain in prop_oneof![Just(4usize), Just(8), Just(16)]) {
        let pool = ZsPool::new(chain).unwrap();
        let table = pool.class_table().clone();
        let check = |p: &dyn Zpool, m: &Model, st: &PoolStats| {
            let _ = p;
            let cs = pool.class_stats();
            // pages == Σ zspages × pages_per_zspage
            assert_eq!(st.pages, cs.iter().map(|c| c.zspages * c.pages_per_zspage as u64).sum::<u64>());
            // The arena's runs owned by zspages are exactly those pages; its
            // resident free runs stay under the cap (2 MiB at these sizes).
            let ar = pool.arena_stats();
            assert_eq!(ar.in_use_pages, st.pages);
            assert!(ar.free_resident_pages <= 512);
            assert!(ar.in_use_pages + ar.free_resident_pages <= ar.mapped_pages);
            assert_eq!(st.objects, cs.iter().map(|c| c.obj_used).sum::<u64>());
            // internal fragmentation = Σ (class size − object size)
            let frag: u64 = m.live.values().map(|v| (table.classes[table.class_for_alloc(v.len())].size - v.len()) as u64).sum();
            assert_eq!(st.internal_frag, frag);
            for c in &cs {
                // Every zspage is filed under exactly one fullness group, none empty.
                assert_eq!(c.fullness.iter().sum::<u64>(), c.zspages);
                assert_eq!(c.fullness[0], 0);
                assert!(c.obj_used <= c.obj_allocated);
                assert_eq!(c.obj_allocated, c.zspages * c.objs_per_zspage as u64);
            }
        };
        run(&pool, &ops, &check)?;
        // After a compaction no class has a wasted whole zspage.
        pool.compact();
        prop_assert_eq!(pool.compactable_pages(), 0);
    }

    #[test]
    fn zsmalloc_by_name_model(ops in prop::collection::vec(op_strategy(), 1..200)) {
        let pool = create("zsmalloc", 8).unwrap();
        run(pool.as_ref(), &ops, &|_, _, _| {})?;
    }
}

fn chunk_frag(size: usize) -> u64 {
    (size.div_ceil(64) * 64 - size) as u64
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn zbud_model(ops in prop::collection::vec(op_strategy(), 1..300)) {
        let pool = zmem_zpool::ZbudPool::new();
        let check = |_: &dyn Zpool, m: &Model, st: &PoolStats| {
            // 1 ≤ objects per page ≤ 2.
            assert!(st.pages <= st.objects && st.objects <= 2 * st.pages);
            assert_eq!(st.internal_frag, m.live.values().map(|v| chunk_frag(v.len())).sum::<u64>());
            let (unbuddied, buddied) = pool.page_counts();
            assert_eq!((unbuddied + buddied) as u64, st.pages);
            assert_eq!(st.objects, unbuddied as u64 + 2 * buddied as u64);
        };
        run(&pool, &ops, &check)?;
    }

    #[test]
    fn z3fold_model(ops in prop::collection::vec(op_strategy(), 1..300)) {
        let pool = zmem_zpool::Z3foldPool::new();
        let last = std::cell::Cell::new(0u64);
        let check = |_: &dyn Zpool, m: &Model, st: &PoolStats| {
            // 1 ≤ objects per page ≤ 3; headless pages hold one object.
            assert!(st.pages <= st.objects && st.objects <= 3 * st.pages);
            let frag: u64 = m.live.values().map(|v| if v.len() > 3968 { (4096 - v.len()) as u64 } else { chunk_frag(v.len()) }).sum();
            assert_eq!(st.internal_frag, frag);
            let h = pool.page_histogram();
            assert_eq!(h.iter().sum::<u64>(), st.pages);
            assert_eq!(h[0] + h[1] + 2 * h[2] + 3 * h[3], st.objects);
            assert_eq!(h[0], m.live.values().filter(|v| v.len() > 3968).count() as u64);
            assert!(st.pages_compacted >= last.get());
            last.set(st.pages_compacted);
        };
        run(&pool, &ops, &check)?;
    }

    #[test]
    fn by_name_models(ops in prop::collection::vec(op_strategy(), 1..150)) {
        for name in ["zbud", "z3fold"] {
            let pool = create(name, 8).unwrap();
            run(pool.as_ref(), &ops, &|_, _, _| {})?;
        }
    }
}
