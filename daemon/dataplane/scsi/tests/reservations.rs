//! PERSISTENT RESERVE IN/OUT, the SPC-4 conflict matrix, RESERVE(6) and
//! RELEASE(6), nexus loss and LUN reset.
mod common;
use common::*;

fn prout(sa: u8, kind: u8, key: u64, sa_key: u64) -> ([u8; 10], Vec<u8>) {
    let mut c = [0u8; 10];
    c[0] = 0x5F;
    c[1] = sa;
    c[2] = kind;
    c[8] = 24;
    let mut p = vec![0u8; 24];
    p[0..8].copy_from_slice(&key.to_be_bytes());
    p[8..16].copy_from_slice(&sa_key.to_be_bytes());
    (c, p)
}

fn out(f: &Fixture, who: u32, sa: u8, kind: u8, key: u64, sa_key: u64) -> u8 {
    let (c, p) = prout(sa, kind, key, sa_key);
    f.run_as(&nexus(who), 0, &c, &p).0.status
}

fn prin(f: &Fixture, who: u32, sa: u8) -> Vec<u8> {
    let (c, d) = f.run_as(&nexus(who), 0, &[0x5E, sa, 0, 0, 0, 0, 0, 0x10, 0, 0], &[]);
    assert_eq!(c.status, GOOD, "{:02x?}", c.sense);
    d
}

/// A fixture where nexus 1 has registered key 0xA and nexus 2 key 0xB.
fn two_registrants() -> Fixture {
    let f = fixture();
    out(&f, 1, REGISTER, 0, 0, 0xA);
    out(&f, 2, REGISTER, 0, 0, 0xB);
    f
}

fn status_of(f: &Fixture, who: u32, cdb: &[u8], data: &[u8]) -> u8 {
    f.run_as(&nexus(who), 0, cdb, data).0.status
}

const REGISTER: u8 = 0;
const RESERVE: u8 = 1;
const RELEASE: u8 = 2;
const CLEAR: u8 = 3;
const PREEMPT: u8 = 4;
const REGISTER_AND_IGNORE: u8 = 6;

#[test]
fn register_read_keys_and_generation() {
    let f = fixture();
    assert_eq!(out(&f, 1, REGISTER, 0, 0, 0xAA), GOOD);
    assert_eq!(out(&f, 2, REGISTER, 0, 0, 0xBB), GOOD);
    let d = prin(&f, 1, 0);
    assert_eq!(be32(&d, 0), 2, "PRgeneration");
    assert_eq!(be32(&d, 4), 16);
    assert_eq!((be64(&d, 8), be64(&d, 16)), (0xAA, 0xBB));
    // Wrong existing key: conflict; right key changes it.
    assert_eq!(out(&f, 1, REGISTER, 0, 0x99, 0xCC), RESERVATION_CONFLICT);
    assert_eq!(out(&f, 1, REGISTER, 0, 0xAA, 0xCC), GOOD);
    // An unregistered nexus must say key 0.
    assert_eq!(out(&f, 3, REGISTER, 0, 0x5, 0x6), RESERVATION_CONFLICT);
    // REGISTER AND IGNORE EXISTING KEY ignores it.
    assert_eq!(out(&f, 1, REGISTER_AND_IGNORE, 0, 0x1234, 0xDD), GOOD);
    let d = prin(&f, 1, 0);
    assert_eq!(be32(&d, 0), 4);
    assert_eq!(be64(&d, 8), 0xDD);
    // Unregister with SA key 0.
    assert_eq!(out(&f, 1, REGISTER, 0, 0xDD, 0), GOOD);
    let d = prin(&f, 1, 0);
    assert_eq!(be32(&d, 4), 8);
}

#[test]
fn reserve_release_and_read_reservation() {
    let f = two_registrants();
    assert_eq!(out(&f, 3, RESERVE, 1, 0, 0), RESERVATION_CONFLICT, "unregistered");
    assert_eq!(out(&f, 1, RESERVE, 1, 0xB, 0), RESERVATION_CONFLICT, "wrong key");
    assert_eq!(out(&f, 1, RESERVE, 1, 0xA, 0), GOOD);
    assert_eq!(out(&f, 1, RESERVE, 1, 0xA, 0), GOOD, "same reservation again");
    assert_eq!(out(&f, 1, RESERVE, 3, 0xA, 0), RESERVATION_CONFLICT, "other type");
    assert_eq!(out(&f, 2, RESERVE, 1, 0xB, 0), RESERVATION_CONFLICT, "held by another");
    let d = prin(&f, 2, 1);
    assert_eq!(be32(&d, 4), 16);
    assert_eq!(be64(&d, 8), 0xA);
    assert_eq!(d[21], 0x01);
    // RELEASE with the wrong type is INVALID RELEASE OF PERSISTENT RESERVATION.
    let (c, p) = prout(RELEASE, 3, 0xA, 0);
    let (comp, _) = f.run_as(&nexus(1), 0, &c, &p);
    assert_sense(&comp, ILLEGAL_REQUEST, 0x26, 0x04);
    // A non-holder's RELEASE is GOOD and changes nothing.
    assert_eq!(out(&f, 2, RELEASE, 1, 0xB, 0), GOOD);
    assert_eq!(be32(&prin(&f, 2, 1), 4), 16);
    assert_eq!(out(&f, 1, RELEASE, 1, 0xA, 0), GOOD);
    assert_eq!(be32(&prin(&f, 2, 1), 4), 0);
}

/// SPC-4 5.9.1 (table 62) for READ and WRITE, per type, for the holder (1),
/// another registrant (2) and an unregistered nexus (3).
#[test]
fn conflict_matrix_per_type() {
    let read = cdb10(READ_10, 0, 0, 1);
    let write = cdb10(WRITE_10, 0, 0, 1);
    let data = pattern(1, 0);
    // (type, registrant read, registrant write, other read, other write); true = allowed
    let table = [
        (1u8, true, false, true, false), // Write Exclusive
        (3, false, false, false, false), // Exclusive Access
        (5, true, true, true, false),    // WE registrants only
        (6, true, true, false, false),   // EA registrants only
        (7, true, true, true, false),    // WE all registrants
        (8, true, true, false, false),   // EA all registrants
    ];
    let ok = |b: bool| if b { GOOD } else { RESERVATION_CONFLICT };
    for (kind, reg_r, reg_w, oth_r, oth_w) in table {
        let f = two_registrants();
        assert_eq!(out(&f, 1, RESERVE, kind, 0xA, 0), GOOD);
        assert_eq!(status_of(&f, 1, &read, &[]), GOOD, "type {} holder read", kind);
        assert_eq!(status_of(&f, 1, &write, &data), GOOD, "type {} holder write", kind);
        assert_eq!(status_of(&f, 2, &read, &[]), ok(reg_r), "type {} registrant read", kind);
        assert_eq!(status_of(&f, 2, &write, &data), ok(reg_w), "type {} registrant write", kind);
        assert_eq!(status_of(&f, 3, &read, &[]), ok(oth_r), "type {} other read", kind);
        assert_eq!(status_of(&f, 3, &write, &data), ok(oth_w), "type {} other write", kind);
        // Always allowed: INQUIRY, TEST UNIT READY, READ CAPACITY, PR IN.
        assert_eq!(status_of(&f, 3, &[0x12, 0, 0, 0, 36, 0], &[]), GOOD);
        assert_eq!(status_of(&f, 3, &[0, 0, 0, 0, 0, 0], &[]), GOOD);
        assert_eq!(status_of(&f, 3, &[0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0], &[]), GOOD);
        // MODE SELECT-class commands conflict for non-holders of every type.
        assert_eq!(status_of(&f, 3, &[0x1A, 0, 0x3F, 0, 0xFF, 0], &[]), RESERVATION_CONFLICT);
    }
}

#[test]
fn all_registrants_reservation_survives_the_reserver_leaving() {
    let f = two_registrants();
    out(&f, 1, RESERVE, 7, 0xA, 0);
    assert_eq!(out(&f, 1, REGISTER, 0, 0xA, 0), GOOD);
    // Still reserved (2 is a registrant, so a holder); 3 may not write.
    assert_eq!(status_of(&f, 3, &cdb10(WRITE_10, 0, 0, 1), &pattern(1, 0)), RESERVATION_CONFLICT);
    assert_eq!(be64(&prin(&f, 2, 1), 8), 0, "all-registrants reports key 0");
    assert_eq!(out(&f, 2, REGISTER, 0, 0xB, 0), GOOD);
    assert_eq!(status_of(&f, 3, &cdb10(WRITE_10, 0, 0, 1), &pattern(1, 0)), GOOD);
}

#[test]
fn preempt_and_clear() {
    let f = two_registrants();
    out(&f, 1, RESERVE, 3, 0xA, 0);
    // 2 preempts the holder: the reservation and 1's registration move/go.
    assert_eq!(out(&f, 2, PREEMPT, 1, 0xB, 0xA), GOOD);
    let d = prin(&f, 2, 0);
    assert_eq!(be32(&d, 4), 8);
    assert_eq!(be64(&d, 8), 0xB);
    let r = prin(&f, 2, 1);
    assert_eq!((be64(&r, 8), r[21]), (0xB, 1));
    // 1 lost its registration: it gets REGISTRATIONS PREEMPTED once.
    let (c, _) = f.run_as(&nexus(1), 0, &[0, 0, 0, 0, 0, 0], &[]);
    assert_sense(&c, UNIT_ATTENTION, 0x2A, 0x05);
    assert_eq!(status_of(&f, 1, &[0, 0, 0, 0, 0, 0], &[]), GOOD);
    // Preempting a key nobody holds is a conflict; key 0 with no AR reservation is invalid.
    assert_eq!(out(&f, 2, PREEMPT, 1, 0xB, 0x77), RESERVATION_CONFLICT);
    let (c, p) = prout(PREEMPT, 1, 0xB, 0);
    let (comp, _) = f.run_as(&nexus(2), 0, &c, &p);
    assert_sense(&comp, ILLEGAL_REQUEST, 0x26, 0x00);
    // CLEAR drops everything.
    out(&f, 3, REGISTER, 0, 0, 0xC);
    assert_eq!(out(&f, 3, CLEAR, 0, 0xC, 0), GOOD);
    let d = prin(&f, 1, 0);
    assert_eq!(be32(&d, 4), 0);
    assert_eq!(be32(&prin(&f, 1, 1), 4), 0);
    let (c, _) = f.run_as(&nexus(2), 0, &[0, 0, 0, 0, 0, 0], &[]);
    assert_sense(&c, UNIT_ATTENTION, 0x2A, 0x03);
}

#[test]
fn report_capabilities_and_full_status() {
    let f = fixture();
    let d = prin(&f, 1, 2);
    assert_eq!(d.len(), 8);
    assert_eq!(u16::from_be_bytes([d[0], d[1]]), 8);
    assert_eq!(d[2] & 0x0D, 0, "no SIP_C, ATP_C, PTPL_C");
    assert_eq!(d[3] & 0x80, 0x80, "TMV");
    assert_eq!((d[4], d[5]), (0xEA, 0x01));
    out(&f, 1, REGISTER, 0, 0, 0xA);
    out(&f, 1, RESERVE, 1, 0xA, 0);
    let d = prin(&f, 1, 3);
    assert_eq!(be64(&d, 8), 0xA);
    assert_eq!(d[8 + 12] & 1, 1, "R_HOLDER");
    assert_eq!(d[8 + 13], 1);
    let tid_len = be32(&d, 8 + 20) as usize;
    let tid = &d[8 + 24..8 + 24 + tid_len];
    assert_eq!(tid[0], 0x45, "iSCSI TransportID, format 01b");
    assert!(tid[4..].starts_with(nexus(1).initiator_port.as_bytes()));
    assert_eq!(tid_len % 4, 0);
}

#[test]
fn prout_parameter_errors() {
    let f = fixture();
    let (mut c, mut p) = prout(REGISTER, 0, 0, 0xA);
    p[20] = 0x01; // APTPL
    assert_sense(&f.run(&c, &p).0, ILLEGAL_REQUEST, 0x26, 0x00);
    p[20] = 0x08; // SPEC_I_PT
    assert_sense(&f.run(&c, &p).0, ILLEGAL_REQUEST, 0x26, 0x00);
    p[20] = 0;
    c[8] = 20;
    assert_sense(&f.run(&c, &p[..20]).0, ILLEGAL_REQUEST, 0x1A, 0x00);
    out(&f, 1, REGISTER, 0, 0, 0xA);
    let (c, p) = prout(RESERVE, 2, 0xA, 0); // type 2 does not exist
    assert_invalid_cdb_field(&f.run(&c, &p).0, 2);
    let (c, p) = prout(RESERVE, 0x11, 0xA, 0); // scope 1
    assert_invalid_cdb_field(&f.run(&c, &p).0, 2);
    // Unknown service actions: INVALID FIELD IN CDB, for IN and OUT.
    let (c, p) = prout(7, 1, 0xA, 0);
    assert_invalid_cdb_field(&f.run(&c, &p).0, 1);
    assert_invalid_cdb_field(&f.run(&[0x5E, 0x04, 0, 0, 0, 0, 0, 0, 0x10, 0], &[]).0, 1);
}

#[test]
fn reserve6_blocks_others_until_release_or_nexus_loss() {
    let f = fixture();
    let tur = [0u8; 6];
    assert_eq!(status_of(&f, 1, &[0x16, 0, 0, 0, 0, 0], &[]), GOOD);
    assert_eq!(status_of(&f, 1, &tur, &[]), GOOD);
    assert_eq!(status_of(&f, 2, &tur, &[]), RESERVATION_CONFLICT);
    assert_eq!(status_of(&f, 2, &cdb10(READ_10, 0, 0, 1), &[]), RESERVATION_CONFLICT);
    assert_eq!(status_of(&f, 2, &[0x16, 0, 0, 0, 0, 0], &[]), RESERVATION_CONFLICT);
    assert_eq!(status_of(&f, 2, &[0x12, 0, 0, 0, 36, 0], &[]), GOOD, "INQUIRY allowed");
    // PR IN/OUT conflict with a RESERVE(6) reservation, even for its holder.
    let read_keys = [0x5E, 0, 0, 0, 0, 0, 0, 0x10, 0, 0];
    assert_eq!(status_of(&f, 1, &read_keys, &[]), RESERVATION_CONFLICT);
    assert_eq!(status_of(&f, 2, &read_keys, &[]), RESERVATION_CONFLICT);
    assert_eq!(out(&f, 1, REGISTER, 0, 0, 0xA), RESERVATION_CONFLICT);
    assert_eq!(status_of(&f, 2, &[0x17, 0, 0, 0, 0, 0], &[]), GOOD, "RELEASE by non-holder: no-op");
    assert_eq!(status_of(&f, 2, &tur, &[]), RESERVATION_CONFLICT);
    assert_eq!(status_of(&f, 1, &[0x17, 0, 0, 0, 0, 0], &[]), GOOD);
    assert_eq!(status_of(&f, 2, &tur, &[]), GOOD);
    // Nexus loss drops it.
    assert_eq!(status_of(&f, 1, &[0x16, 0, 0, 0, 0, 0], &[]), GOOD);
    f.target.nexus_lost(&nexus(1));
    assert_eq!(status_of(&f, 2, &tur, &[]), GOOD);
}

#[test]
fn reserve6_conflicts_with_registrations() {
    let f = fixture();
    out(&f, 1, REGISTER, 0, 0, 0xA);
    assert_eq!(status_of(&f, 2, &[0x16, 0, 0, 0, 0, 0], &[]), RESERVATION_CONFLICT);
    assert_eq!(status_of(&f, 1, &[0x17, 0, 0, 0, 0, 0], &[]), RESERVATION_CONFLICT);
}

#[test]
fn lun_reset_drops_reserve6_keeps_pr_and_raises_unit_attention() {
    let f = fixture();
    let tur = [0u8; 6];
    // Both nexuses are known to the target.
    assert_eq!(status_of(&f, 2, &tur, &[]), GOOD);
    assert_eq!(status_of(&f, 1, &[0x16, 0, 0, 0, 0, 0], &[]), GOOD);
    assert_eq!(f.target.lun_reset(0, &nexus(1)), 0);
    assert_eq!(f.target.lun_reset(7, &nexus(1)), 2, "no such LUN");
    for who in [1, 2] {
        // INQUIRY does not report or clear the condition.
        assert_eq!(status_of(&f, who, &[0x12, 0, 0, 0, 36, 0], &[]), GOOD);
        let (c, _) = f.run_as(&nexus(who), 0, &tur, &[]);
        assert_sense(&c, UNIT_ATTENTION, 0x29, 0x03);
        assert_eq!(status_of(&f, who, &tur, &[]), GOOD, "reported once");
    }
    // The reservation went with the reset.
    assert_eq!(status_of(&f, 2, &cdb10(READ_10, 0, 0, 1), &[]), GOOD);

    // Persistent reservations survive a reset and a nexus loss.
    out(&f, 1, REGISTER, 0, 0, 0xA);
    out(&f, 1, RESERVE, 3, 0xA, 0);
    f.target.lun_reset(0, &nexus(1));
    f.target.nexus_lost(&nexus(1));
    let (c, _) = f.run_as(&nexus(2), 0, &tur, &[]);
    assert_sense(&c, UNIT_ATTENTION, 0x29, 0x03);
    assert_eq!(status_of(&f, 2, &cdb10(READ_10, 0, 0, 1), &[]), RESERVATION_CONFLICT);
}

#[test]
fn request_sense_returns_and_clears_unit_attention() {
    let f = fixture();
    let _ = f.run(&[0u8; 6], &[]);
    f.target.lun_reset(0, &nexus(1));
    let d = f.ok(&[0x03, 0, 0, 0, 18, 0], &[]);
    assert_eq!((d[0], d[2], d[12], d[13]), (0x70, 0x06, 0x29, 0x03));
    let d = f.ok(&[0x03, 0, 0, 0, 18, 0], &[]);
    assert_eq!((d[2], d[12]), (0, 0), "NO SENSE after");
    let d = f.ok(&[0x03, 0x01, 0, 0, 8, 0], &[]);
    assert_eq!(d[0], 0x72, "descriptor format when DESC=1");
}
