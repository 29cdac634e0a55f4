//! Per-size-class state (one lock each): zspages, fullness lists, the
//! class's handle table and its object counters.

use super::arena::Arena;
use super::class::ClassGeom;
use super::zspage::{fullness_group, Zspage, NIL, NO_OBJ, NR_FULLNESS_GROUPS, RATIO_10, RATIO_99};
use crate::handle::HandleTable;
use crate::ZpoolError;

/// Where a handle's object lives.
#[derive(Debug, Clone, Copy)]
pub(super) struct ObjLoc {
    pub zspage: u32,
    pub idx: u32,
    pub size: u32,
}

pub(super) struct ClassState {
    pub zspages: Vec<Option<Zspage>>,
    free_ids: Vec<u32>,
    /// Heads of the 12 fullness lists (intrusive, through `Zspage::prev/next`).
    heads: [u32; NR_FULLNESS_GROUPS],
    pub handles: HandleTable<ObjLoc>,
    /// `ZS_OBJS_ALLOCATED`: chunks in existing zspages.
    pub objs_allocated: u64,
    /// `ZS_OBJS_INUSE`.
    pub objs_inuse: u64,
    /// Existing zspages.
    pub nr_zspages: u64,
}

impl ClassState {
    pub fn new() -> Self {
        ClassState {
            zspages: Vec::new(),
            free_ids: Vec::new(),
            heads: [NIL; NR_FULLNESS_GROUPS],
            handles: HandleTable::new(),
            objs_allocated: 0,
            objs_inuse: 0,
            nr_zspages: 0,
        }
    }

    pub fn zspage(&self, id: u32) -> &Zspage {
        self.zspages[id as usize].as_ref().expect("live zspage id")
    }

    pub fn zspage_mut(&mut self, id: u32) -> &mut Zspage {
        self.zspages[id as usize].as_mut().expect("live zspage id")
    }

    /// `insert_zspage`: file at the head of its fullness group.
    pub fn insert(&mut self, class: &ClassGeom, id: u32) {
        let z = self.zspage(id);
        debug_assert!(!z.listed);
        let g = fullness_group(z.inuse as usize, class.objs_per_zspage);
        let old_head = self.heads[g as usize];
        if old_head != NIL {
            self.zspage_mut(old_head).prev = id;
        }
        let z = self.zspage_mut(id);
        z.fullness = g;
        z.listed = true;
        z.prev = NIL;
        z.next = old_head;
        self.heads[g as usize] = id;
    }

    /// `remove_zspage`: unlink from its fullness list.
    pub fn unlink(&mut self, id: u32) {
        let (prev, next, g) = {
            let z = self.zspage(id);
            debug_assert!(z.listed);
            (z.prev, z.next, z.fullness)
        };
        if prev != NIL {
            self.zspage_mut(prev).next = next;
        } else {
            self.heads[g as usize] = next;
        }
        if next != NIL {
            self.zspage_mut(next).prev = prev;
        }
        let z = self.zspage_mut(id);
        z.listed = false;
        z.prev = NIL;
        z.next = NIL;
    }

    /// `fix_fullness_group`: re-file only if the group changed; returns it.
    pub fn fix_fullness(&mut self, class: &ClassGeom, id: u32) -> u8 {
        let z = self.zspage(id);
        let g = fullness_group(z.inuse as usize, class.objs_per_zspage);
        if g != z.fullness {
            self.unlink(id);
            self.insert(class, id);
        }
        g
    }

    /// First zspage of group `g`.
    pub fn first_in(&self, g: u8) -> Option<u32> {
        let h = self.heads[g as usize];
        (h != NIL).then_some(h)
    }

    /// `find_get_zspage`: the first zspage of the fullest non-full group
    /// (99 % down to 0 %).
    pub fn find_get_zspage(&self) -> Option<u32> {
        (0..=RATIO_99).rev().find_map(|g| self.first_in(g))
    }

    /// `isolate_src_zspage`: first of the emptiest partial group, unlinked.
    pub fn isolate_src(&mut self) -> Option<u32> {
        let id = (RATIO_10..=RATIO_99).find_map(|g| self.first_in(g))?;
        self.unlink(id);
        Some(id)
    }

    /// `isolate_dst_zspage`: first of the fullest partial group, unlinked.
    pub fn isolate_dst(&mut self) -> Option<u32> {
        let id = (RATIO_10..=RATIO_99).rev().find_map(|g| self.first_in(g))?;
        self.unlink(id);
        Some(id)
    }

    /// Allocate a zspage and file it; returns its id.
    pub fn alloc_zspage(&mut self, class: &ClassGeom, arena: &Arena) -> Result<u32, ZpoolError> {
        let z = Zspage::new(class, arena)?;
        let id = match self.free_ids.pop() {
            Some(id) => {
                self.zspages[id as usize] = Some(z);
                id
            }
            None => {
                let id = u32::try_from(self.zspages.len()).map_err(|_| ZpoolError::NoMemory)?;
                if id == NIL {
                    return Err(ZpoolError::NoMemory);
                }
                self.zspages.push(Some(z));
                id
            }
        };
        self.objs_allocated += class.objs_per_zspage as u64;
        self.nr_zspages += 1;
        self.insert(class, id);
        Ok(id)
    }

    /// `free_zspage`: unlink an empty zspage and give its pages back.
    pub fn free_zspage(&mut self, class: &ClassGeom, id: u32, arena: &Arena) {
        if self.zspage(id).listed {
            self.unlink(id);
        }
        let z = self.zspages[id as usize].take().expect("live zspage id");
        debug_assert_eq!(z.inuse, 0);
        debug_assert!(class.is_huge() || z.freeobj != NO_OBJ);
        arena.free(z.mem);
        self.free_ids.push(id);
        self.objs_allocated -= class.objs_per_zspage as u64;
        self.nr_zspages -= 1;
    }

    /// `zs_can_compact`: pages that whole wasted zspages would free.
    pub fn can_compact(&self, class: &ClassGeom) -> u64 {
        if self.objs_allocated <= self.objs_inuse {
            return 0;
        }
        (self.objs_allocated - self.objs_inuse) / class.objs_per_zspage as u64
            * class.pages_per_zspage as u64
    }

    /// Zspages per fullness group (for debug output and tests).
    pub fn fullness_histogram(&self) -> [u64; NR_FULLNESS_GROUPS] {
        let mut h = [0u64; NR_FULLNESS_GROUPS];
        for (n, &head) in h.iter_mut().zip(&self.heads) {
            let mut id = head;
            while id != NIL {
                *n += 1;
                id = self.zspage(id).next;
            }
        }
        h
    }
}
