//! Bounded random-CDB property test: a seeded generator feeds
//! `netcfgd_scsi::fuzzing::exercise` (the same driver as the cargo-fuzz
//! target) for a fixed number of cases, biased towards real opcodes and
//! plausible lengths. It asserts that no command panics and that every
//! completion is well formed. Set SCSI_FUZZ_CASES to run longer.
mod common;
use common::*;
use std::sync::Arc;

/// xorshift64*: deterministic, so a failure reproduces from its case number.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One fuzz input: a few commands with sometimes-sane fields.
fn input(rng: &mut Rng) -> Vec<u8> {
    let mut v = Vec::new();
    for _ in 0..1 + rng.below(6) {
        v.push(rng.next() as u8);
        let cdb_len = [6u8, 10, 12, 16, rng.below(17) as u8][rng.below(5) as usize];
        v.push(cdb_len);
        for i in 0..cdb_len {
            let b = match rng.below(4) {
                0 => 0,
                1 => 0xFF,
                // Small values land on real lengths, LBAs and allocation lengths.
                2 if i > 1 => rng.below(8) as u8,
                _ => rng.next() as u8,
            };
            v.push(b);
        }
        let out_len: u16 = [0, 24, 512, 1024, rng.below(9000) as u16][rng.below(5) as usize];
        v.extend_from_slice(&out_len.to_be_bytes());
        for _ in 0..out_len {
            v.push(if rng.below(3) == 0 { 0 } else { rng.next() as u8 });
        }
    }
    v
}

#[test]
fn random_cdbs_never_panic_and_complete_well_formed() {
    let cases: u64 = std::env::var("SCSI_FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(3000);
    let dir = TempDir::new();
    let mut o = options(512, false);
    o.size_bytes = Some(1 << 20);
    let lu = Arc::new(netcfgd_scsi::LogicalUnit::open(&dir.0.join("f.img"), o).unwrap());
    let target = netcfgd_scsi::Target::new("iqn.2026-01.fuzz:t");
    target.add_lun(0, lu);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut inputs = 0;
    for case in 0..cases {
        let inp = input(&mut rng);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            netcfgd_scsi::fuzzing::exercise(&target, &inp)
        }));
        assert!(r.is_ok(), "case {} panicked; input {:02x?}", case, &inp[..inp.len().min(64)]);
        inputs += 1;
    }
    assert_eq!(inputs, cases);
}

#[test]
fn the_driver_catches_malformed_completions() {
    // The invariant checker must be able to fail: a CHECK CONDITION with Data-In is wrong.
    let mut sense = [0u8; 18];
    sense[0] = 0x70;
    sense[7] = 10;
    netcfgd_scsi::fuzzing::check_completion(0x02, &sense, &[]);
    let r = std::panic::catch_unwind(|| netcfgd_scsi::fuzzing::check_completion(0x02, &sense, &[1]));
    assert!(r.is_err());
    let r = std::panic::catch_unwind(|| netcfgd_scsi::fuzzing::check_completion(0x30, &[], &[]));
    assert!(r.is_err());
}
