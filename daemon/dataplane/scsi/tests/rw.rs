//! READ/WRITE/VERIFY/WRITE AND VERIFY/COMPARE AND WRITE through `execute`.
mod common;
use common::*;
use std::sync::Arc;

#[test]
fn write_then_read_every_size() {
    let f = fixture();
    let data = pattern(3, 7);
    f.ok(&cdb10(WRITE_10, 0, 10, 3), &data);
    for read in [
        cdb10(READ_10, 0, 10, 3).to_vec(),
        cdb12(READ_12, 0, 10, 3).to_vec(),
        cdb16(READ_16, 0, 10, 3).to_vec(),
        vec![READ_6, 0, 0, 10, 3, 0],
    ] {
        assert_eq!(f.ok(&read, &[]), data, "opcode {:#04x}", read[0]);
    }

    let d2 = pattern(2, 99);
    f.ok(&cdb16(WRITE_16, 0, BLOCKS - 2, 2), &d2);
    assert_eq!(f.ok(&cdb16(READ_16, 0, BLOCKS - 2, 2), &[]), d2);
    f.ok(&cdb12(WRITE_12, 0, 100, 2), &d2);
    f.ok(&[WRITE_6, 0, 0, 200, 2, 0], &d2);
    assert_eq!(f.ok(&cdb10(READ_10, 0, 100, 2), &[]), d2);
    assert_eq!(f.ok(&cdb10(READ_10, 0, 200, 2), &[]), d2);
    // And the bytes are really in the file, at the right offset.
    let file = std::fs::read(&f.path).unwrap();
    assert_eq!(&file[10 * 512..13 * 512], &data[..]);
}

#[test]
fn read6_length_zero_means_256_blocks() {
    let f = fixture();
    let d = f.ok(&[READ_6, 0, 0, 0, 0, 0], &[]);
    assert_eq!(d.len(), 256 * 512);
}

#[test]
fn zero_length_transfers_are_good_and_empty() {
    let f = fixture();
    assert!(f.ok(&cdb10(READ_10, 0, 0, 0), &[]).is_empty());
    f.ok(&cdb10(WRITE_10, 0, 0, 0), &[]);
}

#[test]
fn out_of_range_is_lba_out_of_range() {
    let f = fixture();
    for cdb in [
        cdb16(READ_16, 0, BLOCKS - 1, 2).to_vec(),
        cdb16(READ_16, 0, u64::MAX, 1).to_vec(),
        cdb10(READ_10, 0, BLOCKS as u32 + 1, 0).to_vec(),
        cdb16(WRITE_16, 0, BLOCKS, 1).to_vec(),
    ] {
        let (c, d) = f.run(&cdb, &pattern(2, 0));
        assert_sense(&c, ILLEGAL_REQUEST, 0x21, 0x00);
        assert!(d.is_empty(), "no Data-In on failure");
    }
}

#[test]
fn transfer_over_maximum_is_invalid_field_at_length() {
    let f = fixture();
    f.invalid_field(&cdb16(READ_16, 0, 0, 16385), &[], 10);
}

#[test]
fn dpo_fua_accepted_protect_fields_refused() {
    let f = fixture();
    let d = pattern(1, 3);
    f.ok(&cdb10(WRITE_10, 0x18, 5, 1), &d);
    assert_eq!(f.ok(&cdb10(READ_10, 0x18, 5, 1), &[]), d);
    // RDPROTECT/WRPROTECT: we have no protection information.
    let c = f.invalid_field(&cdb10(READ_10, 0x20, 5, 1), &[], 1);
    assert_eq!(c.sense[15] & 0x0F, 0x08 | 5, "bit pointer at bit 5");
    f.invalid_field(&cdb16(WRITE_16, 0xE0, 5, 1), &d, 1);
}

#[test]
fn short_data_out_is_refused() {
    let f = fixture();
    f.invalid_field(&cdb10(WRITE_10, 0, 0, 2), &pattern(1, 0), 7);
}

#[test]
fn read_only_unit_refuses_writes_with_write_protected() {
    let f = fixture_with(512, true);
    f.ok(&cdb10(READ_10, 0, 0, 1), &[]);
    f.fails(&cdb10(WRITE_10, 0, 0, 1), &pattern(1, 0), DATA_PROTECT, 0x27, 0x00);
    f.fails(&[0x41, 0x08, 0, 0, 0, 0, 0, 0, 1, 0], &[0u8; 512], DATA_PROTECT, 0x27, 0x00);
}

#[test]
fn verify_bytchk_modes() {
    let f = fixture();
    let d = pattern(4, 11);
    f.ok(&cdb10(WRITE_10, 0, 40, 4), &d);
    // BYTCHK=0: medium verification only.
    f.ok(&cdb10(VERIFY_10, 0, 40, 4), &[]);
    // BYTCHK=1: compare against Data-Out.
    f.ok(&cdb10(VERIFY_10, 0x02, 40, 4), &d);
    let mut bad = d.clone();
    bad[1000] ^= 0x55;
    let c = f.fails(&cdb16(VERIFY_16, 0x02, 40, 4), &bad, MISCOMPARE, 0x1D, 0x00);
    assert_eq!(c.sense[0] & 0x80, 0x80, "VALID: INFORMATION holds the offset");
    assert_eq!(be32(&c.sense, 3), 1000);
    // BYTCHK=3: one block compared against each block.
    let same = pattern(1, 5);
    f.ok(&cdb10(WRITE_10, 0, 60, 3), &[same.clone(), same.clone(), same.clone()].concat());
    f.ok(&cdb10(VERIFY_10, 0x06, 60, 3), &same);
    f.fails(&cdb10(VERIFY_10, 0x06, 59, 3), &same, MISCOMPARE, 0x1D, 0x00);
    // BYTCHK=2 is reserved.
    f.invalid_field(&cdb10(VERIFY_10, 0x04, 60, 1), &same, 1);
    // Range checks apply.
    f.fails(&cdb10(VERIFY_10, 0, BLOCKS as u32, 1), &[], ILLEGAL_REQUEST, 0x21, 0x00);
}

#[test]
fn write_and_verify_writes() {
    let f = fixture();
    let d = pattern(2, 21);
    // Both BYTCHK=1 (compared with the Data-Out) and BYTCHK=0 write the data.
    for (bytchk, lba) in [(0x02, 7), (0, 9)] {
        f.ok(&cdb10(WRITE_AND_VERIFY_10, bytchk, lba, 2), &d);
        assert_eq!(f.ok(&cdb10(READ_10, 0, lba, 2), &[]), d);
    }
}

fn caw(lba: u64, blocks: u8) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[0] = COMPARE_AND_WRITE;
    c[2..10].copy_from_slice(&lba.to_be_bytes());
    c[13] = blocks;
    c
}

#[test]
fn compare_and_write_matches_and_miscompares() {
    let f = fixture();
    let old = pattern(2, 1);
    let new = pattern(2, 2);
    f.ok(&cdb10(WRITE_10, 0, 30, 2), &old);
    f.ok(&caw(30, 2), &[old.clone(), new.clone()].concat());
    assert_eq!(f.ok(&cdb10(READ_10, 0, 30, 2), &[]), new);
    // Now `old` no longer matches: miscompare at the first differing byte, nothing written.
    let c = f.fails(&caw(30, 2), &[old.clone(), pattern(2, 3)].concat(), MISCOMPARE, 0x1D, 0x00);
    let first = old.iter().zip(new.iter()).position(|(a, b)| a != b).unwrap();
    assert_eq!(be32(&c.sense, 3) as usize, first);
    assert_eq!(f.ok(&cdb10(READ_10, 0, 30, 2), &[]), new);
    // 0 blocks: nothing to do, but only with no Data-Out (a 256-block request
    // whose count wrapped to 0 is refused).
    f.ok(&caw(30, 0), &[]);
    f.invalid_field(&caw(30, 0), &[0u8; 1024], 13);
    // Data-Out must be exactly 2 x blocks.
    f.invalid_field(&caw(30, 2), &new, 13);
    f.fails(&caw(BLOCKS - 1, 2), &[new.clone(), new.clone()].concat(), ILLEGAL_REQUEST, 0x21, 0x00);
}

/// Many threads each try to bump a counter in block 0 by COMPARE AND WRITE
/// (read, then CAW old -> old+1, retrying on miscompare), while other
/// threads hammer neighbouring blocks with plain writes. With atomic CAW no
/// increment is lost: the final value equals the number of successes.
#[test]
fn compare_and_write_is_atomic_under_threads() {
    let f = Arc::new(fixture());
    f.ok(&cdb10(WRITE_10, 0, 0, 1), &[0u8; 512]);
    let per_thread = 400u64;
    let mut handles = Vec::new();
    for t in 0..4u32 {
        let f = f.clone();
        handles.push(std::thread::spawn(move || {
            let me = nexus(t + 10);
            let mut done = 0;
            let mut misses = 0u64;
            while done < per_thread {
                let (_, cur) = f.run_as(&me, 0, &cdb10(READ_10, 0, 0, 1), &[]);
                let v = be64(&cur, 0);
                let mut next = vec![0u8; 512];
                next[..8].copy_from_slice(&(v + 1).to_be_bytes());
                let (c, _) = f.run_as(&me, 0, &caw(0, 1), &[cur, next].concat());
                if c.status == GOOD {
                    done += 1;
                } else {
                    assert_eq!(c.sense[2] & 0x0F, MISCOMPARE);
                    misses += 1;
                }
            }
            misses
        }));
    }
    for t in 0..2u8 {
        let f = f.clone();
        handles.push(std::thread::spawn(move || {
            for i in 0..300u32 {
                f.ok(&cdb10(WRITE_10, 0, 1 + (i % 8), 1), &pattern(1, t));
            }
            0
        }));
    }
    let _misses: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let v = be64(&f.ok(&cdb10(READ_10, 0, 0, 1), &[]), 0);
    assert_eq!(v, 4 * per_thread);
}

#[test]
fn orwrite_ors_into_the_medium() {
    let f = fixture();
    f.ok(&cdb10(WRITE_10, 0, 3, 2), &vec![0x0F; 1024]);
    f.ok(&cdb16(0x8B, 0, 3, 2), &vec![0xA0; 1024]);
    assert_eq!(f.ok(&cdb10(READ_10, 0, 3, 2), &[]), vec![0xAF; 1024]);
    f.fails(&cdb16(0x8B, 0, BLOCKS - 1, 2), &vec![0; 1024], ILLEGAL_REQUEST, 0x21, 0x00);
    f.invalid_field(&cdb16(0x8B, 0x20, 3, 1), &vec![0; 512], 1);
}
