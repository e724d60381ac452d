//! The split path for plain READ and WRITE (6/10/12/16): `Target::plan`
//! runs every check `execute` would (LUN, unit attention, reservation,
//! reserved bits, write protect, transfer limit, range) and, when the
//! command is nothing but one positional transfer, hands the transport a
//! `BlockIo`: "read N bytes at offset O of this file" or "write these N
//! bytes there". The transport performs it however it likes (batched with
//! others through io_uring, say) and calls `finish_read`/`finish_write`,
//! which turn the outcome into a `Completion`. Everything else, and any
//! write that must be durable before status (FUA, write cache disabled),
//! goes through `execute` as before.
//!
//! What the transport must keep (docs/scsi.md, "Split I/O"): run no
//! overlapping transfers of which one is a write at the same time
//! (`BlockIo::conflicts_with`), and hold `WriteOrderHold` over the writes it
//! has in flight, so COMPARE AND WRITE stays atomic against them.

use std::io;
use std::os::unix::io::RawFd;
use std::sync::{Arc, RwLockReadGuard};

use crate::locks;
use crate::sense;
use crate::target::{failed, Lun};
use crate::{status, Completion};

/// What `Target::plan` decided for one command.
#[derive(Debug)]
pub enum Plan {
    /// One transfer for the transport to perform, then `finish_*`.
    Io(BlockIo),
    /// Already answered (an error, or RESERVATION CONFLICT): no medium access.
    Done(Completion),
    /// Not a plain transfer: call `Target::execute` (after finishing any
    /// transfers planned before it, to keep the order the initiator sent).
    Execute,
}

/// One planned positional read or write on a logical unit's backing fd.
pub struct BlockIo {
    lun: Arc<Lun>,
    write: bool,
    offset: u64,
    len: usize,
}

impl std::fmt::Debug for BlockIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockIo").field("write", &self.write).field("offset", &self.offset).field("len", &self.len).finish()
    }
}

impl BlockIo {
    pub(crate) fn new(lun: Arc<Lun>, write: bool, offset: u64, len: usize) -> BlockIo {
        BlockIo { lun, write, offset, len }
    }

    pub fn is_write(&self) -> bool {
        self.write
    }

    /// The backing file descriptor (valid while this `BlockIo` lives: it
    /// holds the unit).
    pub fn fd(&self) -> RawFd {
        self.lun.lu.raw_fd()
    }

    /// Byte offset in the backing file.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes to transfer (never 0).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the two must not be in flight together: the same unit,
    /// overlapping bytes, and at least one of them writes.
    pub fn conflicts_with(&self, other: &BlockIo) -> bool {
        (self.write || other.write)
            && Arc::ptr_eq(&self.lun.lu, &other.lun.lu)
            && self.offset < other.offset + other.len as u64
            && other.offset < self.offset + self.len as u64
    }

    /// Completes a read. `buf` is the transfer's buffer (exactly `len()`
    /// bytes); `result` what the transport's read returned. A short read is
    /// finished here synchronously (the rest past the end of a shrunk file
    /// reads as zeros), as `execute` would.
    pub fn finish_read(&self, result: io::Result<usize>, buf: &mut [u8]) -> Completion {
        let done = match result {
            Ok(n) => n.min(buf.len()),
            Err(_) => return failed(sense::UNRECOVERED_READ_ERROR),
        };
        if done < buf.len() && self.lun.lu.read_exact_at(&mut buf[done..], self.offset + done as u64).is_err() {
            return failed(sense::UNRECOVERED_READ_ERROR);
        }
        good()
    }

    /// Completes a write of `data` (exactly `len()` bytes); a short write
    /// is finished synchronously.
    pub fn finish_write(&self, result: io::Result<usize>, data: &[u8]) -> Completion {
        let done = match result {
            Ok(n) => n.min(data.len()),
            Err(_) => return failed(sense::WRITE_ERROR),
        };
        if done < data.len() && self.lun.lu.write_all_at(&data[done..], self.offset + done as u64).is_err() {
            return failed(sense::WRITE_ERROR);
        }
        good()
    }
}

fn good() -> Completion {
    Completion { status: status::GOOD, sense: Vec::new() }
}

/// The shared write-order lock of every unit that a set of planned writes
/// touches, held while they are in flight: COMPARE AND WRITE and ORWRITE
/// take it exclusively, so none of these writes lands inside their
/// read-compare-write. Taken once per unit (a second shared take on the same
/// lock could wait behind a queued exclusive one and deadlock) and in
/// address order (so two threads never wait on each other).
pub struct WriteOrderHold<'a> {
    _guards: Vec<RwLockReadGuard<'a, ()>>,
}

impl<'a> WriteOrderHold<'a> {
    pub fn new<I: IntoIterator<Item = &'a BlockIo>>(ios: I) -> WriteOrderHold<'a> {
        let mut units: Vec<&'a Lun> = ios.into_iter().filter(|io| io.write).map(|io| &*io.lun).collect();
        units.sort_by_key(|l| &*l.lu as *const _ as usize);
        units.dedup_by_key(|l| &*l.lu as *const _ as usize);
        WriteOrderHold { _guards: units.iter().map(|l| locks::read(l.lu.write_order())).collect() }
    }
}
