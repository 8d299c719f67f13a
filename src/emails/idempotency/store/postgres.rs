//! Idempotency records in PostgreSQL (`idempotency_keys`; see the schema's fifth
//! migration), one row per team and key, which every node reads and writes; the keys in
//! flight stay in this process's memory, as on RocksDB.
//!
//! What is cluster-wide and what is per node:
//!
//! - **Cluster-wide: the record, exactly once per key.** The row's primary key is the
//!   team and the key's digest, and the row is written in the transaction of the email
//!   it answers with. Of two nodes that answer one key at once, the first to commit
//!   wins; the second's write fails with a serialization failure (the schema's trigger
//!   `idempotency_keys_answered_once`), so its email is not written, its request is told
//!   to try again (`503`, SMTP `451`), and the retry is answered from the winner's row
//!   (the same answer, or a mismatch for another body).
//! - **Per node: the keys in flight.** A second request for a key already in flight on
//!   this node is told so (`409`, SMTP `451`) without waiting for a commit; one on
//!   another node is not, and runs until the row refuses it as above. Sharing the keys
//!   in flight (a lease in Redis) is the several-nodes issue's.
//!
//! Each write of a row gives it an id of its own, so the expiry, which deletes by id,
//! never deletes a record written again after it read the row. The rows are their own
//! expiry queue, by `created_at` ([`RowQueue`]): there is nothing to backfill.

use std::sync::Arc;

use herald_queue::{Due, Id, IdGenerator, SharedClock, Timestamp};
use tokio_postgres::Row;

use super::in_flight::KeysInFlight;
use super::{IdempotencyStore, SWEEP_BATCH};
use crate::emails::idempotency::record::{Answer, IdempotencyKey, IdempotencyRecord, RETENTION};
use crate::storage::due::DueQueue;
use crate::storage::postgres::due::{RowQueue, row_id};
use crate::storage::postgres::{Postgres, Statement, Value, from_driver, time, timestamp};
use crate::storage::{Change, Error};

/// Records deleted per pass of `erase_team`: a row is a few hundred bytes, so a pass is
/// a transaction of a few megabytes.
const ERASE_BATCH: i64 = 10_000;

/// Writes a key's record, replacing the one it had. The trigger refuses to replace a row
/// another process wrote that still answers (see the module's notes); run again, the
/// statement writes the same row, id and all. Its values are [`values`].
pub(super) const UPSERT: &str = "INSERT INTO idempotency_keys (team_id, key_digest, id, writer, body_sha256,
        email_id, status, response, created_at, answers_until)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
    ON CONFLICT (team_id, key_digest) DO UPDATE SET id = EXCLUDED.id, writer = EXCLUDED.writer,
        body_sha256 = EXCLUDED.body_sha256, email_id = EXCLUDED.email_id, status = EXCLUDED.status,
        response = EXCLUDED.response, created_at = EXCLUDED.created_at,
        answers_until = EXCLUDED.answers_until";

/// Idempotency in PostgreSQL: records in a table every node shares, keys in flight in
/// this process.
#[derive(Debug)]
pub struct PostgresIdempotency {
    db: Postgres,
    clock: SharedClock,
    in_flight: KeysInFlight,
    /// This process's id in the rows it writes (`writer`): the one writer whose rows it
    /// may replace while they still answer, its own keys in flight keeping its requests
    /// for a key apart.
    writer: uuid::Uuid,
    /// The ids of the rows' writes.
    ids: IdGenerator,
}

impl PostgresIdempotency {
    /// Idempotency records in `db`, whose schema is migrated; retention goes by `clock`.
    pub fn new(db: Postgres, clock: SharedClock) -> PostgresIdempotency {
        let ids = IdGenerator::default();
        let writer = ids.next(clock.now()).uuid();
        PostgresIdempotency {
            db,
            clock,
            in_flight: KeysInFlight::default(),
            writer,
            ids,
        }
    }

    fn queue(&self) -> RowQueue {
        RowQueue::new(&self.db, self.clock.clone(), "idempotency_keys", "created_at")
    }
}

/// The values of [`UPSERT`]: `record` under `key`, as the write `id` of the process
/// `writer`.
pub(super) fn values(key: &IdempotencyKey, record: &IdempotencyRecord, id: Id, writer: uuid::Uuid) -> Vec<Value> {
    let (email_id, status, response) = match &record.answer {
        Answer::Smtp { email_id } => (Some(email_id.uuid()), None, None),
        Answer::Http { status, response } => (None, Some(i32::from(*status)), Some(response.clone())),
    };
    vec![
        Box::new(key.team_id.uuid()),
        Box::new(key.digest.to_vec()),
        Box::new(id.uuid()),
        Box::new(writer),
        Box::new(record.body_sha256.clone()),
        Box::new(email_id),
        Box::new(status),
        Box::new(response),
        Box::new(time(record.created_at)),
        Box::new(time(record.created_at.saturating_add(RETENTION))),
    ]
}

/// The record of `row` (`body_sha256, email_id, status, response, created_at`).
fn record(row: &Row) -> Result<IdempotencyRecord, Error> {
    let corrupt = |reason: &str| Error::Corrupt {
        table: "idempotency_keys",
        reason: reason.into(),
    };
    let answer = match (
        row.get::<_, Option<uuid::Uuid>>(1),
        row.get::<_, Option<i32>>(2),
        row.get::<_, Option<String>>(3),
    ) {
        (Some(email_id), None, None) => Answer::Smtp {
            email_id: Id::from(email_id),
        },
        (None, Some(status), Some(response)) => Answer::Http {
            status: u16::try_from(status).map_err(|_| corrupt(&format!("status {status}")))?,
            response,
        },
        _ => return Err(corrupt("an answer neither an email nor a status and body")),
    };
    Ok(IdempotencyRecord {
        body_sha256: row.get(0),
        answer,
        created_at: timestamp(row.get(4)),
    })
}

/// The key of `row` (`id, team_id, key_digest`); the schema keeps digests 32 bytes long.
fn key_of(row: &Row) -> Option<IdempotencyKey> {
    let digest: [u8; 32] = row.get::<_, &[u8]>(2).try_into().ok()?;
    Some(IdempotencyKey {
        team_id: Id::from(row.get::<_, uuid::Uuid>(1)),
        digest,
    })
}

impl IdempotencyStore for PostgresIdempotency {
    fn hold(&self, key: &IdempotencyKey) -> bool {
        self.in_flight.hold(key)
    }

    fn release(&self, key: &IdempotencyKey) {
        self.in_flight.release(key);
    }

    fn get(&self, key: &IdempotencyKey) -> Result<Option<IdempotencyRecord>, Error> {
        self.db.run(async |client| {
            let row = client
                .query_opt(
                    "SELECT body_sha256, email_id, status, response, created_at FROM idempotency_keys
                     WHERE team_id = $1 AND key_digest = $2",
                    &[&key.team_id.uuid(), &key.digest.as_slice()],
                )
                .await
                .map_err(from_driver)?;
            row.as_ref().map(record).transpose()
        })
    }

    fn stage(&self, change: &mut Change, key: &IdempotencyKey, record: &IdempotencyRecord) -> Result<(), Error> {
        let values = values(key, record, self.ids.next(record.created_at), self.writer);
        change.stage_shared(Statement::new(&self.db, UPSERT, values));
        Ok(())
    }

    fn expire(&self, due: &[Due]) -> Result<usize, Error> {
        let ids: Vec<uuid::Uuid> = due.iter().filter_map(|entry| row_id(&entry.key)).collect();
        if ids.is_empty() {
            return Ok(0);
        }
        // Held from the read until the delete is committed: a request for one of these
        // keys meanwhile is told it is in flight, rather than answered from a record
        // about to go. Another node's requests delete nothing of theirs: a row they
        // write has an id of its own.
        let mut held = self.in_flight.holding();
        let deleted = self.db.run(async |client| {
            let rows = client
                .query(
                    "SELECT id, team_id, key_digest FROM idempotency_keys WHERE id = ANY($1)",
                    &[&ids],
                )
                .await
                .map_err(from_driver)?;
            let free: Vec<uuid::Uuid> = rows
                .iter()
                .filter(|row| key_of(row).is_none_or(|key| held.hold(key)))
                .map(|row| row.get(0))
                .collect();
            client
                .execute("DELETE FROM idempotency_keys WHERE id = ANY($1)", &[&free])
                .await
                .map_err(from_driver)
        })?;
        drop(held);
        Ok(usize::try_from(deleted).unwrap_or(usize::MAX))
    }

    fn sweep(&self, now: Timestamp) -> Result<usize, Error> {
        let horizon = Timestamp::from_millis(
            now.as_millis()
                .saturating_sub(u64::try_from(RETENTION.as_millis()).unwrap_or(u64::MAX)),
        );
        let queue = self.queue();
        let mut deleted = 0;
        let mut after: Option<Due> = None;
        loop {
            let page = queue.due(horizon, after.as_ref(), SWEEP_BATCH)?;
            deleted += self.expire(&page)?;
            if page.len() < SWEEP_BATCH {
                return Ok(deleted);
            }
            after = page.last().cloned();
        }
    }

    fn expiry_queue(&self) -> Arc<dyn DueQueue> {
        Arc::new(self.queue())
    }

    fn backfill(&self, _now: Timestamp) -> Result<usize, Error> {
        // The rows are the queue: every record has been in it since it was written.
        Ok(0)
    }

    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        self.db.run(async |client| {
            // One more is picked than is deleted, to tell whether any is left without
            // another pass. A statement's data-modifying WITH runs whether or not the
            // rest reads it.
            let row = client
                .query_one(
                    "WITH picked AS (
                        SELECT key_digest FROM idempotency_keys WHERE team_id = $1
                        ORDER BY key_digest LIMIT $2::bigint + 1
                     ), deleted AS (
                        DELETE FROM idempotency_keys WHERE team_id = $1
                        AND key_digest IN (SELECT key_digest FROM picked ORDER BY key_digest LIMIT $2)
                     )
                     SELECT count(*) > $2 FROM picked",
                    &[&team_id.uuid(), &ERASE_BATCH],
                )
                .await
                .map_err(from_driver)?;
            Ok(row.get(0))
        })
    }
}
