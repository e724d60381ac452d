//! Framing, BHS accessors and text-key parsing over arbitrary bytes.
#![no_main]

use _dataplane::iscsi::pdu::{self, Bhs, Digests};
use _dataplane::iscsi::text;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for digests in [Digests::default(), Digests { header: true, data: true }] {
        if let Ok(Some(f)) = pdu::frame(data, digests, 1 << 20) {
            assert!(f.total <= data.len() && f.data_off + f.data_len <= f.total);
            let b = Bhs::new(data).expect("framed PDUs have a BHS");
            let _ = (b.opcode(), b.lun(), b.itt(), b.data_len(), b.ahs_len());
            let _ = text::parse(&data[f.data_off..f.data_off + f.data_len]);
        }
    }
    let _ = text::parse(data);
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = (text::number(s), text::binary(s));
    }
});
