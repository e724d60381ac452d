//! The SCSI side of netcfgd's target: logical units over a backing file or
//! block device, executing CDBs (SBC-3 / SPC-4). Transport-independent: the
//! iSCSI layer (the `netcfgd-dataplane` crate) hands in a CDB, the I_T nexus it
//! came from and the Data-Out bytes, and gets back status, sense and Data-In.
//!
//! Interface contract with the transport (kept stable; see docs/scsi.md):
//! - `Target::execute(lun, nexus, cdb, data_out, data_in) -> Completion`
//!   where `data_in` is a reused buffer the transport owns (cleared by execute);
//! - the transport never parses CDBs itself; it only needs `Completion`;
//! - optionally, `Target::plan(lun, nexus, cdb, data_out_len) -> Plan` splits
//!   a plain READ/WRITE into a transfer the transport performs itself (for
//!   batching), finished with `BlockIo::finish_read`/`finish_write`.
//!
//! Commands run synchronously on the caller's thread: the transport already
//! runs one event loop per core, so a blocking pread on that thread costs no
//! more than handing it to another thread and waiting (see docs/scsi.md).

// Kept buildable with Rust 1.63 (Debian bookworm): no `Option::is_some_and`
// (1.70) or `usize::is_multiple_of` (1.87), which clippy would suggest.
#![allow(unknown_lints, clippy::unnecessary_map_or, clippy::manual_is_multiple_of)]

mod backing;
mod cache;
mod capacity;
mod cdb;
#[doc(hidden)]
pub mod fuzzing;
mod inquiry;
mod limits;
mod locks;
mod misc;
mod mode;
mod opcodes;
mod plan;
mod pr;
mod provisioning;
mod reserve;
mod rsoc;
mod rw;
mod sense;
mod target;
mod unit_attention;

pub use backing::{LogicalUnit, LuOptions};
pub use opcodes::op;
pub use plan::{BlockIo, Plan, WriteOrderHold};
pub use target::Target;

/// Every supported command as (operation code, service action, name), in
/// table order: what REPORT SUPPORTED OPERATION CODES reports.
pub fn supported_commands() -> Vec<(u8, Option<u16>, &'static str)> {
    opcodes::COMMANDS.iter().map(|c| (c.opcode, c.service_action, c.name)).collect()
}

/// SCSI status codes (SAM-5 table 33), as the transport puts them in the
/// SCSI Response PDU.
pub mod status {
    pub const GOOD: u8 = 0x00;
    pub const CHECK_CONDITION: u8 = 0x02;
    pub const CONDITION_MET: u8 = 0x04;
    pub const BUSY: u8 = 0x08;
    pub const RESERVATION_CONFLICT: u8 = 0x18;
    pub const TASK_SET_FULL: u8 = 0x28;
    pub const TASK_ABORTED: u8 = 0x40;
}

/// iSCSI task management function response codes (RFC 7143 11.6.1), returned
/// by `Target::abort_task` and `Target::lun_reset`.
pub mod tmf_response {
    pub const FUNCTION_COMPLETE: u8 = 0;
    pub const TASK_DOES_NOT_EXIST: u8 = 1;
    pub const LUN_DOES_NOT_EXIST: u8 = 2;
    pub const NOT_SUPPORTED: u8 = 5;
}

/// Who is talking: one I_T nexus (RFC 7143 / SAM-5). PERSISTENT RESERVE and
/// RESERVE(6) key their state on it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Nexus {
    /// Initiator port name, as iSCSI spells it: "iqn...,i,0x<ISID hex>".
    pub initiator_port: String,
    /// Target port name: "iqn...,t,0x<TPGT hex>".
    pub target_port: String,
}

/// The outcome of one command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    /// SCSI status byte (GOOD 0x00, CHECK CONDITION 0x02, RESERVATION CONFLICT 0x18, ...).
    pub status: u8,
    /// Fixed-format sense data when status is CHECK CONDITION, else empty.
    pub sense: Vec<u8>,
}
