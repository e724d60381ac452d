//! A whole connection (login, then full feature phase) fed arbitrary bytes:
//! it may refuse or close, never panic. The first input byte picks whether
//! the session starts logged in (valid login prepended) or raw.
#![no_main]

use _dataplane::iscsi::fuzzing;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    fuzzing::drive(data);
});
