//! A minimal io_uring (raw syscalls, no liburing, no crate): one ring per
//! event loop, used only to run a batch of positional reads and writes and
//! wait for all of them (`run`). With the batch on one submission, N backing
//! transfers cost one `io_uring_enter` instead of N pread/pwrite calls.
//!
//! The ring never has more in flight than it has submission entries, and
//! `run` returns only when every submitted transfer has completed, so the
//! buffers the caller lent are free again and the completion queue (twice
//! the size) cannot overflow.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};

const IORING_OFF_SQ_RING: libc::off_t = 0;
const IORING_OFF_CQ_RING: libc::off_t = 0x800_0000;
const IORING_OFF_SQES: libc::off_t = 0x1000_0000;
const IORING_FEAT_SINGLE_MMAP: u32 = 1;
const IORING_ENTER_GETEVENTS: u32 = 1;
const IORING_SETUP_SINGLE_ISSUER: u32 = 1 << 12;
const IORING_SETUP_DEFER_TASKRUN: u32 = 1 << 13;
const IORING_REGISTER_PROBE: u32 = 8;
const IO_URING_OP_SUPPORTED: u16 = 1;
const IORING_OP_READ: u8 = 22;
const IORING_OP_WRITE: u8 = 23;

#[repr(C)]
#[derive(Default)]
struct SqringOffsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    flags: u32,
    dropped: u32,
    array: u32,
    resv1: u32,
    user_addr: u64,
}

#[repr(C)]
#[derive(Default)]
struct CqringOffsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    overflow: u32,
    cqes: u32,
    flags: u32,
    resv1: u32,
    user_addr: u64,
}

#[repr(C)]
#[derive(Default)]
struct Params {
    sq_entries: u32,
    cq_entries: u32,
    flags: u32,
    sq_thread_cpu: u32,
    sq_thread_idle: u32,
    features: u32,
    wq_fd: u32,
    resv: [u32; 3],
    sq_off: SqringOffsets,
    cq_off: CqringOffsets,
}

#[repr(C)]
struct Sqe {
    opcode: u8,
    flags: u8,
    ioprio: u16,
    fd: i32,
    off: u64,
    addr: u64,
    len: u32,
    rw_flags: u32,
    user_data: u64,
    buf_index: u16,
    personality: u16,
    splice_fd_in: i32,
    addr3: u64,
    pad: u64,
}

#[repr(C)]
struct Cqe {
    user_data: u64,
    res: i32,
    flags: u32,
}

#[repr(C)]
struct ProbeOp {
    op: u8,
    resv: u8,
    flags: u16,
    resv2: u32,
}

#[repr(C)]
struct Probe {
    last_op: u8,
    ops_len: u8,
    resv: u16,
    resv2: [u32; 3],
    ops: [ProbeOp; 64],
}

/// One transfer: the data path's own `Op` (the same fields this ring had),
/// so both rings in examples/hotpaths.rs run the very same batch.
pub use _dataplane::uring::Op;

struct Map {
    ptr: *mut libc::c_void,
    len: usize,
}

impl Map {
    fn new(fd: RawFd, len: usize, offset: libc::off_t) -> io::Result<Map> {
        // SAFETY: a fresh shared mapping of the ring fd; checked below.
        let ptr = unsafe {
            libc::mmap(ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED | libc::MAP_POPULATE, fd, offset)
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Map { ptr, len })
    }

    /// SAFETY (callers): `off` comes from the kernel's offsets for this map.
    unsafe fn at<T>(&self, off: u32) -> *mut T {
        (self.ptr as *mut u8).add(off as usize) as *mut T
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: we mapped exactly this.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

pub struct Ring {
    // Field order: the maps go before the fd closes.
    _sq_map: Map,
    _cq_map: Option<Map>,
    _sqe_map: Map,
    fd: OwnedFd,
    sq_head: *const AtomicU32,
    sq_tail: *const AtomicU32,
    sq_mask: u32,
    sq_entries: u32,
    sq_array: *mut u32,
    sqes: *mut Sqe,
    cq_head: *const AtomicU32,
    cq_tail: *const AtomicU32,
    cq_mask: u32,
    cqes: *const Cqe,
    /// io_uring_enter calls made (for stats).
    pub enters: u64,
}

fn setup(entries: u32, p: &mut Params) -> io::Result<OwnedFd> {
    // SAFETY: io_uring_setup fills `p`, which we own.
    let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, entries, p as *mut Params) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new fd we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

impl Ring {
    /// A ring of `entries` submission slots (a power of two). Fails with the
    /// kernel's error where io_uring is missing or forbidden (ENOSYS, EPERM
    /// under a seccomp filter or kernel.io_uring_disabled), and with
    /// EOPNOTSUPP when READ/WRITE are not offered (kernels before 5.6).
    pub fn new(entries: u32) -> io::Result<Ring> {
        let mut p = Params { flags: IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, ..Default::default() };
        let fd = match setup(entries, &mut p) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                // Kernels before 6.1 lack DEFER_TASKRUN: a plain ring.
                p = Params::default();
                setup(entries, &mut p)?
            }
            Err(e) => return Err(e),
        };
        let raw = fd.as_raw_fd();
        probe(raw)?;
        let sq_len = p.sq_off.array as usize + p.sq_entries as usize * 4;
        let cq_len = p.cq_off.cqes as usize + p.cq_entries as usize * std::mem::size_of::<Cqe>();
        let single = p.features & IORING_FEAT_SINGLE_MMAP != 0;
        let sq_map = Map::new(raw, if single { sq_len.max(cq_len) } else { sq_len }, IORING_OFF_SQ_RING)?;
        let cq_map = if single { None } else { Some(Map::new(raw, cq_len, IORING_OFF_CQ_RING)?) };
        let sqe_map = Map::new(raw, p.sq_entries as usize * std::mem::size_of::<Sqe>(), IORING_OFF_SQES)?;
        let cq = cq_map.as_ref().unwrap_or(&sq_map);
        // SAFETY: every offset comes from the kernel for these maps.
        unsafe {
            Ok(Ring {
                sq_head: sq_map.at(p.sq_off.head),
                sq_tail: sq_map.at(p.sq_off.tail),
                sq_mask: *sq_map.at::<u32>(p.sq_off.ring_mask),
                sq_entries: *sq_map.at::<u32>(p.sq_off.ring_entries),
                sq_array: sq_map.at(p.sq_off.array),
                sqes: sqe_map.ptr as *mut Sqe,
                cq_head: cq.at(p.cq_off.head),
                cq_tail: cq.at(p.cq_off.tail),
                cq_mask: *cq.at::<u32>(p.cq_off.ring_mask),
                cqes: cq.at(p.cq_off.cqes),
                _sq_map: sq_map,
                _cq_map: cq_map,
                _sqe_map: sqe_map,
                fd,
                enters: 0,
            })
        }
    }

    fn enter(&mut self, to_submit: u32, min_complete: u32) -> io::Result<u32> {
        self.enters += 1;
        // SAFETY: no pointers passed (no signal mask).
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_uring_enter,
                self.fd.as_raw_fd(),
                to_submit,
                min_complete,
                IORING_ENTER_GETEVENTS,
                ptr::null::<libc::c_void>(),
                0usize,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as u32)
        }
    }

    /// Copies completions out; returns how many.
    fn reap(&mut self, base: usize, results: &mut [Option<io::Result<usize>>]) -> u32 {
        // SAFETY: head/tail live in the mapped ring; we are the only consumer.
        let (head_a, tail) = unsafe { (&*self.cq_head, (*self.cq_tail).load(Ordering::Acquire)) };
        let mut head = head_a.load(Ordering::Relaxed);
        let mut n = 0;
        while head != tail {
            // SAFETY: index masked into the CQE array.
            let cqe = unsafe { &*self.cqes.add((head & self.cq_mask) as usize) };
            let i = cqe.user_data as usize;
            if let Some(slot) = i.checked_sub(base).and_then(|i| results.get_mut(i)) {
                *slot = Some(if cqe.res < 0 { Err(io::Error::from_raw_os_error(-cqe.res)) } else { Ok(cqe.res as usize) });
            }
            head = head.wrapping_add(1);
            n += 1;
        }
        head_a.store(head, Ordering::Release);
        n
    }

    /// Runs every transfer and waits for all of them. `results[i]` is set
    /// for `ops[i]`; None means it never ran (the ring failed; the caller
    /// runs it another way). The buffers must stay valid for the call only.
    ///
    /// # Safety
    /// Each op's `buf` must point to `len` bytes the caller owns
    /// (writable for reads) and that nothing else touches during the call.
    pub unsafe fn run(&mut self, ops: &[Op], results: &mut Vec<Option<io::Result<usize>>>) -> io::Result<()> {
        results.clear();
        results.resize_with(ops.len(), || None);
        let mut base = 0;
        for chunk in ops.chunks(self.sq_entries as usize) {
            let tail = (*self.sq_tail).load(Ordering::Relaxed);
            for (k, op) in chunk.iter().enumerate() {
                let idx = tail.wrapping_add(k as u32) & self.sq_mask;
                self.sqes.add(idx as usize).write(Sqe {
                    opcode: if op.write { IORING_OP_WRITE } else { IORING_OP_READ },
                    flags: 0,
                    ioprio: 0,
                    fd: op.fd,
                    off: op.offset,
                    addr: op.buf as u64,
                    len: op.len,
                    rw_flags: 0,
                    user_data: (base + k) as u64,
                    buf_index: 0,
                    personality: 0,
                    splice_fd_in: 0,
                    addr3: 0,
                    pad: 0,
                });
                *self.sq_array.add(idx as usize) = idx;
            }
            let n = chunk.len() as u32;
            (*self.sq_tail).store(tail.wrapping_add(n), Ordering::Release);
            let mut submitted = 0u32;
            let mut reaped = 0u32;
            let mut failure = None;
            loop {
                let to_submit = if failure.is_none() { n - submitted } else { 0 };
                if to_submit == 0 && reaped >= submitted {
                    break;
                }
                match self.enter(to_submit, submitted + to_submit - reaped) {
                    Ok(k) => submitted += k.min(to_submit),
                    // A hard error while only waiting cannot leave the
                    // buffers to the kernel: keep waiting.
                    Err(e) if to_submit == 0 || matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)) => {}
                    Err(e) => {
                        // The kernel took none of the rest: withdraw them (we
                        // are the only producer); they are reported unrun.
                        let head = (*self.sq_head).load(Ordering::Acquire);
                        (*self.sq_tail).store(head, Ordering::Release);
                        submitted = head.wrapping_sub(tail);
                        failure = Some(e);
                    }
                }
                reaped += self.reap(base, &mut results[base..base + chunk.len()]);
            }
            if let Some(e) = failure {
                return Err(e);
            }
            base += chunk.len();
        }
        Ok(())
    }
}

/// EOPNOTSUPP unless the kernel offers IORING_OP_READ and IORING_OP_WRITE.
fn probe(fd: RawFd) -> io::Result<()> {
    // SAFETY: an all-zero Probe is valid; the kernel writes at most 64 ops.
    let mut p: Probe = unsafe { std::mem::zeroed() };
    // SAFETY: p is ours and sized for 64 ops.
    let r = unsafe { libc::syscall(libc::SYS_io_uring_register, fd, IORING_REGISTER_PROBE, &mut p as *mut Probe, 64u32) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let ok = |op: u8| p.ops.get(op as usize).is_some_and(|o| o.flags & IO_URING_OP_SUPPORTED != 0);
    if (p.last_op as usize) < IORING_OP_WRITE as usize || !ok(IORING_OP_READ) || !ok(IORING_OP_WRITE) {
        return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
    }
    Ok(())
}
