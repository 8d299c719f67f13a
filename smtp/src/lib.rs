//! # herald-smtp
//!
//! The SMTP protocol core of herald's submission server, written without I/O (see
//! STYLE.md, "sans-IO core"): functions and small state machines that take bytes and
//! return commands, replies and outcomes. The tokio driver in the `herald` crate owns the
//! sockets, TLS and timeouts; the fuzz targets reach this crate without compiling the
//! storage.
//!
//! - [`line`]: reading CRLF-terminated command lines, refusing bare CR and bare LF (the
//!   SMTP smuggling class) and overlong lines; "need more bytes" is `Ok(None)`.
//! - [`command`]: parsing a command line into a [`Command`].
//! - [`reply`]: replies with enhanced status codes, single- and multi-line.
//! - [`session`]: the session state machine: bytes in, replies and actions out.
//! - [`data`]: the DATA receiver (dot-unstuffing, end at `CRLF . CRLF` only) and the BDAT
//!   chunk receiver, both refusing bare line endings.

pub mod command;
pub mod data;
pub mod line;
pub mod reply;
pub mod session;

pub use command::{Command, CommandError, Param, parse};
pub use data::{BdatReceiver, DataError, DataReceiver, Progress, stuff, stuffed};
pub use line::{LineError, read_line};
pub use reply::Reply;
pub use session::{Action, Envelope, Limits, Session, Settings};
