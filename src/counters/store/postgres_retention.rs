//! `[retention] metrics` on PostgreSQL: the counters' rows are their own queue, by
//! `retention_from` (a metric's day start, a quota period's or a source address's day's
//! end), indexed in each of the three tables. An entry is the rows of one table that
//! count from one time (every team's day of metrics, say), so a day brings a few entries
//! however many teams counted; expiring one deletes its rows in bounded batches.

use std::fmt;
use std::sync::Arc;

use herald_queue::{Due, SharedClock, Timestamp};

use crate::storage::due::DueQueue;
use crate::storage::expiry::Sweep;
use crate::storage::postgres::{Postgres, from_driver, time, timestamp};
use crate::storage::{Committing, Error};

/// The counters' tables, by the number that marks their entries.
const TABLES: [&str; 3] = ["metric_counts", "quota_counts", "source_counts"];

/// Rows deleted per statement: each batch commits on its own, so an expiry holds no
/// lock on more rows than this at once.
const DELETE_BATCH: i64 = 10_000;

/// The counters' retention: the queue of their times and the sweep that deletes them.
#[derive(Clone)]
pub(super) struct CounterDays {
    db: Postgres,
    clock: SharedClock,
}

impl fmt::Debug for CounterDays {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CounterDays").finish_non_exhaustive()
    }
}

impl CounterDays {
    /// The counters' retention in `db`, on `clock`.
    pub(super) fn new(db: &Postgres, clock: SharedClock) -> CounterDays {
        CounterDays { db: db.clone(), clock }
    }
}

/// The key of the entry of `table`'s rows that count from `at`: the table's number, then
/// the time (a key per entry, as the runner's claims need).
fn entry_key(table: u8, at: Timestamp) -> Vec<u8> {
    let mut key = vec![table];
    key.extend_from_slice(&at.as_millis().to_be_bytes());
    key
}

/// The table an entry's key names.
fn table_of(key: &[u8]) -> Option<&'static str> {
    TABLES.get(usize::from(*key.first()?)).copied()
}

impl DueQueue for CounterDays {
    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn due(&self, horizon: Timestamp, after: Option<&Due>, limit: usize) -> Result<Vec<Due>, Error> {
        let after_at = after.map(|due| time(due.at));
        let after_table = after.and_then(|due| due.key.first()).map(|n| i32::from(*n));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.db.run(async |client| {
            // The distinct times of rows due, read from each table's index: a table has
            // rows due only when their time has come, and they are deleted then.
            let rows = client
                .query(
                    "SELECT at, mark FROM (
                        SELECT DISTINCT retention_from AS at, 0 AS mark FROM metric_counts WHERE retention_from <= $1
                        UNION ALL
                        SELECT DISTINCT retention_from, 1 FROM quota_counts WHERE retention_from <= $1
                        UNION ALL
                        SELECT DISTINCT retention_from, 2 FROM source_counts WHERE retention_from <= $1
                     ) due
                     WHERE $2::timestamptz IS NULL OR (at, mark) > ($2, $3::integer)
                     ORDER BY at, mark LIMIT $4",
                    &[&time(horizon), &after_at, &after_table, &limit],
                )
                .await
                .map_err(from_driver)?;
            Ok(rows
                .iter()
                .map(|row| {
                    let at = timestamp(row.get(0));
                    let mark = u8::try_from(row.get::<_, i32>(1)).unwrap_or(u8::MAX);
                    Due::new(at, entry_key(mark, at))
                })
                .collect())
        })
    }

    fn next_after(&self, horizon: Timestamp) -> Result<Option<Timestamp>, Error> {
        self.db.run(async |client| {
            let row = client
                .query_one(
                    "SELECT least(
                        (SELECT min(retention_from) FROM metric_counts WHERE retention_from > $1),
                        (SELECT min(retention_from) FROM quota_counts WHERE retention_from > $1),
                        (SELECT min(retention_from) FROM source_counts WHERE retention_from > $1))",
                    &[&time(horizon)],
                )
                .await
                .map_err(from_driver)?;
            Ok(row.get::<_, Option<std::time::SystemTime>>(0).map(timestamp))
        })
    }

    fn disarm(&self, _due: &Due) -> Committing {
        // The entry is its rows: one that names nothing is gone already.
        Box::pin(async { Ok(()) })
    }
}

impl Sweep for CounterDays {
    fn kind(&self) -> &'static str {
        "metrics"
    }

    fn queue(&self) -> Arc<dyn DueQueue> {
        Arc::new(self.clone())
    }

    /// Deletes the rows of each entry, a batch per statement (not one write: an entry
    /// cut short keeps the rest of its rows, which are due again at once).
    fn expire(&self, due: &[&Due]) -> Result<usize, Error> {
        for entry in due {
            let Some(table) = table_of(&entry.key) else {
                continue;
            };
            let sql = format!(
                "DELETE FROM {table} WHERE retention_from = $1 AND ctid = ANY(ARRAY(
                    SELECT ctid FROM {table} WHERE retention_from = $1 LIMIT $2))"
            );
            let at = time(entry.at);
            self.db.run(async |client| {
                loop {
                    let deleted = client.execute(&sql, &[&at, &DELETE_BATCH]).await.map_err(from_driver)?;
                    if deleted < u64::try_from(DELETE_BATCH).unwrap_or(u64::MAX) {
                        return Ok(());
                    }
                }
            })?;
        }
        metrics::counter!("herald_expired_total", "kind" => "metrics").increment(due.len() as u64);
        Ok(due.len())
    }
}
