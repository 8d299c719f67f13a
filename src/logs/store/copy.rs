//! The node's request logs, copied into PostgreSQL by `herald store copy`
//! ([`crate::storage::copy`]), row for row as [`super::PostgresRequestLogs`] writes them.
//! Their expiry index is not copied: the rows are their own queue there, by
//! `created_at`, the time the node's entries were armed at.

use super::postgres::{INSERT, values};
use crate::logs::model::RequestLog;
use crate::storage::Error;
use crate::storage::copy::Copy;
use crate::storage::postgres::Statement;

/// Copies every request log.
pub fn copy(copy: &mut Copy<'_>) -> Result<(), Error> {
    copy.expect("request logs");
    copy.each::<RequestLog>(|copy, _, log| copy.write("request logs", Statement::new(copy.to(), INSERT, values(&log))))
}
