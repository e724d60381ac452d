//! Fixed-format sense data (SPC-4 4.5.3) and the sense codes this target
//! reports. Every command handler fails with a `Sense`; `Target::execute`
//! turns it into CHECK CONDITION plus the 18 sense bytes.

/// Sense keys (SPC-4 table 27), all of them, for reference and tests.
#[allow(dead_code)]
pub mod key {
    pub const NO_SENSE: u8 = 0x0;
    pub const NOT_READY: u8 = 0x2;
    pub const MEDIUM_ERROR: u8 = 0x3;
    pub const HARDWARE_ERROR: u8 = 0x4;
    pub const ILLEGAL_REQUEST: u8 = 0x5;
    pub const UNIT_ATTENTION: u8 = 0x6;
    pub const DATA_PROTECT: u8 = 0x7;
    pub const ABORTED_COMMAND: u8 = 0xB;
    pub const MISCOMPARE: u8 = 0xE;
}

/// Fixed format, current errors.
pub const RESPONSE_CODE_CURRENT_FIXED: u8 = 0x70;
/// Fixed-format sense is 18 bytes: 8 header bytes plus ADDITIONAL SENSE LENGTH 10.
pub const FIXED_SENSE_LEN: usize = 18;

/// One sense condition: key, additional sense code and qualifier, plus the
/// optional INFORMATION and SENSE-KEY SPECIFIC fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sense {
    pub key: u8,
    pub asc: u8,
    pub ascq: u8,
    /// INFORMATION field (sets VALID): the failing LBA, or the miscompare offset.
    pub information: Option<u32>,
    /// SENSE-KEY SPECIFIC bytes 15..18 (SKSV already set in byte 0).
    pub key_specific: Option<[u8; 3]>,
}

impl Sense {
    pub const fn new(key: u8, asc: u8, ascq: u8) -> Sense {
        Sense { key, asc, ascq, information: None, key_specific: None }
    }

    /// INVALID FIELD IN CDB (24/00) pointing at `byte` (and `bit`, if known),
    /// so an initiator can tell which field it got wrong.
    pub fn invalid_cdb_field(byte: u16, bit: Option<u8>) -> Sense {
        Sense::new(key::ILLEGAL_REQUEST, 0x24, 0x00).with_field_pointer(true, byte, bit)
    }

    /// INVALID FIELD IN PARAMETER LIST (26/00) pointing into the Data-Out buffer.
    pub fn invalid_param_field(byte: u16, bit: Option<u8>) -> Sense {
        Sense::new(key::ILLEGAL_REQUEST, 0x26, 0x00).with_field_pointer(false, byte, bit)
    }

    /// The field pointer of SPC-4 4.5.2.4.2: C/D says CDB (1) or parameter
    /// list (0); BPV says the bit pointer is valid.
    fn with_field_pointer(mut self, in_cdb: bool, byte: u16, bit: Option<u8>) -> Sense {
        let mut b0 = 0x80; // SKSV
        if in_cdb {
            b0 |= 0x40;
        }
        if let Some(bit) = bit {
            b0 |= 0x08 | (bit & 0x7);
        }
        let [hi, lo] = byte.to_be_bytes();
        self.key_specific = Some([b0, hi, lo]);
        self
    }

    pub fn with_information(mut self, information: u32) -> Sense {
        self.information = Some(information);
        self
    }

    /// Writes the 18 fixed-format bytes into `out` (cleared first).
    pub fn write_fixed(&self, out: &mut Vec<u8>) {
        out.clear();
        out.resize(FIXED_SENSE_LEN, 0);
        out[0] = RESPONSE_CODE_CURRENT_FIXED;
        if let Some(info) = self.information {
            out[0] |= 0x80; // VALID
            out[3..7].copy_from_slice(&info.to_be_bytes());
        }
        out[2] = self.key & 0x0F;
        out[7] = (FIXED_SENSE_LEN - 8) as u8;
        out[12] = self.asc;
        out[13] = self.ascq;
        if let Some(sks) = self.key_specific {
            out[15..18].copy_from_slice(&sks);
        }
    }

    pub fn to_fixed(self) -> Vec<u8> {
        let mut v = Vec::with_capacity(FIXED_SENSE_LEN);
        self.write_fixed(&mut v);
        v
    }
}

// The conditions, named as in SPC-4 annex D (asc/ascq table).
pub const INVALID_COMMAND_OPERATION_CODE: Sense = Sense::new(key::ILLEGAL_REQUEST, 0x20, 0x00);
pub const LOGICAL_BLOCK_ADDRESS_OUT_OF_RANGE: Sense = Sense::new(key::ILLEGAL_REQUEST, 0x21, 0x00);
pub const LOGICAL_UNIT_NOT_SUPPORTED: Sense = Sense::new(key::ILLEGAL_REQUEST, 0x25, 0x00);
pub const PARAMETER_LIST_LENGTH_ERROR: Sense = Sense::new(key::ILLEGAL_REQUEST, 0x1A, 0x00);
pub const INVALID_RELEASE_OF_PERSISTENT_RESERVATION: Sense =
    Sense::new(key::ILLEGAL_REQUEST, 0x26, 0x04);
pub const SAVING_PARAMETERS_NOT_SUPPORTED: Sense = Sense::new(key::ILLEGAL_REQUEST, 0x39, 0x00);
pub const WRITE_PROTECTED: Sense = Sense::new(key::DATA_PROTECT, 0x27, 0x00);
pub const LOGICAL_UNIT_SOFTWARE_WRITE_PROTECTED: Sense = Sense::new(key::DATA_PROTECT, 0x27, 0x02);
pub const MISCOMPARE_DURING_VERIFY_OPERATION: Sense = Sense::new(key::MISCOMPARE, 0x1D, 0x00);
pub const UNRECOVERED_READ_ERROR: Sense = Sense::new(key::MEDIUM_ERROR, 0x11, 0x00);
pub const WRITE_ERROR: Sense = Sense::new(key::MEDIUM_ERROR, 0x0C, 0x00);
pub const INTERNAL_TARGET_FAILURE: Sense = Sense::new(key::HARDWARE_ERROR, 0x44, 0x00);
pub const BUS_DEVICE_RESET_FUNCTION_OCCURRED: Sense = Sense::new(key::UNIT_ATTENTION, 0x29, 0x03);
pub const RESERVATIONS_PREEMPTED: Sense = Sense::new(key::UNIT_ATTENTION, 0x2A, 0x03);
pub const RESERVATIONS_RELEASED: Sense = Sense::new(key::UNIT_ATTENTION, 0x2A, 0x04);
pub const REGISTRATIONS_PREEMPTED: Sense = Sense::new(key::UNIT_ATTENTION, 0x2A, 0x05);
pub const MODE_PARAMETERS_CHANGED: Sense = Sense::new(key::UNIT_ATTENTION, 0x2A, 0x01);
pub const CAPACITY_DATA_HAS_CHANGED: Sense = Sense::new(key::UNIT_ATTENTION, 0x2A, 0x09);
/// NOT READY TO READY CHANGE, MEDIUM MAY HAVE CHANGED: a LUN's backing was replaced.
pub const MEDIUM_MAY_HAVE_CHANGED: Sense = Sense::new(key::UNIT_ATTENTION, 0x28, 0x00);
pub const REPORTED_LUNS_DATA_HAS_CHANGED: Sense = Sense::new(key::UNIT_ATTENTION, 0x3F, 0x0E);
pub const NO_ADDITIONAL_SENSE: Sense = Sense::new(key::NO_SENSE, 0x00, 0x00);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_format_layout() {
        let s = Sense::invalid_cdb_field(2, Some(3)).to_fixed();
        assert_eq!(s.len(), 18);
        assert_eq!(s[0], 0x70);
        assert_eq!(s[2], key::ILLEGAL_REQUEST);
        assert_eq!(s[7], 10);
        assert_eq!((s[12], s[13]), (0x24, 0x00));
        assert_eq!(&s[15..18], &[0x80 | 0x40 | 0x08 | 3, 0, 2]);
    }

    #[test]
    fn information_sets_valid() {
        let s = MISCOMPARE_DURING_VERIFY_OPERATION.with_information(513).to_fixed();
        assert_eq!(s[0], 0xF0);
        assert_eq!(&s[3..7], &[0, 0, 2, 1]);
        assert_eq!(s[2], 0x0E);
    }
}
