//! `herald store copy`: a stopped node's records, read from its RocksDB, written into an
//! empty PostgreSQL database, so that the node (and any other) starts on the database with
//! everything it had. The spool stays where it is: it is the node's in both layouts.
//!
//! Each store module copies its own records (a `copy` function beside its two backends):
//! it alone knows its tables and its rows. This module gives them a [`Copy`] to read and
//! write through, runs them in order ([`KINDS`]) and keeps the database's state:
//!
//! - an empty database is stamped `copying` in `herald_meta` (with the node's operator
//!   team) before the first record goes in;
//! - a database stamped `copying` by the same node holds a copy that failed part way: every
//!   record table is emptied and the copy starts over, so running it again after a failure
//!   is always safe;
//! - anything else (records of its own, another node's copy) is refused, naming what it
//!   holds.
//!
//! When every kind is in, the `initialised` row replaces the `copying` one in one
//! transaction, and the data directory is marked as moved, so that a later start without
//! `[cluster] postgres` refuses instead of forking the records.

mod frame;
mod run;

pub use frame::Copy;
pub use run::{Copied, Refused, check_join, copy_node, run};
