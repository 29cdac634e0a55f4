//! Creating the allocator a device stores its objects in (zsmalloc by
//! default, as the kernel's of the device's version; zbud and z3fold on request).

use std::sync::Arc;

use zmem_kernel::{ChainRule, KernelModel};
use zmem_zpool::{PoolOptions, Zpool};

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
    let opts = PoolOptions {
        chain_size: kernel.zspage_chain_size(),
        chain_rule: match kernel.zspage_chain_rule() {
            ChainRule::LeastWaste => zmem_zpool::ChainRule::LeastWaste,
            ChainRule::MostUsedPercent => zmem_zpool::ChainRule::MostUsedPercent,
        },
    };
    zmem_zpool::create(n, opts).map_err(|e| format!("cannot create allocator '{n}': {e}"))
}
