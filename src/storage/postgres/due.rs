//! Rows waiting for a time, as a [`DueQueue`]: in PostgreSQL the queue is not an index
//! kept beside the records but the records themselves, by a time column with an index on
//! `(time, id)`. An entry names a row by its team and id (the key RocksDB's stores use,
//! 32 bytes), so the runner and the sweeps work on either backend unchanged.

use std::fmt;
use std::sync::Arc;

use herald_queue::{Due, Id, SharedClock, Timestamp};

use super::{Postgres, from_driver, time, timestamp};
use crate::storage::due::DueQueue;
use crate::storage::expiry::Sweep;
use crate::storage::{Committing, Error};

/// The rows of `table` by their `column` (a `timestamptz` with an index on it and `id`):
/// an entry per row whose column is set, due at that time.
pub struct RowQueue {
    db: Postgres,
    clock: SharedClock,
    table: &'static str,
    column: &'static str,
    /// Whether disarming an entry clears the column (a column kept for the queue alone,
    /// beside the record's own time) rather than finding the row gone already.
    clears: bool,
}

impl fmt::Debug for RowQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowQueue")
            .field("table", &self.table)
            .field("column", &self.column)
            .finish_non_exhaustive()
    }
}

impl RowQueue {
    /// The rows of `table` (with `team_id` and `id` columns) by `column`, on `clock`;
    /// an entry found to name nothing is gone with its row.
    pub fn new(db: &Postgres, clock: SharedClock, table: &'static str, column: &'static str) -> RowQueue {
        RowQueue {
            db: db.clone(),
            clock,
            table,
            column,
            clears: false,
        }
    }

    /// As [`RowQueue::new`], over a nullable `column` kept for the queue: disarming an
    /// entry sets it to null when it still holds the entry's time.
    pub fn clearing(db: &Postgres, clock: SharedClock, table: &'static str, column: &'static str) -> RowQueue {
        RowQueue {
            clears: true,
            ..RowQueue::new(db, clock, table, column)
        }
    }
}

/// The key of the row `id` of `team_id`: team id then id.
pub fn row_key(team_id: uuid::Uuid, id: uuid::Uuid) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), id.as_bytes()].concat()
}

/// The id a [`row_key`] ends with.
pub fn row_id(key: &[u8]) -> Option<uuid::Uuid> {
    key.get(16..32).and_then(Id::from_slice).map(|id| id.uuid())
}

impl DueQueue for RowQueue {
    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn due(&self, horizon: Timestamp, after: Option<&Due>, limit: usize) -> Result<Vec<Due>, Error> {
        let (table, column) = (self.table, self.column);
        let after_at = after.map(|due| time(due.at));
        let after_id = after.and_then(|due| row_id(&due.key));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.db.run(async |client| {
            let sql = format!(
                "SELECT {column}, team_id, id FROM {table}
                 WHERE {column} <= $1 AND ($2::timestamptz IS NULL OR ({column}, id) > ($2, $3))
                 ORDER BY {column}, id LIMIT $4"
            );
            let rows = client
                .query(&sql, &[&time(horizon), &after_at, &after_id, &limit])
                .await
                .map_err(from_driver)?;
            Ok(rows
                .iter()
                .map(|row| Due::new(timestamp(row.get(0)), row_key(row.get(1), row.get(2))))
                .collect())
        })
    }

    fn next_after(&self, horizon: Timestamp) -> Result<Option<Timestamp>, Error> {
        let (table, column) = (self.table, self.column);
        self.db.run(async |client| {
            let sql = format!("SELECT min({column}) FROM {table} WHERE {column} > $1");
            let row = client.query_one(&sql, &[&time(horizon)]).await.map_err(from_driver)?;
            Ok(row.get::<_, Option<std::time::SystemTime>>(0).map(timestamp))
        })
    }

    fn disarm(&self, due: &Due) -> Committing {
        let Some(id) = row_id(&due.key).filter(|_| self.clears) else {
            // The entry is the row: one that names nothing is gone already.
            return Box::pin(async { Ok(()) });
        };
        let sql = format!(
            "UPDATE {} SET {column} = NULL WHERE id = $1 AND {column} = $2",
            self.table,
            column = self.column
        );
        let at = time(due.at);
        self.db.submit(move |client| async move {
            client.execute(&sql, &[&id, &at]).await.map_err(from_driver)?;
            Ok(())
        })
    }
}

/// A retention that deletes the rows of a table whose time is up.
pub struct DeleteRows {
    kind: &'static str,
    queue: Arc<RowQueue>,
}

impl DeleteRows {
    /// Expires the rows of `queue`'s table, named `kind` in logs and metrics.
    pub fn new(kind: &'static str, queue: RowQueue) -> DeleteRows {
        DeleteRows {
            kind,
            queue: Arc::new(queue),
        }
    }
}

impl Sweep for DeleteRows {
    fn kind(&self) -> &'static str {
        self.kind
    }

    fn queue(&self) -> Arc<dyn DueQueue> {
        self.queue.clone()
    }

    fn expire(&self, due: &[&Due]) -> Result<usize, Error> {
        let ids: Vec<uuid::Uuid> = due.iter().filter_map(|due| row_id(&due.key)).collect();
        let table = self.queue.table;
        self.queue.db.run(async |client| {
            let sql = format!("DELETE FROM {table} WHERE id = ANY($1)");
            client.execute(&sql, &[&ids]).await.map_err(from_driver)?;
            Ok(())
        })?;
        metrics::counter!("herald_expired_total", "kind" => self.kind).increment(due.len() as u64);
        Ok(due.len())
    }
}
