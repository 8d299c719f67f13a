//! The driver's and the pool's errors, in the storage layer's words: what a later try
//! may cure (the database unreachable, restarting, overloaded, a serialization conflict)
//! is [`Error::Unavailable`], which the API answers with `503` and SMTP with `451`;
//! anything else is a failure for the log.

use tokio_postgres::error::SqlState;

use crate::storage::{Error, Refusal};

/// A driver's error as a storage error.
#[expect(
    clippy::needless_pass_by_value,
    reason = "taken by value to serve as `map_err(from_driver)`"
)]
pub fn from_driver(error: tokio_postgres::Error) -> Error {
    let Some(db) = error.as_db_error() else {
        // No answer from the server: the connection failed or closed.
        return unavailable(&chain(&error));
    };
    let code = db.code();
    let text = format!("{} ({})", db.message(), code.code());
    let class = &code.code()[..2];
    // 08: connection exceptions; 53: insufficient resources; 57: operator intervention
    // (a shutdown, a restart); 40001 and 40P01: a conflict a retry resolves.
    if matches!(class, "08" | "53" | "57")
        || *code == SqlState::T_R_SERIALIZATION_FAILURE
        || *code == SqlState::T_R_DEADLOCK_DETECTED
    {
        unavailable(&text)
    } else {
        Error::Failed(format!("database: {text}"))
    }
}

/// The pool's error: no connection could be had in time, or made.
pub(super) fn from_pool(error: deadpool_postgres::PoolError) -> Error {
    match error {
        deadpool_postgres::PoolError::Backend(error) => from_driver(error),
        other => unavailable(&format!("no connection to the database: {other}")),
    }
}

fn unavailable(reason: &str) -> Error {
    Error::Unavailable(Refusal::Storage(format!("database unavailable: {reason}")))
}

/// `error` and each of its sources, joined: the driver says "error performing TLS
/// handshake" and leaves the reason (a certificate for another name) to its source.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
