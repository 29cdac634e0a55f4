//! 4 KiB pages owned by zbud and z3fold (zsmalloc's come from its arena).

use crate::{ZpoolError, PAGE_SIZE};

/// One order-0 page: 4096 bytes from the global allocator, freed on drop.
pub(crate) type Page = Box<[u8; PAGE_SIZE]>;

/// Take a zeroed page from the OS; `NoMemory` instead of aborting.
pub(crate) fn alloc_page() -> Result<Page, ZpoolError> {
    let mut v: Vec<u8> = Vec::new();
    v.try_reserve_exact(PAGE_SIZE)
        .map_err(|_| ZpoolError::NoMemory)?;
    v.resize(PAGE_SIZE, 0);
    Ok(v.into_boxed_slice().try_into().expect("exactly one page"))
}
