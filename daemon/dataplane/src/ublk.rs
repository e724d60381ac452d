//! The ublk frontend: a volume as a local block device (/dev/ublkbN), served
//! by this process from the same `LogicalUnit` the iSCSI target uses (one
//! fd, one page cache, the same write-order lock), through libublk.
//!
//! Per device: one control thread (libublk's `run_target`, which returns
//! only when the device stops) and one thread per queue, each with its own
//! io_uring carrying both the ublk commands and the backing reads (pread on
//! the queue thread for a file on tmpfs or ramfs: see `Reads`). Writes,
//! flushes and discards run synchronously on the queue thread under the
//! unit's write-order lock (shared): COMPARE AND WRITE from an iSCSI
//! initiator takes it exclusively, so it stays atomic against ublk writers;
//! holding a std lock across an io_uring round trip is what we avoid (ext4
//! has no async buffered writes anyway: io_uring would hand them to a worker
//! thread, docs/dataplane.md).
//!
//! Devices are added with USER_RECOVERY (and _REISSUE where the driver has
//! it): when this process dies, by SIGTERM or kill -9, the kernel keeps the
//! device and queues its I/O; the next process finds it (by the tag it left
//! in `ublksrv_flags`, which the kernel keeps for the device's life) and
//! adopts it with START_USER_RECOVERY / END_USER_RECOVERY. So nothing in this
//! module runs at shutdown: leaving the devices to the kernel is the point.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use io_uring::{opcode, types};
use libublk::ctrl::{UblkCtrl, UblkCtrlBuilder};
use libublk::helpers::IoBuf;
use libublk::io::{BufDescList, UblkDev, UblkIOCtx, UblkQueue};
use libublk::{sys, BufDesc, UblkError, UblkFlags, UblkIORes};
use netcfgd_scsi::LogicalUnit;

/// The largest request the kernel sends us (queue limit max_sectors); each
/// tag owns one buffer this big, so memory is depth x this per queue.
pub const IO_BUF_BYTES: u32 = 256 << 10;
/// How long adding or adopting a device may take (the driver waits up to
/// 30 s for a dead server's queues to drain before recovery may start).
const START_TIMEOUT: Duration = Duration::from_secs(90);
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
const CTRL_DIR: &str = "/sys/class/ublk-char";

/// What the config asks of one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UblkOptions {
    /// The device number; None: the kernel picks.
    pub id: Option<u32>,
    pub queues: u16,
    pub depth: u16,
}

impl Default for UblkOptions {
    fn default() -> UblkOptions {
        UblkOptions { id: None, queues: 1, depth: 64 }
    }
}

/// I/O the ublk queues served, for `stats()`.
#[derive(Default)]
pub struct UblkCounters {
    pub ios: AtomicU64,
    pub read_bytes: AtomicU64,
    pub write_bytes: AtomicU64,
    pub errors: AtomicU64,
}

/// One served device.
struct Device {
    dev_id: u32,
    opts: UblkOptions,
    /// Adopted from an earlier process rather than added.
    recovered: bool,
    ctrl: Arc<UblkCtrl>,
    /// Set before we stop the device on purpose: the control thread then
    /// deletes it instead of leaving it for a successor.
    removing: Arc<AtomicBool>,
    /// Receives once the control thread has finished.
    done: mpsc::Receiver<()>,
}

/// A device as `stats()` reports it.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub volume: String,
    pub dev_id: u32,
    pub queues: u16,
    pub depth: u16,
    pub recovered: bool,
}

#[derive(Default)]
pub struct Ublk {
    devices: Mutex<HashMap<String, Device>>,
    pub counters: Arc<UblkCounters>,
}

fn other(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::Other, msg)
}

fn from_ublk(what: &str, e: UblkError) -> io::Error {
    match e {
        UblkError::IOError(e) => io::Error::new(e.kind(), format!("{what}: {e}")),
        UblkError::OtherError(errno) if errno < 0 => {
            let os = io::Error::from_raw_os_error(-errno);
            io::Error::new(os.kind(), format!("{what}: {os}"))
        }
        e => other(format!("{what}: {e}")),
    }
}

/// The tag a device of volume `name` carries in `ublksrv_flags` (FNV-1a of
/// the name, top bit set so that 0, libublk's default, never matches).
pub fn volume_tag(name: &str) -> u64 {
    let h = format!("netcfgd-ublk:{name}")
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3));
    h | 1 << 63
}

/// The driver's feature bits, or why there is no driver.
pub fn driver_features() -> io::Result<u64> {
    if !std::path::Path::new("/dev/ublk-control").exists() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "/dev/ublk-control is missing: the kernel has no ublk driver loaded (module ublk_drv, \
             CONFIG_BLK_DEV_UBLK; Debian's 6.12 kernel has it, bookworm's 6.1 does not)",
        ));
    }
    UblkCtrl::get_features().ok_or_else(|| other("/dev/ublk-control does not answer GET_FEATURES".into()))
}

/// Device numbers of every ublk device the kernel has.
fn kernel_devices() -> Vec<u32> {
    let mut ids: Vec<u32> = fs::read_dir(CTRL_DIR)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_prefix("ublkc")).and_then(|n| n.parse().ok()))
                .collect()
        })
        .unwrap_or_default();
    ids.sort_unstable();
    ids
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 checks existence only.
    pid > 0 && unsafe { libc::kill(pid, 0) } == 0
}

/// What to do for a volume given the kernel's devices.
enum Plan {
    Add,
    Recover(u32),
}

fn plan(name: &str, opts: &UblkOptions) -> io::Result<Plan> {
    let tag = volume_tag(name);
    let me = std::process::id() as i32;
    for id in kernel_devices() {
        let Ok(ctrl) = UblkCtrl::new_simple(id as i32) else { continue };
        let info = ctrl.dev_info();
        if info.ublksrv_flags != tag {
            if opts.id == Some(id) {
                let by = if pid_alive(info.ublksrv_pid) { format!("served by pid {}", info.ublksrv_pid) } else { "not served".into() };
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!("ublk-id {id}: /dev/ublkb{id} already exists ({by}) and is not this volume's; choose another ublk-id"),
                ));
            }
            continue;
        }
        match info.state as u32 {
            sys::UBLK_S_DEV_QUIESCED => return Ok(Plan::Recover(id)),
            sys::UBLK_S_DEV_LIVE if info.ublksrv_pid == me => {
                return Err(other(format!("/dev/ublkb{id} is already served by this process")))
            }
            sys::UBLK_S_DEV_LIVE if pid_alive(info.ublksrv_pid) => {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!("/dev/ublkb{id} of this volume is served by another process (pid {}); stop it first", info.ublksrv_pid),
                ))
            }
            // Its server just died: the driver quiesces it once the queues
            // drain, and START_USER_RECOVERY waits for that.
            sys::UBLK_S_DEV_LIVE => return Ok(Plan::Recover(id)),
            _ => {
                // Added but never started (a server that died while setting
                // it up), or failed: nothing to keep.
                let _ = ctrl.del_dev();
            }
        }
    }
    Ok(Plan::Add)
}

impl Ublk {
    pub fn new() -> Ublk {
        Ublk::default()
    }

    /// Serve `lu` as a ublk device for volume `name`, adopting the device an
    /// earlier netcfgd left behind when there is one. Returns the device
    /// number and whether it was adopted. The same options again change
    /// nothing; other options are refused (the kernel fixes queues and depth
    /// at ADD_DEV): remove the device first.
    pub fn add(&self, name: &str, lu: Arc<LogicalUnit>, opts: UblkOptions) -> io::Result<(u32, bool)> {
        if let Some(d) = self.devices.lock().unwrap_or_else(|e| e.into_inner()).get(name) {
            if d.opts == opts || (opts.id.is_none() && d.opts.queues == opts.queues && d.opts.depth == opts.depth) {
                return Ok((d.dev_id, d.recovered));
            }
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("volume {name}: /dev/ublkb{} runs with other ublk settings; they change when the device is re-created (drop ublk, then add it back)", d.dev_id),
            ));
        }
        if opts.queues == 0 || opts.depth == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("volume {name}: ublk queues and depth must be positive")));
        }
        let features = driver_features()?;
        if features & sys::UBLK_F_USER_RECOVERY as u64 == 0 {
            return Err(other(format!(
                "volume {name}: this ublk driver has no USER_RECOVERY (features {features:#x}); netcfgd needs it so a restart does not pull the device away"
            )));
        }
        let plan = plan(name, &opts)?;
        let recovering = matches!(plan, Plan::Recover(_));
        let mut ctrl_flags = sys::UBLK_F_USER_RECOVERY as u64;
        if features & sys::UBLK_F_USER_RECOVERY_REISSUE as u64 != 0 {
            // Requests in flight when the server died are sent again to the
            // next one instead of failing.
            ctrl_flags |= sys::UBLK_F_USER_RECOVERY_REISSUE as u64;
        }
        if features & sys::UBLK_F_CMD_IOCTL_ENCODE as u64 != 0 {
            ctrl_flags |= sys::UBLK_F_CMD_IOCTL_ENCODE as u64;
        }
        let (id, dev_flags) = match plan {
            Plan::Add => (opts.id.map_or(-1, |i| i as i32), UblkFlags::UBLK_DEV_F_ADD_DEV),
            Plan::Recover(id) => (id as i32, UblkFlags::UBLK_DEV_F_RECOVER_DEV),
        };
        let (started_tx, started_rx) = mpsc::channel::<io::Result<(u32, Arc<UblkCtrl>)>>();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let removing = Arc::new(AtomicBool::new(false));
        let removing_t = removing.clone();
        let counters = self.counters.clone();
        let vol = name.to_string();
        let tag = volume_tag(name);
        std::thread::Builder::new().name(format!("ublk-{name}")).spawn(move || {
            let fail = started_tx.clone();
            let run = || -> io::Result<()> {
                let ctrl = UblkCtrlBuilder::default()
                    .name("netcfgd")
                    .id(id)
                    .nr_queues(opts.queues)
                    .depth(opts.depth)
                    .io_buf_bytes(IO_BUF_BYTES)
                    .ctrl_flags(ctrl_flags)
                    .ctrl_target_flags(tag)
                    .dev_flags(dev_flags)
                    .build()
                    .map_err(|e| from_ublk(&format!("volume {vol}: ublk ADD_DEV"), e))?;
                let ctrl = Arc::new(ctrl);
                if recovering {
                    ctrl.start_user_recover()
                        .map_err(|e| from_ublk(&format!("volume {vol}: START_USER_RECOVERY of /dev/ublkb{id}"), e))?;
                }
                let lu_init = lu.clone();
                let lu_q = lu.clone();
                let ctrl_started = ctrl.clone();
                let started = started_tx.clone();
                let result = ctrl.run_target(
                    move |dev: &mut UblkDev| set_params(dev, &lu_init),
                    move |qid, dev: &UblkDev| serve_queue(qid, dev, &lu_q, &counters),
                    move |c: &UblkCtrl| {
                        let _ = started.send(Ok((c.dev_info().dev_id, ctrl_started)));
                    },
                );
                // The queues have stopped: STOP_DEV (removal) or the driver
                // aborted them. A device removed on purpose is deleted; one
                // whose queues died otherwise is left for recovery.
                if removing_t.load(Ordering::Acquire) {
                    let _ = ctrl.del_dev();
                } else {
                    ctrl.disown();
                }
                result.map(|_| ()).map_err(|e| from_ublk(&format!("volume {vol}: ublk device"), e))
            };
            if let Err(e) = run() {
                let _ = fail.send(Err(e));
            }
            let _ = done_tx.send(());
        })?;
        let (dev_id, ctrl) = match started_rx.recv_timeout(START_TIMEOUT) {
            Ok(r) => r?,
            Err(_) => return Err(io::Error::new(io::ErrorKind::TimedOut, format!("volume {name}: the ublk device did not start in {} s", START_TIMEOUT.as_secs()))),
        };
        self.devices.lock().unwrap_or_else(|e| e.into_inner()).insert(
            name.to_string(),
            Device { dev_id, opts, recovered: recovering, ctrl, removing, done: done_rx },
        );
        Ok((dev_id, recovering))
    }

    /// Stop and delete the device of volume `name`. Refused (EBUSY) while
    /// the block device is mounted or opened exclusively; the caller checks
    /// for plain openers first (they would see I/O errors). Returns false
    /// when the volume has no device.
    pub fn remove(&self, name: &str) -> io::Result<bool> {
        let mut devices = self.devices.lock().unwrap_or_else(|e| e.into_inner());
        let Some(d) = devices.get(name) else { return Ok(false) };
        let path = format!("/dev/ublkb{}", d.dev_id);
        // Held while we stop the device: nobody can mount it in between.
        let guard = fs::OpenOptions::new().read(true).custom_flags(libc::O_EXCL | libc::O_CLOEXEC).open(&path);
        if let Err(e) = &guard {
            if e.raw_os_error() == Some(libc::EBUSY) {
                return Err(io::Error::new(
                    io::ErrorKind::ResourceBusy,
                    format!("volume {name}: {path} is mounted or held open exclusively; kept until it is released"),
                ));
            }
        }
        let d = devices.remove(name).expect("looked up above");
        drop(devices);
        d.removing.store(true, Ordering::Release);
        // The control ring is per thread in libublk; this thread may not have one yet.
        libublk::ublk_init_ctrl_task_ring(|ring| {
            if ring.is_none() {
                *ring = Some(io_uring::IoUring::<io_uring::squeue::Entry128>::builder().build(16).map_err(UblkError::IOError)?);
            }
            Ok(())
        })
        .map_err(|e| from_ublk("ublk control ring", e))?;
        d.ctrl.kill_dev().map_err(|e| from_ublk(&format!("volume {name}: STOP_DEV of {path}"), e))?;
        drop(guard);
        if d.done.recv_timeout(STOP_TIMEOUT).is_err() {
            return Err(other(format!("volume {name}: {path} did not stop in {} s", STOP_TIMEOUT.as_secs())));
        }
        Ok(true)
    }

    pub fn dev_id(&self, name: &str) -> Option<u32> {
        self.devices.lock().unwrap_or_else(|e| e.into_inner()).get(name).map(|d| d.dev_id)
    }

    pub fn devices(&self) -> Vec<DeviceInfo> {
        let mut v: Vec<_> = self
            .devices
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(n, d)| DeviceInfo { volume: n.clone(), dev_id: d.dev_id, queues: d.opts.queues, depth: d.opts.depth, recovered: d.recovered })
            .collect();
        v.sort_by(|a, b| a.volume.cmp(&b.volume));
        v
    }
}

/// The device's limits from the unit: its block size, its size, discard
/// and write-zeroes (both deallocate: holes or BLKZEROOUT, reading back as
/// zeros), a volatile cache (FLUSH is fdatasync) and FUA.
fn set_params(dev: &mut UblkDev, lu: &LogicalUnit) -> Result<(), UblkError> {
    let shift = lu.block_size().trailing_zeros() as u8;
    let bytes = lu.blocks() << shift;
    let mut attrs = sys::UBLK_ATTR_VOLATILE_CACHE | sys::UBLK_ATTR_FUA;
    if lu.read_only() {
        attrs |= sys::UBLK_ATTR_READ_ONLY;
    }
    dev.tgt.dev_size = bytes;
    // Backing reads share the queue's ring with the ublk commands.
    dev.tgt.sq_depth = dev.dev_info.queue_depth.saturating_mul(2);
    dev.tgt.cq_depth = dev.dev_info.queue_depth.saturating_mul(2);
    dev.tgt.params = sys::ublk_params {
        types: sys::UBLK_PARAM_TYPE_BASIC | sys::UBLK_PARAM_TYPE_DISCARD,
        basic: sys::ublk_param_basic {
            attrs,
            logical_bs_shift: shift,
            physical_bs_shift: shift.max(12),
            io_opt_shift: shift.max(12),
            io_min_shift: shift,
            max_sectors: dev.dev_info.max_io_buf_bytes >> 9,
            dev_sectors: bytes >> 9,
            ..Default::default()
        },
        discard: sys::ublk_param_discard {
            // A hole is made of whole filesystem blocks.
            discard_granularity: 4096u32.max(lu.block_size()),
            max_discard_sectors: 1 << 20,
            max_write_zeroes_sectors: 1 << 20,
            max_discard_segments: 1,
            ..Default::default()
        },
        ..Default::default()
    };
    Ok(())
}

/// How a queue reads from the backing store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reads {
    /// An IORING_OP_READ in the queue's ring. On a file that can read
    /// without blocking (ext4, xfs, btrfs, a block device: FMODE_NOWAIT) a
    /// cached read completes inside the io_uring_enter that submits it, a
    /// batch of them in one call; an uncached one goes async without
    /// stalling the queue.
    Ring,
    /// pread on the queue thread. A memory-backed file (tmpfs, ramfs) has no
    /// nowait reads in 6.12, so io_uring hands every read of it to an io-wq
    /// worker thread: a wake-up and two context switches per request, for
    /// what is a memory copy that cannot block on a disk.
    Inline,
}

const TMPFS_MAGIC: i64 = 0x0102_1994;
const RAMFS_MAGIC: i64 = 0x8584_58f6;

fn reads_for(fd: std::os::unix::io::RawFd) -> Reads {
    // SAFETY: statfs is plain data, filled by the kernel.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: fd is the unit's open backing file; st is a valid out pointer.
    if unsafe { libc::fstatfs(fd, &mut st) } != 0 {
        return Reads::Ring;
    }
    match st.f_type as i64 {
        TMPFS_MAGIC | RAMFS_MAGIC => Reads::Inline,
        _ => Reads::Ring,
    }
}

/// Fills `buf` from byte `off` of `fd` with pread; past the end of a file
/// that shrank, zeros (as the SCSI crate's read_exact_at). Bytes read or an errno.
fn pread_full(fd: std::os::unix::io::RawFd, buf: &mut [u8], off: u64) -> i32 {
    let mut done = 0usize;
    while done < buf.len() {
        // SAFETY: the pointer and length stay inside buf.
        let n = unsafe { libc::pread(fd, buf[done..].as_mut_ptr().cast(), buf.len() - done, (off + done as u64) as libc::off_t) };
        match n {
            0 => {
                buf[done..].fill(0);
                break;
            }
            n if n > 0 => done += n as usize,
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return errno(&e);
                }
            }
        }
    }
    buf.len() as i32
}

fn serve_queue(qid: u16, dev: &UblkDev, lu: &Arc<LogicalUnit>, counters: &Arc<UblkCounters>) {
    let reads = reads_for(lu.raw_fd());
    let bufs = dev.alloc_queue_io_bufs();
    let queue = match UblkQueue::new(qid, dev).and_then(|q| q.submit_fetch_commands_unified(BufDescList::Slices(Some(&bufs)))) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("netcfgd: ublk{} queue {qid}: cannot start: {e}", dev.dev_info.dev_id);
            return;
        }
    };
    queue.wait_and_handle_io(|q, tag, ctx| handle_io(q, tag, ctx, &bufs[tag as usize], lu, reads, counters));
}

fn errno(e: &io::Error) -> i32 {
    -e.raw_os_error().unwrap_or(libc::EIO)
}

fn handle_io(q: &UblkQueue, tag: u16, ctx: &UblkIOCtx, buf: &IoBuf<u8>, lu: &LogicalUnit, reads: Reads, counters: &UblkCounters) {
    let iod = q.get_iod(tag);
    let op = iod.op_flags & 0xff;
    let off = iod.start_sector << 9;
    let len = (iod.nr_sectors as usize) << 9;
    if ctx.is_tgt_io() {
        // A backing read we queued has completed.
        let mut res = ctx.result();
        if res >= 0 && (res as usize) < len {
            // The file shrank under us: the rest reads as zeros, as in
            // the SCSI crate's read_into.
            // SAFETY: this tag's buffer, IO_BUF_BYTES >= len, used by this request only.
            unsafe { std::ptr::write_bytes(buf.as_mut_ptr().add(res as usize), 0, len - res as usize) };
            res = len as i32;
        }
        finish(q, tag, buf, res, counters);
        return;
    }
    // Only reads and writes move data through the buffer; a discard may
    // cover far more than it holds.
    let moves_data = op == sys::UBLK_IO_OP_READ || op == sys::UBLK_IO_OP_WRITE;
    let res = if moves_data && len > buf.len() {
        -libc::EINVAL
    } else {
        match op {
            sys::UBLK_IO_OP_READ if reads == Reads::Inline => {
                counters.read_bytes.fetch_add(len as u64, Ordering::Relaxed);
                // SAFETY: this tag's buffer, IO_BUF_BYTES >= len, used by this request only.
                pread_full(lu.raw_fd(), unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr(), len) }, off)
            }
            sys::UBLK_IO_OP_READ => {
                counters.read_bytes.fetch_add(len as u64, Ordering::Relaxed);
                let sqe = opcode::Read::new(types::Fd(lu.raw_fd()), buf.as_mut_ptr(), len as u32)
                    .offset(off)
                    .build()
                    .user_data(UblkIOCtx::build_user_data(tag, op, 0, true));
                match q.ublk_submit_sqe_sync(sqe) {
                    Ok(()) => return,
                    Err(_) => -libc::EIO,
                }
            }
            _ if lu.read_only() && op != sys::UBLK_IO_OP_FLUSH => -libc::EROFS,
            sys::UBLK_IO_OP_WRITE => {
                counters.write_bytes.fetch_add(len as u64, Ordering::Relaxed);
                let _order = lu.write_order().read().unwrap_or_else(|e| e.into_inner());
                // SAFETY: the driver filled this tag's buffer with len bytes before sending the command.
                let data = unsafe { std::slice::from_raw_parts(buf.as_ptr(), len) };
                match lu.write_all_at(data, off) {
                    Ok(()) if iod.op_flags & sys::UBLK_IO_F_FUA != 0 => lu.sync().map_or_else(|e| errno(&e), |_| len as i32),
                    Ok(()) => len as i32,
                    Err(e) => errno(&e),
                }
            }
            sys::UBLK_IO_OP_FLUSH => lu.sync().map_or_else(|e| errno(&e), |_| 0),
            sys::UBLK_IO_OP_DISCARD | sys::UBLK_IO_OP_WRITE_ZEROES => {
                let _order = lu.write_order().read().unwrap_or_else(|e| e.into_inner());
                let shift = lu.block_size().trailing_zeros();
                lu.deallocate(off >> shift, (len as u64) >> shift).map_or_else(|e| errno(&e), |_| 0)
            }
            _ => -libc::EOPNOTSUPP,
        }
    };
    finish(q, tag, buf, res, counters);
}

fn finish(q: &UblkQueue, tag: u16, buf: &IoBuf<u8>, res: i32, counters: &UblkCounters) {
    counters.ios.fetch_add(1, Ordering::Relaxed);
    if res < 0 {
        counters.errors.fetch_add(1, Ordering::Relaxed);
    }
    let _ = q.complete_io_cmd_unified(tag, BufDesc::Slice(buf.as_slice()), Ok(UblkIORes::Result(res)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_stable_distinct_and_never_libublks_default() {
        assert_eq!(volume_tag("db1"), volume_tag("db1"));
        assert_ne!(volume_tag("db1"), volume_tag("db2"));
        assert_ne!(volume_tag(""), 0);
        assert!(volume_tag("x") & 1 << 63 != 0);
    }

    #[test]
    fn no_driver_is_a_clear_error() {
        if std::path::Path::new("/dev/ublk-control").exists() {
            return; // the VM tier covers the driver
        }
        let e = driver_features().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(e.to_string().contains("ublk_drv"), "{e}");
    }
}
