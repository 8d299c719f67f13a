//! The crate's error type and the refusals that mean "cannot accept now".

use std::path::PathBuf;

/// A failure of the store itself: a bug, a corrupt record or a storage fault that is not
/// an expected operating condition. Expected conditions (a full disk, a failed write while
/// accepting) surface as [`Refusal`] instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// RocksDB could not open the data directory.
    #[error("cannot open the spool at {path}: {source}")]
    Open {
        /// The data directory.
        path: PathBuf,
        /// What RocksDB said.
        source: rocksdb::Error,
    },
    /// A file system operation on the data directory failed.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A read or write failed inside RocksDB.
    #[error("storage error: {0}")]
    Storage(#[from] rocksdb::Error),
    /// A stored record could not be decoded: the bytes do not match the format this build
    /// writes.
    #[error("corrupt record in table `{table}`: {reason}")]
    Corrupt {
        /// The table the record was read from.
        table: &'static str,
        /// What was wrong with it.
        reason: String,
    },
    /// A record could not be serialised.
    #[error("cannot encode a record for table `{table}`: {source}")]
    Encode {
        /// The table the record was meant for.
        table: &'static str,
        /// The serialiser's error.
        source: serde_json::Error,
    },
    /// The caller asked for something the spool cannot represent.
    #[error("invalid message: {0}")]
    InvalidMessage(&'static str),
    /// A write could not be made durable now; see the [`Refusal`] for why.
    #[error(transparent)]
    Unavailable(Refusal),
}

/// Why the spool cannot accept a message right now. Every variant is temporary from the
/// client's point of view: SMTP answers `452`/`451`, HTTP answers `503`, and nothing that
/// was refused is half-written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// Free space on the data directory's file system is below the configured minimum.
    #[error("insufficient storage: {available} bytes free, {minimum} required")]
    DiskLow {
        /// Bytes available to herald.
        available: u64,
        /// The configured minimum.
        minimum: u64,
    },
    /// The write reached RocksDB and failed there (I/O error, read-only file system, ...).
    #[error("storage unavailable: {0}")]
    Storage(String),
    /// The commit queue is full: writes arrive faster than the disk syncs them.
    #[error("the spool is busy, try again shortly")]
    Busy,
    /// The store is shutting down.
    #[error("the spool is shutting down")]
    Closed,
}
