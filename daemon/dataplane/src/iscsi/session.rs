//! The full feature phase of one session (RFC 7143 11.1-11.19): SCSI
//! commands in CmdSN order, Data-In with phase-collapsed status, R2T and
//! Data-Out, text (SendTargets), NOP, task management, logout and reject.
//!
//! Commands run to completion within the pass over the connection's input
//! on its event loop (`exec.rs`): synchronously through the SCSI crate, or
//! batched on the loop's io_uring and finished before the pass ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use netcfgd_scsi::Nexus;

use super::conn::{Close, ConnCtx, Seq};
use super::login::Established;
use super::params::Params;
use super::pdu::{self, op, reject, Bhs, Header, RESERVED_TAG};
use super::text;
use crate::batch::{IoEngine, Pending};
use crate::budget::Permit;

// Running commands (synchronously or batched) and sending their answers.
#[path = "exec.rs"]
mod exec;
use crate::registry::{Counters, TargetEntry};

/// Largest Expected Data Transfer Length we accept for one write.
const MAX_WRITE: u32 = 64 * 1024 * 1024;
/// Commands held back waiting for a CmdSN gap to fill.
const MAX_QUEUED: usize = 128;
/// Reused write buffers kept per connection, and the largest one kept:
/// at most 2 MiB stays allocated per idle connection.
const POOL: usize = 8;
const POOL_MAX_BUF: usize = 256 * 1024;
const TASK_SET_FULL: u8 = 0x28;
const GOOD: u8 = 0x00;
const CHECK_CONDITION: u8 = 0x02;

/// One outstanding R2T.
struct R2t {
    ttt: u32,
    offset: u32,
    len: u32,
    received: u32,
    next_data_sn: u32,
}

/// A write waiting for its data.
struct WriteTask {
    itt: u32,
    lun: u64,
    cdb: Cdb,
    edtl: u32,
    /// Grows as data arrives (never allocated for `edtl` up front), within
    /// `charge`, which reserved `edtl` bytes of the connection's, the
    /// namespace's and the data path's write budgets when the write came.
    buf: Vec<u8>,
    charge: Permit,
    received: u32,
    /// Unsolicited Data-Out may still come (InitialR2T=No and the command's F bit clear).
    unsolicited_open: bool,
    unsolicited_data_sn: u32,
    next_r2t_offset: u32,
    r2t_sn: u32,
    r2ts: Vec<R2t>,
}

/// A text response too long for one PDU, sent in pieces.
struct PendingText {
    ttt: u32,
    itt: u32,
    rest: Vec<u8>,
}

pub struct Session {
    pub initiator: String,
    pub tsih: u16,
    pub target: Option<Arc<TargetEntry>>,
    pub nexus: Nexus,
    pub params: Params,
    pub logged_out: bool,
    /// Cleared when a newer login of the same nexus reinstated this session.
    pub alive: Arc<AtomicBool>,
    /// Our outstanding NOP-In ping: (TTT, sent at).
    pub ping: Option<(u32, Instant)>,
    writes: Vec<WriteTask>,
    /// Commands that came early (CmdSN gap), each charged like write data.
    queued: Vec<(u32, Vec<u8>, Permit)>,
    /// Our place in the target's `max-connections`.
    _permit: Option<Permit>,
    next_ttt: u32,
    data_in: Vec<u8>,
    pool: Vec<Vec<u8>>,
    pending_text: Option<PendingText>,
    text_partial: Vec<u8>,
    /// Plain READs/WRITEs planned but not yet run (see `flush`).
    batch: Vec<Pending>,
    batch_bytes: usize,
    read_pool: Vec<Vec<u8>>,
}

/// Serial number arithmetic (RFC 1982) for CmdSN: is `sn` in [exp, exp+window)?
fn in_window(sn: u32, exp: u32, window: u32) -> bool {
    sn.wrapping_sub(exp) < window
}

impl Session {
    pub fn new(est: Established) -> Session {
        let isid: String = est.isid.iter().map(|b| format!("{b:02x}")).collect();
        let (target_port, tsih) = match &est.target {
            Some(t) => (format!("{},t,0x{:04x}", t.iqn, t.tpgt), est.tsih),
            None => (String::new(), est.tsih),
        };
        let nexus = Nexus { initiator_port: format!("{},i,0x{isid}", est.initiator), target_port };
        let mut alive = Arc::new(AtomicBool::new(true));
        if let Some(t) = &est.target {
            t.sessions.fetch_add(1, Ordering::Relaxed);
            let (flag, replaced) = t.register_session(&nexus.initiator_port);
            alive = flag;
            if replaced {
                // The old session's nexus is lost now, before this one uses it.
                t.scsi.nexus_lost(&nexus);
            }
        }
        Session {
            alive,
            nexus,
            initiator: est.initiator,
            tsih,
            target: est.target,
            params: est.params,
            logged_out: false,
            ping: None,
            writes: Vec::new(),
            queued: Vec::new(),
            _permit: est.permit,
            next_ttt: 1,
            data_in: Vec::new(),
            pool: Vec::new(),
            pending_text: None,
            text_partial: Vec::new(),
            batch: Vec::new(),
            batch_bytes: 0,
            read_pool: Vec::new(),
        }
    }

    /// The connection is going away: drop the nexus's reservations.
    pub fn close(&mut self) {
        if let Some(t) = &self.target {
            t.sessions.fetch_sub(1, Ordering::Relaxed);
            // A reinstated session's nexus already belongs to its successor.
            if self.alive.load(Ordering::Acquire) {
                t.unregister_session(&self.nexus.initiator_port, &self.alive);
                t.scsi.nexus_lost(&self.nexus);
            }
        }
    }

    pub fn digests(&self) -> pdu::Digests {
        pdu::Digests { header: self.params.header_digest, data: self.params.data_digest }
    }

    fn new_ttt(&mut self) -> u32 {
        let t = self.next_ttt;
        self.next_ttt = self.next_ttt.wrapping_add(1);
        if self.next_ttt == RESERVED_TAG {
            self.next_ttt = 1;
        }
        t
    }

    /// One PDU from the initiator.
    pub fn on_pdu(&mut self, ctx: &ConnCtx, seq: &mut Seq, pdu_bytes: &[u8], f: &pdu::Frame, out: &mut Vec<u8>, io: &mut IoEngine) -> Result<(), Close> {
        let bhs = Bhs(&pdu_bytes[..pdu::BHS_LEN]);
        let data = &pdu_bytes[f.data_off..f.data_off + f.data_len];
        if f.data_digest_bad {
            Counters::add(&ctx.registry.counters.digest_errors, 1);
            self.reject(seq, out, reject::DATA_DIGEST_ERROR, bhs);
            return Err(Close("data digest error"));
        }
        match bhs.opcode() {
            op::NOP_OUT if bhs.itt() == RESERVED_TAG => {
                // The answer to our ping.
                if matches!(self.ping, Some((ttt, _)) if ttt == bhs.u32_at(20)) {
                    self.ping = None;
                }
                Ok(())
            }
            op::NOP_OUT | op::SCSI_CMD | op::TMF_REQ | op::TEXT_REQ | op::LOGOUT_REQ => {
                self.ordered(ctx, seq, pdu_bytes, f, out, io)
            }
            op::DATA_OUT => self.data_out(ctx, seq, bhs, data, out, io),
            op::SNACK_REQ | op::LOGIN_REQ => {
                self.reject(seq, out, reject::PROTOCOL_ERROR, bhs);
                Ok(())
            }
            _ => {
                self.reject(seq, out, reject::COMMAND_NOT_SUPPORTED, bhs);
                Ok(())
            }
        }
    }

    /// Commands run in CmdSN order; immediate ones at once (RFC 7143 4.2.2.1).
    fn ordered(&mut self, ctx: &ConnCtx, seq: &mut Seq, pdu_bytes: &[u8], f: &pdu::Frame, out: &mut Vec<u8>, io: &mut IoEngine) -> Result<(), Close> {
        let bhs = Bhs(&pdu_bytes[..pdu::BHS_LEN]);
        if bhs.immediate() {
            return self.command(ctx, seq, pdu_bytes, f, out, io);
        }
        let sn = bhs.u32_at(24);
        if sn != seq.exp_cmd_sn {
            // Outside the window: silently ignored (RFC 7143 4.2.2.1).
            // A command that does not fit the budgets is dropped like one
            // outside the window: with one connection per session a gap
            // never happens on a healthy link.
            if in_window(sn, seq.exp_cmd_sn, seq.window) && self.queued.len() < MAX_QUEUED
                && !self.queued.iter().any(|(s, _, _)| *s == sn)
            {
                if let Some(charge) = self.charge(ctx, f.total as u64) {
                    self.queued.push((sn, pdu_bytes[..f.total].to_vec(), charge));
                }
            }
            return Ok(());
        }
        seq.exp_cmd_sn = seq.exp_cmd_sn.wrapping_add(1);
        self.command(ctx, seq, pdu_bytes, f, out, io)?;
        // A gap just filled may release commands that came early.
        while let Some(i) = self.queued.iter().position(|(s, _, _)| *s == seq.exp_cmd_sn) {
            let (_, bytes, _charge) = self.queued.swap_remove(i);
            seq.exp_cmd_sn = seq.exp_cmd_sn.wrapping_add(1);
            let digests = self.digests();
            if let Ok(Some(frame)) = pdu::frame(&bytes, digests, u32::MAX) {
                self.command(ctx, seq, &bytes, &frame, out, io)?;
            }
        }
        Ok(())
    }

    fn command(&mut self, ctx: &ConnCtx, seq: &mut Seq, pdu_bytes: &[u8], f: &pdu::Frame, out: &mut Vec<u8>, io: &mut IoEngine) -> Result<(), Close> {
        let bhs = Bhs(&pdu_bytes[..pdu::BHS_LEN]);
        if bhs.opcode() != op::SCSI_CMD {
            // Task management, logout, text and NOP see every earlier
            // command finished, as they would without batching.
            self.flush(ctx, seq, out, io);
        }
        let ahs = &pdu_bytes[pdu::BHS_LEN..f.header_len];
        let data = &pdu_bytes[f.data_off..f.data_off + f.data_len];
        match bhs.opcode() {
            op::NOP_OUT => {
                let mut h = Header::new(op::NOP_IN, 0x80);
                h.set_u64(8, bhs.lun_raw()).itt(bhs.itt()).set_u32(20, RESERVED_TAG);
                self.status_fields(&mut h, seq, true);
                let n = data.len().min(self.params.max_send_data_segment as usize);
                self.send(ctx, out, &h, &data[..n]);
                Ok(())
            }
            op::SCSI_CMD => self.scsi_command(ctx, seq, bhs, ahs, data, out, io),
            op::TMF_REQ => {
                self.task_management(ctx, seq, bhs, out);
                Ok(())
            }
            op::TEXT_REQ => self.text(ctx, seq, bhs, data, out),
            op::LOGOUT_REQ => {
                let reason = bhs.flags() & 0x7f;
                let response = match reason {
                    0 | 1 => 0,
                    _ => 2, // connection recovery is not supported at ERL 0
                };
                let mut h = Header::new(op::LOGOUT_RSP, 0x80);
                h.set_byte(2, response).itt(bhs.itt());
                self.status_fields(&mut h, seq, true);
                h.set_u16(40, 0).set_u16(42, 0);
                self.send(ctx, out, &h, &[]);
                if response == 0 {
                    self.logged_out = true;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// StatSN, ExpCmdSN, MaxCmdSN at their usual offsets; `advance` when the
    /// PDU carries status (takes a StatSN).
    fn status_fields(&self, h: &mut Header, seq: &mut Seq, advance: bool) {
        h.set_u32(24, seq.stat_sn);
        if advance {
            seq.stat_sn = seq.stat_sn.wrapping_add(1);
        }
        h.set_u32(28, seq.exp_cmd_sn).set_u32(32, seq.max_cmd_sn());
    }

    fn send(&self, ctx: &ConnCtx, out: &mut Vec<u8>, h: &Header, data: &[u8]) {
        let before = out.len();
        pdu::append(out, h, data, self.digests());
        let c = &ctx.registry.counters;
        Counters::add(&c.pdus_out, 1);
        Counters::add(&c.bytes_out, (out.len() - before) as u64);
    }

    pub fn reject(&self, seq: &mut Seq, out: &mut Vec<u8>, reason: u8, bhs: Bhs) {
        let mut h = Header::new(op::REJECT, 0x80);
        h.set_byte(2, reason).itt(RESERVED_TAG);
        self.status_fields(&mut h, seq, true);
        pdu::append(out, &h, &bhs.0[..pdu::BHS_LEN], self.digests());
    }

    /// A target-initiated NOP-In (RFC 7143 11.19): proves the connection lives.
    pub fn send_ping(&mut self, ctx: &ConnCtx, seq: &mut Seq, out: &mut Vec<u8>, now: Instant) {
        let ttt = self.new_ttt();
        let mut h = Header::new(op::NOP_IN, 0x80);
        h.itt(RESERVED_TAG).set_u32(20, ttt);
        self.status_fields(&mut h, seq, false);
        self.send(ctx, out, &h, &[]);
        self.ping = Some((ttt, now));
        Counters::add(&ctx.registry.counters.nops_sent, 1);
    }

    #[allow(clippy::too_many_arguments)]
    fn scsi_command(&mut self, ctx: &ConnCtx, seq: &mut Seq, bhs: Bhs, ahs: &[u8], data: &[u8], out: &mut Vec<u8>, io: &mut IoEngine) -> Result<(), Close> {
        let Some(target) = self.target.clone() else {
            // Discovery sessions carry no SCSI commands.
            self.reject(seq, out, reject::PROTOCOL_ERROR, bhs);
            return Ok(());
        };
        let flags = bhs.flags();
        let (read, write, fin) = (flags & 0x40 != 0, flags & 0x20 != 0, flags & 0x80 != 0);
        let edtl = bhs.u32_at(20);
        let lun = bhs.lun();
        let Some(mut cdb) = full_cdb(bhs, ahs) else {
            self.reject(seq, out, reject::INVALID_PDU_FIELD, bhs);
            return Ok(());
        };
        Counters::add(&ctx.registry.counters.scsi_commands, 1);
        if !write {
            if !data.is_empty() {
                self.reject(seq, out, reject::PROTOCOL_ERROR, bhs);
                return Err(Close("immediate data on a command without the W bit"));
            }
            self.execute(ctx, seq, &target, bhs.itt(), lun, cdb.as_mut(), edtl, read, None, out, io);
            return Ok(());
        }
        let unsolicited_max = if self.params.initial_r2t { 0 } else { self.params.first_burst.min(edtl) };
        let too_much = data.len() as u32 > edtl
            || data.len() as u32 > self.params.first_burst
            || (!self.params.immediate_data && !data.is_empty());
        if too_much {
            self.reject(seq, out, reject::PROTOCOL_ERROR, bhs);
            return Err(Close("immediate data beyond what was negotiated"));
        }
        if edtl > MAX_WRITE {
            let sense = invalid_field_in_cdb();
            self.respond(ctx, seq, out, bhs.itt(), CHECK_CONDITION, &sense, None, 0);
            return Ok(());
        }
        let mut buf = self.pool.pop().unwrap_or_default();
        buf.clear();
        let received = data.len() as u32;
        if received == edtl {
            // All of it came with the command: nothing waits, nothing to reserve.
            buf.extend_from_slice(data);
            self.execute(ctx, seq, &target, bhs.itt(), lun, cdb.as_mut(), edtl, read, Some(buf), out, io);
            return Ok(());
        }
        // The whole write is reserved now, so once accepted it can always
        // finish; memory is only taken as its data arrives (`grow`).
        let Some(charge) = self.charge(ctx, edtl as u64) else {
            self.recycle(buf);
            self.respond(ctx, seq, out, bhs.itt(), TASK_SET_FULL, &[], None, 0);
            return Ok(());
        };
        grow(&mut buf, data, edtl);
        let task = WriteTask {
            itt: bhs.itt(),
            lun,
            cdb,
            edtl,
            buf,
            charge,
            received,
            unsolicited_open: !fin && unsolicited_max > received,
            unsolicited_data_sn: 0,
            next_r2t_offset: received,
            r2t_sn: 0,
            r2ts: Vec::new(),
        };
        self.writes.push(task);
        let i = self.writes.len() - 1;
        if !self.writes[i].unsolicited_open {
            self.issue_r2ts(ctx, seq, i, out);
        }
        Ok(())
    }

    /// Reserve `n` bytes from the connection's, the namespace's and the
    /// data path's budgets; None when one of them is spent.
    fn charge(&self, ctx: &ConnCtx, n: u64) -> Option<Permit> {
        // What this connection holds: its own budget (`max_pending_write`).
        let held: u64 = self.writes.iter().map(|w| w.charge.amount()).sum::<u64>()
            + self.queued.iter().map(|(_, _, c)| c.amount()).sum::<u64>();
        if held + n > ctx.limits.max_pending_write {
            return None;
        }
        Permit::take(&[&ctx.usage.write_bytes, &ctx.registry.write_bytes], n)
    }

    fn recycle(&mut self, buf: Vec<u8>) {
        if self.pool.len() < POOL && buf.len() <= POOL_MAX_BUF {
            self.pool.push(buf);
        }
    }

    /// Solicit the rest of a write, up to MaxOutstandingR2T bursts at a time.
    fn issue_r2ts(&mut self, ctx: &ConnCtx, seq: &mut Seq, i: usize, out: &mut Vec<u8>) {
        let max_out = self.params.max_outstanding_r2t.max(1) as usize;
        let max_burst = self.params.max_burst.max(512);
        loop {
            let task = &self.writes[i];
            if task.r2ts.len() >= max_out || task.next_r2t_offset >= task.edtl {
                return;
            }
            let offset = task.next_r2t_offset;
            let len = max_burst.min(task.edtl - offset);
            let ttt = self.new_ttt();
            let task = &mut self.writes[i];
            task.r2ts.push(R2t { ttt, offset, len, received: 0, next_data_sn: 0 });
            task.next_r2t_offset += len;
            let r2t_sn = task.r2t_sn;
            task.r2t_sn += 1;
            let mut h = Header::new(op::R2T, 0x80);
            h.set_u64(8, pdu::encode_lun(task.lun)).itt(task.itt).set_u32(20, ttt);
            h.set_u32(36, r2t_sn).set_u32(40, offset).set_u32(44, len);
            self.status_fields(&mut h, seq, false);
            self.send(ctx, out, &h, &[]);
        }
    }

    fn data_out(&mut self, ctx: &ConnCtx, seq: &mut Seq, bhs: Bhs, data: &[u8], out: &mut Vec<u8>, io: &mut IoEngine) -> Result<(), Close> {
        let (itt, ttt) = (bhs.itt(), bhs.u32_at(20));
        let (data_sn, offset, fin) = (bhs.u32_at(36), bhs.u32_at(40), bhs.final_bit());
        let Some(i) = self.writes.iter().position(|t| t.itt == itt) else {
            // Data for a task we aborted (or never had): dropped (RFC 7143 11.7.4).
            return Ok(());
        };
        let len = data.len() as u32;
        let first_burst = self.params.first_burst;
        let task = &mut self.writes[i];
        let end = offset.checked_add(len).filter(|e| *e <= task.edtl);
        let ok = if ttt == RESERVED_TAG {
            let ok = task.unsolicited_open
                && data_sn == task.unsolicited_data_sn
                && offset == task.received
                && end.is_some_and(|e| e <= first_burst);
            if ok {
                task.unsolicited_data_sn += 1;
                if fin {
                    task.unsolicited_open = false;
                }
            }
            ok
        } else {
            match task.r2ts.iter_mut().find(|r| r.ttt == ttt) {
                Some(r) => {
                    let ok = data_sn == r.next_data_sn
                        && offset == r.offset + r.received
                        && r.received + len <= r.len
                        && offset == task.received;
                    if ok {
                        r.received += len;
                        r.next_data_sn += 1;
                    }
                    ok
                }
                None => false,
            }
        };
        let Some(end) = end.filter(|_| ok) else {
            // The task fails; the connection and its other tasks go on, and
            // any further Data-Out for this task is dropped as unknown.
            Counters::add(&ctx.registry.counters.protocol_errors, 1);
            let task = self.writes.swap_remove(i);
            self.respond(ctx, seq, out, itt, CHECK_CONDITION, &data_phase_error(), None, 0);
            self.recycle(task.buf);
            return Ok(());
        };
        // Data-Out comes in order (DataPDUInOrder=Yes, offset == received
        // checked above), so it is appended.
        grow(&mut task.buf, data, task.edtl);
        task.received = end;
        task.r2ts.retain(|r| r.received < r.len);
        if task.received == task.edtl && !task.unsolicited_open {
            let mut task = self.writes.swap_remove(i);
            match self.target.clone() {
                Some(target) => {
                    self.execute(ctx, seq, &target, task.itt, task.lun, task.cdb.as_mut(), task.edtl, false, Some(task.buf), out, io)
                }
                None => self.recycle(task.buf),
            }
        } else if !task.unsolicited_open {
            self.issue_r2ts(ctx, seq, i, out);
        }
        Ok(())
    }

    /// Data-In PDUs cut to the initiator's MaxRecvDataSegmentLength, F at the
    /// end of each MaxBurstLength sequence; status in the last when `status`.
    #[allow(clippy::too_many_arguments)]
    fn send_data_in(&self, ctx: &ConnCtx, seq: &mut Seq, out: &mut Vec<u8>, itt: u32, lun: u64, data: &[u8], status: Option<(u8, Option<(u8, u32)>)>) -> u32 {
        let seg = self.params.max_send_data_segment.max(512) as usize;
        let burst = self.params.max_burst.max(512) as usize;
        let mut offset = 0usize;
        let mut data_sn = 0u32;
        while offset < data.len() {
            let in_burst = burst - (offset % burst);
            let n = seg.min(in_burst).min(data.len() - offset);
            let last = offset + n == data.len();
            let mut flags = if last || n == in_burst { 0x80 } else { 0 };
            let mut h = Header::new(op::DATA_IN, 0);
            h.set_u64(8, pdu::encode_lun(lun)).itt(itt).set_u32(20, RESERVED_TAG);
            h.set_u32(36, data_sn).set_u32(40, offset as u32);
            match status {
                Some((st, residual)) if last => {
                    flags |= 0x01;
                    if let Some((bit, count)) = residual {
                        flags |= bit;
                        h.set_u32(44, count);
                    }
                    h.set_byte(3, st);
                    self.status_fields(&mut h, seq, true);
                }
                _ => {
                    h.set_u32(28, seq.exp_cmd_sn).set_u32(32, seq.max_cmd_sn());
                }
            }
            h.set_byte(1, flags);
            self.send(ctx, out, &h, &data[offset..offset + n]);
            offset += n;
            data_sn += 1;
        }
        data_sn
    }

    #[allow(clippy::too_many_arguments)]
    fn respond(&self, ctx: &ConnCtx, seq: &mut Seq, out: &mut Vec<u8>, itt: u32, status: u8, sense: &[u8], residual: Option<(u8, u32)>, exp_data_sn: u32) {
        let mut h = Header::new(op::SCSI_RSP, 0x80);
        h.set_byte(2, 0).set_byte(3, status).itt(itt);
        self.status_fields(&mut h, seq, true);
        h.set_u32(36, exp_data_sn);
        if let Some((bit, count)) = residual {
            h.set_byte(1, 0x80 | bit).set_u32(44, count);
        }
        if sense.is_empty() {
            self.send(ctx, out, &h, &[]);
        } else {
            let mut d = Vec::with_capacity(2 + sense.len());
            d.extend_from_slice(&(sense.len() as u16).to_be_bytes());
            d.extend_from_slice(sense);
            self.send(ctx, out, &h, &d);
        }
    }

    fn task_management(&mut self, ctx: &ConnCtx, seq: &mut Seq, bhs: Bhs, out: &mut Vec<u8>) {
        let function = bhs.flags() & 0x7f;
        let lun = bhs.lun();
        let referenced = bhs.u32_at(20);
        let response = match (&self.target, function) {
            (None, _) => 255, // rejected: no target in a discovery session
            (Some(_), 8) => 4, // TASK REASSIGN: no allegiance reassignment at ERL 0
            (Some(t), 1 | 5) if !t.scsi.luns().contains(&lun) => 2,
            (Some(t), 1) => {
                let before = self.writes.len() + self.queued.len();
                self.writes.retain(|w| w.itt != referenced);
                self.queued.retain(|(_, b, _)| Bhs(&b[..pdu::BHS_LEN]).itt() != referenced);
                if self.writes.len() + self.queued.len() < before {
                    t.scsi.abort_task(lun, &self.nexus, referenced);
                    0
                } else {
                    // RFC 7143 11.5.1: a task we never received (its CmdSN
                    // still ahead in the window, before this TMF) counts as
                    // aborted; one already completed does not exist.
                    let ref_sn = bhs.u32_at(32);
                    let tmf_sn = bhs.u32_at(24);
                    let pending = in_window(ref_sn, seq.exp_cmd_sn, seq.window)
                        && ref_sn.wrapping_sub(seq.exp_cmd_sn) < tmf_sn.wrapping_sub(seq.exp_cmd_sn);
                    if pending {
                        0
                    } else {
                        1
                    }
                }
            }
            (Some(t), 5) => {
                self.writes.retain(|w| w.lun != lun);
                self.queued.retain(|(_, b, _)| Bhs(&b[..pdu::BHS_LEN]).lun() != lun);
                t.scsi.lun_reset(lun, &self.nexus)
            }
            _ => 5, // task management function not supported
        };
        let mut h = Header::new(op::TMF_RSP, 0x80);
        h.set_byte(2, response).itt(bhs.itt());
        self.status_fields(&mut h, seq, true);
        self.send(ctx, out, &h, &[]);
    }

    fn text(&mut self, ctx: &ConnCtx, seq: &mut Seq, bhs: Bhs, data: &[u8], out: &mut Vec<u8>) -> Result<(), Close> {
        let ttt = bhs.u32_at(20);
        if ttt != RESERVED_TAG {
            // The initiator asks for the next piece of a long answer.
            return match self.pending_text.take() {
                Some(p) if p.ttt == ttt && p.itt == bhs.itt() => {
                    self.send_text(ctx, seq, out, bhs.itt(), p.rest);
                    Ok(())
                }
                _ => {
                    self.reject(seq, out, reject::INVALID_PDU_FIELD, bhs);
                    Ok(())
                }
            };
        }
        self.pending_text = None;
        if self.text_partial.len() + data.len() > 64 * 1024 {
            self.reject(seq, out, reject::PROTOCOL_ERROR, bhs);
            return Err(Close("text request too long"));
        }
        self.text_partial.extend_from_slice(data);
        if bhs.flags() & 0x40 != 0 {
            // More request text follows.
            let mut h = Header::new(op::TEXT_RSP, 0);
            let ttt = self.new_ttt();
            h.itt(bhs.itt()).set_u32(20, ttt);
            self.status_fields(&mut h, seq, true);
            self.send(ctx, out, &h, &[]);
            return Ok(());
        }
        let request = std::mem::take(&mut self.text_partial);
        let Ok(keys) = text::parse(&request) else {
            self.reject(seq, out, reject::PROTOCOL_ERROR, bhs);
            return Ok(());
        };
        let mut reply = Vec::new();
        for (k, v) in &keys {
            if k == "SendTargets" {
                self.send_targets(ctx, v, &mut reply);
            } else {
                text::push(&mut reply, k, "NotUnderstood");
            }
        }
        self.send_text(ctx, seq, out, bhs.itt(), reply);
        Ok(())
    }

    /// SendTargets (RFC 7143 appendix C): only this namespace's targets that
    /// this initiator may log in to; each reachable at the portal it asked.
    fn send_targets(&self, ctx: &ConnCtx, which: &str, reply: &mut Vec<u8>) {
        let current = ctx.registry.namespace(&ctx.netns).is_some_and(|n| n.identity == ctx.ns_identity);
        if !current {
            return;
        }
        for t in ctx.registry.targets_in(&ctx.netns) {
            let wanted = match which {
                "All" => true,
                "" => self.target.as_ref().is_some_and(|own| own.iqn == t.iqn),
                name => name == t.iqn,
            };
            let allowed = t.access.read().map(|a| a.allows(&self.initiator)).unwrap_or(false);
            if wanted && allowed && t.alive.load(Ordering::Acquire) {
                text::push(reply, "TargetName", &t.iqn);
                text::push(reply, "TargetAddress", &format!("{},{}", ctx.portal, t.tpgt));
            }
        }
    }

    fn send_text(&mut self, ctx: &ConnCtx, seq: &mut Seq, out: &mut Vec<u8>, itt: u32, mut reply: Vec<u8>) {
        let max = self.params.max_send_data_segment.max(512) as usize;
        let mut h = Header::new(op::TEXT_RSP, 0x80);
        h.itt(itt).set_u32(20, RESERVED_TAG);
        if reply.len() > max {
            let rest = reply.split_off(max);
            let ttt = self.new_ttt();
            h.set_byte(1, 0x40).set_u32(20, ttt);
            self.pending_text = Some(PendingText { ttt, itt, rest });
        }
        self.status_fields(&mut h, seq, true);
        self.send(ctx, out, &h, &reply);
    }
}

/// Append arrived write data to `buf`, growing it at most to `edtl`: the
/// buffer holds what came, never what was merely announced.
fn grow(buf: &mut Vec<u8>, data: &[u8], edtl: u32) {
    let need = buf.len() + data.len();
    if need > buf.capacity() {
        let want = need.max(buf.capacity() * 2).min(edtl as usize).max(need);
        buf.reserve_exact(want - buf.len());
    }
    buf.extend_from_slice(data);
}

/// The CDB: 16 bytes in the BHS plus an Extended CDB AHS (type 1) if present.
fn full_cdb(bhs: Bhs, mut ahs: &[u8]) -> Option<Cdb> {
    if ahs.is_empty() {
        // The common case: no allocation.
        let mut b = [0u8; 16];
        b.copy_from_slice(&bhs.0[32..48]);
        return Some(Cdb::Inline(b));
    }
    let mut cdb = bhs.0[32..48].to_vec();
    while ahs.len() >= 4 {
        let len = u16::from_be_bytes([ahs[0], ahs[1]]) as usize;
        let kind = ahs[2];
        let body = ahs.get(3..3 + len)?;
        if kind == 1 {
            // body[0] is reserved; the rest continues the CDB.
            cdb.extend_from_slice(body.get(1..)?);
        }
        ahs = ahs.get(pdu::pad4(3 + len)..).unwrap_or(&[]);
    }
    Some(Cdb::Long(cdb))
}

/// A CDB: 16 bytes inline, longer ones (Extended CDB AHS) on the heap.
enum Cdb {
    Inline([u8; 16]),
    Long(Vec<u8>),
}

impl Cdb {
    fn as_mut(&mut self) -> &mut [u8] {
        match self {
            Cdb::Inline(b) => b,
            Cdb::Long(v) => v,
        }
    }
}

/// Fixed-format sense data (SPC-4 4.5.3): current error, sense `key`,
/// additional sense code `asc` (qualifier 0).
fn fixed_sense(key: u8, asc: u8) -> Vec<u8> {
    let mut s = vec![0u8; 18];
    s[0] = 0x70;
    s[2] = key;
    s[7] = 10;
    s[12] = asc;
    s
}

/// ABORTED COMMAND, DATA PHASE ERROR (a Data-Out out of sequence).
fn data_phase_error() -> Vec<u8> {
    fixed_sense(0x0b, 0x4b)
}

/// ILLEGAL REQUEST, INVALID FIELD IN CDB.
fn invalid_field_in_cdb() -> Vec<u8> {
    fixed_sense(0x05, 0x24)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_wraps() {
        assert!(in_window(5, 5, 1));
        assert!(!in_window(6, 5, 1));
        assert!(in_window(2, u32::MAX - 1, 8));
        assert!(!in_window(4, 5, 8));
    }
}
