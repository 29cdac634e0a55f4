//! Multi-threaded stress: threads allocate, write, read and free their own
//! objects (of all classes) while another thread compacts; every read must
//! return what its owner wrote, and the pool must end empty.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use zmem_zpool::{create_shared, Handle};

fn fill(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn stress(name: &str) {
    let pool = create_shared(name, 8).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let compactor = {
        let (pool, stop) = (pool.clone(), stop.clone());
        thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                pool.compact();
                n += 1;
                thread::yield_now();
            }
            n
        })
    };
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let pool = pool.clone();
            thread::spawn(move || {
                let max = pool.max_alloc();
                let mut live: Vec<(Handle, Vec<u8>)> = Vec::new();
                let mut x = 0x2545F4914F6CDD1Du64 ^ (t << 32);
                for step in 0..20_000u64 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if live.len() < 200 && (x % 4 < 3 || live.is_empty()) {
                        let size = (x >> 8) as usize % max + 1;
                        let h = pool.malloc(size).unwrap();
                        let data = fill(x ^ step, size);
                        pool.write(h, &data).unwrap();
                        live.push((h, data));
                    } else {
                        let i = (x >> 16) as usize % live.len();
                        let (h, data) = live.swap_remove(i);
                        let mut ok = false;
                        pool.read(h, &mut |b| ok = b == &data[..]).unwrap();
                        assert!(ok, "thread {t}: object corrupted");
                        pool.free(h).unwrap();
                    }
                }
                for (h, data) in live {
                    let mut ok = false;
                    pool.read(h, &mut |b| ok = b == &data[..]).unwrap();
                    assert!(ok, "thread {t}: object corrupted at the end");
                    pool.free(h).unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    compactor.join().unwrap();
    let st = pool.stats();
    assert_eq!((st.objects, st.bytes_stored, st.internal_frag), (0, 0, 0));
    assert_eq!(
        pool.total_pages(),
        0,
        "{name}: empty pool still holds pages"
    );
}

#[test]
fn zsmalloc_threads() {
    stress("zsmalloc");
}

#[test]
fn zbud_threads() {
    stress("zbud");
}

#[test]
fn z3fold_threads() {
    stress("z3fold");
}
