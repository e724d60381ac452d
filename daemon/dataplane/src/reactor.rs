//! Per-core event loops: N threads (N = cores by default, not one per
//! namespace), each with its own epoll set. Listeners are spread over the
//! loops; each accepted connection is handed round-robin to a loop, which
//! then owns it for life: non-blocking reads, the protocol run inline, and
//! one write per batch of responses.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::batch::IoEngine;
use crate::budget::NsUsage;
use crate::iscsi::conn::{Close, ConnCtx, Connection, Timers};
use crate::iscsi::params::Limits;
use crate::registry::Registry;

const EVENTFD_TOKEN: u64 = u64::MAX;
const LISTENER_BIT: u64 = 1 << 62;
const RX_INITIAL: usize = 64 * 1024;
/// Bounded by the largest PDU we accept (MaxRecvDataSegmentLength + headers).
const RX_MAX: usize = 4 * 1024 * 1024;
/// Output buffer capacity kept between passes (more is freed once sent).
const OUT_KEEP: usize = 1024 * 1024;
const TICK: Duration = Duration::from_millis(500);

/// A listening socket and what its connections inherit.
pub struct ListenerSpec {
    pub id: u64,
    pub listener: TcpListener,
    pub netns: String,
    pub ns_identity: u64,
    pub ns_alive: Arc<AtomicBool>,
    pub portal_alive: Arc<AtomicBool>,
    pub usage: Arc<NsUsage>,
}

pub enum Cmd {
    AddListener(ListenerSpec),
    RemoveListener(u64),
    Adopt(TcpStream, ConnCtx),
    /// Close whatever lost its namespace, portal or target.
    Sweep,
    Stop,
}

struct Slot {
    stream: TcpStream,
    conn: Connection,
    rx: Vec<u8>,
    start: usize,
    end: usize,
    out: Vec<u8>,
    out_pos: usize,
}

/// A handle to one loop: commands go through a channel, an eventfd wakes it.
struct Handle {
    tx: Mutex<mpsc::Sender<Cmd>>,
    efd: OwnedFd,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Handle {
    fn send(&self, cmd: Cmd) {
        let _ = self.tx.lock().unwrap_or_else(|e| e.into_inner()).send(cmd);
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our eventfd.
        unsafe { libc::write(self.efd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }
}

/// Shared by all loops.
struct Shared {
    registry: Arc<Registry>,
    limits: Limits,
    timers: Timers,
    /// Batch backing I/O on an io_uring per loop (where the kernel allows),
    /// reads only or writes too.
    io_uring: bool,
    batch_writes: bool,
    next: AtomicUsize,
    handles: Vec<Arc<Handle>>,
}

pub struct Reactor {
    shared: Arc<Mutex<Option<Arc<Shared>>>>,
    handles: Vec<Arc<Handle>>,
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl Reactor {
    pub fn start(threads: usize, registry: Arc<Registry>, limits: Limits, timers: Timers, io_uring: bool, batch_writes: bool) -> io::Result<Reactor> {
        let threads = threads.max(1);
        let mut handles = Vec::new();
        let mut receivers = Vec::new();
        for _ in 0..threads {
            // SAFETY: plain syscall; the fd is owned right away.
            let efd = unsafe { OwnedFd::from_raw_fd(cvt(libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC))?) };
            let (tx, rx) = mpsc::channel();
            handles.push(Arc::new(Handle { tx: Mutex::new(tx), efd, thread: Mutex::new(None) }));
            receivers.push(rx);
        }
        let shared = Arc::new(Shared { registry, limits, timers, io_uring, batch_writes, next: AtomicUsize::new(0), handles: handles.clone() });
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        for (i, rx) in receivers.into_iter().enumerate() {
            let shared = shared.clone();
            let efd = handles[i].efd.as_raw_fd();
            let ready = ready_tx.clone();
            let t = std::thread::Builder::new().name(format!("netcfgd-io{i}")).spawn(move || {
                let w = Worker::new(i, shared, rx, efd);
                // Its I/O engine is known now: stats() can report it.
                let _ = ready.send(());
                drop(ready);
                if let Err(e) = w.and_then(|mut w| w.run()) {
                    eprintln!("netcfgd dataplane: event loop {i} stopped: {e}");
                }
            })?;
            *handles[i].thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
        }
        drop(ready_tx);
        // Every loop reports once; a thread that died first drops its sender.
        for _ in 0..threads {
            if ready_rx.recv().is_err() {
                break;
            }
        }
        Ok(Reactor { shared: Arc::new(Mutex::new(Some(shared))), handles })
    }

    pub fn threads(&self) -> usize {
        self.handles.len()
    }

    /// The loop that owns listener `id`.
    pub fn add_listener(&self, spec: ListenerSpec) {
        let i = (spec.id as usize) % self.handles.len();
        self.handles[i].send(Cmd::AddListener(spec));
    }

    pub fn remove_listener(&self, id: u64) {
        let i = (id as usize) % self.handles.len();
        self.handles[i].send(Cmd::RemoveListener(id));
    }

    /// Ask every loop to close what lost its namespace, portal or target.
    pub fn sweep(&self) {
        for h in &self.handles {
            h.send(Cmd::Sweep);
        }
    }

    pub fn stop(&self) {
        for h in &self.handles {
            h.send(Cmd::Stop);
        }
        for h in &self.handles {
            if let Some(t) = h.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = t.join();
            }
        }
        // Break the Shared <-> Handle cycle.
        self.shared.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

struct Worker {
    index: usize,
    shared: Arc<Shared>,
    rx: mpsc::Receiver<Cmd>,
    efd: RawFd,
    epfd: OwnedFd,
    listeners: HashMap<u64, ListenerSpec>,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    /// This loop's backing I/O (one io_uring, made on this thread).
    io: IoEngine,
}

enum Drive {
    Wait,
    Close(Close),
}

impl Worker {
    fn new(index: usize, shared: Arc<Shared>, rx: mpsc::Receiver<Cmd>, efd: RawFd) -> io::Result<Worker> {
        // SAFETY: plain syscall; the fd is owned right away.
        let epfd = unsafe { OwnedFd::from_raw_fd(cvt(libc::epoll_create1(libc::EPOLL_CLOEXEC))?) };
        let io = if shared.io_uring { IoEngine::batched(shared.batch_writes) } else { IoEngine::synchronous("io_uring switched off") };
        shared.registry.set_io_engine(index, io.describe());
        let w = Worker { index, shared, rx, efd, epfd, listeners: HashMap::new(), slots: Vec::new(), free: Vec::new(), io };
        w.ctl(libc::EPOLL_CTL_ADD, efd, libc::EPOLLIN as u32, EVENTFD_TOKEN)?;
        Ok(w)
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: ev is valid for the call.
        cvt(unsafe { libc::epoll_ctl(self.epfd.as_raw_fd(), op, fd, &mut ev) }).map(|_| ())
    }

    fn run(&mut self) -> io::Result<()> {
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
        let mut last_tick = Instant::now();
        loop {
            // SAFETY: events has room for its length.
            let n = unsafe {
                libc::epoll_wait(self.epfd.as_raw_fd(), events.as_mut_ptr(), events.len() as i32, TICK.as_millis() as i32)
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            for ev in &events[..n as usize] {
                let token = ev.u64;
                if token == EVENTFD_TOKEN {
                    if !self.commands() {
                        self.close_all();
                        return Ok(());
                    }
                } else if token & LISTENER_BIT != 0 {
                    self.accept(token & !LISTENER_BIT);
                } else {
                    self.drive(token as usize);
                }
            }
            let now = Instant::now();
            if now.duration_since(last_tick) >= TICK {
                last_tick = now;
                self.tick(now);
            }
        }
    }

    /// Handle queued commands; false on Stop.
    fn commands(&mut self) -> bool {
        let mut buf = 0u64;
        // SAFETY: reads 8 bytes into a valid u64 (resets the eventfd).
        unsafe { libc::read(self.efd, (&mut buf as *mut u64).cast(), 8) };
        while let Ok(cmd) = self.rx.try_recv() {
            match cmd {
                Cmd::AddListener(spec) => {
                    let fd = spec.listener.as_raw_fd();
                    if self.ctl(libc::EPOLL_CTL_ADD, fd, libc::EPOLLIN as u32, spec.id | LISTENER_BIT).is_ok() {
                        self.listeners.insert(spec.id, spec);
                    }
                }
                Cmd::RemoveListener(id) => {
                    if let Some(spec) = self.listeners.remove(&id) {
                        let _ = self.ctl(libc::EPOLL_CTL_DEL, spec.listener.as_raw_fd(), 0, 0);
                    }
                }
                Cmd::Adopt(stream, ctx) => self.adopt(stream, ctx),
                Cmd::Sweep => self.tick(Instant::now()),
                Cmd::Stop => return false,
            }
        }
        true
    }

    fn accept(&mut self, id: u64) {
        loop {
            let Some(spec) = self.listeners.get(&id) else { return };
            let (stream, _peer) = match spec.listener.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // WouldBlock, or out of fds: try again at the next event.
                Err(_) => return,
            };
            if !spec.ns_alive.load(Ordering::Acquire) || !spec.portal_alive.load(Ordering::Acquire) {
                continue;
            }
            let portal = match stream.local_addr() {
                Ok(SocketAddr::V6(a)) => format!("[{}]:{}", a.ip(), a.port()),
                Ok(a) => a.to_string(),
                Err(_) => continue,
            };
            let ctx = ConnCtx {
                registry: self.shared.registry.clone(),
                netns: spec.netns.clone(),
                ns_identity: spec.ns_identity,
                ns_alive: spec.ns_alive.clone(),
                portal_alive: spec.portal_alive.clone(),
                portal,
                limits: self.shared.limits,
                usage: spec.usage.clone(),
                admitted: ConnCtx::admit(&spec.usage),
            };
            let n = self.shared.handles.len();
            let to = self.shared.next.fetch_add(1, Ordering::Relaxed) % n;
            if to == self.index {
                self.adopt(stream, ctx);
            } else {
                self.shared.handles[to].send(Cmd::Adopt(stream, ctx));
            }
        }
    }

    fn adopt(&mut self, stream: TcpStream, ctx: ConnCtx) {
        if stream.set_nonblocking(true).is_err() {
            return;
        }
        let _ = stream.set_nodelay(true);
        let i = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        let events = (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32;
        if self.ctl(libc::EPOLL_CTL_ADD, stream.as_raw_fd(), events, i as u64).is_err() {
            self.free.push(i);
            return;
        }
        let conn = Connection::new(ctx, Instant::now());
        self.slots[i] = Some(Slot { stream, conn, rx: vec![0; RX_INITIAL], start: 0, end: 0, out: Vec::new(), out_pos: 0 });
        // Data may already be waiting (the edge came before we registered).
        self.drive(i);
    }

    fn drive(&mut self, i: usize) {
        let Some(slot) = self.slots.get_mut(i).and_then(|s| s.as_mut()) else { return };
        let batching = self.io.batching();
        let r = drive_slot(slot, &mut self.io);
        if batching && !self.io.batching() {
            self.shared.registry.set_io_engine(self.index, self.io.describe());
        }
        match r {
            Drive::Wait => {}
            Drive::Close(_why) => self.close(i),
        }
    }

    fn close(&mut self, i: usize) {
        if let Some(mut slot) = self.slots.get_mut(i).and_then(|s| s.take()) {
            let _ = self.ctl(libc::EPOLL_CTL_DEL, slot.stream.as_raw_fd(), 0, 0);
            slot.conn.shutdown();
            self.free.push(i);
        }
    }

    fn close_all(&mut self) {
        for i in 0..self.slots.len() {
            self.close(i);
        }
        self.listeners.clear();
    }

    fn tick(&mut self, now: Instant) {
        let dead: Vec<u64> = self
            .listeners
            .iter()
            .filter(|(_, l)| !l.ns_alive.load(Ordering::Acquire) || !l.portal_alive.load(Ordering::Acquire))
            .map(|(id, _)| *id)
            .collect();
        for id in dead {
            if let Some(spec) = self.listeners.remove(&id) {
                let _ = self.ctl(libc::EPOLL_CTL_DEL, spec.listener.as_raw_fd(), 0, 0);
            }
        }
        let timers = self.shared.timers;
        for i in 0..self.slots.len() {
            let Some(slot) = self.slots[i].as_mut() else { continue };
            let r = slot.conn.tick(&mut slot.out, now, &timers);
            let r = match r {
                Ok(()) => drive_slot(slot, &mut self.io),
                Err(c) => Drive::Close(c),
            };
            if let Drive::Close(_) = r {
                self.close(i);
            }
        }
    }
}

/// Read what is there, run the protocol over whole PDUs, write the answers
/// in one go. Edge-triggered: returns only when reading would block (or the
/// output is stuck), so no readiness is lost.
fn drive_slot(s: &mut Slot, io: &mut IoEngine) -> Drive {
    let mut drained = false;
    let mut eof = false;
    loop {
        while !drained && !eof && s.end < s.rx.len() {
            match s.stream.read(&mut s.rx[s.end..]) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => {
                    let asked = s.rx.len() - s.end;
                    s.end += n;
                    if n < asked {
                        // A short read: the socket is empty for now; the next
                        // arrival raises a new edge.
                        drained = true;
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    drained = true;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Drive::Close(Close("read error")),
            }
        }
        let consumed = match s.conn.receive(&s.rx[s.start..s.end], &mut s.out, Instant::now(), io) {
            Ok(n) => n,
            Err(c) => {
                let _ = flush(s);
                return Drive::Close(c);
            }
        };
        s.start += consumed;
        if s.start == s.end {
            s.start = 0;
            s.end = 0;
        } else if s.end == s.rx.len() {
            // Make room: move the partial PDU to the front, or grow for it.
            if s.start > 0 {
                s.rx.copy_within(s.start..s.end, 0);
                s.end -= s.start;
                s.start = 0;
            } else if s.rx.len() < RX_MAX {
                let len = (s.rx.len() * 2).min(RX_MAX);
                s.rx.resize(len, 0);
            } else {
                return Drive::Close(Close("PDU larger than the receive buffer"));
            }
        }
        let flushed = match flush(s) {
            Ok(done) => done,
            Err(_) => return Drive::Close(Close("write error")),
        };
        if s.conn.closing().is_some() && flushed {
            return Drive::Close(s.conn.closing().unwrap_or(Close("closing")));
        }
        if eof {
            return Drive::Close(Close("initiator closed the connection"));
        }
        if !flushed {
            // EPOLLOUT will bring us back.
            return Drive::Wait;
        }
        if consumed == 0 && (drained || eof) {
            return Drive::Wait;
        }
    }
}

/// Write pending output; Ok(true) when all of it went.
fn flush(s: &mut Slot) -> io::Result<bool> {
    while s.out_pos < s.out.len() {
        match s.stream.write(&s.out[s.out_pos..]) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "peer gone")),
            Ok(n) => s.out_pos += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    s.out.clear();
    s.out_pos = 0;
    if s.out.capacity() > OUT_KEEP {
        // A large read's answer: do not keep its buffer for an idle connection.
        s.out = Vec::new();
    }
    Ok(true)
}
