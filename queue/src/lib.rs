//! # herald-queue
//!
//! herald's one RocksDB instance. It holds the **spool** (accepted messages, their
//! envelopes with per-recipient state, and the due index that says what to deliver next)
//! and the **typed record tables** every other part of herald keeps its state in (teams,
//! API keys, domains, email records, events, the webhook outbox, request logs,
//! idempotency records). Nothing else in herald opens RocksDB, and nothing here knows
//! SMTP or HTTP.
//!
//! ## Durability
//!
//! Every write goes through one commit thread ([`Store::commit`], [`Spool::enqueue`])
//! that merges whatever is queued into one RocksDB write batch with a synced WAL: a caller
//! is answered only once its writes are on disk, and concurrent callers share one fsync
//! (group commit). A [`Batch`] is atomic, so a message, its email record, its first event
//! and its idempotency record are durable together or not at all.
//!
//! Messages of 4 KiB or more are written once, to append-only body files the commit
//! thread syncs before the write that records where they lie (`bodies.rs`).
//!
//! When the disk is nearly full or a write fails, enqueues answer
//! [`Admission::Refused`] with a [`Refusal`] instead of losing anything.
//!
//! ## Main types
//!
//! - [`Store`]: open, read, scan, commit; [`Table`] and [`Record`] for typed tables.
//! - [`Spool`]: enqueue, claim due work, update recipient state, reschedule, cancel, and
//!   recovery of pending work at open ([`Recovery`]).
//! - [`DueIndex`] / [`Due`]: a time-ordered index of what is due when, the one shape of
//!   every wait in herald (the spool's due index is one).
//! - [`Clock`] / [`Timestamp`]: the injected time every deadline reads.
//! - [`Id`]: UUIDv7 ids, time-ordered as keys.

mod batch;
mod bodies;
mod cache;
mod clock;
mod commit;
mod disk;
mod due;
mod envelope;
mod error;
mod generation;
mod id;
mod mailbox;
mod marks;
mod spool;
mod store;
mod table;

pub use batch::Batch;
pub use cache::RecordCache;
pub use clock::{Clock, ManualClock, SharedClock, SystemClock, Timestamp};
pub use commit::{Commit, CommitLimits};
pub use due::{Due, DueIndex};
pub use envelope::{Envelope, Recipient, RecipientState};
pub use error::{Error, Refusal};
pub use id::{Id, IdGenerator};
pub use spool::{Admission, Claim, Enqueue, NewMessage, RECIPIENTS_MAX, Recovery, Spool, Updated};
pub use store::{Health, RawEntry, Scan, Store, StoreOptions, TableSize};
pub use table::{Record, Table, decode_counter, decode_record};
