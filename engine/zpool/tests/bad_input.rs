//! Bad input gives errors, never a panic, for every allocator.

use std::num::NonZeroU64;
use zmem_zpool::{create, Handle, Zpool, ZpoolError, NAMES};

fn pools() -> Vec<Box<dyn Zpool>> {
    NAMES.iter().filter_map(|n| create(n, 8).ok()).collect()
}

#[test]
fn sizes_out_of_range() {
    for p in pools() {
        assert_eq!(p.malloc(0), Err(ZpoolError::ZeroSize), "{}", p.name());
        let max = p.max_alloc();
        assert_eq!(
            p.malloc(max + 1),
            Err(ZpoolError::TooLarge { size: max + 1, max }),
            "{}",
            p.name()
        );
        assert_eq!(
            p.malloc(usize::MAX),
            Err(ZpoolError::TooLarge {
                size: usize::MAX,
                max
            })
        );
        assert!(p.malloc(max).is_ok());
        assert!(p.malloc(1).is_ok());
    }
}

#[test]
fn freed_and_foreign_handles() {
    for p in pools() {
        let other = create(p.name(), 8).unwrap();
        let h = p.malloc(100).unwrap();
        p.write(h, &[7; 100]).unwrap();
        // A handle of another pool is rejected, even when that pool has live
        // objects at the same place.
        let h2 = other.malloc(100).unwrap();
        assert!(matches!(
            p.read(h2, &mut |_| ()),
            Err(ZpoolError::BadHandle(_))
        ));
        assert!(matches!(p.free(h2), Err(ZpoolError::BadHandle(_))));
        // Freed handle: every operation refuses it, also after the cell is
        // reused by a new object.
        p.free(h).unwrap();
        let h3 = p.malloc(100).unwrap();
        p.write(h3, &[9; 100]).unwrap();
        assert_ne!(h, h3);
        assert!(matches!(p.free(h), Err(ZpoolError::BadHandle(_))));
        assert!(matches!(
            p.write(h, &[1; 100]),
            Err(ZpoolError::BadHandle(_))
        ));
        assert!(matches!(
            p.read(h, &mut |_| ()),
            Err(ZpoolError::BadHandle(_))
        ));
        assert!(matches!(p.obj_size(h), Err(ZpoolError::BadHandle(_))));
        p.read(h3, &mut |b| assert_eq!(b, &[9; 100][..])).unwrap();
        // Arbitrary values.
        for v in [1u64, u64::MAX, 0x8000_0000_0000_0000, 12345] {
            let f = Handle(NonZeroU64::new(v).unwrap());
            if f != h3 {
                assert!(
                    matches!(p.free(f), Err(ZpoolError::BadHandle(_))),
                    "{} {v:#x}",
                    p.name()
                );
            }
        }
        // Wrong-length writes.
        assert_eq!(
            p.write(h3, &[0; 99]),
            Err(ZpoolError::SizeMismatch { size: 100, got: 99 })
        );
        assert_eq!(
            p.write(h3, &[]),
            Err(ZpoolError::SizeMismatch { size: 100, got: 0 })
        );
    }
}

#[test]
fn unknown_allocator_and_options() {
    match create("zmalloc", 8) {
        Err(e @ ZpoolError::UnknownAllocator(_)) => {
            let msg = e.to_string();
            for n in NAMES {
                assert!(msg.contains(n), "{msg}");
            }
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("unknown allocator accepted"),
    }
    assert!(matches!(
        create("zsmalloc", 3),
        Err(ZpoolError::InvalidOption(_))
    ));
    assert!(matches!(
        create("zsmalloc", 17),
        Err(ZpoolError::InvalidOption(_))
    ));
}
