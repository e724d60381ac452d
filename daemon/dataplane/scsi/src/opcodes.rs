//! The command table: every supported (opcode, service action) with its CDB
//! usage data, its reservation class and its handler. One table drives
//! dispatch, REPORT SUPPORTED OPERATION CODES and the reservation conflict
//! checks, so what we advertise is what we execute.
//!
//! The usage data doubles as the reserved-bit check: a CDB with a bit set
//! where the usage data has none fails with INVALID FIELD IN CDB pointing at
//! that byte and bit (SPC-4 4.2.1 asks targets to check reserved fields).
//! Fields we do not implement (RDPROTECT with no protection information,
//! NACA, ANCHOR) are left out of the usage data on purpose.

use crate::sense::Sense;
use crate::target::{Cmd, CmdResult};
use crate::{cache, capacity, inquiry, misc, mode, pr, provisioning, reserve, rsoc, rw};

/// Operation codes (SPC-4 / SBC-3 spellings), public so that tests spell
/// CDBs with the numbers the table dispatches on.
pub mod op {
    pub const TEST_UNIT_READY: u8 = 0x00;
    pub const REQUEST_SENSE: u8 = 0x03;
    pub const READ_6: u8 = 0x08;
    pub const WRITE_6: u8 = 0x0A;
    pub const INQUIRY: u8 = 0x12;
    pub const MODE_SELECT_6: u8 = 0x15;
    pub const RESERVE_6: u8 = 0x16;
    pub const RELEASE_6: u8 = 0x17;
    pub const MODE_SENSE_6: u8 = 0x1A;
    pub const START_STOP_UNIT: u8 = 0x1B;
    pub const READ_CAPACITY_10: u8 = 0x25;
    pub const READ_10: u8 = 0x28;
    pub const WRITE_10: u8 = 0x2A;
    pub const WRITE_AND_VERIFY_10: u8 = 0x2E;
    pub const VERIFY_10: u8 = 0x2F;
    pub const PRE_FETCH_10: u8 = 0x34;
    pub const READ_DEFECT_DATA_10: u8 = 0x37;
    pub const SYNCHRONIZE_CACHE_10: u8 = 0x35;
    pub const WRITE_SAME_10: u8 = 0x41;
    pub const UNMAP: u8 = 0x42;
    pub const MODE_SELECT_10: u8 = 0x55;
    pub const MODE_SENSE_10: u8 = 0x5A;
    pub const PERSISTENT_RESERVE_IN: u8 = 0x5E;
    pub const PERSISTENT_RESERVE_OUT: u8 = 0x5F;
    pub const READ_16: u8 = 0x88;
    pub const COMPARE_AND_WRITE: u8 = 0x89;
    pub const WRITE_16: u8 = 0x8A;
    pub const ORWRITE_16: u8 = 0x8B;
    pub const WRITE_AND_VERIFY_16: u8 = 0x8E;
    pub const VERIFY_16: u8 = 0x8F;
    pub const PRE_FETCH_16: u8 = 0x90;
    pub const SYNCHRONIZE_CACHE_16: u8 = 0x91;
    pub const WRITE_SAME_16: u8 = 0x93;
    pub const SERVICE_ACTION_IN_16: u8 = 0x9E;
    pub const REPORT_LUNS: u8 = 0xA0;
    pub const MAINTENANCE_IN: u8 = 0xA3;
    pub const READ_12: u8 = 0xA8;
    pub const WRITE_12: u8 = 0xAA;
    pub const WRITE_AND_VERIFY_12: u8 = 0xAE;
    pub const VERIFY_12: u8 = 0xAF;
    pub const READ_DEFECT_DATA_12: u8 = 0xB7;
}
pub use op::*;

// Service actions.
pub const SAI_READ_CAPACITY_16: u16 = 0x10;
pub const SAI_GET_LBA_STATUS: u16 = 0x12;
pub const MI_REPORT_SUPPORTED_OPERATION_CODES: u16 = 0x0C;
pub const MI_REPORT_SUPPORTED_TASK_MANAGEMENT_FUNCTIONS: u16 = 0x0D;

/// How a command fares under a persistent reservation held by someone else
/// (SPC-4 table 62, SBC-3 table 13), for a nexus that is not a registrant of
/// a registrants-only/all-registrants reservation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrClass {
    /// Allowed under Write Exclusive and Exclusive Access.
    Allowed,
    /// Allowed under Write Exclusive, conflict under Exclusive Access (reads).
    ReadLike,
    /// Conflict under both (writes, mode changes).
    Conflict,
}

pub struct CommandInfo {
    pub opcode: u8,
    /// Service action, for opcodes that have them (in CDB byte 1, low 5 bits).
    pub service_action: Option<u16>,
    pub name: &'static str,
    /// CDB usage data (SPC-4 6.35.3): the CDB length and which bits we use.
    pub usage: &'static [u8],
    pub pr: PrClass,
    /// Allowed while another nexus holds a RESERVE(6) reservation (SPC-2 5.5.1).
    pub under_reserve6: bool,
    /// Neither reports nor clears a pending unit attention (SAM-5 5.14).
    pub ua_exempt: bool,
    pub handler: fn(&mut Cmd) -> CmdResult,
}

impl CommandInfo {
    pub fn cdb_len(&self) -> usize {
        self.usage.len()
    }

    /// The first CDB bit set where the usage data has none, as an INVALID
    /// FIELD IN CDB sense with its field pointer.
    pub fn reserved_bits(&self, cdb: &[u8]) -> Option<Sense> {
        for (i, (&byte, &mask)) in cdb.iter().zip(self.usage.iter()).enumerate().skip(1) {
            let stray = byte & !mask;
            if stray != 0 {
                let bit = 7 - stray.leading_zeros() as u8;
                return Some(Sense::invalid_cdb_field(i as u16, Some(bit)));
            }
        }
        None
    }
}

macro_rules! cmd {
    ($op:expr, $sa:expr, $name:expr, $pr:ident, $r6:expr, $ua:expr, $h:path, [$($u:expr),*]) => {
        CommandInfo {
            opcode: $op,
            service_action: $sa,
            name: $name,
            usage: &[$($u),*],
            pr: PrClass::$pr,
            under_reserve6: $r6,
            ua_exempt: $ua,
            handler: $h,
        }
    };
}

/// Group number: SBC-3 gives it 5 bits in every READ/WRITE-family CDB.
const GRP: u8 = 0x1F;

pub static COMMANDS: &[CommandInfo] = &[
    cmd!(TEST_UNIT_READY, None, "TEST UNIT READY", Allowed, false, false, misc::test_unit_ready,
        [0xFF, 0, 0, 0, 0, 0]),
    cmd!(REQUEST_SENSE, None, "REQUEST SENSE", Allowed, true, true, misc::request_sense,
        [0xFF, 0x01, 0, 0, 0xFF, 0]),
    cmd!(READ_6, None, "READ(6)", ReadLike, false, false, rw::read,
        [0xFF, 0x1F, 0xFF, 0xFF, 0xFF, 0]),
    cmd!(WRITE_6, None, "WRITE(6)", Conflict, false, false, rw::write,
        [0xFF, 0x1F, 0xFF, 0xFF, 0xFF, 0]),
    cmd!(INQUIRY, None, "INQUIRY", Allowed, true, true, inquiry::inquiry,
        [0xFF, 0x01, 0xFF, 0xFF, 0xFF, 0]),
    cmd!(MODE_SELECT_6, None, "MODE SELECT(6)", Conflict, false, false, mode::mode_select,
        [0xFF, 0x11, 0, 0, 0xFF, 0]),
    cmd!(RESERVE_6, None, "RESERVE(6)", Conflict, false, false, reserve::reserve6,
        [0xFF, 0, 0, 0, 0, 0]),
    cmd!(RELEASE_6, None, "RELEASE(6)", Conflict, true, false, reserve::release6,
        [0xFF, 0, 0, 0, 0, 0]),
    cmd!(MODE_SENSE_6, None, "MODE SENSE(6)", Conflict, false, false, mode::mode_sense,
        [0xFF, 0x08, 0xFF, 0xFF, 0xFF, 0]),
    cmd!(START_STOP_UNIT, None, "START STOP UNIT", Allowed, false, false, misc::start_stop_unit,
        [0xFF, 0x01, 0, 0x0F, 0xF7, 0]),
    cmd!(READ_CAPACITY_10, None, "READ CAPACITY(10)", Allowed, false, false, capacity::read_capacity_10,
        [0xFF, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0x01, 0]),
    cmd!(READ_10, None, "READ(10)", ReadLike, false, false, rw::read,
        [0xFF, 0x18, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0xFF, 0xFF, 0]),
    cmd!(WRITE_10, None, "WRITE(10)", Conflict, false, false, rw::write,
        [0xFF, 0x18, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0xFF, 0xFF, 0]),
    cmd!(WRITE_AND_VERIFY_10, None, "WRITE AND VERIFY(10)", Conflict, false, false, rw::write_and_verify,
        [0xFF, 0x12, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0xFF, 0xFF, 0]),
    cmd!(VERIFY_10, None, "VERIFY(10)", ReadLike, false, false, rw::verify,
        [0xFF, 0x16, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0xFF, 0xFF, 0]),
    cmd!(PRE_FETCH_10, None, "PRE-FETCH(10)", ReadLike, false, false, cache::pre_fetch,
        [0xFF, 0x02, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0xFF, 0xFF, 0]),
    cmd!(READ_DEFECT_DATA_10, None, "READ DEFECT DATA(10)", ReadLike, false, false, misc::read_defect_data,
        [0xFF, 0, 0x1F, 0, 0, 0, 0, 0xFF, 0xFF, 0]),
    cmd!(SYNCHRONIZE_CACHE_10, None, "SYNCHRONIZE CACHE(10)", Conflict, false, false, cache::synchronize_cache,
        [0xFF, 0x06, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0xFF, 0xFF, 0]),
    cmd!(WRITE_SAME_10, None, "WRITE SAME(10)", Conflict, false, false, provisioning::write_same,
        [0xFF, 0x08, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0xFF, 0xFF, 0]),
    cmd!(UNMAP, None, "UNMAP", Conflict, false, false, provisioning::unmap,
        [0xFF, 0, 0, 0, 0, 0, GRP, 0xFF, 0xFF, 0]),
    cmd!(MODE_SELECT_10, None, "MODE SELECT(10)", Conflict, false, false, mode::mode_select,
        [0xFF, 0x11, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0]),
    cmd!(MODE_SENSE_10, None, "MODE SENSE(10)", Conflict, false, false, mode::mode_sense,
        [0xFF, 0x18, 0xFF, 0xFF, 0, 0, 0, 0xFF, 0xFF, 0]),
    cmd!(PERSISTENT_RESERVE_IN, Some(0x00), "PERSISTENT RESERVE IN: READ KEYS", Allowed, false, false, pr::reserve_in,
        [0xFF, 0x1F, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0]),
    cmd!(PERSISTENT_RESERVE_IN, Some(0x01), "PERSISTENT RESERVE IN: READ RESERVATION", Allowed, false, false, pr::reserve_in,
        [0xFF, 0x1F, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0]),
    cmd!(PERSISTENT_RESERVE_IN, Some(0x02), "PERSISTENT RESERVE IN: REPORT CAPABILITIES", Allowed, false, false, pr::reserve_in,
        [0xFF, 0x1F, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0]),
    cmd!(PERSISTENT_RESERVE_IN, Some(0x03), "PERSISTENT RESERVE IN: READ FULL STATUS", Allowed, false, false, pr::reserve_in,
        [0xFF, 0x1F, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0]),
    cmd!(PERSISTENT_RESERVE_OUT, Some(0x00), "PERSISTENT RESERVE OUT: REGISTER", Allowed, false, false, pr::reserve_out,
        [0xFF, 0x1F, 0xFF, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0]),
    cmd!(PERSISTENT_RESERVE_OUT, Some(0x01), "PERSISTENT RESERVE OUT: RESERVE", Allowed, false, false, pr::reserve_out,
        [0xFF, 0x1F, 0xFF, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0]),
    cmd!(PERSISTENT_RESERVE_OUT, Some(0x02), "PERSISTENT RESERVE OUT: RELEASE", Allowed, false, false, pr::reserve_out,
        [0xFF, 0x1F, 0xFF, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0]),
    cmd!(PERSISTENT_RESERVE_OUT, Some(0x03), "PERSISTENT RESERVE OUT: CLEAR", Allowed, false, false, pr::reserve_out,
        [0xFF, 0x1F, 0xFF, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0]),
    cmd!(PERSISTENT_RESERVE_OUT, Some(0x04), "PERSISTENT RESERVE OUT: PREEMPT", Allowed, false, false, pr::reserve_out,
        [0xFF, 0x1F, 0xFF, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0]),
    cmd!(PERSISTENT_RESERVE_OUT, Some(0x05), "PERSISTENT RESERVE OUT: PREEMPT AND ABORT", Allowed, false, false, pr::reserve_out,
        [0xFF, 0x1F, 0xFF, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0]),
    cmd!(PERSISTENT_RESERVE_OUT, Some(0x06), "PERSISTENT RESERVE OUT: REGISTER AND IGNORE EXISTING KEY", Allowed, false, false, pr::reserve_out,
        [0xFF, 0x1F, 0xFF, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0]),
    cmd!(READ_16, None, "READ(16)", ReadLike, false, false, rw::read,
        [0xFF, 0x18, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0]),
    cmd!(COMPARE_AND_WRITE, None, "COMPARE AND WRITE", Conflict, false, false, rw::compare_and_write,
        [0xFF, 0x18, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0xFF, GRP, 0]),
    cmd!(WRITE_16, None, "WRITE(16)", Conflict, false, false, rw::write,
        [0xFF, 0x18, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0]),
    cmd!(ORWRITE_16, None, "ORWRITE(16)", Conflict, false, false, rw::orwrite,
        [0xFF, 0x18, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0]),
    cmd!(WRITE_AND_VERIFY_16, None, "WRITE AND VERIFY(16)", Conflict, false, false, rw::write_and_verify,
        [0xFF, 0x12, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0]),
    cmd!(VERIFY_16, None, "VERIFY(16)", ReadLike, false, false, rw::verify,
        [0xFF, 0x16, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0]),
    cmd!(PRE_FETCH_16, None, "PRE-FETCH(16)", ReadLike, false, false, cache::pre_fetch,
        [0xFF, 0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0]),
    cmd!(SYNCHRONIZE_CACHE_16, None, "SYNCHRONIZE CACHE(16)", Conflict, false, false, cache::synchronize_cache,
        [0xFF, 0x06, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0]),
    cmd!(WRITE_SAME_16, None, "WRITE SAME(16)", Conflict, false, false, provisioning::write_same,
        [0xFF, 0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0]),
    cmd!(SERVICE_ACTION_IN_16, Some(SAI_READ_CAPACITY_16), "READ CAPACITY(16)", Allowed, false, false, capacity::read_capacity_16,
        [0xFF, 0x1F, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0]),
    cmd!(SERVICE_ACTION_IN_16, Some(SAI_GET_LBA_STATUS), "GET LBA STATUS", ReadLike, false, false, provisioning::get_lba_status,
        [0xFF, 0x1F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0]),
    cmd!(REPORT_LUNS, None, "REPORT LUNS", Allowed, true, true, misc::unreachable_report_luns,
        [0xFF, 0, 0xFF, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0]),
    cmd!(MAINTENANCE_IN, Some(MI_REPORT_SUPPORTED_OPERATION_CODES), "REPORT SUPPORTED OPERATION CODES", Allowed, false, false, rsoc::report_supported_operation_codes,
        [0xFF, 0x1F, 0x87, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0]),
    cmd!(MAINTENANCE_IN, Some(MI_REPORT_SUPPORTED_TASK_MANAGEMENT_FUNCTIONS), "REPORT SUPPORTED TASK MANAGEMENT FUNCTIONS", Allowed, false, false, rsoc::report_supported_tmfs,
        [0xFF, 0x1F, 0x80, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0]),
    cmd!(READ_12, None, "READ(12)", ReadLike, false, false, rw::read,
        [0xFF, 0x18, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0]),
    cmd!(WRITE_12, None, "WRITE(12)", Conflict, false, false, rw::write,
        [0xFF, 0x18, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0]),
    cmd!(WRITE_AND_VERIFY_12, None, "WRITE AND VERIFY(12)", Conflict, false, false, rw::write_and_verify,
        [0xFF, 0x12, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0]),
    cmd!(VERIFY_12, None, "VERIFY(12)", ReadLike, false, false, rw::verify,
        [0xFF, 0x16, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, GRP, 0]),
    cmd!(READ_DEFECT_DATA_12, None, "READ DEFECT DATA(12)", ReadLike, false, false, misc::read_defect_data,
        [0xFF, 0x1F, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0]),
];

/// Whether this opcode carries a service action in CDB byte 1.
pub fn has_service_actions(opcode: u8) -> bool {
    COMMANDS.iter().any(|c| c.opcode == opcode && c.service_action.is_some())
}

/// The table entry for a CDB, by opcode and (where the opcode has them)
/// service action.
pub fn lookup(cdb: &[u8]) -> Option<&'static CommandInfo> {
    let opcode = *cdb.first()?;
    let sa = u16::from(cdb.get(1).copied().unwrap_or(0) & 0x1F);
    COMMANDS
        .iter()
        .find(|c| c.opcode == opcode && c.service_action.map_or(true, |s| s == sa))
}

/// Like `lookup`, for REPORT SUPPORTED OPERATION CODES' one-command forms.
pub fn find(opcode: u8, service_action: Option<u16>) -> Option<&'static CommandInfo> {
    COMMANDS.iter().find(|c| c.opcode == opcode && c.service_action == service_action)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_lengths_match_group_codes() {
        for c in COMMANDS {
            assert_eq!(Some(c.cdb_len()), crate::cdb::cdb_length(c.opcode), "{}", c.name);
            assert_eq!(c.usage[0], 0xFF, "{}", c.name);
            if let Some(sa) = c.service_action {
                assert_eq!(c.usage[1] & 0x1F, 0x1F, "{} uses its service action field", c.name);
                assert!(sa < 0x20);
            }
        }
    }

    #[test]
    fn no_duplicate_entries() {
        for (i, a) in COMMANDS.iter().enumerate() {
            for b in &COMMANDS[i + 1..] {
                assert!(
                    !(a.opcode == b.opcode && a.service_action == b.service_action),
                    "{} twice",
                    a.name
                );
            }
        }
    }

    #[test]
    fn reserved_bit_points_at_byte_and_bit() {
        let read10 = find(READ_10, None).unwrap();
        let mut cdb = [0u8; 10];
        cdb[0] = READ_10;
        cdb[1] = 0x18; // DPO|FUA are fine
        assert_eq!(read10.reserved_bits(&cdb), None);
        cdb[1] = 0x20; // RDPROTECT=1: we have no protection information
        let s = read10.reserved_bits(&cdb).unwrap().to_fixed();
        assert_eq!((s[12], s[13]), (0x24, 0));
        assert_eq!(&s[15..18], &[0x80 | 0x40 | 0x08 | 5, 0, 1]);
    }
}
