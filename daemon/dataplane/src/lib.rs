//! netcfgd's data path: the embedded multi-namespace iSCSI target, and the
//! same volumes as local ublk block devices (`ublk`).
//!
//! Built by `pip install .` (setuptools-rust) as the extension module
//! `netcfgd._dataplane`; `cargo test --no-default-features` runs the crate's
//! own tests without Python.
//!
//! Layout: `iscsi` is the protocol (pure: bytes in, bytes out); `registry`
//! what is served; `reactor` the per-core epoll loops; `netns` the one
//! thread that enters namespaces to make listeners; `dataplane` ties them
//! together behind the API `python` exposes.

pub mod batch;
pub mod budget;
pub mod dataplane;
pub mod digest;
pub mod iscsi;
pub mod md5;
pub mod netns;
pub mod reactor;
pub mod registry;
pub mod ublk;
pub mod uring;

#[cfg(feature = "python")]
mod python;
