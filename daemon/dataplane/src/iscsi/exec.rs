//! Running SCSI commands for a session: synchronously through the SCSI
//! crate's `execute`, or, for plain READs/WRITEs with a batching engine,
//! planned (`Target::plan`) into the session's batch and run together by
//! `flush` (docs/dataplane.md, "Batched backing I/O"). Either way the
//! answers (Data-In with collapsed status, residuals, SCSI Response) come
//! out in the order the commands came.

use netcfgd_scsi::{Completion, Plan};

use super::{Session, GOOD};
use crate::batch::{IoEngine, Pending};
use crate::iscsi::conn::{ConnCtx, Seq};
use crate::iscsi::residual;
use crate::registry::{read as read_lock, Counters, TargetEntry};

/// A batch of planned transfers runs when it holds this many, or this many
/// bytes, before the next one joins (or at the end of the input pass).
const BATCH_MAX: usize = crate::batch::RING_ENTRIES as usize;
const BATCH_BYTES: usize = 8 * 1024 * 1024;
/// Reused read buffers kept per connection, and the largest one kept.
const READ_POOL: usize = 32;
const READ_POOL_MAX_BUF: usize = 256 * 1024;
/// Largest synchronous Data-In buffer kept per connection between commands.
const DATA_IN_KEEP: usize = 1024 * 1024;

impl Session {
    /// Run one command and send its Data-In and status. With a batching
    /// engine a plain READ/WRITE is only planned here and joins the batch
    /// (`flush` runs it); anything else first runs what the batch holds, so
    /// commands take effect in the order they came.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn execute(&mut self, ctx: &ConnCtx, seq: &mut Seq, target: &TargetEntry, itt: u32, lun: u64, cdb: &mut [u8], edtl: u32, read: bool, data_out: Option<Vec<u8>>, out: &mut Vec<u8>, io: &mut IoEngine) {
        let mut write_residual = None;
        let mut written_len = 0;
        if let Some(d) = &data_out {
            let bs = read_lock(&target.block_sizes).get(&lun).copied().unwrap_or(512);
            let plan = residual::plan_write(cdb, bs, edtl);
            write_residual = plan.residual;
            if residual::is_empty_write6(cdb, &plan) {
                self.respond(ctx, seq, out, itt, GOOD, &[], write_residual, 0);
                self.recycle(data_out.unwrap_or_default());
                return;
            }
            written_len = plan.data_len.min(edtl as usize).min(d.len());
        }
        let is_write = data_out.is_some();
        if io.batching() {
            match target.scsi.plan(lun, &self.nexus, cdb, written_len) {
                Plan::Io(bio) => {
                    let direct = !io.accepts(&bio);
                    if direct
                        || self.batch.len() >= BATCH_MAX
                        || self.batch_bytes + bio.len() > BATCH_BYTES
                        || self.batch.iter().any(|p| p.io.conflicts_with(&bio))
                    {
                        self.flush(ctx, seq, out, io);
                    }
                    let buf = match data_out {
                        Some(b) => b,
                        None => {
                            let mut b = self.read_pool.pop().unwrap_or_default();
                            if b.len() < bio.len() {
                                b.resize(bio.len(), 0);
                            }
                            b
                        }
                    };
                    self.batch_bytes += bio.len();
                    self.batch.push(Pending { io: bio, buf, itt, lun, edtl, read, residual: write_residual });
                    if direct {
                        // Large, or a write the engine does not batch: one
                        // pread/pwrite now, after everything before it.
                        self.run_batch(ctx, seq, out, io, false);
                    }
                    return;
                }
                Plan::Done(c) => {
                    // Refused before any medium access: no ordering to keep.
                    self.complete(ctx, seq, out, itt, lun, edtl, read, is_write, write_residual, written_len, c, &[]);
                    if let Some(b) = data_out {
                        self.recycle(b);
                    }
                    return;
                }
                Plan::Execute => self.flush(ctx, seq, out, io),
            }
        }
        let mut data_in = std::mem::take(&mut self.data_in);
        let written = data_out.as_deref().map_or(&[][..], |d| &d[..written_len]);
        let c = target.scsi.execute(lun, &self.nexus, cdb, written, &mut data_in);
        self.complete(ctx, seq, out, itt, lun, edtl, read, is_write, write_residual, written_len, c, &data_in);
        // Kept for the next command unless a large read grew it (up to 8 MiB).
        if data_in.capacity() <= DATA_IN_KEEP {
            self.data_in = data_in;
        }
        if let Some(b) = data_out {
            self.recycle(b);
        }
    }

    /// Runs the batched transfers (one submission) and sends their answers,
    /// in the order the commands came.
    pub fn flush(&mut self, ctx: &ConnCtx, seq: &mut Seq, out: &mut Vec<u8>, io: &mut IoEngine) {
        self.run_batch(ctx, seq, out, io, true);
    }

    fn run_batch(&mut self, ctx: &ConnCtx, seq: &mut Seq, out: &mut Vec<u8>, io: &mut IoEngine, use_ring: bool) {
        if self.batch.is_empty() {
            return;
        }
        let mut batch = std::mem::take(&mut self.batch);
        self.batch_bytes = 0;
        let enters = io.enters;
        io.run(&mut batch, use_ring);
        if use_ring && io.enters > enters {
            let c = &ctx.registry.counters;
            Counters::add(&c.io_batches, 1);
            Counters::add(&c.io_batched, batch.len() as u64);
            Counters::add(&c.io_uring_enters, io.enters - enters);
        }
        // Drained, not taken: the results Vec keeps its capacity for the next batch.
        for (mut p, r) in batch.drain(..).zip(io.results.drain(..)) {
            let r = r.unwrap_or_else(|| Err(std::io::Error::from_raw_os_error(libc::EIO)));
            let len = p.io.len();
            if p.io.is_write() {
                let done = p.io.finish_write(r, &p.buf[..len]);
                self.complete(ctx, seq, out, p.itt, p.lun, p.edtl, p.read, true, p.residual, len, done, &[]);
                self.recycle(p.buf);
            } else {
                let done = p.io.finish_read(r, &mut p.buf[..len]);
                let data = if done.status == GOOD { &p.buf[..len] } else { &[][..] };
                self.complete(ctx, seq, out, p.itt, p.lun, p.edtl, p.read, false, None, 0, done, data);
                if self.read_pool.len() < READ_POOL && p.buf.len() <= READ_POOL_MAX_BUF {
                    self.read_pool.push(p.buf);
                }
            }
        }
        self.batch = batch;
    }

    /// Counters, residuals, Data-In and status for a finished command.
    #[allow(clippy::too_many_arguments)]
    fn complete(&self, ctx: &ConnCtx, seq: &mut Seq, out: &mut Vec<u8>, itt: u32, lun: u64, edtl: u32, read: bool, is_write: bool, write_residual: Option<(u8, u32)>, written: usize, c: Completion, data_in: &[u8]) {
        let counters = &ctx.registry.counters;
        Counters::add(&counters.write_bytes, written as u64);
        let produced = data_in.len() as u64;
        let sent = produced.min(edtl as u64) as usize;
        Counters::add(&counters.read_bytes, sent as u64);
        // Residuals compare what the command moved with what was expected.
        let residual = if is_write {
            write_residual
        } else if produced > edtl as u64 {
            Some((0x04u8, (produced - edtl as u64).min(u32::MAX as u64) as u32))
        } else if produced < edtl as u64 && (read || edtl > 0) {
            Some((0x02u8, edtl - produced as u32))
        } else {
            None
        };
        if sent == 0 {
            self.respond(ctx, seq, out, itt, c.status, &c.sense, residual, 0);
        } else {
            let collapse = c.status == GOOD && c.sense.is_empty();
            let pdus = self.send_data_in(ctx, seq, out, itt, lun, &data_in[..sent], collapse.then_some((c.status, residual)));
            if !collapse {
                self.respond(ctx, seq, out, itt, c.status, &c.sense, residual, pdus);
            }
        }
    }

}
