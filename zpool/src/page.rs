//! 4 KiB pages owned by the allocators, and the per-thread copy buffer.

use crate::{ZpoolError, PAGE_SIZE};
use std::cell::Cell;

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

thread_local! {
    /// The per-thread buffer objects spanning two pages are linearised into
    /// (zsmalloc's per-CPU `local_copy`). Taken out while in use, so a nested
    /// read on the same thread gets a fresh buffer instead of a conflict.
    static LOCAL_COPY: Cell<Option<Box<[u8; PAGE_SIZE]>>> = const { Cell::new(None) };
}

/// Run `f` with the thread's copy buffer (allocated once per thread).
pub(crate) fn with_local_copy<R>(f: impl FnOnce(&mut [u8; PAGE_SIZE]) -> R) -> R {
    let mut buf = LOCAL_COPY
        .with(|c| c.take())
        .unwrap_or_else(|| Box::new([0u8; PAGE_SIZE]));
    let r = f(&mut buf);
    LOCAL_COPY.with(|c| c.set(Some(buf)));
    r
}
