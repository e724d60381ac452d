//! The Python face of the data path (`netcfgd._dataplane`). One class,
//! `Dataplane`; every call that may block (making a listener on the
//! namespace thread, opening a backing file, stopping the loops) releases
//! the GIL. Documented in docs/dataplane.md.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use crate::budget::TARGET_CONNECTIONS;
use crate::dataplane::{Budgets, Dataplane, Options};
use crate::iscsi::conn::Timers;
use crate::registry::{Access, Secret};
use crate::ublk::{self, UblkOptions};

fn to_py(e: io::Error) -> PyErr {
    match e.kind() {
        io::ErrorKind::InvalidInput => PyValueError::new_err(e.to_string()),
        // Our own messages (already saying the path and the cause); a device
        // in use keeps its errno (EBUSY) for callers that wait for it.
        _ if e.kind() == io::ErrorKind::ResourceBusy && e.raw_os_error().is_none() => {
            PyOSError::new_err((libc::EBUSY, e.to_string()))
        }
        _ if e.raw_os_error().is_none() => PyOSError::new_err(e.to_string()),
        _ => PyOSError::new_err((e.raw_os_error().unwrap_or(0), e.to_string())),
    }
}

fn socket_addr(addr: &str, port: u16) -> PyResult<SocketAddr> {
    let ip: IpAddr = addr
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| PyValueError::new_err(format!("portal address {addr:?} is not an IPv4 or IPv6 address")))?;
    Ok(SocketAddr::new(ip, port))
}

/// A CHAP pair from Python: (user, secret) with the secret as str or bytes.
fn secret(pair: Option<(String, Bound<'_, PyAny>)>) -> PyResult<Option<Secret>> {
    let Some((user, s)) = pair else { return Ok(None) };
    let secret = if let Ok(b) = s.downcast::<PyBytes>() {
        b.as_bytes().to_vec()
    } else if let Ok(t) = s.downcast::<PyString>() {
        t.to_str()?.as_bytes().to_vec()
    } else {
        return Err(PyValueError::new_err("a CHAP secret must be str or bytes"));
    };
    if user.is_empty() || secret.is_empty() {
        return Err(PyValueError::new_err("a CHAP user name and secret must not be empty"));
    }
    Ok(Some(Secret { user, secret }))
}

/// The embedded multi-namespace iSCSI target.
#[pyclass(name = "Dataplane", module = "netcfgd._dataplane", frozen)]
struct PyDataplane {
    inner: Arc<Dataplane>,
}

#[pymethods]
impl PyDataplane {
    /// Start the event loops (`threads`, default one per CPU) and the
    /// namespace helper thread. `ping_idle`/`ping_timeout` (seconds): when an
    /// idle connection gets a NOP-In, and how long its answer may take.
    #[new]
    /// `io_uring=False`, or NETCFGD_IO_URING=0 in the environment, runs
    /// every backing transfer synchronously (as does a kernel that refuses
    /// io_uring; `stats()["io_engine"]` says which). `batch_writes=True`
    /// (or NETCFGD_IO_URING=writes) batches writes as well as reads.
    ///
    /// Limits on what initiators may make it hold (docs/dataplane.md "Memory
    /// and connection limits"): `write_budget` bytes of write data waiting
    /// for Data-Out in all, `netns_write_budget` per namespace,
    /// `conn_write_budget` per connection, `netns_connections` connections
    /// per namespace. None: the defaults.
    #[pyo3(signature = (threads=None, ping_idle=10.0, ping_timeout=30.0, io_uring=true, batch_writes=false,
                        write_budget=None, netns_write_budget=None, conn_write_budget=None, netns_connections=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(py: Python<'_>, threads: Option<usize>, ping_idle: f64, ping_timeout: f64, io_uring: bool, batch_writes: bool,
           write_budget: Option<u64>, netns_write_budget: Option<u64>, conn_write_budget: Option<u64>, netns_connections: Option<u64>) -> PyResult<Self> {
        if !(ping_idle > 0.0 && ping_timeout > 0.0) {
            return Err(PyValueError::new_err("ping_idle and ping_timeout must be positive"));
        }
        let d = Budgets::default();
        let budgets = Budgets {
            write_bytes: write_budget.unwrap_or(d.write_bytes),
            netns_write_bytes: netns_write_budget.unwrap_or(d.netns_write_bytes),
            conn_write_bytes: conn_write_budget.unwrap_or(d.conn_write_bytes),
            netns_connections: netns_connections.unwrap_or(d.netns_connections),
        };
        let env = std::env::var("NETCFGD_IO_URING").ok();
        let opts = Options {
            threads: threads.unwrap_or(0),
            timers: Timers {
                ping_idle: Duration::from_secs_f64(ping_idle),
                ping_timeout: Duration::from_secs_f64(ping_timeout),
            },
            io_uring: io_uring && env.as_deref() != Some("0"),
            batch_writes: batch_writes || env.as_deref() == Some("writes"),
            budgets,
        };
        let dp = py.allow_threads(|| Dataplane::start(opts)).map_err(to_py)?;
        Ok(PyDataplane { inner: Arc::new(dp) })
    }

    /// Serve namespace `name` (the fd is duplicated; `identity` is its
    /// NS_GET_ID / SO_NETNS_COOKIE). A new identity for a known name closes
    /// the old namespace's listeners and sessions.
    fn add_namespace(&self, name: &str, fd: i32, identity: u64) -> PyResult<()> {
        self.inner.add_namespace(name, fd, identity).map_err(to_py)
    }

    /// Stop serving a namespace: its listeners and sessions close. Returns
    /// False when it was not known.
    fn remove_namespace(&self, name: &str) -> bool {
        self.inner.remove_namespace(name)
    }

    /// Listen on addr:port inside namespace `netns`.
    #[pyo3(signature = (netns, addr, port=3260))]
    fn add_portal(&self, py: Python<'_>, netns: &str, addr: &str, port: u16) -> PyResult<()> {
        let sa = socket_addr(addr, port)?;
        let dp = self.inner.clone();
        let netns = netns.to_string();
        py.allow_threads(move || dp.add_portal(&netns, sa)).map_err(to_py)
    }

    #[pyo3(signature = (netns, addr, port=3260))]
    fn remove_portal(&self, netns: &str, addr: &str, port: u16) -> PyResult<bool> {
        Ok(self.inner.remove_portal(netns, socket_addr(addr, port)?))
    }

    /// Open a backing file or block device as volume `name`; with `size`
    /// (bytes), a missing file is created sparse.
    #[pyo3(signature = (name, path, size=None, block_size=512, read_only=false))]
    fn add_volume(&self, py: Python<'_>, name: &str, path: PathBuf, size: Option<u64>, block_size: u32, read_only: bool) -> PyResult<()> {
        if !matches!(block_size, 512 | 1024 | 2048 | 4096) {
            return Err(PyValueError::new_err(format!("volume {name}: block_size {block_size} must be 512, 1024, 2048 or 4096")));
        }
        let dp = self.inner.clone();
        let name = name.to_string();
        py.allow_threads(move || dp.add_volume(&name, &path, size, block_size, read_only)).map_err(to_py)
    }

    /// Resize a served volume to `size` bytes, online (initiators get
    /// CAPACITY DATA HAS CHANGED); a shrink is refused while its targets
    /// have sessions. Returns (blocks before, blocks after).
    fn resize_volume(&self, py: Python<'_>, name: &str, size: u64) -> PyResult<(u64, u64)> {
        let dp = self.inner.clone();
        let name = name.to_string();
        py.allow_threads(move || dp.resize_volume(&name, size)).map_err(to_py)
    }

    fn remove_volume(&self, name: &str) -> PyResult<()> {
        self.inner.remove_volume(name).map_err(to_py)
    }

    /// Serve volume `name` also as /dev/ublkbN (`id`: N, default the kernel
    /// picks; `queues`, `depth`), adopting the device an earlier process
    /// left. Returns (N, adopted).
    #[pyo3(signature = (name, id=None, queues=1, depth=64))]
    fn add_ublk(&self, py: Python<'_>, name: &str, id: Option<u32>, queues: u16, depth: u16) -> PyResult<(u32, bool)> {
        let dp = self.inner.clone();
        let name = name.to_string();
        py.allow_threads(move || dp.add_ublk(&name, UblkOptions { id, queues, depth })).map_err(to_py)
    }

    /// Stop and delete volume `name`'s ublk device. OSError EBUSY while it
    /// is mounted or held exclusively; False when it has none.
    fn remove_ublk(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        let dp = self.inner.clone();
        let name = name.to_string();
        py.allow_threads(move || dp.remove_ublk(&name)).map_err(to_py)
    }

    /// The ublk driver's feature bits; OSError (ENOENT) saying which module
    /// is missing when the kernel has no ublk.
    #[staticmethod]
    fn ublk_features() -> PyResult<u64> {
        ublk::driver_features().map_err(to_py)
    }

    /// Create or update target `iqn` in namespace `netns`. `luns`: {LUN:
    /// volume name}; `allow`: initiator names (empty: any); `chap` and
    /// `mutual_chap`: (user, secret) or None. `max_connections`: sessions
    /// at once (more logins get OUT OF RESOURCES).
    #[pyo3(signature = (netns, iqn, luns, allow=Vec::new(), chap=None, mutual_chap=None, max_connections=TARGET_CONNECTIONS))]
    #[allow(clippy::too_many_arguments)]
    fn set_target(
        &self,
        netns: &str,
        iqn: &str,
        luns: HashMap<u64, String>,
        allow: Vec<String>,
        chap: Option<(String, Bound<'_, PyAny>)>,
        mutual_chap: Option<(String, Bound<'_, PyAny>)>,
        max_connections: u64,
    ) -> PyResult<()> {
        let chap = secret(chap)?;
        let mutual_chap = secret(mutual_chap)?;
        if mutual_chap.is_some() && chap.is_none() {
            return Err(PyValueError::new_err(format!("target {iqn}: mutual CHAP needs CHAP for the initiator too")));
        }
        if let Some(lun) = luns.keys().find(|l| **l > 16383) {
            return Err(PyValueError::new_err(format!("target {iqn}: LUN {lun} is above 16383")));
        }
        let luns: BTreeMap<u64, String> = luns.into_iter().collect();
        self.inner.set_target(netns, iqn, &luns, Access { allow, chap, mutual_chap }, max_connections).map_err(to_py)
    }

    fn remove_target(&self, netns: &str, iqn: &str) -> bool {
        self.inner.remove_target(netns, iqn)
    }

    /// Counters and what is served. Never contains secrets.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.stats();
        let d = PyDict::new(py);
        d.set_item("threads", s.threads)?;
        d.set_item("io_engine", &s.io_engine)?;
        for (k, v) in &s.counters {
            d.set_item(*k, *v)?;
        }
        let targets = PyList::empty(py);
        for (netns, iqn, sessions, luns) in &s.targets {
            let t = PyDict::new(py);
            t.set_item("netns", netns)?;
            t.set_item("iqn", iqn)?;
            t.set_item("sessions", *sessions)?;
            t.set_item("luns", luns.clone())?;
            targets.append(t)?;
        }
        d.set_item("targets", targets)?;
        let portals = PyList::empty(py);
        for (netns, addr, cookie) in &s.portals {
            let p = PyDict::new(py);
            p.set_item("netns", netns)?;
            p.set_item("portal", addr)?;
            p.set_item("netns_cookie", *cookie)?;
            portals.append(p)?;
        }
        d.set_item("portals", portals)?;
        let namespaces = PyDict::new(py);
        for (name, identity) in &s.namespaces {
            namespaces.set_item(name, *identity)?;
        }
        d.set_item("namespaces", namespaces)?;
        let volumes = PyDict::new(py);
        for (name, blocks, bs) in &s.volumes {
            volumes.set_item(name, (*blocks, *bs))?;
        }
        d.set_item("volumes", volumes)?;
        let (used, limit) = s.write_budget;
        d.set_item("write_budget", (used, limit))?;
        let devices = PyList::empty(py);
        for u in &s.ublk {
            let e = PyDict::new(py);
            e.set_item("volume", &u.volume)?;
            e.set_item("dev_id", u.dev_id)?;
            e.set_item("queues", u.queues)?;
            e.set_item("depth", u.depth)?;
            e.set_item("recovered", u.recovered)?;
            devices.append(e)?;
        }
        d.set_item("ublk", devices)?;
        Ok(d)
    }

    /// Close every session and listener and stop the threads.
    fn shutdown(&self, py: Python<'_>) {
        let dp = self.inner.clone();
        py.allow_threads(move || dp.shutdown());
    }
}

#[pymodule]
fn _dataplane(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<PyDataplane>()?;
    Ok(())
}
