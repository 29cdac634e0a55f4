//! Creating the allocator a device stores its objects in (zsmalloc by
//! default, as the kernel; zbud and z3fold on request).

use std::sync::Arc;

use zmem_zpool::Zpool;

/// Creates an allocator by name. Embedders and tests may supply their own.
pub type PoolFactory = Arc<dyn Fn(&str) -> Result<Box<dyn Zpool>, String> + Send + Sync>;

/// The default allocator.
pub const DEFAULT_ALLOCATOR: &str = "zsmalloc";

/// The factory for the allocators of `zmem-zpool`.
pub fn default_factory() -> PoolFactory {
    Arc::new(create)
}

/// Create one of `zmem-zpool`'s allocators by name.
pub fn create(name: &str) -> Result<Box<dyn Zpool>, String> {
    let n = name.strip_suffix('\n').unwrap_or(name);
    if !zmem_zpool::NAMES.contains(&n) {
        return Err(format!(
            "unknown allocator '{n}'; valid allocators: {}",
            zmem_zpool::NAMES.join(", ")
        ));
    }
    zmem_zpool::create(n, zmem_zpool::PoolOptions::default())
        .map_err(|e| format!("cannot create allocator '{n}': {e}"))
}
