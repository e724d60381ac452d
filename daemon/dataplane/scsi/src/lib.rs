//! The SCSI side of netcfgd's target: logical units over a backing file or
//! block device, executing CDBs (SBC-3 / SPC-4). Transport-independent: the
//! iSCSI layer (the `netcfgd-dataplane` crate) hands in a CDB, the I_T nexus it
//! came from and the Data-Out bytes, and gets back status, sense and Data-In.
//!
//! Interface contract with the transport (kept stable; see docs/dataplane.md):
//! - `Target::execute(lun, nexus, cdb, data_out, data_in) -> Completion`
//!   where `data_in` is a reused buffer the transport owns (cleared by execute);
//! - the transport never parses CDBs itself; it only needs `Completion`.

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
