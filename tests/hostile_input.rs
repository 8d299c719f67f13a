//! Hostile and bad input over the real sockets, and the open-relay matrix (issue #8).
//!
//! Each SMTP and API abuse is a row in a table: the bytes a hostile or broken client sends
//! and the replies herald must give. After every row nothing the row carried may have
//! become a message (`GET /emails` and the spool are unchanged), a fresh well-behaved
//! client must still authenticate and submit one, and `/healthz` must answer 200. Failing
//! rows are collected, so one run names every row that misbehaves rather than the first.
//!
//! Timing-bound behaviour (AUTH brute force, slowloris) runs on servers whose limits are
//! shortened by config; every wait has a deadline.
//!
//! The rows and tests live in `tests/hostile_input/`, one file each: `smtp` (the SMTP
//! table, STARTTLS injection, AUTH brute force), `slowloris`, `api` (the REST API table),
//! `relay` (the open-relay matrix), with the herald under test in `server` and the raw
//! socket and TLS client they all use in `client`. This file holds what they share.

mod util;

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

/// The longest any one reply may take. Herald answers AUTH failures up to 2 s late on
/// purpose; this leaves room for that on a loaded machine.
const REPLY_WAIT: Duration = Duration::from_secs(5);
/// The domain the operator's team may send from.
const DOMAIN: &str = "example.test";
/// The envelope and header sender of every well-behaved message.
const SENDER: &str = "hello@example.test";
/// The client address of well-behaved connections. Abusive clients come from other
/// addresses of 127/8 (all loopback on Linux) so that per-address limits can be told apart.
const LOCAL: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// An API key that does not exist.
const WRONG_KEY: &str = "re_wrong_key_0123456789";

/// A small valid message from `from`, ending in CRLF.
fn message(from: &str, subject: &str) -> String {
    format!("From: {from}\r\nTo: user@example.org\r\nSubject: {subject}\r\n\r\nHello.\r\n")
}

/// The parts, one file each under `tests/hostile_input/`. An inline module rather than
/// `mod smtp;` here: a crate root resolves `mod x;` beside itself, to `tests/x.rs`, and
/// `tests/smtp.rs` and `tests/api.rs` are test targets of their own.
mod hostile_input {
    mod api;
    mod client;
    mod relay;
    mod server;
    mod slowloris;
    mod smtp;
}
