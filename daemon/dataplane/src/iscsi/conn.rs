//! One iSCSI connection as a pure state machine: bytes in, bytes out. The
//! event loop owns the socket; this owns the protocol (login, then the full
//! feature phase of its one session). Tests drive it without sockets.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::login::{Login, Step};
use super::params::Limits;
use super::pdu::{self, Bhs};
use super::session::Session;
use crate::batch::IoEngine;
use crate::budget::{NsUsage, Permit};
use crate::registry::{Counters, Registry};

/// Commands the initiator may have in flight (MaxCmdSN - ExpCmdSN + 1).
pub const CMD_WINDOW: u32 = 128;
/// A connection that has not finished logging in by then is dropped.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(30);
/// Stop processing input while this much output waits (back-pressure).
pub const OUT_HIGH_WATER: usize = 4 * 1024 * 1024;

/// Where a connection arrived: fixed for its life.
pub struct ConnCtx {
    pub registry: Arc<Registry>,
    /// Namespace name, and the identity of the namespace its listener was made in.
    pub netns: String,
    pub ns_identity: u64,
    pub ns_alive: Arc<AtomicBool>,
    pub portal_alive: Arc<AtomicBool>,
    /// "ADDR:PORT" (IPv6 in brackets) the initiator connected to: the
    /// TargetAddress SendTargets reports.
    pub portal: String,
    pub limits: Limits,
    /// The namespace's connection count and write budget (crate::budget).
    pub usage: Arc<NsUsage>,
    /// This connection's place in the namespace's connection limit; None:
    /// over it, so its login is refused (OUT OF RESOURCES) and it closes.
    pub admitted: Option<Permit>,
}

impl ConnCtx {
    /// Counts a new connection against its namespace's limit.
    pub fn admit(usage: &Arc<NsUsage>) -> Option<Permit> {
        Permit::take(&[&usage.connections], 1)
    }

    /// For the unit tests and the fuzz targets: a connection to `portal` in
    /// a live namespace, with default limits and a fresh connection count.
    #[cfg(any(test, fuzzing))]
    pub fn standalone(registry: Arc<Registry>, netns: &str, ns_identity: u64, portal: &str) -> ConnCtx {
        ConnCtx {
            registry,
            netns: netns.into(),
            ns_identity,
            ns_alive: Arc::new(AtomicBool::new(true)),
            portal_alive: Arc::new(AtomicBool::new(true)),
            portal: portal.into(),
            limits: Limits::default(),
            usage: Default::default(),
            admitted: ConnCtx::admit(&Default::default()),
        }
    }
}

/// Sequence numbers of the session (one connection per session).
#[derive(Clone, Copy, Debug)]
pub struct Seq {
    pub stat_sn: u32,
    pub exp_cmd_sn: u32,
    pub window: u32,
}

impl Seq {
    pub fn max_cmd_sn(&self) -> u32 {
        self.exp_cmd_sn.wrapping_add(self.window).wrapping_sub(1)
    }
}

/// Why a connection must close (for the log; never sent anywhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Close(pub &'static str);

enum Phase {
    Login(Box<Login>),
    Full(Box<Session>),
}

pub struct Connection {
    pub ctx: ConnCtx,
    phase: Phase,
    seq: Seq,
    started: Instant,
    last_input: Instant,
    /// The last response is queued; close once it is sent.
    closing: Option<Close>,
}

/// How often an idle connection is pinged, and how long the answer may take.
#[derive(Clone, Copy, Debug)]
pub struct Timers {
    pub ping_idle: Duration,
    pub ping_timeout: Duration,
}

impl Default for Timers {
    fn default() -> Timers {
        Timers { ping_idle: Duration::from_secs(10), ping_timeout: Duration::from_secs(30) }
    }
}

impl Connection {
    pub fn new(ctx: ConnCtx, now: Instant) -> Connection {
        let login = Box::new(Login::new(&ctx));
        Counters::add(&ctx.registry.counters.connections, 1);
        Connection {
            ctx,
            phase: Phase::Login(login),
            seq: Seq { stat_sn: 0, exp_cmd_sn: 0, window: CMD_WINDOW },
            started: now,
            last_input: now,
            closing: None,
        }
    }

    /// Digests in force for framing input.
    fn digests(&self) -> pdu::Digests {
        match &self.phase {
            Phase::Login(_) => pdu::Digests::default(),
            Phase::Full(s) => s.digests(),
        }
    }

    fn max_data(&self) -> u32 {
        match &self.phase {
            Phase::Login(_) => 8192,
            Phase::Full(s) => s.params.max_recv_data_segment,
        }
    }

    /// Set once the connection should close after `out` is flushed.
    pub fn closing(&self) -> Option<Close> {
        self.closing
    }

    /// Whole PDUs in `rx` are handled and their answers appended to `out`.
    /// Returns how many bytes were consumed; Err: close now (after sending
    /// whatever `out` holds). Backing I/O the pass planned runs on `io`
    /// before this returns: nothing stays in flight between calls.
    pub fn receive(&mut self, rx: &[u8], out: &mut Vec<u8>, now: Instant, io: &mut IoEngine) -> Result<usize, Close> {
        let r = self.receive_pdus(rx, out, now, io);
        if let Phase::Full(s) = &mut self.phase {
            s.flush(&self.ctx, &mut self.seq, out, io);
        }
        r
    }

    fn receive_pdus(&mut self, rx: &[u8], out: &mut Vec<u8>, now: Instant, io: &mut IoEngine) -> Result<usize, Close> {
        let mut pos = 0;
        while self.closing.is_none() && out.len() < OUT_HIGH_WATER {
            let rest = &rx[pos..];
            let frame = match pdu::frame(rest, self.digests(), self.max_data()) {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => {
                    Counters::add(&self.ctx.registry.counters.protocol_errors, 1);
                    let _ = e;
                    return Err(Close("unframeable PDU (bad header digest or oversized data segment)"));
                }
            };
            let pdu_bytes = &rest[..frame.total];
            pos += frame.total;
            self.last_input = now;
            let c = &self.ctx.registry.counters;
            Counters::add(&c.pdus_in, 1);
            Counters::add(&c.bytes_in, frame.total as u64);
            self.on_pdu(pdu_bytes, &frame, out, io)?;
        }
        Ok(pos)
    }

    fn on_pdu(&mut self, pdu_bytes: &[u8], frame: &pdu::Frame, out: &mut Vec<u8>, io: &mut IoEngine) -> Result<(), Close> {
        let bhs = Bhs(&pdu_bytes[..pdu::BHS_LEN]);
        match &mut self.phase {
            Phase::Login(login) => {
                let data = &pdu_bytes[frame.data_off..frame.data_off + frame.data_len];
                match login.on_request(&self.ctx, bhs, data, &mut self.seq, out) {
                    Step::Continue => Ok(()),
                    Step::Failed(_) => {
                        Counters::add(&self.ctx.registry.counters.login_failures, 1);
                        self.closing = Some(Close("login failed"));
                        Ok(())
                    }
                    Step::Established => {
                        let Phase::Login(login) = std::mem::replace(
                            &mut self.phase,
                            Phase::Login(Box::new(Login::new(&self.ctx))),
                        ) else {
                            return Err(Close("internal: phase changed"));
                        };
                        Counters::add(&self.ctx.registry.counters.logins, 1);
                        self.phase = Phase::Full(Box::new(Session::new(login.finish())));
                        Ok(())
                    }
                }
            }
            Phase::Full(session) => {
                let r = session.on_pdu(&self.ctx, &mut self.seq, pdu_bytes, frame, out, io);
                if session.logged_out {
                    self.closing = Some(Close("logged out"));
                }
                r
            }
        }
    }

    /// Periodic check: pings, timeouts, and whether what this connection
    /// serves still exists. Err: close now.
    pub fn tick(&mut self, out: &mut Vec<u8>, now: Instant, timers: &Timers) -> Result<(), Close> {
        if !self.ctx.ns_alive.load(Ordering::Acquire) {
            return Err(Close("namespace removed"));
        }
        if !self.ctx.portal_alive.load(Ordering::Acquire) {
            return Err(Close("portal removed"));
        }
        match &mut self.phase {
            Phase::Login(_) => {
                if now.duration_since(self.started) > LOGIN_TIMEOUT {
                    return Err(Close("login timed out"));
                }
            }
            Phase::Full(s) => {
                if let Some(t) = &s.target {
                    if !t.alive.load(Ordering::Acquire) {
                        return Err(Close("target removed"));
                    }
                }
                if !s.alive.load(Ordering::Acquire) {
                    return Err(Close("session reinstated by a new login"));
                }
                match s.ping {
                    Some((_, sent)) if now.duration_since(sent) > timers.ping_timeout => {
                        return Err(Close("initiator did not answer our NOP-In"));
                    }
                    None if now.duration_since(self.last_input) > timers.ping_idle => {
                        s.send_ping(&self.ctx, &mut self.seq, out, now);
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The connection is gone: release the session (reservations, counts).
    pub fn shutdown(&mut self) {
        if let Phase::Full(s) = &mut self.phase {
            s.close();
        }
        // Leave a login phase behind so a second call does nothing.
        self.phase = Phase::Login(Box::new(Login::new(&self.ctx)));
        Counters::add(&self.ctx.registry.counters.connections_closed, 1);
    }

    /// (target IQN, initiator name) once logged in to a normal session.
    pub fn session_target(&self) -> Option<(&str, &str)> {
        match &self.phase {
            Phase::Full(s) => s.target.as_ref().map(|t| (t.iqn.as_str(), s.initiator.as_str())),
            Phase::Login(_) => None,
        }
    }
}
