//! netcfgd's data path: the embedded multi-namespace iSCSI target.
//!
//! Built by `pip install .` (setuptools-rust) as the extension module
//! `netcfgd._dataplane`; `cargo test --no-default-features` runs the crate's
//! own tests without Python.

#[cfg(feature = "python")]
mod python;
