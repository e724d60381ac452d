//! A SCSI target device: its logical units, and the one entry point the
//! transport calls per command. Dispatch order follows SAM-5: REPORT LUNS
//! (answered for any LUN), the LUN lookup, unit attention, reservation
//! conflict, then the command itself.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use crate::backing::LogicalUnit;
use crate::cdb;
use crate::locks::{read, write};
use crate::opcodes::{self, CommandInfo};
use crate::reserve::Reservations;
use crate::sense::{self, Sense};
use crate::unit_attention::UnitAttentions;
use crate::plan::Plan;
use crate::{status, tmf_response, Completion, Nexus};

/// One LUN slot: the unit plus the state SPC keeps per logical unit.
pub(crate) struct Lun {
    pub lu: Arc<LogicalUnit>,
    pub reservations: Reservations,
    pub unit_attentions: UnitAttentions,
    /// WCE of the caching mode page: when clear, every write is synced.
    pub write_cache: AtomicBool,
    /// SWP of the control mode page: software write protect, set by MODE SELECT.
    pub software_write_protect: AtomicBool,
}

impl Lun {
    /// Whether writes are refused: a read-only unit or SWP.
    pub fn write_protected(&self) -> bool {
        self.lu.read_only() || self.software_write_protect.load(Ordering::Relaxed)
    }

    /// DATA PROTECT for any write to a read-only unit (27/00) or one under
    /// software write protect (27/02).
    pub(crate) fn check_writable(&self) -> Result<(), Sense> {
        if self.lu.read_only() {
            return Err(sense::WRITE_PROTECTED);
        }
        if self.software_write_protect.load(Ordering::Relaxed) {
            return Err(sense::LOGICAL_UNIT_SOFTWARE_WRITE_PROTECTED);
        }
        Ok(())
    }
}

/// What a command handler sees.
pub(crate) struct Cmd<'a> {
    pub lun: &'a Lun,
    pub lu: &'a LogicalUnit,
    pub nexus: &'a Nexus,
    pub cdb: &'a [u8],
    pub data_out: &'a [u8],
    pub data_in: &'a mut Vec<u8>,
    /// Every nexus the target has seen, for PR and reset side effects.
    pub target: &'a Target,
}

impl Cmd<'_> {
    /// DATA PROTECT for any write to a read-only or write-protected unit.
    pub fn check_writable(&self) -> Result<(), Sense> {
        self.lun.check_writable()
    }
}

/// A handler's success: the status byte (GOOD, CONDITION MET, RESERVATION CONFLICT).
pub(crate) type CmdResult = Result<u8, Sense>;

/// A SCSI target device (SAM-5): LUNs and the nexuses talking to them.
pub struct Target {
    name: String,
    luns: RwLock<BTreeMap<u64, Arc<Lun>>>,
    nexuses: RwLock<HashSet<Nexus>>,
}

/// LUNs are addressed with SAM-5's flat space (0..16383) or peripheral
/// addressing (0..255); we report flat space for LUNs above 255.
const MAX_LUN: u64 = 16383;

impl Target {
    pub fn new(name: &str) -> Target {
        Target { name: name.to_string(), luns: RwLock::default(), nexuses: RwLock::default() }
    }

    /// The target's name (its IQN), as given to `new`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Adds (or replaces) a logical unit. Nexuses already logged in get
    /// REPORTED LUNS DATA HAS CHANGED on their next command to another LUN,
    /// and, when another unit was at this LUN, MEDIUM MAY HAVE CHANGED on
    /// it. Re-adding the same unit at the same LUN changes nothing (its
    /// reservations and mode settings stay).
    pub fn add_lun(&self, lun: u64, lu: Arc<LogicalUnit>) {
        let replaced = match read(&self.luns).get(&lun) {
            Some(slot) if Arc::ptr_eq(&slot.lu, &lu) => return,
            Some(_) => true,
            None => false,
        };
        let slot = Arc::new(Lun {
            lu,
            reservations: Reservations::default(),
            unit_attentions: UnitAttentions::default(),
            write_cache: AtomicBool::new(true),
            software_write_protect: AtomicBool::new(false),
        });
        if replaced {
            for nexus in self.known_nexuses() {
                slot.unit_attentions.establish(&nexus, sense::MEDIUM_MAY_HAVE_CHANGED);
            }
        }
        let mut luns = write(&self.luns);
        self.announce_lun_change(&luns, lun);
        luns.insert(lun, slot);
    }

    /// `lu` was resized (`LogicalUnit::resize`): every nexus gets CAPACITY
    /// DATA HAS CHANGED on each LUN backed by it (SBC-3 4.11), so initiators
    /// read the capacity again. Returns how many LUNs were concerned.
    pub fn capacity_changed(&self, lu: &Arc<LogicalUnit>) -> usize {
        let nexuses = self.known_nexuses();
        let mut concerned = 0;
        for slot in read(&self.luns).values().filter(|slot| Arc::ptr_eq(&slot.lu, lu)) {
            concerned += 1;
            for nexus in &nexuses {
                slot.unit_attentions.establish(nexus, sense::CAPACITY_DATA_HAS_CHANGED);
            }
        }
        concerned
    }

    /// Whether any LUN of this target is backed by `lu`.
    pub fn exports(&self, lu: &Arc<LogicalUnit>) -> bool {
        read(&self.luns).values().any(|slot| Arc::ptr_eq(&slot.lu, lu))
    }

    pub fn remove_lun(&self, lun: u64) {
        let mut luns = write(&self.luns);
        if luns.remove(&lun).is_some() {
            self.announce_lun_change(&luns, lun);
        }
    }

    fn announce_lun_change(&self, luns: &BTreeMap<u64, Arc<Lun>>, changed: u64) {
        let nexuses = read(&self.nexuses);
        for (n, slot) in luns.iter() {
            if *n == changed {
                continue;
            }
            for nexus in nexuses.iter() {
                slot.unit_attentions.establish(nexus, sense::REPORTED_LUNS_DATA_HAS_CHANGED);
            }
        }
    }

    pub fn luns(&self) -> Vec<u64> {
        read(&self.luns).keys().copied().collect()
    }

    fn lun(&self, lun: u64) -> Option<Arc<Lun>> {
        read(&self.luns).get(&lun).cloned()
    }

    /// Every nexus that has sent a command and not been lost since.
    pub(crate) fn known_nexuses(&self) -> Vec<Nexus> {
        read(&self.nexuses).iter().cloned().collect()
    }

    fn note_nexus(&self, nexus: &Nexus) {
        if !read(&self.nexuses).contains(nexus) {
            write(&self.nexuses).insert(nexus.clone());
        }
    }

    /// Executes one command. `data_in` is cleared and filled with the
    /// Data-In bytes (the transport truncates to the expected length).
    pub fn execute(
        &self,
        lun: u64,
        nexus: &Nexus,
        cdb: &[u8],
        data_out: &[u8],
        data_in: &mut Vec<u8>,
    ) -> Completion {
        data_in.clear();
        let result = match self.admit(lun, nexus, cdb, data_in) {
            Ok((slot, info)) => {
                let mut cmd =
                    Cmd { lun: &slot, lu: &slot.lu, nexus, cdb, data_out, data_in, target: self };
                (info.handler)(&mut cmd)
            }
            Err(done) => done,
        };
        match result {
            Ok(status) => Completion { status, sense: Vec::new() },
            Err(s) => {
                data_in.clear();
                failed(s)
            }
        }
    }

    /// The split path (docs/scsi.md, "Split I/O"): for a plain READ or
    /// WRITE (6/10/12/16) runs the same checks as `execute` (`admit`) and
    /// returns the transfer to perform (`Plan::Io`) or the answer
    /// (`Plan::Done`); for anything else, and for writes that must be synced
    /// before status, `Plan::Execute` without side effects. `data_out_len`
    /// is how many Data-Out bytes the transport holds for a write.
    pub fn plan(&self, lun: u64, nexus: &Nexus, cdb: &[u8], data_out_len: usize) -> Plan {
        match cdb.first() {
            Some(&op) if crate::rw::is_plain(op) => {}
            _ => return Plan::Execute,
        }
        // A plain READ or WRITE has no Data-In before its handler runs.
        let slot = match self.admit(lun, nexus, cdb, &mut Vec::new()) {
            Ok((slot, _)) => slot,
            Err(Ok(status)) => return Plan::Done(Completion { status, sense: Vec::new() }),
            Err(Err(s)) => return Plan::Done(failed(s)),
        };
        match crate::rw::plan(&slot, cdb, data_out_len) {
            Ok(Some(io)) => Plan::Io(io),
            Ok(None) => Plan::Execute,
            Err(s) => Plan::Done(failed(s)),
        }
    }

    /// What every command goes through before its handler, in SAM-5's order
    /// (the module's doc): REPORT LUNS, answered here for any LUN; the LUN
    /// lookup; the command table (opcode, service action, CDB length); a
    /// pending unit attention; a reservation conflict; CDB bits the usage
    /// data leaves reserved. `execute` and `plan` both start here, so the
    /// split path refuses exactly what `execute` would. Err: how the command
    /// ends instead (REPORT LUNS and a missing LUN's INQUIRY or REQUEST
    /// SENSE put their data in `data_in`).
    fn admit(
        &self,
        lun: u64,
        nexus: &Nexus,
        cdb: &[u8],
        data_in: &mut Vec<u8>,
    ) -> Result<(Arc<Lun>, &'static CommandInfo), CmdResult> {
        let opcode = *cdb.first().ok_or(Err(sense::INVALID_COMMAND_OPERATION_CODE))?;
        self.note_nexus(nexus);
        if opcode == opcodes::REPORT_LUNS {
            return Err(self.report_luns(cdb, data_in));
        }
        let slot = match self.lun(lun) {
            Some(slot) => slot,
            None => return Err(missing_lun(opcode, cdb, data_in)),
        };
        let info = match opcodes::lookup(cdb) {
            Some(info) => info,
            // A known opcode with an unknown service action is a bad field, not a bad opcode.
            None if opcodes::has_service_actions(opcode) => {
                return Err(Err(Sense::invalid_cdb_field(1, Some(4))))
            }
            None => return Err(Err(sense::INVALID_COMMAND_OPERATION_CODE)),
        };
        if cdb.len() < info.cdb_len() {
            return Err(Err(Sense::invalid_cdb_field(0, None)));
        }
        if !info.ua_exempt {
            if let Some(ua) = slot.unit_attentions.take(nexus) {
                return Err(Err(ua));
            }
        }
        if let Some(conflict) = slot.reservations.conflict(nexus, info, cdb) {
            return Err(Ok(conflict));
        }
        if let Some(s) = info.reserved_bits(&cdb[..info.cdb_len()]) {
            return Err(Err(s));
        }
        Ok((slot, info))
    }

    /// REPORT LUNS (SPC-4 6.33): SELECT REPORT 0, 1 and 2 all list every LUN
    /// (we have no well-known LUNs).
    fn report_luns(&self, cdb: &[u8], data_in: &mut Vec<u8>) -> CmdResult {
        let select_report = cdb::u8_at(cdb, 2);
        if select_report > 2 {
            return Err(Sense::invalid_cdb_field(2, None));
        }
        let alloc = cdb::be32(cdb, 6);
        if alloc < 16 {
            // SPC-4: an ALLOCATION LENGTH under 16 is an error for REPORT LUNS.
            return Err(Sense::invalid_cdb_field(6, None));
        }
        let luns = self.luns();
        data_in.resize(8, 0);
        cdb::put32(data_in, 0, (luns.len() * 8) as u32);
        for lun in luns {
            data_in.extend_from_slice(&encode_lun(lun));
        }
        Ok(status::GOOD)
    }

    /// ABORT TASK: commands run to completion synchronously inside
    /// `execute`, so by the time a TMF can be processed there is nothing left
    /// to abort in this layer; the transport decides between "function
    /// complete" and "task does not exist" from its own task table (RFC 7143
    /// 11.5.1). We only report an unknown LUN.
    pub fn abort_task(&self, lun: u64, _nexus: &Nexus, _task_tag: u32) -> u8 {
        if self.lun(lun).is_none() {
            return tmf_response::LUN_DOES_NOT_EXIST;
        }
        tmf_response::FUNCTION_COMPLETE
    }

    /// LOGICAL UNIT RESET (SAM-5 7.8): releases a RESERVE(6) reservation
    /// (persistent reservations survive) and establishes BUS DEVICE RESET
    /// FUNCTION OCCURRED for every nexus.
    pub fn lun_reset(&self, lun: u64, _nexus: &Nexus) -> u8 {
        let slot = match self.lun(lun) {
            Some(slot) => slot,
            None => return tmf_response::LUN_DOES_NOT_EXIST,
        };
        slot.reservations.reset();
        for n in self.known_nexuses() {
            slot.unit_attentions.establish(&n, sense::BUS_DEVICE_RESET_FUNCTION_OCCURRED);
        }
        tmf_response::FUNCTION_COMPLETE
    }

    /// The nexus is gone (logout, connection lost): its RESERVE(6)
    /// reservation and pending unit attentions go with it; persistent
    /// reservations survive (that is their point).
    pub fn nexus_lost(&self, nexus: &Nexus) {
        write(&self.nexuses).remove(nexus);
        let luns: Vec<Arc<Lun>> = read(&self.luns).values().cloned().collect();
        for slot in luns {
            slot.reservations.nexus_lost(nexus);
            slot.unit_attentions.forget(nexus);
        }
    }
}

/// CHECK CONDITION with `s` as fixed-format sense data.
pub(crate) fn failed(s: Sense) -> Completion {
    Completion { status: status::CHECK_CONDITION, sense: s.to_fixed() }
}

/// A command addressed to a LUN we do not have (SPC-4 and SAM-5 8.1):
/// INQUIRY answers with peripheral qualifier 011b, REQUEST SENSE reports
/// LOGICAL UNIT NOT SUPPORTED as data, anything else fails with it.
fn missing_lun(opcode: u8, cdb: &[u8], data_in: &mut Vec<u8>) -> CmdResult {
    match opcode {
        opcodes::INQUIRY => crate::inquiry::inquiry_missing_lun(cdb, data_in),
        opcodes::REQUEST_SENSE => {
            sense::LOGICAL_UNIT_NOT_SUPPORTED.write_fixed(data_in);
            Ok(status::GOOD)
        }
        _ => Err(sense::LOGICAL_UNIT_NOT_SUPPORTED),
    }
}

/// SAM-5 4.7: peripheral device addressing for LUNs below 256, flat space above.
fn encode_lun(lun: u64) -> [u8; 8] {
    let mut out = [0u8; 8];
    if lun < 256 {
        out[1] = lun as u8;
    } else {
        let l = lun.min(MAX_LUN) as u16;
        out[0] = 0x40 | (l >> 8) as u8;
        out[1] = l as u8;
    }
    out
}
