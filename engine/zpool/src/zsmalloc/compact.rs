//! Compaction (`__zs_compact`): move objects from the sparsest zspages into
//! the fullest ones of the same class, and free the zspages left empty.

use super::arena::Arena;
use super::class::ClassGeom;
use super::state::ClassState;
use super::zspage::fullness_group;

/// `migrate_zspage`: move allocated objects of `src`, in address order, into
/// `dst` until `dst` is full or `src` is empty; handle cells are rewritten so
/// handles stay valid.
fn migrate(st: &mut ClassState, class: &ClassGeom, src: u32, dst: u32) {
    let mut src_z = st.zspages[src as usize].take().expect("live src zspage");
    for idx in 0..class.objs_per_zspage as u32 {
        if src_z.inuse == 0 {
            break;
        }
        let Some(slot) = src_z.allocated_slot(class, idx as usize) else {
            continue;
        };
        let dst_z = st.zspages[dst as usize].as_mut().expect("live dst zspage");
        let new_idx = dst_z.obj_malloc(class, slot);
        dst_z.write_chunk(class, new_idx, src_z.chunk(class, idx));
        src_z.obj_free(class, idx);
        let loc = st
            .handles
            .get_slot_mut(slot)
            .expect("allocated chunk has a live handle");
        loc.zspage = dst;
        loc.idx = new_idx;
        if dst_z.is_full(class) {
            break;
        }
    }
    st.zspages[src as usize] = Some(src_z);
}

/// Compact one class; returns the pages freed.
pub(super) fn compact_class(st: &mut ClassState, class: &ClassGeom, arena: &Arena) -> u64 {
    let mut freed = 0;
    let mut dst: Option<u32> = None;
    while st.can_compact(class) > 0 {
        let d = match dst {
            Some(d) => d,
            None => match st.isolate_dst() {
                Some(d) => {
                    dst = Some(d);
                    d
                }
                None => break,
            },
        };
        let Some(src) = st.isolate_src() else { break };
        migrate(st, class, src, d);
        // putback_zspage(src); an empty source is freed.
        if fullness_group(st.zspage(src).inuse as usize, class.objs_per_zspage) == 0 {
            st.free_zspage(class, src, arena);
            freed += class.pages_per_zspage as u64;
        } else {
            st.insert(class, src);
        }
        if st.zspage(d).is_full(class) {
            st.insert(class, d);
            dst = None;
        }
    }
    if let Some(d) = dst {
        st.insert(class, d);
    }
    freed
}
