//! MD5 (RFC 1321) from the RustCrypto `md-5` crate, only for CHAP (RFC 1994,
//! CHAP_A=5). Not used for anything that needs collision resistance: CHAP's
//! response is a keyed hash over a fresh random challenge.

use ::md5::{Digest, Md5};

/// MD5 digest of the concatenation of `parts`.
pub fn md5(parts: &[&[u8]]) -> [u8; 16] {
    let mut h = Md5::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::md5;

    fn hex(d: [u8; 16]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn rfc1321_suite() {
        assert_eq!(hex(md5(&[b""])), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hex(md5(&[])), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hex(md5(&[b"abc"])), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(hex(md5(&[b"message ", b"digest"])), "f96b697d7cb7938d525a2f31aaf161d0");
        assert_eq!(
            hex(md5(&[b"12345678901234567890123456789012345678901234567890123456789012345678901234567890"])),
            "57edf4a22be3c955ac49da2e2107b67a"
        );
    }
}
