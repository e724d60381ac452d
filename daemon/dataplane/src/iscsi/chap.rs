//! CHAP (RFC 1994) as iSCSI uses it in the security stage (RFC 7143 12.1.3):
//! MD5 only (CHAP_A=5), one-way or mutual.

use super::text;
use crate::md5::md5;
use crate::registry::Secret;

const CHAP_MD5: &str = "5";
const CHALLENGE_LEN: usize = 16;

/// Where the exchange stands.
#[derive(Debug, PartialEq, Eq)]
enum Stage {
    /// Waiting for CHAP_A.
    Algorithm,
    /// Challenge sent; waiting for CHAP_N/CHAP_R.
    Response,
    Done,
}

/// The target side of one CHAP exchange.
pub struct ChapServer {
    stage: Stage,
    id: u8,
    challenge: [u8; CHALLENGE_LEN],
}

#[derive(Debug, PartialEq, Eq)]
pub enum ChapError {
    /// The initiator offered no algorithm we support.
    NoAlgorithm,
    /// A key was missing, malformed or out of order.
    Protocol,
    /// Wrong name or response.
    Failed,
    /// The initiator asked for mutual CHAP and we have no secret to answer with.
    NoMutualSecret,
}

/// Fill `buf` from the kernel's random pool.
pub fn random_bytes(buf: &mut [u8]) {
    let mut filled = 0;
    while filled < buf.len() {
        // SAFETY: the pointer and length describe the unfilled tail of `buf`.
        let n = unsafe {
            libc::getrandom(buf[filled..].as_mut_ptr().cast(), buf.len() - filled, 0)
        };
        if n <= 0 {
            // getrandom only fails before the pool is initialised (never at
            // our run time) or on EINTR; retry.
            continue;
        }
        filled += n as usize;
    }
}

impl Default for ChapServer {
    fn default() -> ChapServer {
        ChapServer::new()
    }
}

impl ChapServer {
    /// A fresh exchange: random identifier and 16-byte challenge.
    pub fn new() -> ChapServer {
        let mut challenge = [0u8; CHALLENGE_LEN];
        random_bytes(&mut challenge);
        let mut id = [0u8; 1];
        random_bytes(&mut id);
        ChapServer { stage: Stage::Algorithm, id: id[0], challenge }
    }

    pub fn done(&self) -> bool {
        self.stage == Stage::Done
    }

    /// Feed the keys of one security-stage request. Appends our keys to
    /// `reply`. `Ok(())` means continue (or finished, see `done`).
    pub fn step(
        &mut self,
        keys: &[(String, String)],
        secret: &Secret,
        mutual: Option<&Secret>,
        reply: &mut Vec<u8>,
    ) -> Result<(), ChapError> {
        let get = |k: &str| keys.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str());
        match self.stage {
            Stage::Algorithm => {
                let Some(algorithms) = get("CHAP_A") else {
                    // AuthMethod may come alone first; wait for CHAP_A.
                    return if get("CHAP_N").is_some() || get("CHAP_R").is_some() {
                        Err(ChapError::Protocol)
                    } else {
                        Ok(())
                    };
                };
                if !algorithms.split(',').any(|a| a == CHAP_MD5) {
                    text::push(reply, "CHAP_A", "Reject");
                    return Err(ChapError::NoAlgorithm);
                }
                text::push(reply, "CHAP_A", CHAP_MD5);
                text::push(reply, "CHAP_I", &self.id.to_string());
                text::push(reply, "CHAP_C", &text::hex(&self.challenge));
                self.stage = Stage::Response;
                Ok(())
            }
            Stage::Response => {
                let (Some(name), Some(response)) = (get("CHAP_N"), get("CHAP_R")) else {
                    return Err(ChapError::Protocol);
                };
                let response = text::binary(response).ok_or(ChapError::Protocol)?;
                let expected = md5(&[&[self.id], &secret.secret, &self.challenge]);
                // Compare without an early exit so timing says nothing.
                let same = response.len() == expected.len()
                    && response.iter().zip(expected.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0;
                if name != secret.user || !same {
                    return Err(ChapError::Failed);
                }
                if let Some(their_challenge) = get("CHAP_C") {
                    let id = get("CHAP_I").and_then(text::number).filter(|n| *n <= 255);
                    let challenge = text::binary(their_challenge).ok_or(ChapError::Protocol)?;
                    let Some(id) = id else { return Err(ChapError::Protocol) };
                    let Some(mutual) = mutual else { return Err(ChapError::NoMutualSecret) };
                    // A reflected challenge would let an attacker use us as an oracle.
                    if challenge == self.challenge || challenge.is_empty() {
                        return Err(ChapError::Failed);
                    }
                    let answer = md5(&[&[id as u8], &mutual.secret, &challenge]);
                    text::push(reply, "CHAP_N", &mutual.user);
                    text::push(reply, "CHAP_R", &text::hex(&answer));
                }
                self.stage = Stage::Done;
                Ok(())
            }
            Stage::Done => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(u: &str, s: &str) -> Secret {
        Secret { user: u.into(), secret: s.as_bytes().to_vec() }
    }

    fn kv(pairs: &[(&str, String)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    /// Runs the initiator side by hand; returns the target's last reply.
    fn exchange(user: &str, pass: &str, mutual: Option<(u8, Vec<u8>)>) -> Result<Vec<(String, String)>, ChapError> {
        let s = secret("alice", "sixteen-byte-pw!");
        let m = secret("target", "target-secret-12");
        let mut chap = ChapServer::new();
        let mut reply = Vec::new();
        chap.step(&kv(&[("CHAP_A", "7,5".into())]), &s, Some(&m), &mut reply)?;
        let r = text::parse(&reply).unwrap();
        let id: u8 = r[1].1.parse().unwrap();
        let c = text::binary(&r[2].1).unwrap();
        assert_eq!(r[0], ("CHAP_A".into(), "5".into()));
        let resp = md5(&[&[id], pass.as_bytes(), &c]);
        let mut keys = vec![("CHAP_N", user.to_string()), ("CHAP_R", text::hex(&resp))];
        if let Some((mid, mc)) = &mutual {
            keys.push(("CHAP_I", mid.to_string()));
            keys.push(("CHAP_C", text::hex(mc)));
        }
        let mut reply = Vec::new();
        chap.step(&kv(&keys), &s, Some(&m), &mut reply)?;
        assert!(chap.done());
        Ok(text::parse(&reply).unwrap())
    }

    #[test]
    fn one_way_succeeds_and_wrong_secret_fails() {
        assert_eq!(exchange("alice", "sixteen-byte-pw!", None), Ok(vec![]));
        assert_eq!(exchange("alice", "wrong", None), Err(ChapError::Failed));
        assert_eq!(exchange("mallory", "sixteen-byte-pw!", None), Err(ChapError::Failed));
    }

    #[test]
    fn mutual_answers_with_target_secret() {
        let challenge = vec![9u8; 16];
        let r = exchange("alice", "sixteen-byte-pw!", Some((42, challenge.clone()))).unwrap();
        assert_eq!(r[0], ("CHAP_N".into(), "target".into()));
        let want = md5(&[&[42], b"target-secret-12", &challenge]);
        assert_eq!(text::binary(&r[1].1).unwrap(), want.to_vec());
    }

    #[test]
    fn md5_required() {
        let s = secret("a", "b");
        let mut chap = ChapServer::new();
        let mut reply = Vec::new();
        assert_eq!(chap.step(&kv(&[("CHAP_A", "6,7".into())]), &s, None, &mut reply), Err(ChapError::NoAlgorithm));
    }
}
