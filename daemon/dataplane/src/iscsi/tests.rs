//! The protocol end to end without sockets: login negotiation (None, CHAP,
//! mutual CHAP, refusals), the full feature phase (NOP, SendTargets, READ
//! with phase-collapsed status, WRITE through R2T, the CmdSN window), and
//! garbage that must never panic.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use netcfgd_scsi::{LogicalUnit, LuOptions};

use super::conn::{ConnCtx, Connection};
use super::pdu::{self, op, Bhs, Digests, Header};
use super::text;
use crate::batch::IoEngine;
use crate::md5::md5;
use crate::registry::{Access, Namespace, Registry, Secret};

const IQN: &str = "iqn.2024-01.org.netcfg:t";
const INIT: &str = "iqn.2024-01.org.netcfg:i";
const NS_ID: u64 = 42;

fn registry(access: Access) -> (Arc<Registry>, tempdir::Dir) {
    let reg = Arc::new(Registry::new());
    let fd: OwnedFd = File::open("/proc/self/ns/net").unwrap().into();
    reg.add_namespace(Namespace { name: "t1".into(), identity: NS_ID, fd, alive: Arc::new(AtomicBool::new(true)), usage: Default::default() });
    let dir = tempdir::Dir::new();
    let lu = LogicalUnit::open(
        &dir.path.join("lu.img"),
        LuOptions { block_size: 512, size_bytes: Some(1 << 20), read_only: false, serial: "s".into(), naa: 0x3000_0000_0000_0001 },
    )
    .unwrap();
    let (t, _) = reg.target_entry("t1", IQN);
    t.scsi.add_lun(0, Arc::new(lu));
    t.block_sizes.write().unwrap().insert(0, 512);
    *t.access.write().unwrap() = access;
    (reg, dir)
}

/// A tiny private temporary directory (no extra crates).
mod tempdir {
    pub struct Dir {
        pub path: std::path::PathBuf,
    }
    impl Dir {
        pub fn new() -> Dir {
            let mut r = [0u8; 8];
            super::super::chap::random_bytes(&mut r);
            let path = std::env::temp_dir().join(format!("dataplane-test-{}", u64::from_le_bytes(r)));
            std::fs::create_dir(&path).unwrap();
            Dir { path }
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

fn conn(reg: &Arc<Registry>, identity: u64) -> Connection {
    Connection::new(ConnCtx::standalone(reg.clone(), "t1", identity, "10.0.0.1:3260"), Instant::now())
}

fn login_req(csg: u8, nsg: u8, transit: bool, keys: &[(&str, &str)], cmdsn: u32) -> Vec<u8> {
    let mut data = Vec::new();
    for (k, v) in keys {
        text::push(&mut data, k, v);
    }
    let mut h = Header::new(op::LOGIN_REQ | 0x40, (if transit { 0x80 } else { 0 }) | (csg << 2) | nsg);
    h.set_bytes(8, &[0x80, 0, 0, 0, 0, 1]).itt(1).set_u32(24, cmdsn);
    let mut v = Vec::new();
    pdu::append(&mut v, &h, &data, Digests::default());
    v
}

/// Feed bytes; return the PDUs that came back as (BHS, data).
fn exchange(c: &mut Connection, input: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    exchange_with(c, input, &mut IoEngine::batched(true))
}

fn exchange_with(c: &mut Connection, input: &[u8], io: &mut IoEngine) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    let used = c.receive(input, &mut out, Instant::now(), io).unwrap();
    assert_eq!(used, input.len());
    split(&out, Digests::default())
}

fn split(mut out: &[u8], d: Digests) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut pdus = Vec::new();
    while let Some(f) = pdu::frame(out, d, u32::MAX).unwrap() {
        pdus.push((out[..48].to_vec(), out[f.data_off..f.data_off + f.data_len].to_vec()));
        out = &out[f.total..];
    }
    pdus
}

fn status(bhs: &[u8]) -> u16 {
    Bhs(bhs).u16_at(36)
}

fn keys(data: &[u8]) -> Vec<(String, String)> {
    text::parse(data).unwrap()
}

fn get<'a>(k: &'a [(String, String)], key: &str) -> Option<&'a str> {
    k.iter().find(|(a, _)| a == key).map(|(_, v)| v.as_str())
}

/// Log in without authentication, straight to full feature phase.
fn logged_in(reg: &Arc<Registry>, extra: &[(&str, &str)]) -> Connection {
    let mut c = conn(reg, NS_ID);
    let mut k = vec![("InitiatorName", INIT), ("TargetName", IQN), ("SessionType", "Normal")];
    k.extend_from_slice(extra);
    let r = exchange(&mut c, &login_req(1, 3, true, &k, 1));
    assert_eq!(status(&r[0].0), 0);
    c
}

#[test]
fn login_without_auth_reaches_full_feature_phase() {
    let (reg, _d) = registry(Access::default());
    let mut c = conn(&reg, NS_ID);
    let r = exchange(
        &mut c,
        &login_req(1, 3, true, &[("InitiatorName", INIT), ("TargetName", IQN), ("MaxRecvDataSegmentLength", "65536"), ("HeaderDigest", "None")], 7),
    );
    let (bhs, data) = &r[0];
    assert_eq!(bhs[0] & 0x3f, op::LOGIN_RSP);
    assert_eq!(bhs[1], 0x80 | (1 << 2) | 3);
    assert_eq!(status(bhs), 0);
    assert_ne!(Bhs(bhs).u16_at(14), 0, "a new session gets a TSIH");
    assert_eq!(Bhs(bhs).u32_at(28), 7, "ExpCmdSN starts at the login's CmdSN");
    let k = keys(data);
    assert_eq!(get(&k, "TargetPortalGroupTag"), Some("1"));
    assert_eq!(get(&k, "MaxRecvDataSegmentLength"), Some("262144"));
    assert_eq!(get(&k, "HeaderDigest"), Some("None"));
}

#[test]
fn login_refusals() {
    let (reg, _d) = registry(Access { allow: vec!["iqn.2024-01.org.netcfg:other".into()], ..Default::default() });
    let try_login = |identity: u64, keys: &[(&str, &str)]| {
        let mut c = conn(&reg, identity);
        let r = exchange(&mut c, &login_req(1, 3, true, keys, 1));
        assert!(c.closing().is_some());
        status(&r[0].0)
    };
    let normal = [("InitiatorName", INIT), ("TargetName", IQN)];
    assert_eq!(try_login(NS_ID, &normal), 0x0202, "initiator not in the ACL");
    assert_eq!(try_login(NS_ID + 1, &normal), 0x0203, "a replaced namespace reaches nothing");
    assert_eq!(try_login(NS_ID, &[("InitiatorName", INIT), ("TargetName", "iqn.2024-01.x:none")]), 0x0203);
    assert_eq!(try_login(NS_ID, &[("TargetName", IQN)]), 0x0207);
    assert_eq!(try_login(NS_ID, &[("InitiatorName", INIT), ("SessionType", "Bogus")]), 0x0209);
}

fn chap_access(mutual: bool) -> Access {
    Access {
        allow: vec![],
        chap: Some(Secret { user: "alice".into(), secret: b"alice-secret-1234".to_vec() }),
        mutual_chap: mutual.then(|| Secret { user: "tgt".into(), secret: b"target-secret-99".to_vec() }),
    }
}

/// Runs CHAP through login PDUs; returns the last response.
fn chap_login(reg: &Arc<Registry>, secret: &[u8], mutual_challenge: Option<&[u8]>) -> (Vec<u8>, Vec<u8>) {
    let mut c = conn(reg, NS_ID);
    let r = exchange(&mut c, &login_req(0, 1, true, &[("InitiatorName", INIT), ("TargetName", IQN), ("AuthMethod", "CHAP,None")], 1));
    assert_eq!(status(&r[0].0), 0);
    assert_eq!(r[0].0[1] & 0x80, 0, "no transit before authentication");
    assert_eq!(get(&keys(&r[0].1), "AuthMethod"), Some("CHAP"));
    let r = exchange(&mut c, &login_req(0, 1, false, &[("CHAP_A", "5")], 1));
    let k = keys(&r[0].1);
    let id: u8 = get(&k, "CHAP_I").unwrap().parse().unwrap();
    let challenge = text::binary(get(&k, "CHAP_C").unwrap()).unwrap();
    let response = text::hex(&md5(&[&[id], secret, &challenge]));
    let mut ks = vec![("CHAP_N", "alice".to_string()), ("CHAP_R", response)];
    if let Some(mc) = mutual_challenge {
        ks.push(("CHAP_I", "7".into()));
        ks.push(("CHAP_C", text::hex(mc)));
    }
    let ks: Vec<(&str, &str)> = ks.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = exchange(&mut c, &login_req(0, 1, true, &ks, 1));
    r[0].clone()
}

#[test]
fn chap_through_login() {
    let (reg, _d) = registry(chap_access(false));
    let (bhs, _) = chap_login(&reg, b"alice-secret-1234", None);
    assert_eq!(status(&bhs), 0);
    assert_eq!(bhs[1], 0x80 | 1, "transit to the operational stage once authenticated");
    let (bhs, _) = chap_login(&reg, b"wrong", None);
    assert_eq!(status(&bhs), 0x0201);
    // Mutual asked of a target without a mutual secret: refused.
    let (bhs, _) = chap_login(&reg, b"alice-secret-1234", Some(&[5u8; 16]));
    assert_eq!(status(&bhs), 0x0201);
}

#[test]
fn mutual_chap_through_login() {
    let (reg, _d) = registry(chap_access(true));
    let (bhs, data) = chap_login(&reg, b"alice-secret-1234", Some(&[5u8; 16]));
    assert_eq!(status(&bhs), 0);
    let k = keys(&data);
    assert_eq!(get(&k, "CHAP_N"), Some("tgt"));
    let want = md5(&[&[7], b"target-secret-99", &[5u8; 16]]);
    assert_eq!(text::binary(get(&k, "CHAP_R").unwrap()).unwrap(), want.to_vec());
}

#[test]
fn chap_required_means_no_skipping_security() {
    let (reg, _d) = registry(chap_access(false));
    let mut c = conn(&reg, NS_ID);
    let r = exchange(&mut c, &login_req(1, 3, true, &[("InitiatorName", INIT), ("TargetName", IQN)], 1));
    assert_eq!(status(&r[0].0), 0x0201);
}

fn scsi_cmd(itt: u32, cmdsn: u32, flags: u8, edtl: u32, cdb: &[u8], data: &[u8]) -> Vec<u8> {
    let mut h = Header::new(op::SCSI_CMD, flags);
    h.itt(itt).set_u32(20, edtl).set_u32(24, cmdsn).set_bytes(32, cdb);
    let mut v = Vec::new();
    pdu::append(&mut v, &h, data, Digests::default());
    v
}

#[test]
fn nop_and_send_targets() {
    let (reg, _d) = registry(Access::default());
    let mut c = logged_in(&reg, &[]);
    let mut h = Header::new(op::NOP_OUT | 0x40, 0x80);
    h.itt(9).set_u32(20, pdu::RESERVED_TAG).set_u32(24, 1);
    let mut v = Vec::new();
    pdu::append(&mut v, &h, b"ping", Digests::default());
    let r = exchange(&mut c, &v);
    assert_eq!((r[0].0[0] & 0x3f, Bhs(&r[0].0).itt(), r[0].1.as_slice()), (op::NOP_IN, 9, &b"ping"[..]));

    let mut data = Vec::new();
    text::push(&mut data, "SendTargets", "All");
    let mut h = Header::new(op::TEXT_REQ | 0x40, 0x80);
    h.itt(10).set_u32(20, pdu::RESERVED_TAG).set_u32(24, 1);
    let mut v = Vec::new();
    pdu::append(&mut v, &h, &data, Digests::default());
    let r = exchange(&mut c, &v);
    let k = keys(&r[0].1);
    assert_eq!(get(&k, "TargetName"), Some(IQN));
    assert_eq!(get(&k, "TargetAddress"), Some("10.0.0.1:3260,1"));
}

#[test]
fn write_through_r2t_then_read_back_with_collapsed_status() {
    let (reg, _d) = registry(Access::default());
    // No immediate data: the whole write is solicited with R2T.
    let mut c = logged_in(&reg, &[("ImmediateData", "No"), ("InitialR2T", "Yes")]);
    let mut cdb = [0u8; 16];
    cdb[0] = 0x2a; // WRITE(10), LBA 0, 2 blocks
    cdb[8] = 2;
    let r = exchange(&mut c, &scsi_cmd(1, 1, 0x80 | 0x20, 1024, &cdb, &[]));
    assert_eq!(r.len(), 1);
    let r2t = Bhs(&r[0].0);
    assert_eq!((r2t.opcode(), r2t.u32_at(40), r2t.u32_at(44)), (op::R2T, 0, 1024));
    let ttt = r2t.u32_at(20);
    let mut out = Vec::new();
    for (sn, chunk) in [0u8, 1].iter().zip([[0xabu8; 512], [0xcdu8; 512]]) {
        let mut h = Header::new(op::DATA_OUT, if *sn == 1 { 0x80 } else { 0 });
        h.itt(1).set_u32(20, ttt).set_u32(36, *sn as u32).set_u32(40, *sn as u32 * 512);
        pdu::append(&mut out, &h, &chunk, Digests::default());
    }
    let r = exchange(&mut c, &out);
    let rsp = Bhs(&r[0].0);
    assert_eq!((rsp.opcode(), rsp.byte(3), rsp.itt()), (op::SCSI_RSP, 0, 1));

    cdb[0] = 0x28; // READ(10) 2 blocks, but ask for 2048 bytes: 1024 underflow
    let r = exchange(&mut c, &scsi_cmd(2, 2, 0x80 | 0x40, 2048, &cdb, &[]));
    let last = Bhs(&r.last().unwrap().0);
    assert_eq!(last.opcode(), op::DATA_IN);
    assert_eq!(last.flags() & 0x83, 0x80 | 0x01 | 0x02, "F, S and underflow in the last Data-In");
    assert_eq!(last.u32_at(44), 1024);
    let data: Vec<u8> = r.iter().flat_map(|(_, d)| d.clone()).collect();
    assert_eq!(&data[..512], &[0xab; 512][..]);
    assert_eq!(&data[512..], &[0xcd; 512][..]);
}

#[test]
fn data_out_out_of_sequence_fails_the_task_not_the_connection() {
    let (reg, _d) = registry(Access::default());
    let mut c = logged_in(&reg, &[("ImmediateData", "No"), ("InitialR2T", "Yes")]);
    let mut cdb = [0u8; 16];
    cdb[0] = 0x2a;
    cdb[8] = 1;
    let r = exchange(&mut c, &scsi_cmd(1, 1, 0x80 | 0x20, 512, &cdb, &[]));
    let ttt = Bhs(&r[0].0).u32_at(20);
    let mut h = Header::new(op::DATA_OUT, 0x80);
    h.itt(1).set_u32(20, ttt).set_u32(36, 5); // DataSN 5, expected 0
    let mut v = Vec::new();
    pdu::append(&mut v, &h, &[0u8; 512], Digests::default());
    let r = exchange(&mut c, &v);
    let rsp = Bhs(&r[0].0);
    assert_eq!((rsp.opcode(), rsp.byte(3)), (op::SCSI_RSP, 0x02));
    assert!(c.closing().is_none());
}

#[test]
fn commands_wait_for_cmdsn_gaps() {
    let (reg, _d) = registry(Access::default());
    let mut c = logged_in(&reg, &[]);
    let tur = [0u8; 16];
    // CmdSN 2 before 1: held, then both answered in order when 1 arrives.
    assert!(exchange(&mut c, &scsi_cmd(2, 2, 0x80, 0, &tur, &[])).is_empty());
    // Beyond MaxCmdSN: dropped.
    assert!(exchange(&mut c, &scsi_cmd(3, 1 + 500, 0x80, 0, &tur, &[])).is_empty());
    let r = exchange(&mut c, &scsi_cmd(1, 1, 0x80, 0, &tur, &[]));
    let itts: Vec<u32> = r.iter().map(|(b, _)| Bhs(b).itt()).collect();
    assert_eq!(itts, vec![1, 2]);
    assert_eq!(Bhs(&r[1].0).u32_at(28), 3, "ExpCmdSN");
    assert_eq!(Bhs(&r[1].0).u32_at(32), 3 + 127, "MaxCmdSN");
}

#[test]
fn garbage_never_panics() {
    let (reg, _d) = registry(Access::default());
    let mut seed = 7u64;
    let mut rnd = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..300 {
        let mut c = if round % 2 == 0 { conn(&reg, NS_ID) } else { logged_in(&reg, &[]) };
        let mut input = Vec::new();
        for _ in 0..(rnd() % 6) {
            // Valid-looking headers with random fields, random lengths.
            let mut bhs = [0u8; 48];
            for b in bhs.iter_mut() {
                *b = rnd() as u8;
            }
            bhs[4] = (rnd() % 3) as u8;
            bhs[5] = 0;
            bhs[6] = (rnd() % 4) as u8;
            input.extend_from_slice(&bhs);
            let n = (rnd() % 1500) as usize;
            input.extend((0..n).map(|_| rnd() as u8));
        }
        let mut out = Vec::new();
        let _ = c.receive(&input, &mut out, Instant::now(), &mut IoEngine::batched(true));
        c.shutdown();
    }
}

#[test]
fn a_new_login_of_the_same_nexus_reinstates_the_session() {
    let (reg, _d) = registry(Access::default());
    let mut first = logged_in(&reg, &[]);
    let mut out = Vec::new();
    let timers = super::conn::Timers::default();
    assert!(first.tick(&mut out, Instant::now(), &timers).is_ok());
    let mut second = logged_in(&reg, &[]);
    assert!(first.tick(&mut out, Instant::now(), &timers).is_err(), "the old session closes");
    assert!(second.tick(&mut out, Instant::now(), &timers).is_ok());
    first.shutdown();
    second.shutdown();
    let (t, _) = reg.target_entry("t1", IQN);
    assert!(t.nexuses.lock().unwrap().is_empty());
    assert_eq!(t.sessions.load(std::sync::atomic::Ordering::Relaxed), 0);
}

/// One input pass with writes and reads, some overlapping (a READ of blocks
/// a WRITE earlier in the same pass wrote), a WRITE with immediate data
/// followed by TEST UNIT READY and SYNCHRONIZE CACHE, a read past the end:
/// the batched engine answers what the synchronous one does (in the same
/// order, with the same StatSN, status, residuals and data),
/// and the medium ends the same.
#[test]
fn batched_io_answers_exactly_as_synchronous_io() {
    let mut io = IoEngine::batched(true);
    if !io.batching() {
        eprintln!("SKIPPED: {}", io.describe());
        return;
    }
    let run = |io: &mut IoEngine| {
        let (reg, _dir) = registry(Access::default());
        let mut c = logged_in(&reg, &[("ImmediateData", "Yes"), ("InitialR2T", "No"), ("FirstBurstLength", "65536")]);
        let mut v = Vec::new();
        let mut sn = 0;
        let mut cmd = |itt: u32, flags: u8, edtl: u32, cdb: &[u8], data: &[u8], v: &mut Vec<u8>| {
            sn += 1;
            v.extend(scsi_cmd(itt, sn, flags, edtl, cdb, data));
        };
        let rd = |lba: u8, n: u8| [0x28, 0, 0, 0, 0, lba, 0, 0, n, 0];
        let wr = |lba: u8, n: u8| [0x2A, 0, 0, 0, 0, lba, 0, 0, n, 0];
        let block = |seed: u8| (0..512u32).map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed)).collect::<Vec<u8>>();
        cmd(1, 0x80 | 0x20, 512, &wr(1, 1), &block(1), &mut v);
        cmd(2, 0x80 | 0x40, 1024, &rd(0, 2), &[], &mut v); // overlaps write 1
        cmd(3, 0x80 | 0x20, 512, &wr(8, 1), &block(3), &mut v);
        cmd(4, 0x80 | 0x40, 512, &rd(20, 1), &[], &mut v);
        cmd(5, 0x80 | 0x20, 512, &wr(1, 1), &block(5), &mut v); // rewrites block 1
        cmd(6, 0x80, 0, &[0x00, 0, 0, 0, 0, 0], &[], &mut v); // TEST UNIT READY
        cmd(7, 0x80 | 0x40, 512, &rd(1, 1), &[], &mut v);
        cmd(8, 0x80, 0, &[0x35, 0, 0, 0, 0, 0, 0, 0, 0, 0], &[], &mut v); // SYNCHRONIZE CACHE
        cmd(9, 0x80 | 0x40, 512, &[0x28, 0, 0, 0, 0x10, 0, 0, 0, 1, 0], &[], &mut v); // past the end
        cmd(10, 0x80 | 0x40, 4096, &rd(0, 8), &[], &mut v);
        let mut r = exchange_with(&mut c, &v, io);
        // A deferred answer carries the ExpCmdSN/MaxCmdSN of when it was
        // sent (later, so larger); everything else must match.
        for (h, _) in r.iter_mut() {
            h[28..36].fill(0);
        }
        let medium = std::fs::read(_dir.path.join("lu.img")).unwrap();
        (r, medium)
    };
    let (batched, m1) = run(&mut io);
    let (sync, m2) = run(&mut IoEngine::synchronous("test"));
    assert_eq!(batched.len(), 7 + 3);
    assert_eq!(batched, sync);
    assert_eq!(m1, m2);
    // Reads batched, writes direct (the default): the same again.
    let (reads_only, m3) = run(&mut IoEngine::batched(false));
    assert_eq!(reads_only, sync);
    assert_eq!(m3, m2);
    // Block 1 holds the second write, and command 7 read it.
    let data7 = &batched.iter().find(|(h, _)| Bhs(h).itt() == 7).unwrap().1;
    assert_eq!(data7[0], 5);
}

#[test]
fn writes_waiting_for_data_are_reserved_within_the_budgets() {
    let (reg, _d) = registry(Access::default());
    reg.write_bytes.set_limit(3 << 20);
    let mut c = logged_in(&reg, &[("ImmediateData", "No"), ("InitialR2T", "Yes")]);
    let mut cdb = [0u8; 16];
    cdb[0] = 0x2a; // WRITE(10), 2048 blocks: 1 MiB
    cdb[7] = 0x08;
    for itt in 1..=3 {
        let r = exchange(&mut c, &scsi_cmd(itt, itt, 0x80 | 0x20, 1 << 20, &cdb, &[]));
        assert_eq!(Bhs(&r[0].0).opcode(), op::R2T, "write {itt} is accepted and solicited");
    }
    assert_eq!(reg.write_bytes.used(), 3 << 20, "each write reserves its length");
    let r = exchange(&mut c, &scsi_cmd(4, 4, 0x80 | 0x20, 1 << 20, &cdb, &[]));
    let rsp = Bhs(&r[0].0);
    assert_eq!((rsp.opcode(), rsp.byte(3)), (op::SCSI_RSP, 0x28), "over the budget: TASK SET FULL");
    // The connection going away gives back everything it held.
    c.shutdown();
    drop(c);
    assert_eq!(reg.write_bytes.used(), 0);
}

#[test]
fn connection_limits_refuse_logins_with_out_of_resources() {
    let (reg, _d) = registry(Access::default());
    let (t, _) = reg.target_entry("t1", IQN);
    t.connections.set_limit(1);
    let first = logged_in(&reg, &[]);
    let normal = [("InitiatorName", INIT), ("TargetName", IQN)];
    let mut second = conn(&reg, NS_ID);
    let r = exchange(&mut second, &login_req(1, 3, true, &normal, 1));
    assert_eq!(status(&r[0].0), 0x0302, "the target's max-connections is reached");
    assert!(second.closing().is_some());
    drop(second);
    drop(first);
    let _third = logged_in(&reg, &[]);
    // Over the namespace's limit: refused before anything is looked up.
    let mut over = conn(&reg, NS_ID);
    over.ctx.admitted = None;
    let r = exchange(&mut over, &login_req(1, 3, true, &normal, 1));
    assert_eq!(status(&r[0].0), 0x0302);
}
