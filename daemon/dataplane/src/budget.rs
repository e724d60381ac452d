//! Budgets that bound what untrusted initiators can make us hold: bytes of
//! write data waiting for Data-Out (per namespace and in total; per
//! connection in the session itself), connections per namespace and per
//! target. A budget is taken before anything is allocated or accepted, and
//! given back by dropping the `Permit` (RAII), so no path can leak it.
//! docs/dataplane.md "Memory and connection limits" has the defaults.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Default bytes of pending write data one namespace may hold.
pub const NETNS_WRITE_BUDGET: u64 = 256 << 20;
/// Default bytes of pending write data all namespaces together may hold.
pub const TOTAL_WRITE_BUDGET: u64 = 1 << 30;
/// Default connections (logged in or logging in) per namespace.
pub const NETNS_CONNECTIONS: u64 = 256;
/// Default sessions per target (`max-connections` on the target stanza).
pub const TARGET_CONNECTIONS: u64 = 64;

/// A limited quantity: `used` never exceeds `limit` through `take`.
#[derive(Debug)]
pub struct Gauge {
    limit: AtomicU64,
    used: AtomicU64,
}

impl Default for Gauge {
    fn default() -> Gauge {
        Gauge::new(u64::MAX)
    }
}

impl Gauge {
    pub fn new(limit: u64) -> Gauge {
        Gauge { limit: AtomicU64::new(limit), used: AtomicU64::new(0) }
    }

    pub fn set_limit(&self, limit: u64) {
        self.limit.store(limit, Ordering::Relaxed);
    }

    pub fn limit(&self) -> u64 {
        self.limit.load(Ordering::Relaxed)
    }

    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Take `n` if that stays within the limit.
    fn take(&self, n: u64) -> bool {
        let limit = self.limit();
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| u.checked_add(n).filter(|t| *t <= limit))
            .is_ok()
    }

    fn give(&self, n: u64) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }
}

/// `n` units held from one or more gauges; given back when dropped.
#[derive(Debug)]
pub struct Permit {
    gauges: Vec<Arc<Gauge>>,
    n: u64,
}

impl Permit {
    /// `n` from every gauge, or from none (None: one of them is full).
    pub fn take(gauges: &[&Arc<Gauge>], n: u64) -> Option<Permit> {
        let mut held = Vec::with_capacity(gauges.len());
        for g in gauges {
            if !g.take(n) {
                // Dropping `Permit { held }` gives back what was taken.
                drop(Permit { gauges: held, n });
                return None;
            }
            held.push(Arc::clone(g));
        }
        Some(Permit { gauges: held, n })
    }

    pub fn amount(&self) -> u64 {
        self.n
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        for g in &self.gauges {
            g.give(self.n);
        }
    }
}

/// What one namespace's connections hold. A namespace replaced by another
/// of the same name gets a fresh one; old connections keep theirs.
#[derive(Debug)]
pub struct NsUsage {
    pub connections: Arc<Gauge>,
    pub write_bytes: Arc<Gauge>,
}

impl NsUsage {
    pub fn new(connections: u64, write_bytes: u64) -> NsUsage {
        NsUsage { connections: Arc::new(Gauge::new(connections)), write_bytes: Arc::new(Gauge::new(write_bytes)) }
    }
}

impl Default for NsUsage {
    fn default() -> NsUsage {
        NsUsage::new(NETNS_CONNECTIONS, NETNS_WRITE_BUDGET)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_or_nothing_and_given_back_on_drop() {
        let a = Arc::new(Gauge::new(100));
        let b = Arc::new(Gauge::new(50));
        let p = Permit::take(&[&a, &b], 40).expect("fits both");
        assert_eq!((a.used(), b.used()), (40, 40));
        // b cannot give 20 more: nothing is taken from a either.
        assert!(Permit::take(&[&a, &b], 20).is_none());
        assert_eq!((a.used(), b.used()), (40, 40));
        drop(p);
        assert_eq!((a.used(), b.used()), (0, 0));
        let q = Permit::take(&[&a, &b], 50).expect("fits again");
        assert_eq!(q.amount(), 50);
    }

    #[test]
    fn limit_is_exact() {
        let g = Arc::new(Gauge::new(2));
        let one = Permit::take(&[&g], 1).unwrap();
        let two = Permit::take(&[&g], 1).unwrap();
        assert!(Permit::take(&[&g], 1).is_none());
        drop(one);
        assert!(Permit::take(&[&g], 1).is_some());
        drop(two);
        assert!(Permit::take(&[&g], u64::MAX).is_none(), "no overflow past the limit");
    }
}
