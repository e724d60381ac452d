//! iSCSI PDU framing (RFC 7143 11.2): the 48-byte Basic Header Segment, the
//! Additional Header Segments, the data segment padded to 4 bytes, and the
//! optional CRC32C header and data digests.
//!
//! Everything here reads untrusted bytes: only checked slicing, no panics.

use crate::digest;

pub const BHS_LEN: usize = 48;
/// The Initiator Task Tag / Target Transfer Tag value meaning "none".
pub const RESERVED_TAG: u32 = 0xffff_ffff;

/// Initiator opcodes (RFC 7143 11.2.1.2).
pub mod op {
    pub const NOP_OUT: u8 = 0x00;
    pub const SCSI_CMD: u8 = 0x01;
    pub const TMF_REQ: u8 = 0x02;
    pub const LOGIN_REQ: u8 = 0x03;
    pub const TEXT_REQ: u8 = 0x04;
    pub const DATA_OUT: u8 = 0x05;
    pub const LOGOUT_REQ: u8 = 0x06;
    pub const SNACK_REQ: u8 = 0x10;
    /// Target opcodes.
    pub const NOP_IN: u8 = 0x20;
    pub const SCSI_RSP: u8 = 0x21;
    pub const TMF_RSP: u8 = 0x22;
    pub const LOGIN_RSP: u8 = 0x23;
    pub const TEXT_RSP: u8 = 0x24;
    pub const DATA_IN: u8 = 0x25;
    pub const LOGOUT_RSP: u8 = 0x26;
    pub const R2T: u8 = 0x31;
    pub const REJECT: u8 = 0x3f;
}

/// Reject reasons (RFC 7143 11.17.1).
pub mod reject {
    pub const DATA_DIGEST_ERROR: u8 = 0x02;
    pub const SNACK_REJECT: u8 = 0x03;
    pub const PROTOCOL_ERROR: u8 = 0x04;
    pub const COMMAND_NOT_SUPPORTED: u8 = 0x05;
    pub const INVALID_PDU_FIELD: u8 = 0x09;
}

/// Which digests are in force on a connection (none during login).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Digests {
    pub header: bool,
    pub data: bool,
}

/// Why a byte stream cannot be framed: the connection must be dropped.
#[derive(Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The data segment is longer than we declared we accept.
    DataTooLong { len: u32, max: u32 },
    HeaderDigest,
}

/// Where one whole PDU lies in a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Bytes of BHS + AHS.
    pub header_len: usize,
    /// Offset of the data segment from the PDU start.
    pub data_off: usize,
    pub data_len: usize,
    /// Total bytes this PDU occupies, digests and padding included.
    pub total: usize,
    /// The data digest did not match (the header is good: the caller may Reject).
    pub data_digest_bad: bool,
}

pub fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

/// Find the first PDU in `buf`. Ok(None): not all of it has arrived yet.
pub fn frame(buf: &[u8], digests: Digests, max_data: u32) -> Result<Option<Frame>, FrameError> {
    let Some(bhs) = buf.get(..BHS_LEN) else { return Ok(None) };
    let ahs_len = bhs[4] as usize * 4;
    let data_len = u32::from_be_bytes([0, bhs[5], bhs[6], bhs[7]]);
    if data_len > max_data {
        return Err(FrameError::DataTooLong { len: data_len, max: max_data });
    }
    let header_len = BHS_LEN + ahs_len;
    let hd = if digests.header { 4 } else { 0 };
    let data_off = header_len + hd;
    let data_len = data_len as usize;
    let dd = if digests.data && data_len > 0 { 4 } else { 0 };
    let total = data_off + pad4(data_len) + dd;
    if buf.len() < total {
        // Check the header digest as soon as the header is here, so a corrupt
        // length does not make us wait for bytes that never come.
        if digests.header && buf.len() >= data_off {
            check_header_digest(buf, header_len)?;
        }
        return Ok(None);
    }
    if digests.header {
        check_header_digest(buf, header_len)?;
    }
    let mut data_digest_bad = false;
    if dd != 0 {
        let padded = &buf[data_off..data_off + pad4(data_len)];
        let got = read_u32_le(&buf[data_off + pad4(data_len)..total]);
        data_digest_bad = digest::crc32c(padded) != got;
    }
    Ok(Some(Frame { header_len, data_off, data_len, total, data_digest_bad }))
}

fn check_header_digest(buf: &[u8], header_len: usize) -> Result<(), FrameError> {
    let got = read_u32_le(&buf[header_len..header_len + 4]);
    if digest::crc32c(&buf[..header_len]) == got {
        Ok(())
    } else {
        Err(FrameError::HeaderDigest)
    }
}

/// Digests go on the wire little-endian (RFC 7143 B.4: the CRC as computed,
/// least significant byte first, as Linux and libiscsi send it).
fn read_u32_le(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// Read-only view of a received BHS.
#[derive(Clone, Copy)]
pub struct Bhs<'a>(pub &'a [u8]);

impl<'a> Bhs<'a> {
    /// `b` must hold at least BHS_LEN bytes (frame() guarantees it).
    pub fn new(b: &'a [u8]) -> Option<Bhs<'a>> {
        b.get(..BHS_LEN).map(Bhs)
    }
    pub fn opcode(&self) -> u8 {
        self.0[0] & 0x3f
    }
    pub fn immediate(&self) -> bool {
        self.0[0] & 0x40 != 0
    }
    pub fn flags(&self) -> u8 {
        self.0[1]
    }
    pub fn final_bit(&self) -> bool {
        self.0[1] & 0x80 != 0
    }
    pub fn byte(&self, i: usize) -> u8 {
        self.0[i]
    }
    pub fn ahs_len(&self) -> usize {
        self.0[4] as usize * 4
    }
    pub fn data_len(&self) -> u32 {
        u32::from_be_bytes([0, self.0[5], self.0[6], self.0[7]])
    }
    pub fn lun_raw(&self) -> u64 {
        self.u64_at(8)
    }
    /// The LUN as a number, from SAM's single-level peripheral or flat
    /// addressing (the forms initiators use for LUNs below 16384).
    pub fn lun(&self) -> u64 {
        let b0 = self.0[8];
        let b1 = self.0[9] as u64;
        match b0 >> 6 {
            0 | 1 => ((b0 as u64 & 0x3f) << 8) | b1,
            _ => self.lun_raw(),
        }
    }
    pub fn itt(&self) -> u32 {
        self.u32_at(16)
    }
    pub fn u16_at(&self, off: usize) -> u16 {
        u16::from_be_bytes([self.0[off], self.0[off + 1]])
    }
    pub fn u32_at(&self, off: usize) -> u32 {
        u32::from_be_bytes([self.0[off], self.0[off + 1], self.0[off + 2], self.0[off + 3]])
    }
    pub fn u64_at(&self, off: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.0[off..off + 8]);
        u64::from_be_bytes(b)
    }
}

/// A BHS being built for sending.
#[derive(Clone)]
pub struct Header(pub [u8; BHS_LEN]);

impl Header {
    pub fn new(opcode: u8, flags: u8) -> Header {
        let mut h = [0u8; BHS_LEN];
        h[0] = opcode;
        h[1] = flags;
        Header(h)
    }
    pub fn set_byte(&mut self, off: usize, v: u8) -> &mut Self {
        self.0[off] = v;
        self
    }
    pub fn set_u16(&mut self, off: usize, v: u16) -> &mut Self {
        self.0[off..off + 2].copy_from_slice(&v.to_be_bytes());
        self
    }
    pub fn set_u32(&mut self, off: usize, v: u32) -> &mut Self {
        self.0[off..off + 4].copy_from_slice(&v.to_be_bytes());
        self
    }
    pub fn set_u64(&mut self, off: usize, v: u64) -> &mut Self {
        self.0[off..off + 8].copy_from_slice(&v.to_be_bytes());
        self
    }
    pub fn set_bytes(&mut self, off: usize, v: &[u8]) -> &mut Self {
        self.0[off..off + v.len()].copy_from_slice(v);
        self
    }
    pub fn itt(&mut self, v: u32) -> &mut Self {
        self.set_u32(16, v)
    }
}

/// Append one PDU (header, data, padding, digests) to `out`. Responses are
/// gathered in one buffer per connection and sent with one write per batch.
pub fn append(out: &mut Vec<u8>, header: &Header, data: &[u8], digests: Digests) {
    let mut h = header.0;
    let len = data.len() as u32;
    h[4] = 0;
    h[5..8].copy_from_slice(&len.to_be_bytes()[1..]);
    out.reserve(BHS_LEN + pad4(data.len()) + 8);
    out.extend_from_slice(&h);
    if digests.header {
        out.extend_from_slice(&digest::crc32c(&h).to_le_bytes());
    }
    if data.is_empty() {
        return;
    }
    out.extend_from_slice(data);
    let pad = pad4(data.len()) - data.len();
    out.extend_from_slice(&[0u8; 3][..pad]);
    if digests.data {
        let zeros = [0u8; 3];
        let crc = digest::crc32c_parts(&[data, &zeros[..pad]]);
        out.extend_from_slice(&crc.to_le_bytes());
    }
}

/// SAM single-level LUN encoding for a response's LUN field.
pub fn encode_lun(lun: u64) -> u64 {
    if lun < 256 {
        lun << 48
    } else if lun < 16384 {
        (0x4000 | lun) << 48
    } else {
        lun
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nop_out(data: &[u8]) -> Vec<u8> {
        let mut h = Header::new(op::NOP_OUT | 0x40, 0x80);
        h.itt(7).set_u32(20, RESERVED_TAG);
        let mut v = Vec::new();
        append(&mut v, &h, data, Digests::default());
        v
    }

    #[test]
    fn frames_pad_and_partial() {
        let v = nop_out(b"hello");
        assert_eq!(v.len(), 48 + 8);
        assert_eq!(frame(&v[..50], Digests::default(), 8192), Ok(None));
        let f = frame(&v, Digests::default(), 8192).unwrap().unwrap();
        assert_eq!((f.data_off, f.data_len, f.total), (48, 5, 56));
        let b = Bhs::new(&v).unwrap();
        assert_eq!((b.opcode(), b.immediate(), b.itt(), b.data_len()), (0, true, 7, 5));
    }

    #[test]
    fn too_long_is_refused_before_it_arrives() {
        let mut v = nop_out(b"");
        v[5..8].copy_from_slice(&[0x10, 0, 0]);
        assert_eq!(
            frame(&v, Digests::default(), 8192),
            Err(FrameError::DataTooLong { len: 0x100000, max: 8192 })
        );
    }

    #[test]
    fn digests_round_trip_and_detect_corruption() {
        let d = Digests { header: true, data: true };
        let mut v = Vec::new();
        append(&mut v, &Header::new(op::NOP_IN, 0x80), b"abcdef", d);
        assert_eq!(v.len(), 48 + 4 + 8 + 4);
        let f = frame(&v, d, 8192).unwrap().unwrap();
        assert!(!f.data_digest_bad);
        let mut bad = v.clone();
        bad[53] ^= 1;
        assert!(frame(&bad, d, 8192).unwrap().unwrap().data_digest_bad);
        let mut bad = v.clone();
        bad[20] ^= 1;
        assert_eq!(frame(&bad, d, 8192), Err(FrameError::HeaderDigest));
    }

    #[test]
    fn lun_forms() {
        let mut b = [0u8; 48];
        b[8] = 0x40;
        b[9] = 0x05;
        assert_eq!(Bhs(&b).lun(), 0x5);
        b[8] = 0x00;
        b[9] = 0x03;
        assert_eq!(Bhs(&b).lun(), 3);
        assert_eq!(encode_lun(3), 3 << 48);
        assert_eq!(encode_lun(300), (0x4000 | 300) << 48);
    }

    #[test]
    fn garbage_never_panics() {
        let mut seed = 1u32;
        for len in 0..300usize {
            let buf: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    (seed >> 16) as u8
                })
                .collect();
            for d in [Digests::default(), Digests { header: true, data: true }] {
                let _ = frame(&buf, d, 1 << 20);
            }
        }
    }
}
