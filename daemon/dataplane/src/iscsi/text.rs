//! Text keys (RFC 7143 6): `key=value` pairs, each ended by a NUL, in the
//! data segment of Login and Text PDUs.

/// Longest key and value we accept (RFC 7143 6.1: keys up to 63 bytes,
/// values up to 8192 bytes except where a key says otherwise).
const MAX_KEY: usize = 63;
const MAX_VALUE: usize = 8192;

#[derive(Debug, PartialEq, Eq)]
pub enum TextError {
    /// A pair without '=', an over-long key or value, or non UTF-8 text.
    Malformed,
    /// The same key twice in one negotiation.
    Duplicate(String),
}

/// Parse a data segment into pairs, in order. Trailing NULs and a missing
/// final NUL are tolerated (initiators differ).
pub fn parse(data: &[u8]) -> Result<Vec<(String, String)>, TextError> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for item in data.split(|&b| b == 0) {
        if item.is_empty() {
            continue;
        }
        let text = std::str::from_utf8(item).map_err(|_| TextError::Malformed)?;
        let (k, v) = text.split_once('=').ok_or(TextError::Malformed)?;
        if k.is_empty() || k.len() > MAX_KEY || v.len() > MAX_VALUE {
            return Err(TextError::Malformed);
        }
        if pairs.iter().any(|(seen, _)| seen == k) {
            return Err(TextError::Duplicate(k.to_string()));
        }
        pairs.push((k.to_string(), v.to_string()));
    }
    Ok(pairs)
}

/// Append `key=value\0`.
pub fn push(out: &mut Vec<u8>, key: &str, value: &str) {
    out.extend_from_slice(key.as_bytes());
    out.push(b'=');
    out.extend_from_slice(value.as_bytes());
    out.push(0);
}

/// A numeric value: decimal, or hex with 0x (RFC 7143 6.1 "numerical-value").
pub fn number(v: &str) -> Option<u64> {
    if let Some(hex) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        v.parse().ok()
    } else {
        None
    }
}

/// Decode a CHAP binary value: 0x hex or 0b base64 (RFC 7143 6.1 "binary-value").
pub fn binary(v: &str) -> Option<Vec<u8>> {
    if let Some(hex) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        if hex.is_empty() {
            return None;
        }
        // An odd number of digits has an implied leading zero.
        let padded = if hex.len() % 2 == 1 { format!("0{hex}") } else { hex.to_string() };
        (0..padded.len())
            .step_by(2)
            .map(|i| padded.get(i..i + 2).and_then(|d| u8::from_str_radix(d, 16).ok()))
            .collect()
    } else if let Some(b64) = v.strip_prefix("0b").or_else(|| v.strip_prefix("0B")) {
        base64(b64)
    } else {
        None
    }
}

fn base64(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => return None,
        };
        acc = (acc << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if out.is_empty() {
        None
    } else {
        Some(out)
    }
}

pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(2 + bytes.len() * 2);
    s.push_str("0x");
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pairs() {
        let p = parse(b"InitiatorName=iqn.x\0SessionType=Normal\0\0").unwrap();
        assert_eq!(p, vec![("InitiatorName".into(), "iqn.x".into()), ("SessionType".into(), "Normal".into())]);
        assert_eq!(parse(b"a=1\0a=2\0"), Err(TextError::Duplicate("a".into())));
        assert_eq!(parse(b"novalue\0"), Err(TextError::Malformed));
        assert_eq!(parse(b"\xff=1\0"), Err(TextError::Malformed));
    }

    #[test]
    fn values() {
        assert_eq!(number("8192"), Some(8192));
        assert_eq!(number("0x10"), Some(16));
        assert_eq!(number("-1"), None);
        assert_eq!(binary("0x0aff"), Some(vec![10, 255]));
        assert_eq!(binary("0xaff"), Some(vec![10, 255]));
        assert_eq!(binary("0bAQID"), Some(vec![1, 2, 3]));
        assert_eq!(binary("0xzz"), None);
        assert_eq!(hex(&[1, 0xab]), "0x01ab");
    }
}
