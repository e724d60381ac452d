//! Persistent reservations (SPC-4 5.9, 6.15, 6.16): registrations keyed by
//! I_T nexus, one reservation per logical unit, and PERSISTENT RESERVE IN /
//! OUT. Kept in memory: APTPL (persist through power loss) is refused, and
//! reported as unsupported in REPORT CAPABILITIES.
//!
//! Unsupported options and how they fail: SPEC_I_PT, ALL_TG_PT and APTPL set
//! in the parameter list -> INVALID FIELD IN PARAMETER LIST; REGISTER AND
//! MOVE and other service actions -> INVALID FIELD IN CDB.

use crate::cdb;
use crate::sense::{self, Sense};
use crate::status;
use crate::target::{Cmd, CmdResult};
use crate::Nexus;

/// Reservation types (SPC-4 table 170).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PrType {
    WriteExclusive = 1,
    ExclusiveAccess = 3,
    WriteExclusiveRegistrantsOnly = 5,
    ExclusiveAccessRegistrantsOnly = 6,
    WriteExclusiveAllRegistrants = 7,
    ExclusiveAccessAllRegistrants = 8,
}

impl PrType {
    fn from_code(code: u8) -> Option<PrType> {
        Some(match code {
            1 => PrType::WriteExclusive,
            3 => PrType::ExclusiveAccess,
            5 => PrType::WriteExclusiveRegistrantsOnly,
            6 => PrType::ExclusiveAccessRegistrantsOnly,
            7 => PrType::WriteExclusiveAllRegistrants,
            8 => PrType::ExclusiveAccessAllRegistrants,
            _ => return None,
        })
    }

    /// Non-holders may not even read (the Exclusive Access family).
    pub fn is_exclusive_access(self) -> bool {
        matches!(
            self,
            PrType::ExclusiveAccess | PrType::ExclusiveAccessRegistrantsOnly | PrType::ExclusiveAccessAllRegistrants
        )
    }

    /// Every registrant gets the holder's access (registrants-only and all-registrants).
    fn registrants_have_access(self) -> bool {
        !matches!(self, PrType::WriteExclusive | PrType::ExclusiveAccess)
    }

    /// All-registrants: every registrant *is* a holder (SPC-4 5.9.10).
    fn all_registrants(self) -> bool {
        matches!(self, PrType::WriteExclusiveAllRegistrants | PrType::ExclusiveAccessAllRegistrants)
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Registration {
    pub nexus: Nexus,
    pub key: u64,
}

#[derive(Clone, Debug)]
pub(crate) struct Reservation {
    /// The nexus that reserved (for all-registrants types: any registrant holds it).
    pub holder: Nexus,
    pub kind: PrType,
}

#[derive(Default)]
pub(crate) struct PrState {
    /// PRgeneration: bumped by every registration change, CLEAR and PREEMPT.
    pub generation: u32,
    pub registrations: Vec<Registration>,
    pub reservation: Option<Reservation>,
}

impl PrState {
    pub fn has_registrations(&self) -> bool {
        !self.registrations.is_empty()
    }

    fn key_of(&self, nexus: &Nexus) -> Option<u64> {
        self.registrations.iter().find(|r| &r.nexus == nexus).map(|r| r.key)
    }

    fn is_holder(&self, nexus: &Nexus) -> bool {
        match &self.reservation {
            Some(r) if r.kind.all_registrants() => self.key_of(nexus).is_some(),
            Some(r) => &r.holder == nexus,
            None => false,
        }
    }

    /// Whether `nexus` has unrestricted access under the current reservation.
    pub fn may_access(&self, nexus: &Nexus) -> bool {
        match &self.reservation {
            None => true,
            Some(r) if r.kind.registrants_have_access() => self.key_of(nexus).is_some(),
            Some(r) => &r.holder == nexus,
        }
    }

    /// Removes `nexus`'s registration, releasing a reservation that goes
    /// with it (SPC-4 5.9.11.3: the holder unregistering, or the last
    /// registrant of an all-registrants reservation).
    fn unregister(&mut self, nexus: &Nexus) -> Option<PrType> {
        let was_holder = self.is_holder(nexus);
        self.registrations.retain(|r| &r.nexus != nexus);
        let released = match &self.reservation {
            Some(r) if r.kind.all_registrants() => self.registrations.is_empty(),
            Some(_) => was_holder,
            None => false,
        };
        if released {
            return self.reservation.take().map(|r| r.kind);
        }
        None
    }
}

// PERSISTENT RESERVE IN service actions.
const READ_KEYS: u8 = 0x00;
const READ_RESERVATION: u8 = 0x01;
const REPORT_CAPABILITIES: u8 = 0x02;
const READ_FULL_STATUS: u8 = 0x03;

pub fn reserve_in(cmd: &mut Cmd) -> CmdResult {
    let sa = cdb::u8_at(cmd.cdb, 1) & 0x1F;
    let alloc = usize::from(cdb::be16(cmd.cdb, 7));
    let st = cmd.lun.reservations.lock();
    let pr = &st.pr;
    let out = &mut *cmd.data_in;
    match sa {
        READ_KEYS => {
            out.resize(8, 0);
            cdb::put32(out, 0, pr.generation);
            for r in &pr.registrations {
                out.extend_from_slice(&r.key.to_be_bytes());
            }
        }
        READ_RESERVATION => {
            out.resize(8, 0);
            cdb::put32(out, 0, pr.generation);
            if let Some(r) = &pr.reservation {
                let mut d = [0u8; 16];
                // All-registrants reservations report key 0 (SPC-4 6.15.3.3).
                let key = if r.kind.all_registrants() { 0 } else { pr.key_of(&r.holder).unwrap_or(0) };
                cdb::put64(&mut d, 0, key);
                d[13] = r.kind as u8; // scope 0 (LU_SCOPE) | type
                out.extend_from_slice(&d);
            }
        }
        REPORT_CAPABILITIES => {
            out.resize(8, 0);
            cdb::put16(out, 0, 8);
            // CRH: RESERVE/RELEASE conflict while registrations exist (SPC-4 5.9.3).
            out[2] = 0x10;
            // TMV: the type mask below is valid.
            out[3] = 0x80;
            // WR_EX_AR, EX_AC_RO, WR_EX_RO, EX_AC, WR_EX | EX_AC_AR.
            out[4] = 0x80 | 0x40 | 0x20 | 0x08 | 0x02;
            out[5] = 0x01;
        }
        READ_FULL_STATUS => {
            out.resize(8, 0);
            cdb::put32(out, 0, pr.generation);
            for r in &pr.registrations {
                let tid = transport_id(&r.nexus.initiator_port);
                let mut d = [0u8; 24];
                cdb::put64(&mut d, 0, r.key);
                if pr.is_holder(&r.nexus) {
                    d[12] = 0x01; // R_HOLDER
                    d[13] = pr.reservation.as_ref().map_or(0, |x| x.kind as u8);
                }
                cdb::put16(&mut d, 18, 1); // RELATIVE TARGET PORT IDENTIFIER
                cdb::put32(&mut d, 20, tid.len() as u32);
                out.extend_from_slice(&d);
                out.extend_from_slice(&tid);
            }
        }
        _ => return Err(Sense::invalid_cdb_field(1, Some(4))),
    }
    if sa != REPORT_CAPABILITIES {
        let len = (out.len() - 8) as u32;
        cdb::put32(out, 4, len);
    }
    out.truncate(alloc);
    Ok(status::GOOD)
}

/// iSCSI TransportID, format 01b: "name,i,0x<ISID>" null-terminated and
/// padded to a multiple of 4 (SPC-4 7.6.4.6).
fn transport_id(initiator_port: &str) -> Vec<u8> {
    let mut name: Vec<u8> = initiator_port.bytes().take(1000).collect();
    name.push(0);
    while name.len() % 4 != 0 {
        name.push(0);
    }
    let mut tid = vec![0x40 | 0x05, 0];
    tid.extend_from_slice(&(name.len() as u16).to_be_bytes());
    tid.extend_from_slice(&name);
    tid
}

// PERSISTENT RESERVE OUT service actions.
const REGISTER: u8 = 0x00;
const RESERVE: u8 = 0x01;
const RELEASE: u8 = 0x02;
const CLEAR: u8 = 0x03;
const PREEMPT: u8 = 0x04;
const PREEMPT_AND_ABORT: u8 = 0x05;
const REGISTER_AND_IGNORE_EXISTING_KEY: u8 = 0x06;

const PARAMETER_LIST_LEN: usize = 24;
const SPEC_I_PT: u8 = 0x08;
const ALL_TG_PT: u8 = 0x04;
const APTPL: u8 = 0x01;

const CONFLICT: CmdResult = Ok(status::RESERVATION_CONFLICT);

pub fn reserve_out(cmd: &mut Cmd) -> CmdResult {
    let sa = cdb::u8_at(cmd.cdb, 1) & 0x1F;
    let scope = cdb::u8_at(cmd.cdb, 2) >> 4;
    let type_code = cdb::u8_at(cmd.cdb, 2) & 0x0F;
    let param_len = cdb::be32(cmd.cdb, 5) as usize;
    if !matches!(sa, REGISTER..=REGISTER_AND_IGNORE_EXISTING_KEY) {
        return Err(Sense::invalid_cdb_field(1, Some(4)));
    }
    if param_len != PARAMETER_LIST_LEN || cmd.data_out.len() < PARAMETER_LIST_LEN {
        return Err(sense::PARAMETER_LIST_LENGTH_ERROR);
    }
    let p = &cmd.data_out[..PARAMETER_LIST_LEN];
    let key = cdb::be64(p, 0);
    let sa_key = cdb::be64(p, 8);
    let flags = cdb::u8_at(p, 20);
    for (bit, mask) in [(3u8, SPEC_I_PT), (2, ALL_TG_PT), (0, APTPL)] {
        if flags & mask != 0 {
            return Err(Sense::invalid_param_field(20, Some(bit)));
        }
    }
    // Scope and type matter for RESERVE, RELEASE and PREEMPT only.
    let needs_type = matches!(sa, RESERVE | RELEASE | PREEMPT | PREEMPT_AND_ABORT);
    let kind = if needs_type {
        if scope != 0 {
            return Err(Sense::invalid_cdb_field(2, Some(7)));
        }
        Some(PrType::from_code(type_code).ok_or(Sense::invalid_cdb_field(2, Some(3)))?)
    } else {
        None
    };

    let nexus = cmd.nexus;
    let lun = cmd.lun;
    let mut st = lun.reservations.lock();
    // Also enforced by the dispatcher; kept here so the rule holds on its own.
    if st.reserve6.is_some() {
        return CONFLICT;
    }
    let pr = &mut st.pr;
    let registered = pr.key_of(nexus);
    let mut notify: Vec<(Nexus, Sense)> = Vec::new();

    match sa {
        REGISTER | REGISTER_AND_IGNORE_EXISTING_KEY => {
            let ignore = sa == REGISTER_AND_IGNORE_EXISTING_KEY;
            match registered {
                None if !ignore && key != 0 => return CONFLICT,
                Some(k) if !ignore && k != key => return CONFLICT,
                None if sa_key == 0 => {}
                None => {
                    pr.registrations.push(Registration { nexus: nexus.clone(), key: sa_key });
                    pr.generation = pr.generation.wrapping_add(1);
                }
                Some(_) if sa_key == 0 => {
                    if let Some(kind) = pr.unregister(nexus) {
                        if kind.registrants_have_access() {
                            for r in &pr.registrations {
                                notify.push((r.nexus.clone(), sense::RESERVATIONS_RELEASED));
                            }
                        }
                    }
                    pr.generation = pr.generation.wrapping_add(1);
                }
                Some(_) => {
                    for r in pr.registrations.iter_mut().filter(|r| &r.nexus == nexus) {
                        r.key = sa_key;
                    }
                    pr.generation = pr.generation.wrapping_add(1);
                }
            }
        }
        _ if registered != Some(key) => return CONFLICT,
        RESERVE => {
            let kind = kind.unwrap_or(PrType::WriteExclusive);
            match &pr.reservation {
                None => pr.reservation = Some(Reservation { holder: nexus.clone(), kind }),
                Some(r) if pr.is_holder(nexus) && r.kind == kind => {}
                Some(_) => return CONFLICT,
            }
        }
        RELEASE => {
            let kind = kind.unwrap_or(PrType::WriteExclusive);
            if pr.reservation.is_some() && pr.is_holder(nexus) {
                let held = pr.reservation.as_ref().map(|r| r.kind);
                if held != Some(kind) {
                    return Err(sense::INVALID_RELEASE_OF_PERSISTENT_RESERVATION);
                }
                pr.reservation = None;
                if kind.registrants_have_access() {
                    for r in pr.registrations.iter().filter(|r| &r.nexus != nexus) {
                        notify.push((r.nexus.clone(), sense::RESERVATIONS_RELEASED));
                    }
                }
            }
        }
        CLEAR => {
            for r in pr.registrations.iter().filter(|r| &r.nexus != nexus) {
                notify.push((r.nexus.clone(), sense::RESERVATIONS_PREEMPTED));
            }
            pr.registrations.clear();
            pr.reservation = None;
            pr.generation = pr.generation.wrapping_add(1);
        }
        PREEMPT | PREEMPT_AND_ABORT => {
            let kind = kind.unwrap_or(PrType::WriteExclusive);
            let preempted = preempt(pr, nexus, sa_key, kind)?;
            match preempted {
                None => return CONFLICT,
                Some(gone) => {
                    for n in gone {
                        notify.push((n, sense::REGISTRATIONS_PREEMPTED));
                    }
                }
            }
            pr.generation = pr.generation.wrapping_add(1);
        }
        _ => return Err(Sense::invalid_cdb_field(1, Some(4))),
    }
    drop(st);
    for (n, s) in notify {
        lun.unit_attentions.establish(&n, s);
    }
    Ok(status::GOOD)
}

/// PREEMPT (SPC-4 5.9.11.4). Returns the nexuses whose registrations were
/// removed, or None when SERVICE ACTION RESERVATION KEY matched nothing
/// (RESERVATION CONFLICT).
fn preempt(pr: &mut PrState, nexus: &Nexus, sa_key: u64, kind: PrType) -> Result<Option<Vec<Nexus>>, Sense> {
    let remove_key = |pr: &mut PrState, pred: &dyn Fn(&Registration) -> bool| -> Vec<Nexus> {
        let gone: Vec<Nexus> = pr.registrations.iter().filter(|r| pred(r)).map(|r| r.nexus.clone()).collect();
        pr.registrations.retain(|r| !pred(r));
        gone
    };
    let reservation = pr.reservation.clone();
    match reservation {
        // An all-registrants reservation with key 0: everyone else goes, we hold it.
        Some(r) if r.kind.all_registrants() && sa_key == 0 => {
            let gone = remove_key(pr, &|x: &Registration| &x.nexus != nexus);
            pr.reservation = Some(Reservation { holder: nexus.clone(), kind });
            Ok(Some(gone))
        }
        // Preempting the holder: take over the reservation.
        Some(r) if !r.kind.all_registrants() && pr.key_of(&r.holder) == Some(sa_key) => {
            let gone = remove_key(pr, &|x: &Registration| x.key == sa_key && &x.nexus != nexus);
            pr.reservation = Some(Reservation { holder: nexus.clone(), kind });
            Ok(Some(gone))
        }
        // Otherwise only registrations go; the reservation stays.
        _ => {
            if sa_key == 0 {
                return Err(Sense::invalid_param_field(8, None));
            }
            let gone = remove_key(pr, &|x: &Registration| x.key == sa_key);
            if gone.is_empty() {
                return Ok(None);
            }
            // The holder of a non-AR reservation may have been among them.
            if let Some(r) = &pr.reservation {
                if !r.kind.all_registrants() && gone.contains(&r.holder) {
                    pr.reservation = None;
                }
            }
            if pr.registrations.is_empty() {
                pr.reservation = None;
            }
            Ok(Some(gone))
        }
    }
}
