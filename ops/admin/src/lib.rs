//! zmem-admin: the kernel's own zram and zswap, run by zmem. Status in words,
//! `apply` of a zram-generator.conf (and its undo), `persist` across reboots,
//! the Prometheus exporter, `zmem policy`'s round over every kernel and
//! served device (the engine itself is zmem-policy's), and `zmem doctor`'s
//! checks of the machine's set-up. Everything goes through [`zmem_host::Sys`],
//! so each feature runs against a fixture tree as well as against the running kernel.

pub mod apply;
mod doctor;
pub mod exporter;
pub mod persist;
mod policy;
pub mod status;
mod zram;
mod zswap;

pub use doctor::{diagnose, Diagnosis, Finding, Severity, CHECKS as DOCTOR_CHECKS};
pub use policy::round_all;
pub use zram::{read_device, ZramDevice};
