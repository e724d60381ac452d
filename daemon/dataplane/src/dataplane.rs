//! The data path as one object: namespaces, portals, volumes and targets in,
//! event loops and the namespace helper underneath. `python.rs` exposes
//! exactly this API; Rust tests use it directly.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::SocketAddr;
use std::os::fd::{BorrowedFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use netcfgd_scsi::{LogicalUnit, LuOptions};

use crate::budget::{NsUsage, NETNS_CONNECTIONS, NETNS_WRITE_BUDGET, TOTAL_WRITE_BUDGET};
use crate::iscsi::conn::Timers;
use crate::iscsi::params::Limits;
use crate::netns::NetnsHelper;
use crate::reactor::{ListenerSpec, Reactor};
use crate::registry::{self, Access, Namespace, Registry};
use crate::ublk::{DeviceInfo, Ublk, UblkOptions};

/// A listening portal we made.
struct Portal {
    id: u64,
    alive: Arc<AtomicBool>,
    ns_identity: u64,
    cookie: Option<u64>,
}

/// Options for `Dataplane::start`.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Event loops; 0: one per CPU.
    pub threads: usize,
    pub timers: Timers,
    /// Batch backing I/O on io_uring (docs/dataplane.md "Batched backing
    /// I/O"); where the kernel refuses io_uring the loops run synchronously.
    pub io_uring: bool,
    /// Batch writes too (off: on ext4 they go through io_uring's worker
    /// thread and measured slower than pwrite).
    pub batch_writes: bool,
    /// Memory and connection limits (crate::budget, docs/dataplane.md).
    pub budgets: Budgets,
}

/// What untrusted initiators may make the data path hold.
#[derive(Clone, Copy, Debug)]
pub struct Budgets {
    /// Bytes of write data waiting for Data-Out, all namespaces together.
    pub write_bytes: u64,
    /// The same per namespace.
    pub netns_write_bytes: u64,
    /// The same per connection (at least the largest write, 64 MiB, or
    /// such writes are always refused).
    pub conn_write_bytes: u64,
    /// Connections per namespace, logged in or logging in.
    pub netns_connections: u64,
}

impl Default for Budgets {
    fn default() -> Budgets {
        Budgets {
            write_bytes: TOTAL_WRITE_BUDGET,
            netns_write_bytes: NETNS_WRITE_BUDGET,
            conn_write_bytes: Limits::default().max_pending_write,
            netns_connections: NETNS_CONNECTIONS,
        }
    }
}

impl Default for Options {
    fn default() -> Options {
        Options { threads: 0, timers: Timers::default(), io_uring: true, batch_writes: false, budgets: Budgets::default() }
    }
}

/// A snapshot for `stats()`.
#[derive(Debug, Default)]
pub struct Stats {
    pub threads: usize,
    /// "io_uring", or "sync (why)".
    pub io_engine: String,
    pub counters: BTreeMap<&'static str, u64>,
    /// (netns, iqn, sessions, luns)
    pub targets: Vec<(String, String, u64, Vec<u64>)>,
    /// (netns, portal, listener's SO_NETNS_COOKIE)
    pub portals: Vec<(String, String, Option<u64>)>,
    /// (name, identity)
    pub namespaces: Vec<(String, u64)>,
    pub volumes: Vec<(String, u64, u32)>,
    /// Write data reserved now, and the limit (all namespaces).
    pub write_budget: (u64, u64),
    pub ublk: Vec<DeviceInfo>,
}

pub struct Dataplane {
    registry: Arc<Registry>,
    reactor: Reactor,
    helper: NetnsHelper,
    portals: Mutex<HashMap<(String, SocketAddr), Portal>>,
    next_listener: AtomicU64,
    /// LUN -> volume name, per (netns, iqn): what set_target last asked for.
    lun_maps: Mutex<HashMap<(String, String), BTreeMap<u64, String>>>,
    budgets: Budgets,
    /// The volumes served as local block devices too.
    ublk: Ublk,
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// Who may own a backing and how open it may be: tenants' data is ours
/// alone (docs/security.md). A regular file: owned by the user we run as,
/// no access for group or others (like CHAP secret files). A block device:
/// owned by that user, nothing for others (its group is the system's disk
/// group by convention).
fn backing_policy(path: &Path, meta: &std::fs::Metadata) -> io::Result<()> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    // SAFETY: geteuid has no preconditions.
    let us = unsafe { libc::geteuid() };
    let shown = path.display();
    let refuse = |msg: String| Err(io::Error::new(io::ErrorKind::PermissionDenied, msg));
    let owner = if us == 0 { "root".to_string() } else { format!("uid {us}") };
    if meta.uid() != us {
        return refuse(format!("{shown} is owned by uid {}, not {owner}: another user could read or change the \
                               tenant's data; chown {} {shown} if it is the right file", meta.uid(), if us == 0 { "root:root".to_string() } else { us.to_string() }));
    }
    let mode = meta.mode() & 0o7777;
    let too_open = if meta.file_type().is_block_device() { mode & 0o007 } else { mode & 0o077 };
    if too_open != 0 {
        let fix = if meta.file_type().is_block_device() { format!("chmod o-rwx {shown}") } else { format!("chmod 600 {shown}") };
        return refuse(format!("{shown} has mode {mode:04o}: other users could read or change the tenant's data; {fix}"));
    }
    Ok(())
}

/// An open error said for an operator.
fn open_error(path: &Path, e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ELOOP) => format!(
            "{} is a symbolic link, which is never followed (anyone who can change the link could swap the \
             tenant's disk); name the file itself: backing $(readlink -f {})",
            path.display(),
            path.display()
        ),
        _ if e.kind() == io::ErrorKind::PermissionDenied && e.raw_os_error().is_none() => e.to_string(),
        _ => format!("cannot open {}: {e}", path.display()),
    }
}

/// FNV-1a: stable volume serials and NAA identifiers from names.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

impl Dataplane {
    pub fn start(opts: Options) -> io::Result<Dataplane> {
        let threads = if opts.threads == 0 {
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
        } else {
            opts.threads
        };
        let registry = Arc::new(Registry::new());
        registry.write_bytes.set_limit(opts.budgets.write_bytes);
        let limits = Limits { max_pending_write: opts.budgets.conn_write_bytes, ..Limits::default() };
        let reactor = Reactor::start(threads, registry.clone(), limits, opts.timers, opts.io_uring, opts.batch_writes)?;
        let helper = NetnsHelper::start(registry.clone())?;
        Ok(Dataplane {
            registry,
            reactor,
            helper,
            portals: Mutex::new(HashMap::new()),
            next_listener: AtomicU64::new(0),
            lun_maps: Mutex::new(HashMap::new()),
            budgets: opts.budgets,
            ublk: Ublk::new(),
        })
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Add a namespace (we keep a duplicate of `fd`). Re-adding a name with
    /// the same identity changes nothing; with another identity the old
    /// namespace's listeners and sessions close and its portals are
    /// forgotten: add them again for the new one.
    pub fn add_namespace(&self, name: &str, fd: RawFd, identity: u64) -> io::Result<()> {
        if let Some(existing) = self.registry.namespace(name) {
            if existing.identity == identity {
                return Ok(());
            }
            self.remove_namespace(name);
        }
        // SAFETY: the caller's fd is valid for this call; we keep a duplicate.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()?;
        self.registry.add_namespace(Namespace {
            name: name.to_string(),
            identity,
            fd,
            alive: Arc::new(AtomicBool::new(true)),
            usage: Arc::new(NsUsage::new(self.budgets.netns_connections, self.budgets.netns_write_bytes)),
        });
        Ok(())
    }

    /// Remove a namespace: its listeners and sessions close. Its targets stay
    /// configured and are served again if the name comes back.
    pub fn remove_namespace(&self, name: &str) -> bool {
        if self.registry.remove_namespace(name).is_none() {
            return false;
        }
        let mut portals = self.portals.lock().unwrap_or_else(|e| e.into_inner());
        let gone: Vec<_> = portals.keys().filter(|(n, _)| n == name).cloned().collect();
        for key in gone {
            if let Some(p) = portals.remove(&key) {
                p.alive.store(false, Ordering::Release);
                self.reactor.remove_listener(p.id);
            }
        }
        drop(portals);
        self.reactor.sweep();
        true
    }

    /// Listen on `addr` inside namespace `netns` (made on the helper thread).
    pub fn add_portal(&self, netns: &str, addr: SocketAddr) -> io::Result<()> {
        let ns = self
            .registry
            .namespace(netns)
            .ok_or_else(|| invalid(format!("namespace {netns:?} is not known to the data path; add it first")))?;
        let key = (netns.to_string(), addr);
        if let Some(p) = self.portals.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            if p.ns_identity == ns.identity {
                return Ok(());
            }
        }
        let made = self.helper.listen(ns.clone(), addr).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot listen on {addr} in namespace {netns:?}: {e}"))
        })?;
        let id = self.next_listener.fetch_add(1, Ordering::Relaxed);
        let alive = Arc::new(AtomicBool::new(true));
        self.reactor.add_listener(ListenerSpec {
            id,
            listener: made.listener,
            netns: netns.to_string(),
            ns_identity: ns.identity,
            ns_alive: ns.alive.clone(),
            portal_alive: alive.clone(),
            usage: ns.usage.clone(),
        });
        let old = self.portals.lock().unwrap_or_else(|e| e.into_inner()).insert(
            key,
            Portal { id, alive, ns_identity: ns.identity, cookie: made.cookie },
        );
        if let Some(old) = old {
            old.alive.store(false, Ordering::Release);
            self.reactor.remove_listener(old.id);
        }
        Ok(())
    }

    /// Stop listening on a portal; the sessions that came through it close.
    pub fn remove_portal(&self, netns: &str, addr: SocketAddr) -> bool {
        let p = self.portals.lock().unwrap_or_else(|e| e.into_inner()).remove(&(netns.to_string(), addr));
        match p {
            Some(p) => {
                p.alive.store(false, Ordering::Release);
                self.reactor.remove_listener(p.id);
                self.reactor.sweep();
                true
            }
            None => false,
        }
    }

    /// Open (or create, sparse, 0600, when `size` is given and the file is
    /// missing) a backing file or block device as a volume. The backing must
    /// not be a symbolic link, must be ours (owned by the user we run as) and
    /// private (`backing_policy`). An existing file shorter than `size` is
    /// grown to it; a longer one is refused (shrinking drops data).
    ///
    /// A name already served is re-opened: the new unit replaces the old at
    /// every LUN that exported it (their nexuses get MEDIUM MAY HAVE
    /// CHANGED) and the old one is closed when its last command ends.
    pub fn add_volume(&self, name: &str, path: &Path, size: Option<u64>, block_size: u32, read_only: bool) -> io::Result<()> {
        if let Some(id) = self.ublk.dev_id(name) {
            // The device serves the unit it was made with: re-create it for a new one.
            return Err(invalid(format!("volume {name} is served as /dev/ublkb{id}; remove the ublk device before re-opening it")));
        }
        let h = fnv1a(name);
        let opts = LuOptions {
            block_size,
            size_bytes: size,
            read_only,
            serial: format!("{:016x}", h),
            // NAA 3: locally assigned (SPC-4 7.8.6.6.3).
            naa: (3u64 << 60) | (h & 0x0fff_ffff_ffff_ffff),
        };
        let lu = LogicalUnit::open_checked(path, opts, |meta| backing_policy(path, meta))
            .map_err(|e| io::Error::new(e.kind(), format!("volume {name}: {}", open_error(path, &e))))?;
        if let Some(size) = size.filter(|_| lu.is_file()) {
            let bytes = lu.blocks() * u64::from(block_size);
            let wanted = size - size % u64::from(block_size);
            if bytes > wanted {
                return Err(invalid(format!(
                    "volume {name}: {} is {bytes} bytes, more than size {wanted}; shrinking would drop its end: \
                     set size to {bytes} (or truncate the file yourself)",
                    path.display()
                )));
            }
            if bytes < wanted && !read_only {
                lu.resize(wanted).map_err(|e| io::Error::new(e.kind(), format!("volume {name}: cannot grow {} to {wanted} bytes: {e}", path.display())))?;
            }
        }
        let lu = Arc::new(lu);
        let maps = self.lun_maps.lock().unwrap_or_else(|e| e.into_inner());
        self.registry.add_volume(name, lu.clone());
        // A re-opened volume: its targets serve the new unit from now on.
        for ((netns, iqn), luns) in maps.iter() {
            let Some(entry) = self.registry.target_entry_if_exists(netns, iqn) else { continue };
            for (lun, vol) in luns {
                if vol == name {
                    registry::write(&entry.block_sizes).insert(*lun, lu.block_size());
                    entry.scsi.add_lun(*lun, lu.clone());
                }
            }
        }
        Ok(())
    }

    /// Resize a served file-backed volume to `size` bytes (re-read a block
    /// device's size), online: every LUN exporting it reports CAPACITY DATA
    /// HAS CHANGED. A shrink is refused while any such target has sessions.
    /// Returns (blocks before, blocks after).
    pub fn resize_volume(&self, name: &str, size: u64) -> io::Result<(u64, u64)> {
        if let Some(id) = self.ublk.dev_id(name) {
            // This driver cannot resize a ublk device (UPDATE_SIZE is Linux 6.16+).
            return Err(invalid(format!("volume {name} is served as /dev/ublkb{id}; remove the ublk device before resizing it")));
        }
        let lu = self.registry.volume(name).ok_or_else(|| invalid(format!("volume {name} is not added")))?;
        let before = lu.blocks();
        let bs = u64::from(lu.block_size());
        let after_bytes = size - size % bs;
        let targets: Vec<_> = self.registry.targets().into_iter().filter(|t| t.scsi.exports(&lu)).collect();
        if lu.is_file() && after_bytes < before * bs {
            if let Some(t) = targets.iter().find(|t| t.sessions.load(Ordering::Relaxed) > 0) {
                return Err(invalid(format!(
                    "volume {name}: not shrunk from {} to {after_bytes} bytes: target {} has {} live session(s), \
                     whose initiators may use the blocks cut off; log them out first, or keep size {}",
                    before * bs,
                    t.iqn,
                    t.sessions.load(Ordering::Relaxed),
                    before * bs
                )));
            }
        }
        let after = lu.resize(after_bytes).map_err(|e| io::Error::new(e.kind(), format!("volume {name}: cannot resize to {after_bytes} bytes: {e}")))?;
        if after != before {
            for t in &targets {
                t.scsi.capacity_changed(&lu);
            }
        }
        Ok((before, after))
    }

    pub fn remove_volume(&self, name: &str) -> io::Result<()> {
        if let Some(id) = self.ublk.dev_id(name) {
            return Err(invalid(format!("volume {name} is still served as /dev/ublkb{id}; remove the ublk device first")));
        }
        let maps = self.lun_maps.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(((netns, iqn), _)) = maps.iter().find(|(_, m)| m.values().any(|v| v == name)) {
            return Err(invalid(format!(
                "volume {name} is still exported by target {iqn} (namespace {netns:?}); remove it from the target first"
            )));
        }
        drop(maps);
        self.registry.remove_volume(name);
        Ok(())
    }

    /// Serve volume `name` also as a local ublk block device, adopting the
    /// one an earlier process left when there is one (src/ublk.rs). Returns
    /// (device number, adopted).
    pub fn add_ublk(&self, name: &str, opts: UblkOptions) -> io::Result<(u32, bool)> {
        let lu = self
            .registry
            .volume(name)
            .ok_or_else(|| invalid(format!("volume {name:?} is not added; add the volume before its ublk device")))?;
        self.ublk.add(name, lu, opts)
    }

    /// Stop and delete volume `name`'s ublk device; refused while mounted.
    pub fn remove_ublk(&self, name: &str) -> io::Result<bool> {
        self.ublk.remove(name)
    }

    /// Create or update a target. Sessions of other targets are untouched;
    /// this target's sessions keep running with the new LUN map (access
    /// rules apply from the next login).
    pub fn set_target(&self, netns: &str, iqn: &str, luns: &BTreeMap<u64, String>, access: Access, max_connections: u64) -> io::Result<()> {
        let mut volumes = BTreeMap::new();
        for (lun, vol) in luns {
            let lu = self
                .registry
                .volume(vol)
                .ok_or_else(|| invalid(format!("target {iqn}: LUN {lun} names volume {vol:?}, which is not added")))?;
            volumes.insert(*lun, lu);
        }
        let (entry, _new) = self.registry.target_entry(netns, iqn);
        *entry.access.write().unwrap_or_else(|e| e.into_inner()) = access;
        // Sessions already past the new limit stay; new logins wait for room.
        entry.connections.set_limit(max_connections);
        let mut maps = self.lun_maps.lock().unwrap_or_else(|e| e.into_inner());
        let current = maps.entry((netns.to_string(), iqn.to_string())).or_default();
        let mut block_sizes = registry::write(&entry.block_sizes);
        for lun in current.keys().filter(|l| !luns.contains_key(l)).cloned().collect::<Vec<_>>() {
            entry.scsi.remove_lun(lun);
            current.remove(&lun);
            block_sizes.remove(&lun);
        }
        for (lun, lu) in volumes {
            let name = &luns[&lun];
            if current.get(&lun) != Some(name) {
                block_sizes.insert(lun, lu.block_size());
                entry.scsi.add_lun(lun, lu);
                current.insert(lun, name.clone());
            }
        }
        Ok(())
    }

    pub fn remove_target(&self, netns: &str, iqn: &str) -> bool {
        self.lun_maps.lock().unwrap_or_else(|e| e.into_inner()).remove(&(netns.to_string(), iqn.to_string()));
        let removed = self.registry.remove_target(netns, iqn).is_some();
        if removed {
            self.reactor.sweep();
        }
        removed
    }

    pub fn stats(&self) -> Stats {
        let c = &self.registry.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let counters = BTreeMap::from([
            ("setns_calls", get(&c.setns_calls)),
            ("pdus_in", get(&c.pdus_in)),
            ("pdus_out", get(&c.pdus_out)),
            ("bytes_in", get(&c.bytes_in)),
            ("bytes_out", get(&c.bytes_out)),
            ("scsi_commands", get(&c.scsi_commands)),
            ("read_bytes", get(&c.read_bytes)),
            ("write_bytes", get(&c.write_bytes)),
            ("logins", get(&c.logins)),
            ("login_failures", get(&c.login_failures)),
            ("connections", get(&c.connections)),
            ("connections_closed", get(&c.connections_closed)),
            ("protocol_errors", get(&c.protocol_errors)),
            ("digest_errors", get(&c.digest_errors)),
            ("nops_sent", get(&c.nops_sent)),
            ("io_batches", get(&c.io_batches)),
            ("io_batched", get(&c.io_batched)),
            ("io_uring_enters", get(&c.io_uring_enters)),
            ("ublk_ios", get(&self.ublk.counters.ios)),
            ("ublk_read_bytes", get(&self.ublk.counters.read_bytes)),
            ("ublk_write_bytes", get(&self.ublk.counters.write_bytes)),
            ("ublk_errors", get(&self.ublk.counters.errors)),
        ]);
        let targets = self
            .registry
            .targets()
            .iter()
            .map(|t| (t.netns.clone(), t.iqn.clone(), t.sessions.load(Ordering::Relaxed), t.scsi.luns()))
            .collect();
        let mut portals: Vec<_> = self
            .portals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|((ns, addr), p)| (ns.clone(), addr.to_string(), p.cookie))
            .collect();
        portals.sort();
        let mut namespaces: Vec<_> = self.registry.namespaces().iter().map(|n| (n.name.clone(), n.identity)).collect();
        namespaces.sort();
        let mut volumes: Vec<_> = self
            .registry
            .volume_names()
            .into_iter()
            .filter_map(|n| self.registry.volume(&n).map(|lu| (n, lu.blocks(), lu.block_size())))
            .collect();
        volumes.sort();
        let write_budget = (self.registry.write_bytes.used(), self.registry.write_bytes.limit());
        let ublk = self.ublk.devices();
        Stats { threads: self.reactor.threads(), io_engine: self.registry.io_engine(), counters, targets, portals, namespaces, volumes, write_budget, ublk }
    }

    /// Close every connection and listener and stop the threads. ublk
    /// devices stay, with their I/O queued in the kernel, for the next
    /// process to adopt (src/ublk.rs).
    pub fn shutdown(&self) {
        self.reactor.stop();
        self.helper.stop();
    }
}

impl Drop for Dataplane {
    fn drop(&mut self) {
        self.shutdown();
    }
}
