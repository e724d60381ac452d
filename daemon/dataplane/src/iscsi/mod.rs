//! The iSCSI transport (RFC 7143, ErrorRecoveryLevel 0, one connection per
//! session), independent of sockets: `conn::Connection` turns received
//! bytes into response bytes.

pub mod chap;
pub mod conn;
#[cfg(fuzzing)]
pub mod fuzzing;
pub mod login;
pub mod params;
pub mod pdu;
pub mod residual;
pub mod session;
pub mod text;

#[cfg(test)]
mod tests;
