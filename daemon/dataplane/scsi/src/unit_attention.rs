//! Unit attention conditions (SAM-5 5.14): per I_T nexus queues of sense
//! data reported, one per command, before any command other than INQUIRY,
//! REPORT LUNS and REQUEST SENSE runs. An atomic flag keeps the common case
//! (nothing pending anywhere) lock-free on the I/O path.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::locks::lock;
use crate::sense::Sense;
use crate::Nexus;

/// A bound on queued conditions per nexus, so an initiator that never reads
/// them cannot grow memory without limit; the oldest are kept (SAM-5 lets a
/// target drop conditions it cannot hold).
const MAX_PENDING_PER_NEXUS: usize = 16;

#[derive(Default)]
pub(crate) struct UnitAttentions {
    any_pending: AtomicBool,
    pending: Mutex<HashMap<Nexus, VecDeque<Sense>>>,
}

impl UnitAttentions {
    /// Establishes `sense` for `nexus`, unless the same condition is already queued.
    pub fn establish(&self, nexus: &Nexus, sense: Sense) {
        let mut map = lock(&self.pending);
        let q = map.entry(nexus.clone()).or_default();
        if !q.contains(&sense) && q.len() < MAX_PENDING_PER_NEXUS {
            q.push_back(sense);
        }
        self.any_pending.store(true, Ordering::Release);
    }

    /// Removes and returns the oldest condition pending for `nexus`.
    pub fn take(&self, nexus: &Nexus) -> Option<Sense> {
        if !self.any_pending.load(Ordering::Acquire) {
            return None;
        }
        let mut map = lock(&self.pending);
        let sense = map.get_mut(nexus).and_then(|q| q.pop_front());
        if map.get(nexus).map_or(false, |q| q.is_empty()) {
            map.remove(nexus);
        }
        self.any_pending.store(!map.is_empty(), Ordering::Release);
        sense
    }

    /// Forgets everything pending for a nexus that went away.
    pub fn forget(&self, nexus: &Nexus) {
        let mut map = lock(&self.pending);
        map.remove(nexus);
        self.any_pending.store(!map.is_empty(), Ordering::Release);
    }
}
