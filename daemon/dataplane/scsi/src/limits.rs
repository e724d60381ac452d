//! The limits we advertise in VPD page B0 and enforce in the commands, in
//! one place so the two cannot disagree.

use crate::backing::LogicalUnit;

pub struct Limits {
    /// Blocks per READ/WRITE/VERIFY (bounds the Data-In buffer: 8 MiB).
    pub max_transfer: u32,
    pub optimal_transfer: u32,
    /// Filesystem-block-sized (4 KiB) granularity: holes are punched in whole 4 KiB blocks.
    pub optimal_granularity: u32,
    pub max_compare_and_write: u32,
    pub max_unmap_lba_count: u32,
    pub max_unmap_descriptors: u32,
    pub max_write_same: u64,
}

pub const MAX_TRANSFER_BYTES: u64 = 8 << 20;
const OPTIMAL_TRANSFER_BYTES: u64 = 1 << 20;
const GRANULARITY_BYTES: u64 = 4096;
// libiscsi (and common sense) call more than 2^20 blocks per UNMAP "insanely big".
const MAX_UNMAP_BYTES: u64 = 512 << 20;
/// Below 65536 blocks at 512 bytes: libiscsi then checks that a longer
/// WRITE SAME is refused rather than issuing a 32 MiB WRITE to set it up.
const MAX_WRITE_SAME_BYTES: u64 = 16 << 20;

impl Limits {
    pub fn for_unit(lu: &LogicalUnit) -> Limits {
        let bs = u64::from(lu.block_size());
        let blocks = |bytes: u64| ((bytes / bs).max(1)).min(u64::from(u32::MAX)) as u32;
        Limits {
            max_transfer: blocks(MAX_TRANSFER_BYTES),
            optimal_transfer: blocks(OPTIMAL_TRANSFER_BYTES),
            optimal_granularity: blocks(GRANULARITY_BYTES),
            max_compare_and_write: 255,
            max_unmap_lba_count: blocks(MAX_UNMAP_BYTES),
            max_unmap_descriptors: 256,
            max_write_same: u64::from(blocks(MAX_WRITE_SAME_BYTES)),
        }
    }
}
