//! What the target serves, shared by every event loop: namespaces (by name,
//! with their identity), targets (per namespace), volumes, and the counters
//! behind `stats()`. Changed from Python through `Dataplane`; read by
//! connections at login and on every command.

use std::collections::HashMap;
use std::fmt;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use netcfgd_scsi::{LogicalUnit, Target as ScsiTarget};

use crate::budget::{Gauge, NsUsage, TARGET_CONNECTIONS};

/// A CHAP user name and secret. Debug never prints the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    pub user: String,
    pub secret: Vec<u8>,
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret {{ user: {:?}, secret: <{} bytes> }}", self.user, self.secret.len())
    }
}

/// Who may log in to a target, and how they prove it.
#[derive(Clone, Debug, Default)]
pub struct Access {
    /// Initiator names allowed; empty: any.
    pub allow: Vec<String>,
    /// CHAP the initiator must pass.
    pub chap: Option<Secret>,
    /// CHAP the target answers with when the initiator asks (mutual CHAP).
    pub mutual_chap: Option<Secret>,
}

impl Access {
    pub fn allows(&self, initiator: &str) -> bool {
        self.allow.is_empty() || self.allow.iter().any(|a| a.eq_ignore_ascii_case(initiator))
    }
}

/// One target: its SCSI device, access rules, and liveness.
pub struct TargetEntry {
    pub iqn: String,
    pub netns: String,
    /// Target portal group tag: every portal of a namespace is in group 1.
    pub tpgt: u16,
    pub scsi: ScsiTarget,
    /// Block size of each LUN's volume (write residuals need it).
    pub block_sizes: RwLock<std::collections::BTreeMap<u64, u32>>,
    pub access: RwLock<Access>,
    /// Cleared when the target is removed: its sessions close.
    pub alive: AtomicBool,
    pub sessions: AtomicU64,
    /// Live sessions by I_T nexus (initiator port name): a new login with the
    /// same initiator name and ISID reinstates the session (RFC 7143 6.3.5),
    /// and the old connection's flag is cleared so it closes.
    pub nexuses: Mutex<HashMap<String, Arc<AtomicBool>>>,
    /// Sessions and logins past the target check: `max-connections`.
    pub connections: Arc<Gauge>,
}

impl TargetEntry {
    /// Register a new session of `initiator_port`; the session it replaces,
    /// if any, is told to close. Returns the new session's liveness flag and
    /// whether a session was replaced.
    pub fn register_session(&self, initiator_port: &str) -> (Arc<AtomicBool>, bool) {
        let flag = Arc::new(AtomicBool::new(true));
        let old = self.nexuses.lock().unwrap_or_else(|e| e.into_inner()).insert(initiator_port.to_string(), flag.clone());
        let replaced = old.is_some_and(|o| o.swap(false, Ordering::AcqRel));
        (flag, replaced)
    }

    /// Forget a session, unless a newer one took its nexus.
    pub fn unregister_session(&self, initiator_port: &str, flag: &Arc<AtomicBool>) {
        let mut map = self.nexuses.lock().unwrap_or_else(|e| e.into_inner());
        if map.get(initiator_port).is_some_and(|f| Arc::ptr_eq(f, flag)) {
            map.remove(initiator_port);
        }
    }
}

/// A namespace as Python gave it: an fd we own and its identity.
pub struct Namespace {
    pub name: String,
    pub identity: u64,
    pub fd: OwnedFd,
    /// Cleared when the namespace is removed or replaced: its listeners and
    /// connections close.
    pub alive: Arc<AtomicBool>,
    /// Its connections and the write data they hold (crate::budget).
    pub usage: Arc<NsUsage>,
}

/// Counters for `stats()`; relaxed atomics, read without locks.
#[derive(Default)]
pub struct Counters {
    pub setns_calls: AtomicU64,
    pub pdus_in: AtomicU64,
    pub pdus_out: AtomicU64,
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    pub scsi_commands: AtomicU64,
    pub read_bytes: AtomicU64,
    pub write_bytes: AtomicU64,
    pub logins: AtomicU64,
    pub login_failures: AtomicU64,
    pub connections: AtomicU64,
    pub connections_closed: AtomicU64,
    pub protocol_errors: AtomicU64,
    pub digest_errors: AtomicU64,
    pub nops_sent: AtomicU64,
    /// Batched backing I/O (src/batch.rs): batches run, transfers in them,
    /// io_uring_enter calls they took.
    pub io_batches: AtomicU64,
    pub io_batched: AtomicU64,
    pub io_uring_enters: AtomicU64,
}

impl Counters {
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }
}

#[derive(Default)]
pub struct Registry {
    namespaces: RwLock<HashMap<String, Arc<Namespace>>>,
    targets: RwLock<HashMap<(String, String), Arc<TargetEntry>>>,
    volumes: Mutex<HashMap<String, Arc<LogicalUnit>>>,
    next_tsih: AtomicU16,
    pub counters: Counters,
    /// Each event loop's backing I/O engine ("io_uring" or "sync (why)").
    io_engines: Mutex<Vec<String>>,
    /// Write data waiting for Data-Out, all namespaces together.
    pub write_bytes: Arc<Gauge>,
}

/// A poisoned lock only means another thread panicked while holding it; the
/// maps stay consistent (every update is a single insert or remove).
pub fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}
pub fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

impl Registry {
    pub fn new() -> Registry {
        Registry { next_tsih: AtomicU16::new(1), ..Default::default() }
    }

    pub fn set_io_engine(&self, index: usize, what: String) {
        let mut e = self.io_engines.lock().unwrap_or_else(|e| e.into_inner());
        if e.len() <= index {
            e.resize(index + 1, String::new());
        }
        e[index] = what;
    }

    /// The engines of the event loops: one line when they agree.
    pub fn io_engine(&self) -> String {
        let mut e = self.io_engines.lock().unwrap_or_else(|e| e.into_inner()).clone();
        e.dedup();
        e.join("; ")
    }

    /// Add or replace a namespace. Returns the namespace it replaced (now
    /// marked dead) when the identity changed, or None.
    pub fn add_namespace(&self, ns: Namespace) -> (Arc<Namespace>, Option<Arc<Namespace>>) {
        let ns = Arc::new(ns);
        let old = write(&self.namespaces).insert(ns.name.clone(), ns.clone());
        if let Some(old) = &old {
            old.alive.store(false, Ordering::Release);
        }
        (ns, old)
    }

    pub fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        read(&self.namespaces).get(name).cloned()
    }

    pub fn namespaces(&self) -> Vec<Arc<Namespace>> {
        read(&self.namespaces).values().cloned().collect()
    }

    /// Remove a namespace; its targets stay configured (they come back with it).
    pub fn remove_namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        let old = write(&self.namespaces).remove(name);
        if let Some(old) = &old {
            old.alive.store(false, Ordering::Release);
        }
        old
    }

    pub fn add_volume(&self, name: &str, lu: Arc<LogicalUnit>) {
        self.volumes.lock().unwrap_or_else(|e| e.into_inner()).insert(name.to_string(), lu);
    }

    pub fn volume(&self, name: &str) -> Option<Arc<LogicalUnit>> {
        self.volumes.lock().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }

    pub fn remove_volume(&self, name: &str) -> Option<Arc<LogicalUnit>> {
        self.volumes.lock().unwrap_or_else(|e| e.into_inner()).remove(name)
    }

    pub fn volume_names(&self) -> Vec<String> {
        self.volumes.lock().unwrap_or_else(|e| e.into_inner()).keys().cloned().collect()
    }

    /// The target entry for (netns, iqn), creating it when new.
    pub fn target_entry(&self, netns: &str, iqn: &str) -> (Arc<TargetEntry>, bool) {
        let key = (netns.to_string(), iqn.to_string());
        if let Some(t) = read(&self.targets).get(&key) {
            return (t.clone(), false);
        }
        let mut targets = write(&self.targets);
        if let Some(t) = targets.get(&key) {
            return (t.clone(), false);
        }
        let t = Arc::new(TargetEntry {
            iqn: iqn.to_string(),
            netns: netns.to_string(),
            tpgt: 1,
            scsi: ScsiTarget::new(iqn),
            block_sizes: RwLock::default(),
            access: RwLock::new(Access::default()),
            alive: AtomicBool::new(true),
            sessions: AtomicU64::new(0),
            nexuses: Mutex::default(),
            connections: Arc::new(Gauge::new(TARGET_CONNECTIONS)),
        });
        targets.insert(key, t.clone());
        (t, true)
    }

    /// The target entry for (netns, iqn), if there is one.
    pub fn target_entry_if_exists(&self, netns: &str, iqn: &str) -> Option<Arc<TargetEntry>> {
        read(&self.targets).get(&(netns.to_string(), iqn.to_string())).cloned()
    }

    pub fn remove_target(&self, netns: &str, iqn: &str) -> Option<Arc<TargetEntry>> {
        let t = write(&self.targets).remove(&(netns.to_string(), iqn.to_string()));
        if let Some(t) = &t {
            t.alive.store(false, Ordering::Release);
        }
        t
    }

    /// A target reachable from a connection in namespace `netns` whose
    /// listener was made in the namespace with `identity`: a connection that
    /// arrived in a namespace since replaced reaches nothing.
    pub fn find_target(&self, netns: &str, identity: u64, iqn: &str) -> Option<Arc<TargetEntry>> {
        let ns = self.namespace(netns)?;
        if ns.identity != identity {
            return None;
        }
        let key = (netns.to_string(), iqn.to_string());
        read(&self.targets).get(&key).cloned()
    }

    /// Targets of a namespace, sorted by name (SendTargets).
    pub fn targets_in(&self, netns: &str) -> Vec<Arc<TargetEntry>> {
        let mut v: Vec<_> = read(&self.targets).values().filter(|t| t.netns == netns).cloned().collect();
        v.sort_by(|a, b| a.iqn.cmp(&b.iqn));
        v
    }

    pub fn targets(&self) -> Vec<Arc<TargetEntry>> {
        let mut v: Vec<_> = read(&self.targets).values().cloned().collect();
        v.sort_by(|a, b| (&a.netns, &a.iqn).cmp(&(&b.netns, &b.iqn)));
        v
    }

    /// A new session handle (never 0, RFC 7143 11.12.6).
    pub fn new_tsih(&self) -> u16 {
        loop {
            let t = self.next_tsih.fetch_add(1, Ordering::Relaxed);
            if t != 0 {
                return t;
            }
        }
    }
}
