//! Operational parameter negotiation (RFC 7143 13): what the initiator
//! offers, what we answer, and the values in force afterwards.

use std::ops::RangeInclusive;

use super::text;

/// What this target is willing to do (our side of each negotiation).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest data segment we accept (declared to the initiator).
    pub max_recv_data_segment: u32,
    pub max_burst: u32,
    pub first_burst: u32,
    pub max_outstanding_r2t: u32,
    pub default_time2wait: u32,
    pub default_time2retain: u32,
    /// Bytes of write data one connection may hold while it waits for
    /// Data-Out (reserved when a write is accepted, grown as data comes);
    /// beyond it new writes get TASK SET FULL.
    pub max_pending_write: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_recv_data_segment: 256 * 1024,
            max_burst: 1024 * 1024,
            first_burst: 256 * 1024,
            max_outstanding_r2t: 8,
            default_time2wait: 2,
            default_time2retain: 0,
            max_pending_write: 64 * 1024 * 1024,
        }
    }
}

/// Values in force for a session/connection (RFC defaults until negotiated).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    pub header_digest: bool,
    pub data_digest: bool,
    /// Largest data segment the initiator accepts: our Data-In/Text PDUs are cut to this.
    pub max_send_data_segment: u32,
    /// Largest data segment we accept.
    pub max_recv_data_segment: u32,
    pub max_burst: u32,
    pub first_burst: u32,
    pub immediate_data: bool,
    pub initial_r2t: bool,
    pub max_outstanding_r2t: u32,
    pub default_time2wait: u32,
    pub default_time2retain: u32,
}

impl Params {
    /// RFC 7143 defaults, with our receive limit already declared.
    pub fn defaults(limits: &Limits) -> Params {
        Params {
            header_digest: false,
            data_digest: false,
            max_send_data_segment: 8192,
            max_recv_data_segment: limits.max_recv_data_segment,
            max_burst: 262_144.min(limits.max_burst),
            first_burst: 65_536.min(limits.first_burst),
            immediate_data: true,
            initial_r2t: true,
            max_outstanding_r2t: 1,
            default_time2wait: 2,
            default_time2retain: 20.min(limits.default_time2retain),
        }
    }
}

/// Keys that only the Login phase may carry, and that we handle elsewhere
/// (declarations: no answer).
const DECLARATIVE: &[&str] = &["InitiatorName", "InitiatorAlias", "TargetName", "SessionType", "TargetAlias"];

/// Negotiate one operational key. Appends our answer to `reply`; returns
/// false when the key is unknown to us (answered NotUnderstood).
pub fn negotiate(key: &str, value: &str, limits: &Limits, p: &mut Params, reply: &mut Vec<u8>) {
    let num = |v: &str| text::number(v);
    let answer: String = match key {
        k if DECLARATIVE.contains(&k) => return,
        "HeaderDigest" | "DataDigest" => {
            // We take the first of the initiator's choices that we support.
            let chosen = value.split(',').find(|c| *c == "CRC32C" || *c == "None");
            match chosen {
                Some(c) => {
                    let on = c == "CRC32C";
                    if key == "HeaderDigest" {
                        p.header_digest = on;
                    } else {
                        p.data_digest = on;
                    }
                    c.to_string()
                }
                None => "Reject".to_string(),
            }
        }
        "MaxConnections" => match num(value) {
            Some(n) if n >= 1 => "1".to_string(),
            _ => "Reject".to_string(),
        },
        "InitialR2T" => match value {
            // OR: Yes if either side says Yes; we are content with No.
            "Yes" | "No" => {
                p.initial_r2t = value == "Yes";
                value.to_string()
            }
            _ => "Reject".to_string(),
        },
        "ImmediateData" => match value {
            // AND: we say Yes, so the initiator's value stands.
            "Yes" | "No" => {
                p.immediate_data = value == "Yes";
                value.to_string()
            }
            _ => "Reject".to_string(),
        },
        "MaxRecvDataSegmentLength" => {
            // Declarative: the initiator's receive limit bounds what we send.
            match num(value) {
                Some(n) if (512..=16_777_215).contains(&n) => {
                    p.max_send_data_segment = n as u32;
                }
                _ => {}
            }
            // Our own value is declared by the caller once per login.
            return;
        }
        "MaxBurstLength" => numeric(value, 512..=16_777_215, limits.max_burst, u32::min, &mut p.max_burst),
        "FirstBurstLength" => numeric(value, 512..=16_777_215, limits.first_burst, u32::min, &mut p.first_burst),
        "DefaultTime2Wait" => numeric(value, 0..=3600, limits.default_time2wait, u32::max, &mut p.default_time2wait),
        "DefaultTime2Retain" => numeric(value, 0..=3600, limits.default_time2retain, u32::min, &mut p.default_time2retain),
        "MaxOutstandingR2T" => numeric(value, 1..=65535, limits.max_outstanding_r2t, u32::min, &mut p.max_outstanding_r2t),
        // We deliver and expect data in order; OR with our Yes gives Yes.
        "DataPDUInOrder" | "DataSequenceInOrder" => match value {
            "Yes" | "No" => "Yes".to_string(),
            _ => "Reject".to_string(),
        },
        "ErrorRecoveryLevel" => match num(value) {
            Some(_) => "0".to_string(),
            None => "Reject".to_string(),
        },
        // No markers (AND with our No).
        "IFMarker" | "OFMarker" => "No".to_string(),
        "IFMarkInt" | "OFMarkInt" => "Irrelevant".to_string(),
        _ => "NotUnderstood".to_string(),
    };
    text::push(reply, key, &answer);
}

/// A numerical key (RFC 7143 6.2.2): a value in `range` settles on
/// `pick(value, ours)`, kept in `slot` and answered; any other is rejected.
fn numeric(value: &str, range: RangeInclusive<u64>, ours: u32, pick: fn(u32, u32) -> u32,
           slot: &mut u32) -> String {
    match text::number(value) {
        Some(n) if range.contains(&n) => {
            *slot = pick(n as u32, ours);
            slot.to_string()
        }
        _ => "Reject".to_string(),
    }
}

/// After a negotiation round: FirstBurstLength may not exceed MaxBurstLength.
pub fn settle(p: &mut Params) {
    if p.first_burst > p.max_burst {
        p.first_burst = p.max_burst;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pairs: &[(&str, &str)]) -> (Params, Vec<(String, String)>) {
        let limits = Limits::default();
        let mut p = Params::defaults(&limits);
        let mut reply = Vec::new();
        for (k, v) in pairs {
            negotiate(k, v, &limits, &mut p, &mut reply);
        }
        settle(&mut p);
        (p, text::parse(&reply).unwrap())
    }

    #[test]
    fn typical_linux_offer() {
        let (p, reply) = run(&[
            ("HeaderDigest", "CRC32C,None"),
            ("DataDigest", "None"),
            ("MaxRecvDataSegmentLength", "262144"),
            ("MaxBurstLength", "16776192"),
            ("FirstBurstLength", "262144"),
            ("InitialR2T", "No"),
            ("ImmediateData", "Yes"),
            ("MaxOutstandingR2T", "1"),
            ("ErrorRecoveryLevel", "2"),
            ("MaxConnections", "4"),
            ("X-com.example.foo", "1"),
        ]);
        assert!(p.header_digest && !p.data_digest);
        assert_eq!(p.max_send_data_segment, 262144);
        assert_eq!(p.max_burst, 1024 * 1024);
        assert_eq!(p.first_burst, 256 * 1024);
        assert!(!p.initial_r2t && p.immediate_data);
        let get = |k: &str| reply.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str());
        assert_eq!(get("HeaderDigest"), Some("CRC32C"));
        assert_eq!(get("ErrorRecoveryLevel"), Some("0"));
        assert_eq!(get("MaxConnections"), Some("1"));
        assert_eq!(get("X-com.example.foo"), Some("NotUnderstood"));
        assert_eq!(get("MaxRecvDataSegmentLength"), None);
    }

    #[test]
    fn bad_values_are_rejected_and_first_burst_capped() {
        let (p, reply) = run(&[("MaxBurstLength", "4096"), ("FirstBurstLength", "65536"), ("DataDigest", "MD5")]);
        assert_eq!((p.max_burst, p.first_burst), (4096, 4096));
        assert!(reply.contains(&("DataDigest".into(), "Reject".into())));
    }
}
