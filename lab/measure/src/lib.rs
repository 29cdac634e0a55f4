//! zmem-measure: measurement — a corpus through the engine's zram and zswap and
//! through the kernel's own, rows side by side (`zmem bench`'s modes), one
//! candidate's sample for the verdict, and the filesystem's random reads.

mod engine;
mod fields;
mod fsread;
mod modes;

pub use modes::random_read::ReadResult;
// Each bench mode is a module of `modes` (`pub mod MODE;` there), re-exported as `zmem_measure::MODE`.
pub use engine::{running_kernel, EngineKernel};
pub use fields::{opt_us_as_ns, us_as_ns};
pub use fsread::{measure as measure_fs_read, FsRead};
pub use modes::*;
