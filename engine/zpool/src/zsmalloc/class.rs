//! Size classes: geometry, pages_per_zspage selection, class merging and
//! huge_class_size (mm/zsmalloc.c: the 6.3+ rules, and the older rule that
//! picks pages per zspage by whole-percent usage, [`ChainRule`]), for any
//! `PAGE_SHIFT` zmem models ([`Geometry`]: 4, 16 and 64 KiB pages). The free
//! functions are the 4 KiB page's.

use crate::PAGE_SIZE;

/// Bytes of the per-object handle header (`ZS_HANDLE_SIZE`).
pub const ZS_HANDLE_SIZE: usize = 8;
/// Smallest class size (`ZS_MIN_ALLOC_SIZE`), the same at every page size
/// zmem models ([`Geometry::min_alloc_size`]).
pub const ZS_MIN_ALLOC_SIZE: usize = 32;
/// Largest allocation at 4 KiB (`ZS_MAX_ALLOC_SIZE` = PAGE_SIZE).
pub const ZS_MAX_ALLOC_SIZE: usize = PAGE_SIZE;
/// Spacing of class sizes at 4 KiB (`ZS_SIZE_CLASS_DELTA` = PAGE_SIZE >> CLASS_BITS).
pub const ZS_SIZE_CLASS_DELTA: usize = Geometry::PAGE_4K.class_delta();
/// Number of raw class indices at 4 KiB (`ZS_SIZE_CLASSES`).
pub const ZS_SIZE_CLASSES: usize = Geometry::PAGE_4K.size_classes();
/// Default `CONFIG_ZSMALLOC_CHAIN_SIZE`.
pub const DEFAULT_CHAIN_SIZE: usize = 8;
/// Accepted chain sizes (the Kconfig range).
pub const CHAIN_SIZE_RANGE: std::ops::RangeInclusive<usize> = 4..=16;
/// `CLASS_BITS`: class sizes step by a 256th of a page.
const CLASS_BITS: u32 = 8;
/// `MAX_POSSIBLE_PHYSMEM_BITS` of the 64-bit kernels zmem models (52: x86-64
/// with 5-level paging, arm64 with 52-bit PAs, ppc64); any smaller value only
/// widens `OBJ_INDEX_BITS`.
const MAX_POSSIBLE_PHYSMEM_BITS: u32 = 52;

const _: () = assert!(ZS_SIZE_CLASSES == 255);
const _: () = {
    // ZS_MIN_ALLOC_SIZE is 32 at every modelled PAGE_SHIFT and chain size.
    let mut shift = 12;
    while shift <= 16 {
        let g = Geometry { page_shift: shift };
        assert!(g.min_alloc_size(*CHAIN_SIZE_RANGE.end()) == ZS_MIN_ALLOC_SIZE);
        shift += 2;
    }
};

/// zsmalloc's arithmetic at one `PAGE_SHIFT` (mm/zsmalloc.c's macros).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// `PAGE_SHIFT` (12, 14 or 16).
    pub page_shift: u32,
}

impl Geometry {
    /// 4 KiB pages.
    pub const PAGE_4K: Geometry = Geometry { page_shift: 12 };

    /// `PAGE_SIZE`.
    pub const fn page_size(self) -> usize {
        1 << self.page_shift
    }

    /// `OBJ_INDEX_BITS` = BITS_PER_LONG − _PFN_BITS, _PFN_BITS =
    /// MAX_POSSIBLE_PHYSMEM_BITS − PAGE_SHIFT (6.12 and 7.3; older kernels
    /// also subtract OBJ_TAG_BITS, which changes nothing below).
    pub const fn obj_index_bits(self) -> u32 {
        64 - (MAX_POSSIBLE_PHYSMEM_BITS - self.page_shift)
    }

    /// `ZS_MIN_ALLOC_SIZE` = MAX(32, ZS_MAX_PAGES_PER_ZSPAGE << PAGE_SHIFT >>
    /// OBJ_INDEX_BITS).
    pub const fn min_alloc_size(self, chain_size: usize) -> usize {
        let v = (chain_size << self.page_shift) >> self.obj_index_bits();
        if v > 32 {
            v
        } else {
            32
        }
    }

    /// `ZS_SIZE_CLASS_DELTA` = PAGE_SIZE >> CLASS_BITS.
    pub const fn class_delta(self) -> usize {
        self.page_size() >> CLASS_BITS
    }

    /// `ZS_SIZE_CLASSES` = DIV_ROUND_UP(ZS_MAX_ALLOC_SIZE − ZS_MIN_ALLOC_SIZE,
    /// ZS_SIZE_CLASS_DELTA) + 1: 255 at 4 KiB, 257 at 16 and 64 KiB.
    pub const fn size_classes(self) -> usize {
        (self.page_size() - ZS_MIN_ALLOC_SIZE).div_ceil(self.class_delta()) + 1
    }

    /// Raw class index of an (effective) size: `get_size_class_index`.
    pub fn size_class_index(self, size: usize) -> usize {
        let idx = if size > ZS_MIN_ALLOC_SIZE {
            (size - ZS_MIN_ALLOC_SIZE).div_ceil(self.class_delta())
        } else {
            0
        };
        idx.min(self.size_classes() - 1)
    }

    /// Nominal size of raw class index `i` (capped at ZS_MAX_ALLOC_SIZE).
    pub fn nominal_size(self, i: usize) -> usize {
        (ZS_MIN_ALLOC_SIZE + i * self.class_delta()).min(self.page_size())
    }

    /// `calculate_zspage_chain_size`: the number of pages (1..=chain) whose
    /// tail waste `(k·PAGE_SIZE) mod size` is least; ties keep the smallest
    /// k; a power-of-two size takes one page.
    pub fn pages_per_zspage(self, class_size: usize, chain_size: usize) -> usize {
        if class_size.is_power_of_two() {
            return 1;
        }
        let mut best = 1;
        let mut min_waste = usize::MAX;
        for k in 1..=chain_size {
            let waste = (k * self.page_size()) % class_size;
            if waste < min_waste {
                min_waste = waste;
                best = k;
            }
        }
        best
    }

    /// `get_pages_per_zspage` before 6.3: the number of pages (1..=chain)
    /// whose used share `(k·PAGE_SIZE − waste)·100 / (k·PAGE_SIZE)`, in
    /// whole percent, is highest; on a tie the smallest k stays.
    pub fn pages_per_zspage_used_pct(self, class_size: usize, chain_size: usize) -> usize {
        let mut best = 1;
        let mut max_used_pct = 0;
        for k in 1..=chain_size {
            let zspage = k * self.page_size();
            let used_pct = (zspage - zspage % class_size) * 100 / zspage;
            if used_pct > max_used_pct {
                max_used_pct = used_pct;
                best = k;
            }
        }
        best
    }
}

/// Raw class index of an (effective) size at 4 KiB: `get_size_class_index`.
pub fn size_class_index(size: usize) -> usize {
    Geometry::PAGE_4K.size_class_index(size)
}

/// Nominal size of raw class index `i` at 4 KiB.
pub fn nominal_size(i: usize) -> usize {
    Geometry::PAGE_4K.nominal_size(i)
}

/// [`Geometry::pages_per_zspage`] at 4 KiB.
pub fn pages_per_zspage(class_size: usize, chain_size: usize) -> usize {
    Geometry::PAGE_4K.pages_per_zspage(class_size, chain_size)
}

/// How a class's pages per zspage are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChainRule {
    /// 6.3+ `calculate_zspage_chain_size` ([`pages_per_zspage`]).
    #[default]
    LeastWaste,
    /// Before 6.3, `get_pages_per_zspage` ([`pages_per_zspage_used_pct`]).
    MostUsedPercent,
}

impl ChainRule {
    /// Pages per zspage of a class of `class_size` bytes, chains up to
    /// `chain_size`, at 4 KiB.
    pub fn pages_per_zspage(self, class_size: usize, chain_size: usize) -> usize {
        self.pages_per_zspage_at(Geometry::PAGE_4K, class_size, chain_size)
    }

    /// [`ChainRule::pages_per_zspage`] at the page size of `g`.
    pub fn pages_per_zspage_at(self, g: Geometry, class_size: usize, chain_size: usize) -> usize {
        match self {
            ChainRule::LeastWaste => g.pages_per_zspage(class_size, chain_size),
            ChainRule::MostUsedPercent => g.pages_per_zspage_used_pct(class_size, chain_size),
        }
    }
}

/// [`Geometry::pages_per_zspage_used_pct`] at 4 KiB.
pub fn pages_per_zspage_used_pct(class_size: usize, chain_size: usize) -> usize {
    Geometry::PAGE_4K.pages_per_zspage_used_pct(class_size, chain_size)
}

/// One distinct (unmerged) size class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassGeom {
    /// Raw index of the class (the largest raw index merged into it).
    pub index: usize,
    /// Object chunk size in bytes (includes the 8-byte header if not huge).
    pub size: usize,
    pub pages_per_zspage: usize,
    pub objs_per_zspage: usize,
    /// Smallest raw index mapped to this class.
    pub first_index: usize,
    /// The zspage's bytes: `pages_per_zspage × PAGE_SIZE`.
    pub zspage_bytes: usize,
}

impl ClassGeom {
    /// 1 page, 1 object: the handle is not stored in the object.
    pub fn is_huge(&self) -> bool {
        self.pages_per_zspage == 1 && self.objs_per_zspage == 1
    }
}

/// The pool's class table for one chain size.
#[derive(Debug, Clone)]
pub struct ClassTable {
    /// Chain size the table was built with.
    pub chain_size: usize,
    /// How pages per zspage were chosen.
    pub rule: ChainRule,
    /// The page size the classes are cut for.
    pub geometry: Geometry,
    /// Distinct classes, in ascending size.
    pub classes: Vec<ClassGeom>,
    /// Raw index → position in `classes` (`geometry.size_classes()` entries;
    /// at most 256 distinct classes at any modelled page size).
    pub map: Vec<u8>,
    /// `huge_class_size`.
    pub huge_class_size: usize,
}

impl ClassTable {
    /// Build the classes top-down and merge as 6.3+'s `zs_create_pool` does.
    /// `chain_size` must be in [`CHAIN_SIZE_RANGE`] (checked by the caller).
    pub fn new(chain_size: usize) -> Self {
        Self::with_rule(chain_size, ChainRule::LeastWaste)
    }

    /// [`ClassTable::new`] with pages per zspage chosen by `rule`.
    pub fn with_rule(chain_size: usize, rule: ChainRule) -> Self {
        Self::for_page(Geometry::PAGE_4K, chain_size, rule)
    }

    /// The classes `zs_create_pool` cuts at the page size of `g`.
    pub fn for_page(g: Geometry, chain_size: usize, rule: ChainRule) -> Self {
        let n_raw = g.size_classes();
        let mut desc: Vec<ClassGeom> = Vec::new();
        let mut raw_to_desc = vec![0usize; n_raw];
        let mut huge_class_size = 0;
        for i in (0..n_raw).rev() {
            let size = g.nominal_size(i);
            let ppz = rule.pages_per_zspage_at(g, size, chain_size);
            let objs = ppz * g.page_size() / size;
            if ppz != 1 && objs != 1 && huge_class_size == 0 {
                huge_class_size = size - (ZS_HANDLE_SIZE - 1);
            }
            if let Some(prev) = desc.last_mut() {
                if prev.pages_per_zspage == ppz && prev.objs_per_zspage == objs {
                    prev.first_index = i;
                    raw_to_desc[i] = desc.len() - 1;
                    continue;
                }
            }
            desc.push(ClassGeom {
                index: i,
                size,
                pages_per_zspage: ppz,
                objs_per_zspage: objs,
                first_index: i,
                zspage_bytes: ppz * g.page_size(),
            });
            raw_to_desc[i] = desc.len() - 1;
        }
        let n = desc.len();
        assert!(n <= 256, "{n} distinct classes");
        let map = raw_to_desc.iter().map(|d| (n - 1 - d) as u8).collect();
        desc.reverse();
        ClassTable {
            chain_size,
            rule,
            geometry: g,
            classes: desc,
            map,
            huge_class_size,
        }
    }

    /// The distinct class storing an object of `size` bytes (+ header).
    pub fn class_for_alloc(&self, size: usize) -> usize {
        self.map[self.geometry.size_class_index(size + ZS_HANDLE_SIZE)] as usize
    }

    /// `zs_lookup_class_index`: raw index of the class a raw size lands in.
    pub fn lookup_class_index(&self, size: usize) -> usize {
        self.classes[self.map[self.geometry.size_class_index(size)] as usize].index
    }

    /// `ZS_MAX_ALLOC_SIZE`: one page.
    pub fn max_alloc_size(&self) -> usize {
        self.geometry.page_size()
    }

    /// The table as `size:pages:objs[range]` (the spec's notation).
    pub fn describe(&self) -> String {
        self.classes
            .iter()
            .map(|c| {
                if c.first_index == c.index {
                    format!(
                        "{}:{}:{}[{}]",
                        c.size, c.pages_per_zspage, c.objs_per_zspage, c.index
                    )
                } else {
                    format!(
                        "{}:{}:{}[{}-{}]",
                        c.size, c.pages_per_zspage, c.objs_per_zspage, c.first_index, c.index
                    )
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
    }
}
