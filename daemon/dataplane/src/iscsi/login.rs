//! The login phase (RFC 7143 6.3, 11.12-11.13): stages, security negotiation
//! (None or CHAP), operational negotiation, and the checks that keep tenants
//! apart (target in this namespace, initiator allowed, CHAP passed).

use std::sync::Arc;

use super::chap::{ChapError, ChapServer};
use super::conn::{ConnCtx, Seq};
use super::params::{self, Params};
use super::pdu::{self, op, Bhs, Header};
use super::text;
use crate::budget::Permit;
use crate::registry::{Access, TargetEntry};

/// Stages (CSG/NSG values; 1 is the operational stage).
const SECURITY: u8 = 0;
const FULL_FEATURE: u8 = 3;

/// Login status (class << 8 | detail), RFC 7143 11.13.5.
pub mod status {
    pub const SUCCESS: u16 = 0x0000;
    pub const AUTH_FAILURE: u16 = 0x0201;
    pub const NOT_AUTHORIZED: u16 = 0x0202;
    pub const NOT_FOUND: u16 = 0x0203;
    pub const UNSUPPORTED_VERSION: u16 = 0x0205;
    pub const MISSING_PARAMETER: u16 = 0x0207;
    pub const SESSION_TYPE_UNSUPPORTED: u16 = 0x0209;
    pub const NO_SESSION: u16 = 0x020a;
    pub const INVALID_DURING_LOGIN: u16 = 0x020b;
    /// Target error, retry later: the namespace's or the target's
    /// connection limit is reached (crate::budget).
    pub const OUT_OF_RESOURCES: u16 = 0x0302;
}

/// Longest login text we gather over continued (C bit) PDUs.
const MAX_LOGIN_TEXT: usize = 64 * 1024;

/// What one login request led to.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    Continue,
    /// A final response with this status was sent; close the connection.
    Failed(u16),
    /// Full feature phase starts with the next PDU.
    Established,
}

/// Everything negotiated, handed to the session.
pub struct Established {
    pub initiator: String,
    pub isid: [u8; 6],
    pub tsih: u16,
    /// None for a discovery session.
    pub target: Option<Arc<TargetEntry>>,
    pub params: Params,
    /// Its place in the target's `max-connections`; held for the session's life.
    pub permit: Option<Permit>,
}

/// Login state of one connection.
pub struct Login {
    started: bool,
    isid: [u8; 6],
    initiator: String,
    discovery: bool,
    target: Option<Arc<TargetEntry>>,
    access: Access,
    csg: u8,
    auth_done: bool,
    chap: Option<ChapServer>,
    params: Params,
    declared_limits: bool,
    /// Text gathered from PDUs with the C bit.
    partial: Vec<u8>,
    tsih: u16,
    permit: Option<Permit>,
}

impl Login {
    pub fn new(ctx: &ConnCtx) -> Login {
        Login {
            started: false,
            isid: [0; 6],
            initiator: String::new(),
            discovery: false,
            target: None,
            access: Access::default(),
            csg: SECURITY,
            auth_done: false,
            chap: None,
            params: Params::defaults(&ctx.limits),
            declared_limits: false,
            partial: Vec::new(),
            tsih: 0,
            permit: None,
        }
    }

    /// The outcome, once `on_request` returned Established.
    pub fn finish(self) -> Established {
        Established {
            initiator: self.initiator,
            isid: self.isid,
            tsih: self.tsih,
            target: self.target,
            params: self.params,
            permit: self.permit,
        }
    }

    /// The initiator name, for logs (once known).
    pub fn initiator(&self) -> &str {
        &self.initiator
    }

    pub fn on_request(&mut self, ctx: &ConnCtx, bhs: Bhs, data: &[u8], seq: &mut Seq, out: &mut Vec<u8>) -> Step {
        let flags = bhs.flags();
        let (transit, cont) = (flags & 0x80 != 0, flags & 0x40 != 0);
        let (csg, nsg) = ((flags >> 2) & 3, flags & 3);
        if bhs.opcode() != op::LOGIN_REQ {
            return self.fail(bhs, seq, out, status::INVALID_DURING_LOGIN);
        }
        if !self.started {
            // The leading login request fixes the session's sequence numbers.
            seq.exp_cmd_sn = bhs.u32_at(24);
            seq.stat_sn = bhs.u32_at(28);
            let mut isid = [0u8; 6];
            isid.copy_from_slice(&bhs.0[8..14]);
            self.isid = isid;
            // Version-max >= 0 always holds; Version-min must be 0.
            if bhs.byte(3) != 0 {
                return self.fail(bhs, seq, out, status::UNSUPPORTED_VERSION);
            }
            // TSIH != 0 adds a connection to a session: MaxConnections=1.
            if bhs.u16_at(14) != 0 {
                return self.fail(bhs, seq, out, status::NO_SESSION);
            }
            // Over the namespace's connection limit: refused before any
            // name is looked at or anything is kept for it.
            if ctx.admitted.is_none() {
                return self.fail(bhs, seq, out, status::OUT_OF_RESOURCES);
            }
            self.csg = csg;
        }
        if (transit && cont) || csg != self.csg || csg == 2 || csg == FULL_FEATURE
            || (transit && (nsg <= csg || nsg == 2))
            || bhs.0[8..14] != self.isid
        {
            return self.fail(bhs, seq, out, status::INVALID_DURING_LOGIN);
        }
        if self.partial.len() + data.len() > MAX_LOGIN_TEXT {
            return self.fail(bhs, seq, out, status::INVALID_DURING_LOGIN);
        }
        self.partial.extend_from_slice(data);
        if cont {
            // More text follows: answer with an empty response (RFC 7143 6.2).
            self.respond(bhs, seq, out, 0, csg, 0, &[]);
            return Step::Continue;
        }
        let text_bytes = std::mem::take(&mut self.partial);
        let Ok(keys) = text::parse(&text_bytes) else {
            return self.fail(bhs, seq, out, status::INVALID_DURING_LOGIN);
        };
        let mut reply = Vec::new();
        if !self.started {
            self.started = true;
            if let Err(code) = self.identify(ctx, &keys, &mut reply) {
                return self.fail(bhs, seq, out, code);
            }
        }
        let result = if csg == SECURITY {
            self.security(ctx, &keys, &mut reply)
        } else {
            self.operational(ctx, &keys, &mut reply)
        };
        if let Err(code) = result {
            return self.fail(bhs, seq, out, code);
        }
        let may_transit = transit && (csg != SECURITY || self.auth_done);
        if !may_transit {
            self.respond(bhs, seq, out, 0, csg, 0, &reply);
            return Step::Continue;
        }
        self.csg = nsg;
        if nsg != FULL_FEATURE {
            self.respond(bhs, seq, out, 0x80, csg, nsg, &reply);
            return Step::Continue;
        }
        if !self.declared_limits {
            // Never reached the operational stage: the initiator assumes the
            // default 8192 for what it may send us.
            self.params.max_recv_data_segment = 8192;
        }
        params::settle(&mut self.params);
        self.tsih = ctx.registry.new_tsih();
        self.respond(bhs, seq, out, 0x80, csg, nsg, &reply);
        Step::Established
    }

    /// First request: who is logging in, to what; tenancy and ACL checks.
    fn identify(&mut self, ctx: &ConnCtx, keys: &[(String, String)], reply: &mut Vec<u8>) -> Result<(), u16> {
        let get = |k: &str| keys.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str());
        let initiator = get("InitiatorName").ok_or(status::MISSING_PARAMETER)?;
        self.initiator = initiator.to_string();
        match get("SessionType").unwrap_or("Normal") {
            "Discovery" => {
                self.discovery = true;
                self.auth_done = true;
            }
            "Normal" => {
                let name = get("TargetName").ok_or(status::MISSING_PARAMETER)?;
                // Only targets of the namespace this connection arrived in exist here.
                let target = ctx
                    .registry
                    .find_target(&ctx.netns, ctx.ns_identity, name)
                    .ok_or(status::NOT_FOUND)?;
                let access = target.access.read().unwrap_or_else(|e| e.into_inner()).clone();
                if !access.allows(initiator) {
                    return Err(status::NOT_AUTHORIZED);
                }
                self.permit = Some(Permit::take(&[&target.connections], 1).ok_or(status::OUT_OF_RESOURCES)?);
                self.auth_done = access.chap.is_none();
                self.access = access;
                text::push(reply, "TargetPortalGroupTag", &target.tpgt.to_string());
                self.target = Some(target);
            }
            _ => return Err(status::SESSION_TYPE_UNSUPPORTED),
        }
        Ok(())
    }

    fn security(&mut self, ctx: &ConnCtx, keys: &[(String, String)], reply: &mut Vec<u8>) -> Result<(), u16> {
        let needs_chap = self.access.chap.is_some();
        let mut chap_keys = Vec::new();
        for (k, v) in keys {
            match k.as_str() {
                "AuthMethod" => {
                    let offered: Vec<&str> = v.split(',').collect();
                    if needs_chap {
                        if !offered.contains(&"CHAP") {
                            text::push(reply, "AuthMethod", "Reject");
                            return Err(status::AUTH_FAILURE);
                        }
                        text::push(reply, "AuthMethod", "CHAP");
                        self.chap = Some(ChapServer::new());
                    } else if offered.contains(&"None") {
                        text::push(reply, "AuthMethod", "None");
                    } else {
                        text::push(reply, "AuthMethod", "Reject");
                        return Err(status::AUTH_FAILURE);
                    }
                }
                k if k.starts_with("CHAP_") => chap_keys.push((k.to_string(), v.clone())),
                _ => {}
            }
        }
        if let Some(chap) = &mut self.chap {
            let secret = self.access.chap.as_ref().ok_or(status::AUTH_FAILURE)?;
            chap.step(&chap_keys, secret, self.access.mutual_chap.as_ref(), reply)
                .map_err(|_: ChapError| status::AUTH_FAILURE)?;
            if chap.done() {
                self.auth_done = true;
            }
        } else if !chap_keys.is_empty() {
            return Err(status::AUTH_FAILURE);
        }
        // Operational keys offered early are negotiated now.
        for (k, v) in keys {
            if k != "AuthMethod" && !k.starts_with("CHAP_") {
                params::negotiate(k, v, &ctx.limits, &mut self.params, reply);
            }
        }
        Ok(())
    }

    fn operational(&mut self, ctx: &ConnCtx, keys: &[(String, String)], reply: &mut Vec<u8>) -> Result<(), u16> {
        if !self.auth_done {
            // CHAP is required and the initiator skipped the security stage.
            return Err(status::AUTH_FAILURE);
        }
        for (k, v) in keys {
            if k == "AuthMethod" || k.starts_with("CHAP_") {
                return Err(status::INVALID_DURING_LOGIN);
            }
            params::negotiate(k, v, &ctx.limits, &mut self.params, reply);
        }
        if !self.declared_limits {
            self.declared_limits = true;
            text::push(reply, "MaxRecvDataSegmentLength", &self.params.max_recv_data_segment.to_string());
        }
        Ok(())
    }

    fn fail(&mut self, bhs: Bhs, seq: &mut Seq, out: &mut Vec<u8>, code: u16) -> Step {
        let mut h = login_header(bhs, seq, 0, self.csg & 3, 0, self.tsih);
        h.set_u16(36, code);
        pdu::append(out, &h, &[], pdu::Digests::default());
        Step::Failed(code)
    }

    #[allow(clippy::too_many_arguments)]
    fn respond(&mut self, bhs: Bhs, seq: &mut Seq, out: &mut Vec<u8>, t: u8, csg: u8, nsg: u8, data: &[u8]) {
        let h = login_header(bhs, seq, t, csg, nsg, self.tsih);
        pdu::append(out, &h, data, pdu::Digests::default());
    }
}

fn login_header(req: Bhs, seq: &mut Seq, t: u8, csg: u8, nsg: u8, tsih: u16) -> Header {
    let mut h = Header::new(op::LOGIN_RSP, t | (csg << 2) | if t != 0 { nsg } else { 0 });
    h.set_bytes(8, &req.0[8..14]).set_u16(14, tsih).itt(req.itt());
    h.set_u32(24, seq.stat_sn);
    seq.stat_sn = seq.stat_sn.wrapping_add(1);
    h.set_u32(28, seq.exp_cmd_sn).set_u32(32, seq.max_cmd_sn());
    h
}
