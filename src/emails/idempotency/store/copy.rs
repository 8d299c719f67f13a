//! The node's idempotency records, copied into PostgreSQL by `herald store copy`
//! ([`crate::storage::copy`]), row for row as [`super::PostgresIdempotency`] writes them,
//! as the writes of one process of their own (the copy): a node started on the database
//! answers a key from its row until its retention is up, and does not replace it
//! meanwhile, as for a row another node wrote.
//!
//! The keys in flight are not copied: they are held in the memory of the process
//! answering them, and a stopped node has none. Nor is the expiry index: the rows are
//! their own queue there (by `created_at`), so a record past its retention is copied
//! and due at once, as it was on the node.

use herald_queue::{IdGenerator, Table, decode_record};

use super::postgres::{UPSERT, values};
use super::{IdempotencyRecord, key_of};
use crate::storage::Error;
use crate::storage::copy::Copy;
use crate::storage::postgres::Statement;

/// Copies every idempotency record. One that cannot be read is left behind, as the node's
/// expiry would delete it: no request could be answered from it.
pub fn copy(copy: &mut Copy<'_>) -> Result<(), Error> {
    copy.expect("idempotency keys");
    let ids = IdGenerator::default();
    let writer = ids.next(copy.from().now()).uuid();
    copy.each_raw(Table::IDEMPOTENCY, |copy, key, bytes| {
        let (Some(key), Ok(record)) = (key_of(key), decode_record::<IdempotencyRecord>(bytes)) else {
            tracing::warn!("not copying an idempotency record that cannot be read");
            return Ok(());
        };
        let values = values(&key, &record, ids.next(record.created_at), writer);
        copy.write("idempotency keys", Statement::new(copy.to(), UPSERT, values))
    })
}
