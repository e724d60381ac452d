//! Reservation state of one logical unit and the conflict check every
//! command passes through (SPC-4 5.9: persistent reservations; SPC-2 5.5.1:
//! RESERVE(6)/RELEASE(6)). RESERVE(6)/RELEASE(6) themselves live here too.
//!
//! The check is lock-free while no reservation exists (an atomic flag), so
//! the I/O path pays one load on an unreserved LUN.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::locks;
use crate::opcodes::{CommandInfo, PrClass, PERSISTENT_RESERVE_IN, PERSISTENT_RESERVE_OUT};
use crate::pr::PrState;
use crate::status;
use crate::target::{Cmd, CmdResult};
use crate::Nexus;

#[derive(Default)]
pub(crate) struct ReservationState {
    /// The nexus holding an SPC-2 RESERVE(6) reservation.
    pub reserve6: Option<Nexus>,
    pub pr: PrState,
}

#[derive(Default)]
pub(crate) struct Reservations {
    /// True while a RESERVE(6) or a persistent reservation exists.
    restricted: AtomicBool,
    state: Mutex<ReservationState>,
}

/// Access to the state; dropping it refreshes the fast-path flag, so no
/// change can forget to.
pub(crate) struct StateGuard<'a> {
    guard: MutexGuard<'a, ReservationState>,
    flag: &'a AtomicBool,
}

impl std::ops::Deref for StateGuard<'_> {
    type Target = ReservationState;
    fn deref(&self) -> &ReservationState {
        &self.guard
    }
}
impl std::ops::DerefMut for StateGuard<'_> {
    fn deref_mut(&mut self) -> &mut ReservationState {
        &mut self.guard
    }
}
impl Drop for StateGuard<'_> {
    fn drop(&mut self) {
        let restricted = self.guard.reserve6.is_some() || self.guard.pr.reservation.is_some();
        self.flag.store(restricted, Ordering::Release);
    }
}

impl Reservations {
    pub fn lock(&self) -> StateGuard<'_> {
        StateGuard { guard: locks::lock(&self.state), flag: &self.restricted }
    }

    /// RESERVATION CONFLICT if `nexus` may not run this command now.
    pub fn conflict(&self, nexus: &Nexus, info: &CommandInfo, _cdb: &[u8]) -> Option<u8> {
        if !self.restricted.load(Ordering::Acquire) {
            return None;
        }
        let st = self.lock();
        if let Some(holder) = &st.reserve6 {
            // SPC-4 5.9.3: while a RESERVE(6) reservation exists, PERSISTENT
            // RESERVE IN and OUT conflict regardless of initiator.
            let persistent = matches!(info.opcode, PERSISTENT_RESERVE_IN | PERSISTENT_RESERVE_OUT);
            if persistent || (holder != nexus && !info.under_reserve6) {
                return Some(status::RESERVATION_CONFLICT);
            }
            return None;
        }
        if st.pr.may_access(nexus) {
            return None;
        }
        let exclusive_access = st.pr.reservation.as_ref().map_or(false, |r| r.kind.is_exclusive_access());
        let conflict = match info.pr {
            PrClass::Allowed => false,
            PrClass::ReadLike => exclusive_access,
            PrClass::Conflict => true,
        };
        conflict.then_some(status::RESERVATION_CONFLICT)
    }

    /// LOGICAL UNIT RESET releases an SPC-2 reservation, not persistent ones.
    pub fn reset(&self) {
        self.lock().reserve6 = None;
    }

    pub fn nexus_lost(&self, nexus: &Nexus) {
        let mut st = self.lock();
        if st.reserve6.as_ref() == Some(nexus) {
            st.reserve6 = None;
        }
    }
}

/// RESERVE(6) (SPC-2 7.21). SPC-4 5.9.3: while any persistent reservation
/// registration exists, RESERVE and RELEASE conflict.
pub fn reserve6(cmd: &mut Cmd) -> CmdResult {
    let mut st = cmd.lun.reservations.lock();
    if st.pr.has_registrations() {
        return Ok(status::RESERVATION_CONFLICT);
    }
    match &st.reserve6 {
        Some(holder) if holder != cmd.nexus => Ok(status::RESERVATION_CONFLICT),
        _ => {
            st.reserve6 = Some(cmd.nexus.clone());
            Ok(status::GOOD)
        }
    }
}

/// RELEASE(6): releases our own reservation; releasing one we do not hold
/// is GOOD and changes nothing (SPC-2 7.17).
pub fn release6(cmd: &mut Cmd) -> CmdResult {
    let mut st = cmd.lun.reservations.lock();
    if st.pr.has_registrations() {
        return Ok(status::RESERVATION_CONFLICT);
    }
    if st.reserve6.as_ref() == Some(cmd.nexus) {
        st.reserve6 = None;
    }
    Ok(status::GOOD)
}
