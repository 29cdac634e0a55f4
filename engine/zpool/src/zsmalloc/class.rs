//! Size classes: geometry, pages_per_zspage selection, class merging and
//! huge_class_size (mm/zsmalloc.c: the 6.3+ rules, and the older rule that
//! picks pages per zspage by whole-percent usage, [`ChainRule`]).

use crate::PAGE_SIZE;

/// Bytes of the per-object handle header (`ZS_HANDLE_SIZE`).
pub const ZS_HANDLE_SIZE: usize = 8;
/// Smallest class size (`ZS_MIN_ALLOC_SIZE`).
pub const ZS_MIN_ALLOC_SIZE: usize = 32;
/// Largest allocation (`ZS_MAX_ALLOC_SIZE`).
pub const ZS_MAX_ALLOC_SIZE: usize = PAGE_SIZE;
/// Spacing of class sizes (`ZS_SIZE_CLASS_DELTA` = PAGE_SIZE >> CLASS_BITS).
pub const ZS_SIZE_CLASS_DELTA: usize = PAGE_SIZE >> 8;
/// Number of raw class indices (`ZS_SIZE_CLASSES`).
pub const ZS_SIZE_CLASSES: usize =
    (ZS_MAX_ALLOC_SIZE - ZS_MIN_ALLOC_SIZE).div_ceil(ZS_SIZE_CLASS_DELTA) + 1;
/// Default `CONFIG_ZSMALLOC_CHAIN_SIZE`.
pub const DEFAULT_CHAIN_SIZE: usize = 8;
/// Accepted chain sizes (the Kconfig range).
pub const CHAIN_SIZE_RANGE: std::ops::RangeInclusive<usize> = 4..=16;

const _: () = assert!(ZS_SIZE_CLASSES == 255);

/// Raw class index of an (effective) size: `get_size_class_index`.
pub fn size_class_index(size: usize) -> usize {
    let idx = if size > ZS_MIN_ALLOC_SIZE {
        (size - ZS_MIN_ALLOC_SIZE).div_ceil(ZS_SIZE_CLASS_DELTA)
    } else {
        0
    };
    idx.min(ZS_SIZE_CLASSES - 1)
}

/// Nominal size of raw class index `i`.
pub fn nominal_size(i: usize) -> usize {
    (ZS_MIN_ALLOC_SIZE + i * ZS_SIZE_CLASS_DELTA).min(ZS_MAX_ALLOC_SIZE)
}

/// `calculate_zspage_chain_size`: the number of pages (1..=chain) whose
/// tail waste `(k·4096) mod size` is least; ties keep the smallest k; a
/// power-of-two size takes one page.
pub fn pages_per_zspage(class_size: usize, chain_size: usize) -> usize {
    if class_size.is_power_of_two() {
        return 1;
    }
    let mut best = 1;
    let mut min_waste = usize::MAX;
    for k in 1..=chain_size {
        let waste = (k * PAGE_SIZE) % class_size;
        if waste < min_waste {
            min_waste = waste;
            best = k;
        }
    }
    best
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
    /// Pages per zspage of a class of `class_size` bytes, chains up to `chain_size`.
    pub fn pages_per_zspage(self, class_size: usize, chain_size: usize) -> usize {
        match self {
            ChainRule::LeastWaste => pages_per_zspage(class_size, chain_size),
            ChainRule::MostUsedPercent => pages_per_zspage_used_pct(class_size, chain_size),
        }
    }
}

/// `get_pages_per_zspage` before 6.3: the number of pages (1..=chain) whose
/// used share `(k·4096 − waste)·100 / (k·4096)`, in whole percent, is
/// highest; on a tie the smallest k stays.
pub fn pages_per_zspage_used_pct(class_size: usize, chain_size: usize) -> usize {
    let mut best = 1;
    let mut max_used_pct = 0;
    for k in 1..=chain_size {
        let zspage = k * PAGE_SIZE;
        let used_pct = (zspage - zspage % class_size) * 100 / zspage;
        if used_pct > max_used_pct {
            max_used_pct = used_pct;
            best = k;
        }
    }
    best
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
    /// Distinct classes, in ascending size.
    pub classes: Vec<ClassGeom>,
    /// Raw index → position in `classes`.
    pub map: [u8; ZS_SIZE_CLASSES],
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
        let mut desc: Vec<ClassGeom> = Vec::new();
        let mut raw_to_desc = [0usize; ZS_SIZE_CLASSES];
        let mut huge_class_size = 0;
        for i in (0..ZS_SIZE_CLASSES).rev() {
            let size = nominal_size(i);
            let ppz = rule.pages_per_zspage(size, chain_size);
            let objs = ppz * PAGE_SIZE / size;
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
            });
            raw_to_desc[i] = desc.len() - 1;
        }
        let n = desc.len();
        let mut map = [0u8; ZS_SIZE_CLASSES];
        for (m, d) in map.iter_mut().zip(raw_to_desc) {
            *m = (n - 1 - d) as u8;
        }
        desc.reverse();
        ClassTable {
            chain_size,
            rule,
            classes: desc,
            map,
            huge_class_size,
        }
    }

    /// The distinct class storing an object of `size` bytes (+ header).
    pub fn class_for_alloc(&self, size: usize) -> usize {
        self.map[size_class_index(size + ZS_HANDLE_SIZE)] as usize
    }

    /// `zs_lookup_class_index`: raw index of the class a raw size lands in.
    pub fn lookup_class_index(&self, size: usize) -> usize {
        self.classes[self.map[size_class_index(size)] as usize].index
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
