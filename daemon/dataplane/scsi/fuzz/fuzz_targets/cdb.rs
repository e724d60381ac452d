//! Feeds arbitrary bytes to the SCSI target as command sequences; see
//! `netcfgd_scsi::fuzzing::exercise` for the encoding and the invariants.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use netcfgd_scsi::{LogicalUnit, LuOptions, Target};

fn target() -> &'static Target {
    static TARGET: OnceLock<Target> = OnceLock::new();
    TARGET.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("netcfgd-scsi-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let opts = LuOptions {
            block_size: 512,
            size_bytes: Some(1 << 20),
            read_only: false,
            serial: "FUZZ".into(),
            naa: 1,
        };
        let lu = LogicalUnit::open(&dir.join("lun0.img"), opts).expect("backing file");
        let t = Target::new("iqn.2026-01.fuzz:t");
        t.add_lun(0, Arc::new(lu));
        t
    })
}

fuzz_target!(|data: &[u8]| {
    netcfgd_scsi::fuzzing::exercise(target(), data);
});
