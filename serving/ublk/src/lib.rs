//! zmem-ublk: serve a zmem device ([`BlockDevice`](zmem_device::BlockDevice))
//! as a kernel block device, `/dev/ublkbN`, through the kernel's ublk driver
//! (libublk's io_uring queues). A thin transport beside zmem-nbd: a request
//! becomes the same command NBD's become and runs through the same
//! executor ([`zmem_nbd::execute_io`]).
//!
//! * `request`: the kernel's request descriptor as a command, and the
//!   engine's answer as the kernel's result;
//! * `params`: the options and the queue limits, checked before anything is
//!   created;
//! * `server`: add (or recover), serve every queue, stop and delete.

mod params;
mod request;
mod server;

pub use params::{Options, BLOCK, DEFAULT_DEPTH};
pub use server::{check_driver, check_recover_target, serve, Started, CONTROL};
