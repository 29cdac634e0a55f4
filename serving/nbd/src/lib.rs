//! zmem-nbd: serve a zmem device ([`BlockDevice`](zmem_device::BlockDevice)) as a
//! block device over NBD, and control it over a Unix socket by sysfs
//! attribute names.
//!
//! One file per concern:
//! * [`proto`]: protocol constants and the wire codec;
//! * `handshake`: fixed newstyle negotiation (GO, INFO, LIST, ABORT, EXPORT_NAME);
//! * `transmission`: request checks and running commands on the device;
//! * `server`: listener, per-connection reader/writer threads, worker pool, shutdown;
//! * `limits`: what one client may cost, and the watchdog that enforces it;
//! * `stream`: Unix/TCP sockets;
//! * `ctl`: the control socket (docs/ctl-protocol.md);
//! * `client`: a minimal client for tests and tools.

mod client;
mod ctl;
mod failures;
mod handshake;
mod limits;
pub mod proto;
mod server;
mod stream;
mod transmission;

pub use client::Client;
pub use ctl::{Control, CtlServer};
pub use failures::{FailureCounts, Failures};
pub use limits::Limits;
pub use server::{serve_bytes, stop_on_signals, Options, Server};
pub use stream::{Listen, Listener, SocketPerms};
pub use transmission::{decode as decode_request, execute_io, Command};
