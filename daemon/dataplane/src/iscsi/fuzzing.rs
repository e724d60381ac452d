//! Entry point for the fuzz targets (daemon/dataplane/fuzz): one connection,
//! a target with a small file-backed LUN, arbitrary input bytes.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use netcfgd_scsi::{LogicalUnit, LuOptions};

use super::conn::{ConnCtx, Connection};
use super::pdu::{self, op, Digests, Header};
use super::text;
use crate::registry::{Namespace, Registry};

const IQN: &str = "iqn.2024-01.org.netcfg:fuzz";

fn registry() -> Arc<Registry> {
    static REG: OnceLock<Arc<Registry>> = OnceLock::new();
    REG.get_or_init(|| {
        let reg = Arc::new(Registry::new());
        let fd: OwnedFd = File::open("/proc/self/ns/net").expect("own netns").into();
        reg.add_namespace(Namespace { name: String::new(), identity: 1, fd, alive: Arc::new(AtomicBool::new(true)), usage: Default::default() });
        let path = std::env::temp_dir().join(format!("netcfgd-fuzz-{}.img", std::process::id()));
        let lu = LogicalUnit::open(
            &path,
            LuOptions { block_size: 512, size_bytes: Some(1 << 20), read_only: false, serial: "fuzz".into(), naa: 1 },
        )
        .expect("fuzz LUN");
        let (t, _) = reg.target_entry("", IQN);
        t.scsi.add_lun(0, Arc::new(lu));
        reg
    })
    .clone()
}

/// Feed `data` to a fresh connection; with an odd first byte, after a valid login.
pub fn drive(data: &[u8]) {
    let reg = registry();
    let mut c = Connection::new(ConnCtx::standalone(reg, "", 1, "127.0.0.1:3260"), Instant::now());
    let mut input = Vec::new();
    if data.first().is_some_and(|b| b & 1 == 1) {
        let mut keys = Vec::new();
        text::push(&mut keys, "InitiatorName", "iqn.2024-01.org.netcfg:i");
        text::push(&mut keys, "TargetName", IQN);
        text::push(&mut keys, "InitialR2T", "No");
        let mut h = Header::new(op::LOGIN_REQ | 0x40, 0x80 | (1 << 2) | 3);
        h.itt(1).set_u32(24, 1);
        pdu::append(&mut input, &h, &keys, Digests::default());
    }
    input.extend_from_slice(data.get(1..).unwrap_or(&[]));
    let mut out = Vec::new();
    let mut pos = 0;
    let mut io = crate::batch::IoEngine::batched(true);
    while pos < input.len() {
        match c.receive(&input[pos..], &mut out, Instant::now(), &mut io) {
            Ok(0) | Err(_) => break,
            Ok(n) => pos += n,
        }
        out.clear();
    }
    c.shutdown();
}
