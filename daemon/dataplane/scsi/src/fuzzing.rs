//! A driver shared by the cargo-fuzz target (fuzz/) and the bounded random
//! property test (tests/fuzz_cdb.rs): it turns arbitrary bytes into a
//! sequence of commands, task management calls and nexus losses against a
//! target (every other command through the split path, `Target::plan`),
//! and asserts the invariants every completion must satisfy. Any
//! panic, in the driver's assertions or in the crate, is a finding.

use crate::{opcodes, status, BlockIo, Completion, Nexus, Plan, Target};

/// Byte cursor over the fuzz input; reads past the end yield zeros.
struct Input<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    fn done(&self) -> bool {
        self.pos >= self.bytes.len()
    }
    fn byte(&mut self) -> u8 {
        let b = self.bytes.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    fn take(&mut self, n: usize) -> &'a [u8] {
        let start = self.pos.min(self.bytes.len());
        let end = (start + n).min(self.bytes.len());
        self.pos = start + n;
        &self.bytes[start..end]
    }
}

fn nexus(i: u8) -> Nexus {
    Nexus {
        initiator_port: format!("iqn.2026-01.fuzz:i{},i,0x23d0000000{:02x}", i % 3, i % 3),
        target_port: "iqn.2026-01.fuzz:t,t,0x0001".into(),
    }
}

/// Runs every command encoded in `input` against `target` (which should
/// have LUN 0). Per command: a control byte (nexus, LUN 0 or a missing
/// LUN, whether to use a real opcode), a CDB length, the CDB, a Data-Out
/// length and the Data-Out bytes.
pub fn exercise(target: &Target, input: &[u8]) {
    let mut inp = Input { bytes: input, pos: 0 };
    let mut data_in = Vec::new();
    let mut commands = 0;
    while !inp.done() && commands < 64 {
        commands += 1;
        let control = inp.byte();
        let n = nexus(control & 0x03);
        let lun = if control & 0x04 != 0 { 9 } else { 0 };
        match control >> 5 {
            // Rarely: task management and nexus loss, to move state around.
            7 if control & 0x10 != 0 => {
                let r = target.lun_reset(lun, &n);
                assert!(r == 0 || r == 2);
                continue;
            }
            7 if control & 0x08 != 0 => {
                target.nexus_lost(&n);
                continue;
            }
            _ => {}
        }
        let cdb_len = usize::from(inp.byte() % 17);
        let mut cdb = [0u8; 16];
        cdb[..cdb_len].copy_from_slice(&pad(inp.take(cdb_len), cdb_len));
        if control & 0x18 != 0 && cdb_len > 0 {
            // Most of the time aim at a real command so execution goes deep.
            let c = &opcodes::COMMANDS[usize::from(cdb[0]) % opcodes::COMMANDS.len()];
            cdb[0] = c.opcode;
            if let Some(sa) = c.service_action {
                cdb[1] = (cdb[1] & 0xE0) | sa as u8;
            }
        }
        let out_len = usize::from(u16::from_be_bytes([inp.byte(), inp.byte()])) % 9000;
        let data_out = pad(inp.take(out_len), out_len);
        // Every other command takes the split path a batching transport uses.
        let c = if commands % 2 == 0 {
            match target.plan(lun, &n, &cdb[..cdb_len], data_out.len()) {
                Plan::Io(io) => perform(&io, &data_out, &mut data_in),
                Plan::Done(c) => {
                    data_in.clear();
                    c
                }
                Plan::Execute => target.execute(lun, &n, &cdb[..cdb_len], &data_out, &mut data_in),
            }
        } else {
            target.execute(lun, &n, &cdb[..cdb_len], &data_out, &mut data_in)
        };
        check_completion(c.status, &c.sense, &data_in);
    }
}

/// A planned transfer done the simplest way (one pread/pwrite), then finished.
fn perform(io: &BlockIo, data_out: &[u8], data_in: &mut Vec<u8>) -> Completion {
    assert!(!io.is_empty() && io.len() <= 8 << 20, "planned transfers are bounded");
    data_in.clear();
    if io.is_write() {
        assert!(data_out.len() >= io.len(), "a planned write has its data");
        let data = &data_out[..io.len()];
        // SAFETY: data is valid for its length; the fd is held open by `io`.
        let n = unsafe { libc::pwrite(io.fd(), data.as_ptr().cast(), data.len(), io.offset() as libc::off_t) };
        let r = if n < 0 { Err(std::io::Error::last_os_error()) } else { Ok(n as usize) };
        io.finish_write(r, data)
    } else {
        data_in.resize(io.len(), 0);
        // SAFETY: data_in is valid for its length; the fd is held open by `io`.
        let n = unsafe { libc::pread(io.fd(), data_in.as_mut_ptr().cast(), data_in.len(), io.offset() as libc::off_t) };
        let r = if n < 0 { Err(std::io::Error::last_os_error()) } else { Ok(n as usize) };
        let c = io.finish_read(r, data_in);
        if c.status != status::GOOD {
            data_in.clear();
        }
        c
    }
}

fn pad(b: &[u8], n: usize) -> Vec<u8> {
    let mut v = b.to_vec();
    v.resize(n, 0);
    v
}

/// What every completion must look like, whatever the input.
pub fn check_completion(st: u8, sense: &[u8], data_in: &[u8]) {
    match st {
        status::CHECK_CONDITION => {
            assert_eq!(sense.len(), 18, "fixed format sense");
            assert_eq!(sense[0] & 0x7F, 0x70);
            assert_eq!(sense[7], 10);
            assert!(data_in.is_empty(), "no Data-In with CHECK CONDITION");
        }
        status::GOOD | status::CONDITION_MET | status::RESERVATION_CONFLICT => {
            assert!(sense.is_empty());
        }
        other => panic!("unexpected status {:#x}", other),
    }
    assert!(data_in.len() <= (8 << 20) + 4096, "Data-In bounded by MAXIMUM TRANSFER LENGTH");
}
