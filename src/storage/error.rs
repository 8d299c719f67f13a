//! Why a store refused or failed, in words every backend can say: the stores' traits
//! return it, so no backend's own error type (RocksDB's, a database driver's) reaches the
//! services.

pub use herald_queue::Refusal;

/// A store's refusal or failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The write could not be made durable now, and nothing of it was written: the
    /// caller may try again (SMTP answers `451`/`452`, HTTP `503`).
    #[error(transparent)]
    Unavailable(Refusal),
    /// A stored record could not be read back: its bytes do not match the format this
    /// build writes.
    #[error("corrupt record in table `{table}`: {reason}")]
    Corrupt {
        /// The table (or kind of record) it was read from.
        table: &'static str,
        /// What was wrong with it.
        reason: String,
    },
    /// Any other failure of the backend (an I/O error on read, a record that cannot be
    /// encoded, ...); the text is for the log.
    #[error("storage failed: {0}")]
    Failed(String),
}

impl Error {
    /// Whether the failure is temporary: trying again later may succeed.
    pub fn is_temporary(&self) -> bool {
        matches!(self, Error::Unavailable(_))
    }
}

impl From<herald_queue::Error> for Error {
    fn from(error: herald_queue::Error) -> Error {
        match error {
            herald_queue::Error::Unavailable(refusal) => Error::Unavailable(refusal),
            herald_queue::Error::Corrupt { table, reason } => Error::Corrupt { table, reason },
            other => Error::Failed(other.to_string()),
        }
    }
}

/// For writes staged inside one of the spool's own writes (a delivery outcome, a
/// cancellation), whose callbacks answer in the spool's error: the staged write is
/// abandoned whole, and a failure that is neither a refusal nor a corrupt record is
/// reported as the storage failing, which the spool's callers treat as temporary.
impl From<Error> for herald_queue::Error {
    fn from(error: Error) -> herald_queue::Error {
        match error {
            Error::Unavailable(refusal) => herald_queue::Error::Unavailable(refusal),
            Error::Corrupt { table, reason } => herald_queue::Error::Corrupt { table, reason },
            Error::Failed(reason) => herald_queue::Error::Unavailable(Refusal::Storage(reason)),
        }
    }
}
