//! Creating the allocator a device stores its objects in (zsmalloc by
//! default, as the kernel's of the device's version; zbud and z3fold on request).
//!
//! zram stores a huge page whole (4096 bytes), which zsmalloc and z3fold
//! hold but zbud cannot (its largest object is 4032 bytes; the kernel's zram
//! never used zbud). An allocator whose largest object is below a page is
//! wrapped in [`HugeAside`]: what it cannot hold is kept beside it, one page
//! per object, counted in its pages and stats, so a valid write never fails.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use zmem_kernel::{ChainRule, KernelModel};
use zmem_zpool::{Handle, ObjHint, PoolOptions, PoolStats, Zpool, ZpoolError, PAGE_SIZE};

/// Creates an allocator by name. Embedders and tests may supply their own.
pub type PoolFactory = Arc<dyn Fn(&str) -> Result<Box<dyn Zpool>, String> + Send + Sync>;

/// The default allocator.
pub const DEFAULT_ALLOCATOR: &str = "zsmalloc";

/// Create one of `zmem-zpool`'s allocators by name; zsmalloc with `kernel`'s
/// zspage chain and pages-per-zspage rule.
pub fn create_for(name: &str, kernel: &KernelModel) -> Result<Box<dyn Zpool>, String> {
    let n = name.strip_suffix('\n').unwrap_or(name);
    if !zmem_zpool::NAMES.contains(&n) {
        return Err(format!(
            "unknown allocator '{n}'; valid allocators: {}",
            zmem_zpool::NAMES.join(", ")
        ));
    }
    let opts = options(kernel);
    let pool =
        zmem_zpool::create(n, opts).map_err(|e| format!("cannot create allocator '{n}': {e}"))?;
    Ok(if pool.max_alloc() < kernel.page_size() {
        Box::new(HugeAside::new(pool))
    } else {
        pool
    })
}

/// zsmalloc's options as `kernel`'s: its zspage chain and pages-per-zspage rule.
pub(crate) fn options(kernel: &KernelModel) -> PoolOptions {
    PoolOptions {
        chain_size: kernel.zspage_chain_size(),
        chain_rule: match kernel.zspage_chain_rule() {
            ChainRule::LeastWaste => zmem_zpool::ChainRule::LeastWaste,
            ChainRule::MostUsedPercent => zmem_zpool::ChainRule::MostUsedPercent,
        },
        page_size: kernel.page_size(),
    }
}

/// Handles of objects kept beside the pool carry this bit (the pools' own
/// handles are slot and generation numbers far below it).
const ASIDE: u64 = 1 << 63;

/// An allocator plus the objects too large for it, one page each.
pub(crate) struct HugeAside {
    inner: Box<dyn Zpool>,
    aside: Mutex<Aside>,
}

#[derive(Default)]
struct Aside {
    objs: HashMap<u64, Box<[u8]>>,
    next: u64,
    bytes: u64,
}

impl HugeAside {
    pub(crate) fn new(inner: Box<dyn Zpool>) -> HugeAside {
        HugeAside {
            inner,
            aside: Mutex::new(Aside::default()),
        }
    }

    fn aside(&self) -> std::sync::MutexGuard<'_, Aside> {
        self.aside.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn is_aside(h: Handle) -> bool {
    h.0.get() & ASIDE != 0
}

impl Zpool for HugeAside {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn malloc(&self, size: usize) -> Result<Handle, ZpoolError> {
        if size <= self.inner.max_alloc() {
            let h = self.inner.malloc(size)?;
            debug_assert!(!is_aside(h));
            return Ok(h);
        }
        if size > PAGE_SIZE {
            return Err(ZpoolError::TooLarge {
                size,
                max: PAGE_SIZE,
            });
        }
        let mut a = self.aside();
        let mut obj = Vec::new();
        obj.try_reserve_exact(size)
            .map_err(|_| ZpoolError::NoMemory)?;
        obj.resize(size, 0);
        a.next += 1;
        let key = a.next | ASIDE;
        a.objs.insert(key, obj.into_boxed_slice());
        a.bytes += size as u64;
        Ok(Handle(
            std::num::NonZeroU64::new(key).expect("ASIDE bit set"),
        ))
    }

    fn free(&self, h: Handle) -> Result<(), ZpoolError> {
        if !is_aside(h) {
            return self.inner.free(h);
        }
        let mut a = self.aside();
        let obj = a
            .objs
            .remove(&h.0.get())
            .ok_or(ZpoolError::BadHandle(h.0.get()))?;
        a.bytes -= obj.len() as u64;
        Ok(())
    }

    fn write(&self, h: Handle, src: &[u8]) -> Result<ObjHint, ZpoolError> {
        if !is_aside(h) {
            return self.inner.write(h, src);
        }
        let mut a = self.aside();
        let obj = a
            .objs
            .get_mut(&h.0.get())
            .ok_or(ZpoolError::BadHandle(h.0.get()))?;
        if obj.len() != src.len() {
            return Err(ZpoolError::SizeMismatch {
                size: obj.len(),
                got: src.len(),
            });
        }
        obj.copy_from_slice(src);
        Ok(ObjHint::NONE)
    }

    fn read(&self, h: Handle, f: &mut dyn FnMut(&[u8])) -> Result<(), ZpoolError> {
        if !is_aside(h) {
            return self.inner.read(h, f);
        }
        let a = self.aside();
        f(a.objs
            .get(&h.0.get())
            .ok_or(ZpoolError::BadHandle(h.0.get()))?);
        Ok(())
    }

    fn obj_size(&self, h: Handle) -> Result<usize, ZpoolError> {
        if !is_aside(h) {
            return self.inner.obj_size(h);
        }
        let a = self.aside();
        Ok(a.objs
            .get(&h.0.get())
            .ok_or(ZpoolError::BadHandle(h.0.get()))?
            .len())
    }

    fn total_pages(&self) -> u64 {
        self.inner.total_pages() + self.aside().objs.len() as u64
    }

    fn compact(&self) -> u64 {
        self.inner.compact()
    }

    fn compactable_pages(&self) -> u64 {
        self.inner.compactable_pages()
    }

    fn stats(&self) -> PoolStats {
        let mut s = self.inner.stats();
        let a = self.aside();
        let n = a.objs.len() as u64;
        s.objects += n;
        s.pages += n;
        s.bytes_stored += a.bytes;
        s.internal_frag += n * PAGE_SIZE as u64 - a.bytes;
        s
    }

    fn max_alloc(&self) -> usize {
        PAGE_SIZE
    }

    fn huge_class_size(&self) -> usize {
        self.inner.huge_class_size()
    }

    fn class_index(&self, size: usize) -> usize {
        self.inner.class_index(size.min(self.inner.max_alloc()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zbud_keeps_a_huge_page_beside_it() {
        let p = create_for("zbud", &KernelModel::default()).unwrap();
        assert_eq!(p.max_alloc(), PAGE_SIZE);
        let small = p.malloc(100).unwrap();
        let huge = p.malloc(PAGE_SIZE).unwrap();
        let page: Vec<u8> = (0..PAGE_SIZE).map(|i| (i * 7) as u8).collect();
        p.write(huge, &page).unwrap();
        p.write(small, &page[..100]).unwrap();
        let mut got = Vec::new();
        p.read(huge, &mut |b| got = b.to_vec()).unwrap();
        assert_eq!(got, page);
        assert_eq!(p.obj_size(huge).unwrap(), PAGE_SIZE);
        let s = p.stats();
        assert_eq!((s.objects, s.bytes_stored), (2, 100 + PAGE_SIZE as u64));
        assert_eq!(p.total_pages(), 2, "one zbud page and one page beside it");
        p.free(huge).unwrap();
        assert_eq!(p.free(huge), Err(ZpoolError::BadHandle(huge.0.get())));
        assert_eq!(p.total_pages(), 1);
        assert!(matches!(
            p.malloc(PAGE_SIZE + 1),
            Err(ZpoolError::TooLarge { .. })
        ));
        p.free(small).unwrap();
    }

    #[test]
    fn zsmalloc_and_z3fold_are_not_wrapped() {
        for n in ["zsmalloc", "z3fold"] {
            let p = create_for(n, &KernelModel::default()).unwrap();
            let h = p.malloc(PAGE_SIZE).unwrap();
            assert!(!is_aside(h), "{n}");
        }
    }
}
