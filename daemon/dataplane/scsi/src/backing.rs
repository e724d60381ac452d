//! A logical unit's backing store: a regular file (thin: holes are
//! deallocated blocks) or a block device. All I/O is positional
//! (pread/pwrite) on one shared fd, so any number of threads use it at once
//! without a seek position to fight over, straight into the caller's buffer.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

/// How to open a logical unit.
#[derive(Clone, Debug)]
pub struct LuOptions {
    /// Logical block size in bytes (512 or 4096 usually; a power of two >= 512).
    pub block_size: u32,
    /// Create a sparse file of this size if the path does not exist
    /// (a regular file only; rounded down to whole blocks).
    pub size_bytes: Option<u64>,
    /// Refuse writes with DATA PROTECT / WRITE PROTECTED.
    pub read_only: bool,
    /// Unit serial number (VPD page 0x80), printable ASCII.
    pub serial: String,
    /// The NAA designator of VPD page 0x83: a value with a zero top nibble
    /// gets NAA type 5 (IEEE Registered) put there; otherwise it is used as is.
    pub naa: u64,
}

/// What kind of object backs the unit; decides how UNMAP deallocates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BackingKind {
    /// Regular file: UNMAP punches holes, GET LBA STATUS reads SEEK_DATA/SEEK_HOLE.
    File,
    /// Block device: UNMAP is BLKZEROOUT (falling back to writing zeros).
    BlockDevice,
}

/// One logical unit: a block-addressed view of a file or block device.
pub struct LogicalUnit {
    file: File,
    kind: BackingKind,
    block_size: u32,
    block_shift: u32,
    /// Changes only through `resize` (online growth, or a shrink the
    /// caller allowed); every range check reads it afresh.
    blocks: AtomicU64,
    read_only: bool,
    serial: String,
    naa: u64,
    /// Writers take this shared; COMPARE AND WRITE takes it exclusive so its
    /// read-compare-write is atomic with respect to every other write.
    write_order: RwLock<()>,
}

const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
const BLKZEROOUT: libc::c_ulong = 0x127F;

impl LogicalUnit {
    /// Opens (and, for a missing regular file with `size_bytes`, creates) the backing store.
    pub fn open(path: &Path, opts: LuOptions) -> io::Result<LogicalUnit> {
        Self::open_checked(path, opts, |_| Ok(()))
    }

    /// `open`, with `check` judging the opened object (its fstat) before
    /// anything is done with it: the caller's policy on owner and mode, free
    /// of races since it sees the very file that will be served. The last
    /// path component is never followed if it is a symbolic link (O_NOFOLLOW:
    /// ELOOP), and a file created here is mode 0600 (tenant data).
    pub fn open_checked(path: &Path, opts: LuOptions, check: impl FnOnce(&Metadata) -> io::Result<()>) -> io::Result<LogicalUnit> {
        let bs = opts.block_size;
        if bs < 512 || !bs.is_power_of_two() || bs > 1 << 20 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("block size {} is not a power of two between 512 and 1 MiB", bs),
            ));
        }
        let mut oo = OpenOptions::new();
        oo.read(true).write(!opts.read_only).custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW).mode(0o600);
        if opts.size_bytes.is_some() && !opts.read_only {
            oo.create(true);
        }
        let file = oo.open(path)?;
        let meta = file.metadata()?;
        check(&meta)?;
        let (kind, bytes) = if meta.file_type().is_block_device() {
            (BackingKind::BlockDevice, block_device_size(&file)?)
        } else if meta.file_type().is_file() {
            if meta.len() == 0 {
                if let Some(size) = opts.size_bytes {
                    // set_len leaves a hole: a thin volume costs no space until written.
                    file.set_len(size - size % u64::from(bs))?;
                }
            }
            (BackingKind::File, file.metadata()?.len())
        } else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is neither a regular file nor a block device", path.display()),
            ));
        };
        Ok(LogicalUnit {
            file,
            kind,
            block_size: bs,
            block_shift: bs.trailing_zeros(),
            blocks: AtomicU64::new(bytes >> bs.trailing_zeros()),
            read_only: opts.read_only,
            serial: opts.serial,
            naa: opts.naa,
            write_order: RwLock::new(()),
        })
    }

    /// Logical block size in bytes.
    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    /// Number of logical blocks.
    pub fn blocks(&self) -> u64 {
        self.blocks.load(Ordering::Acquire)
    }

    /// Whether the unit is a regular file (else a block device).
    pub fn is_file(&self) -> bool {
        self.kind == BackingKind::File
    }

    /// Make a file-backed unit `size_bytes` long (rounded down to whole
    /// blocks; growing leaves a hole), or re-read a block device's size
    /// (`size_bytes` ignored). Returns the new number of blocks. The
    /// caller decides whether a shrink is allowed, and tells the
    /// initiators (`Target::capacity_changed`).
    pub fn resize(&self, size_bytes: u64) -> io::Result<u64> {
        let bytes = match self.kind {
            BackingKind::File => {
                self.file.set_len(size_bytes - size_bytes % u64::from(self.block_size))?;
                self.file.metadata()?.len()
            }
            BackingKind::BlockDevice => block_device_size(&self.file)?,
        };
        let blocks = bytes >> self.block_shift;
        self.blocks.store(blocks, Ordering::Release);
        Ok(blocks)
    }

    pub fn read_only(&self) -> bool {
        self.read_only
    }
    pub(crate) fn serial(&self) -> &str {
        &self.serial
    }
    pub(crate) fn naa(&self) -> u64 {
        self.naa
    }
    pub(crate) fn block_shift(&self) -> u32 {
        self.block_shift
    }
    /// Shared by every writer (iSCSI and ublk), exclusive for COMPARE AND
    /// WRITE and ORWRITE: a frontend that writes outside `execute` holds it
    /// shared for the write.
    pub fn write_order(&self) -> &RwLock<()> {
        &self.write_order
    }

    /// Whether `lba .. lba+count` lies inside the unit.
    pub(crate) fn range_ok(&self, lba: u64, count: u64) -> bool {
        lba.checked_add(count).map_or(false, |end| end <= self.blocks())
    }

    /// Byte offset of `lba` (callers have checked the range, so no overflow).
    pub(crate) fn offset(&self, lba: u64) -> u64 {
        lba << self.block_shift
    }

    /// Replaces `out`'s contents with `nbytes` read at block `lba`, reading
    /// straight into its spare capacity: no zero-fill first, and no
    /// allocation once the caller's reused buffer has grown to size.
    pub(crate) fn read_into(&self, lba: u64, nbytes: usize, out: &mut Vec<u8>) -> io::Result<()> {
        out.clear();
        out.reserve(nbytes);
        let fd = self.file.as_raw_fd();
        let base = self.offset(lba);
        let mut done = 0usize;
        while done < nbytes {
            // SAFETY: the pointer and length stay inside the reserved (uninitialised)
            // capacity, which pread only writes to; `set_len` below covers only
            // bytes pread reported as written or that we zero-filled.
            let n = unsafe {
                libc::pread(
                    fd,
                    out.as_mut_ptr().add(done) as *mut libc::c_void,
                    nbytes - done,
                    (base + done as u64) as libc::off_t,
                )
            };
            if n < 0 {
                let err = io::Error::last_os_error();
                if err.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(err);
            }
            if n == 0 {
                // The file shrank underneath us: read the rest as zeros.
                unsafe {
                    // SAFETY: inside the reserved capacity, as above.
                    std::ptr::write_bytes(out.as_mut_ptr().add(done), 0, nbytes - done);
                }
                done = nbytes;
                break;
            }
            done += n as usize;
        }
        // SAFETY: bytes 0..nbytes were all written by pread or write_bytes.
        unsafe { out.set_len(done) };
        Ok(())
    }

    pub fn raw_fd(&self) -> std::os::unix::io::RawFd {
        self.file.as_raw_fd()
    }

    /// Fills `buf` from byte `offset`; past the end of a file that shrank, zeros.
    pub(crate) fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => {
                    buf[done..].iter_mut().for_each(|b| *b = 0);
                    break;
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    pub fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }

    /// Writes all of `buf` at block `lba`.
    pub(crate) fn write_at(&self, lba: u64, buf: &[u8]) -> io::Result<()> {
        self.file.write_all_at(buf, self.offset(lba))
    }

    /// fdatasync: what SYNCHRONIZE CACHE and FUA promise.
    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// posix_fadvise(WILLNEED) for PRE-FETCH. Returns whether the kernel took
    /// the hint (regular files; block devices too).
    pub(crate) fn prefetch(&self, lba: u64, count: u64) -> bool {
        let rc = unsafe {
            // SAFETY: plain syscall on an fd we own; no memory is passed.
            libc::posix_fadvise(
                self.file.as_raw_fd(),
                self.offset(lba) as libc::off_t,
                self.offset(count) as libc::off_t,
                libc::POSIX_FADV_WILLNEED,
            )
        };
        rc == 0
    }

    /// Deallocates `count` blocks at `lba`: a hole in a file, a discard on a
    /// block device. Either way the blocks then read as zeros (LBPRZ).
    pub fn deallocate(&self, lba: u64, count: u64) -> io::Result<()> {
        if count == 0 {
            return Ok(());
        }
        let (off, len) = (self.offset(lba), self.offset(count));
        match self.kind {
            BackingKind::File => {
                let rc = unsafe {
                    // SAFETY: plain syscall on an fd we own.
                    libc::fallocate(
                        self.file.as_raw_fd(),
                        libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                        off as libc::off_t,
                        len as libc::off_t,
                    )
                };
                if rc == 0 {
                    return Ok(());
                }
                let err = io::Error::last_os_error();
                if err.raw_os_error() == Some(libc::EOPNOTSUPP) {
                    return self.write_zeros(lba, count);
                }
                Err(err)
            }
            BackingKind::BlockDevice => {
                // BLKZEROOUT, not BLKDISCARD: discard need not zero, and we
                // promise LBPRZ; the kernel turns zero-out into a deallocating
                // WRITE ZEROES where the device can.
                let range: [u64; 2] = [off, len];
                let rc = unsafe {
                    // SAFETY: BLKZEROOUT reads a u64[2] we own for the duration of the call.
                    libc::ioctl(self.file.as_raw_fd(), BLKZEROOUT as _, range.as_ptr())
                };
                if rc == 0 {
                    return Ok(());
                }
                self.write_zeros(lba, count)
            }
        }
    }

    /// Writes zeros over a range in bounded chunks (no huge allocation).
    fn write_zeros(&self, lba: u64, count: u64) -> io::Result<()> {
        const CHUNK: usize = 1 << 20;
        let zeros = vec![0u8; CHUNK];
        let mut off = self.offset(lba);
        let end = off + self.offset(count);
        while off < end {
            let n = ((end - off) as usize).min(CHUNK);
            self.file.write_all_at(&zeros[..n], off)?;
            off += n as u64;
        }
        Ok(())
    }

    /// For GET LBA STATUS: starting at `lba`, returns (mapped, extent length in
    /// blocks) of the run of same-state blocks, capped at the end of the unit.
    /// A block device reports everything mapped.
    pub(crate) fn extent_at(&self, lba: u64) -> io::Result<(bool, u64)> {
        let blocks = self.blocks();
        let remaining = blocks.saturating_sub(lba);
        if self.kind != BackingKind::File {
            return Ok((true, remaining));
        }
        let fd = self.file.as_raw_fd();
        let off = self.offset(lba) as libc::off_t;
        let file_end = self.offset(blocks) as libc::off_t;
        let bs = i64::from(self.block_size);
        // SAFETY: lseek on our fd; SEEK_DATA/SEEK_HOLE only read the extent map.
        let data = unsafe { libc::lseek(fd, off, libc::SEEK_DATA) };
        if data < 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::ENXIO) {
                return Ok((false, remaining)); // nothing but hole up to EOF
            }
            return Err(err);
        }
        if data > off {
            // A hole from off up to data; partial blocks count as mapped, so
            // round the hole down to whole blocks (the first block is wholly
            // hole only if data starts at or past its end).
            let hole_blocks = ((data - off) / bs) as u64;
            if hole_blocks > 0 {
                return Ok((false, hole_blocks.min(remaining)));
            }
        }
        // SAFETY: as above.
        let hole = unsafe { libc::lseek(fd, off, libc::SEEK_HOLE) };
        if hole < 0 {
            return Err(io::Error::last_os_error());
        }
        let hole = hole.min(file_end).max(off);
        // Round the mapped run up: a block partly mapped is mapped.
        let mapped = (((hole - off) + bs - 1) / bs).max(1) as u64;
        Ok((true, mapped.min(remaining)))
    }
}

fn block_device_size(file: &File) -> io::Result<u64> {
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 into `size`, which we own.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), BLKGETSIZE64 as _, &mut size as *mut u64) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(size)
}
