//! The one thread that enters network namespaces. Listening sockets are made
//! here, inside the namespace they serve; a socket keeps its namespace for
//! life, so the event loops that accept and serve on it never switch. The
//! thread remembers where it is and skips setns() when already there; every
//! setns() it does is counted (`stats()["setns_calls"]`).

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::registry::{Counters, Namespace, Registry};

type Job = Box<dyn FnOnce(&mut Position) + Send>;

/// Which namespace the helper thread is in, by identity (None: the one the
/// process started in, not yet left).
pub struct Position {
    current: Option<u64>,
    registry: Arc<Registry>,
}

impl Position {
    fn enter(&mut self, ns: &Namespace) -> io::Result<()> {
        if self.current == Some(ns.identity) {
            return Ok(());
        }
        // SAFETY: setns on an fd we own; it only changes this thread.
        let r = unsafe { libc::setns(ns.fd.as_raw_fd(), libc::CLONE_NEWNET) };
        Counters::add(&self.registry.counters.setns_calls, 1);
        if r != 0 {
            self.current = None;
            return Err(io::Error::last_os_error());
        }
        self.current = Some(ns.identity);
        Ok(())
    }
}

pub struct NetnsHelper {
    tx: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// What a listener made in a namespace reports about itself.
pub struct MadeListener {
    pub listener: TcpListener,
    /// SO_NETNS_COOKIE of the socket: which namespace it really is in.
    pub cookie: Option<u64>,
}

impl NetnsHelper {
    pub fn start(registry: Arc<Registry>) -> io::Result<NetnsHelper> {
        let (tx, rx) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new().name("netcfgd-netns".into()).spawn(move || {
            let mut position = Position { current: None, registry };
            while let Ok(job) = rx.recv() {
                job(&mut position);
            }
        })?;
        Ok(NetnsHelper { tx: Mutex::new(Some(tx)), thread: Mutex::new(Some(thread)) })
    }

    fn run<T: Send + 'static>(&self, f: impl FnOnce(&mut Position) -> T + Send + 'static) -> io::Result<T> {
        let (reply_tx, reply_rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |p| {
            let _ = reply_tx.send(f(p));
        });
        let gone = || io::Error::new(io::ErrorKind::BrokenPipe, "the namespace helper thread has stopped");
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).as_ref().ok_or_else(gone)?.send(job).map_err(|_| gone())?;
        reply_rx.recv().map_err(|_| gone())
    }

    /// A non-blocking listening socket on `addr` inside `ns`.
    pub fn listen(&self, ns: Arc<Namespace>, addr: SocketAddr) -> io::Result<MadeListener> {
        self.run(move |p| {
            p.enter(&ns)?;
            let listener = TcpListener::bind(addr)?;
            listener.set_nonblocking(true)?;
            let cookie = netns_cookie(listener.as_raw_fd());
            Ok(MadeListener { listener, cookie })
        })?
    }

    pub fn stop(&self) {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
    }
}

impl Drop for NetnsHelper {
    fn drop(&mut self) {
        self.stop();
    }
}

/// SO_NETNS_COOKIE (Linux 5.14+): the namespace a socket belongs to.
pub fn netns_cookie(fd: i32) -> Option<u64> {
    const SO_NETNS_COOKIE: libc::c_int = 71;
    let mut v: u64 = 0;
    let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
    // SAFETY: v and len are valid for getsockopt to write.
    let r = unsafe {
        libc::getsockopt(fd, libc::SOL_SOCKET, SO_NETNS_COOKIE, (&mut v as *mut u64).cast(), &mut len)
    };
    (r == 0).then_some(v)
}
