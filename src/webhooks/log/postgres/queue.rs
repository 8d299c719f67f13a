//! The log's rows as due queues. In PostgreSQL a queue is not an index kept beside the
//! records but the rows themselves, by a time column with an index on it and the row's
//! key. An entry names its row by the key RocksDB keeps it under (team, webhook, then the
//! event's or the attempt's id: 48 bytes), after the tag byte of RocksDB's expiry index
//! in the retention's queues, so the dispatcher (which reads the webhook from a due key)
//! and the runners work on either backend unchanged.
//!
//! [`crate::storage::postgres::due::RowQueue`] does this for rows keyed by team and id;
//! these rows have a third id, hence a sibling.

use std::cmp::Ordering;
use std::fmt;
use std::time::SystemTime;

use herald_queue::{Due, Id, SharedClock, Timestamp};
use tokio_postgres::types::ToSql;

use crate::storage::due::DueQueue;
use crate::storage::postgres::{Postgres, Value, from_driver, time, timestamp};
use crate::storage::{Committing, Error};
use crate::webhooks::log::{ATTEMPT, MESSAGE, message_key, tagged};

/// The ids a row is keyed by: team, webhook, and the event's or the attempt's.
pub(super) type RowIds = [uuid::Uuid; 3];

/// The row `key` names (team, webhook and third id, 48 bytes), if it is one.
pub(super) fn row_ids(key: &[u8]) -> Option<RowIds> {
    if key.len() != 48 {
        return None;
    }
    let id = |at: usize| Id::from_slice(&key[at..at + 16]).map(|id| id.uuid());
    Some([id(0)?, id(16)?, id(32)?])
}

/// The rows of one table by one time column, keyed as RocksDB keys them.
pub(super) struct KeyedRows {
    db: Postgres,
    clock: SharedClock,
    /// The byte keys start with, when the queue shares RocksDB's index with another.
    tag: Option<u8>,
    table: &'static str,
    /// The column of the row's third id.
    id: &'static str,
    /// The time column: a row is in the queue while it is set (and `filter` holds).
    column: &'static str,
    /// What else a row meets to be in the queue, as SQL that follows a condition.
    filter: &'static str,
    /// Whether disarming an entry clears `column` (kept for the queue alone) rather than
    /// finding the row gone already.
    clears: bool,
}

impl fmt::Debug for KeyedRows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedRows")
            .field("table", &self.table)
            .field("column", &self.column)
            .finish_non_exhaustive()
    }
}

/// Where a page of a queue starts, in the queue's own columns.
enum Start {
    /// At the earliest entry.
    Earliest,
    /// At the entries at or after a time.
    From(SystemTime),
    /// At the entries after a time.
    Past(SystemTime),
    /// After the entry of a row at a time.
    After(SystemTime, RowIds),
}

impl KeyedRows {
    /// Pending messages by their next attempt: the dispatcher's queue. A dropped entry
    /// clears `due_at`, the message keeping its own `next_attempt`.
    pub(super) fn due(db: &Postgres, clock: SharedClock) -> KeyedRows {
        KeyedRows {
            db: db.clone(),
            clock,
            tag: None,
            table: "webhook_messages",
            id: "event_id",
            column: "due_at",
            filter: "",
            clears: true,
        }
    }

    /// Final messages by the time they became final, for retention. A message replayed
    /// since is pending again, and out of the queue.
    pub(super) fn finished(db: &Postgres, clock: SharedClock) -> KeyedRows {
        KeyedRows {
            tag: Some(MESSAGE),
            column: "finished_at",
            filter: "AND state <> 'pending'",
            clears: false,
            ..KeyedRows::due(db, clock)
        }
    }

    /// Attempts by the time they were made, for retention.
    pub(super) fn attempts(db: &Postgres, clock: SharedClock) -> KeyedRows {
        KeyedRows {
            db: db.clone(),
            clock,
            tag: Some(ATTEMPT),
            table: "webhook_attempts",
            id: "id",
            column: "at",
            filter: "",
            clears: false,
        }
    }

    /// The row an entry's key names, if it is one of this queue's.
    pub(super) fn row_of(&self, key: &[u8]) -> Option<RowIds> {
        match self.tag {
            Some(tag) => row_ids(key.strip_prefix(&[tag])?),
            None => row_ids(key),
        }
    }

    /// The key of the entry of the row `ids`.
    fn key_of(&self, [team, webhook, id]: RowIds) -> Vec<u8> {
        let key = message_key(Id::from(team), Id::from(webhook), Id::from(id));
        match self.tag {
            Some(tag) => tagged(tag, &key),
            None => key,
        }
    }

    /// Where a page after `after` starts. Entries sort by time then key bytes, as in
    /// RocksDB; a key of another shape (a bare time sorts before every entry at it)
    /// starts at the time, which at worst shows an entry again.
    fn start(&self, after: Option<&Due>) -> Start {
        let Some(after) = after else {
            return Start::Earliest;
        };
        let at = time(after.at);
        let tag = self.tag.as_slice();
        let shared = after.key.len().min(tag.len());
        match after.key[..shared].cmp(&tag[..shared]) {
            Ordering::Less => Start::From(at),
            Ordering::Greater => Start::Past(at),
            Ordering::Equal => self
                .row_of(&after.key)
                .map_or(Start::From(at), |row| Start::After(at, row)),
        }
    }
}

impl DueQueue for KeyedRows {
    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn due(&self, horizon: Timestamp, after: Option<&Due>, limit: usize) -> Result<Vec<Due>, Error> {
        let KeyedRows {
            table,
            id,
            column,
            filter,
            ..
        } = self;
        let mut values: Vec<Value> = vec![
            Box::new(time(horizon)),
            Box::new(i64::try_from(limit).unwrap_or(i64::MAX)),
        ];
        let cursor = match self.start(after) {
            Start::Earliest => String::new(),
            Start::From(at) => {
                values.push(Box::new(at));
                format!("AND {column} >= $3")
            }
            Start::Past(at) => {
                values.push(Box::new(at));
                format!("AND {column} > $3")
            }
            Start::After(at, [team, webhook, row]) => {
                values.extend([Box::new(at) as Value, Box::new(team), Box::new(webhook), Box::new(row)]);
                format!("AND ({column}, team_id, webhook_id, {id}) > ($3, $4, $5, $6)")
            }
        };
        let sql = format!(
            "SELECT {column}, team_id, webhook_id, {id} FROM {table}
             WHERE {column} <= $1 {filter} {cursor}
             ORDER BY {column}, team_id, webhook_id, {id} LIMIT $2"
        );
        self.db.run(async |client| {
            let params: Vec<&(dyn ToSql + Sync)> = values.iter().map(|value| &**value as _).collect();
            let rows = client.query(&sql, &params).await.map_err(from_driver)?;
            Ok(rows
                .iter()
                .map(|row| Due::new(timestamp(row.get(0)), self.key_of([row.get(1), row.get(2), row.get(3)])))
                .collect())
        })
    }

    fn next_after(&self, horizon: Timestamp) -> Result<Option<Timestamp>, Error> {
        let KeyedRows {
            table, column, filter, ..
        } = self;
        self.db.run(async |client| {
            let sql = format!("SELECT min({column}) FROM {table} WHERE {column} > $1 {filter}");
            let row = client.query_one(&sql, &[&time(horizon)]).await.map_err(from_driver)?;
            Ok(row.get::<_, Option<SystemTime>>(0).map(timestamp))
        })
    }

    fn disarm(&self, due: &Due) -> Committing {
        let Some([team, webhook, row]) = self.row_of(&due.key).filter(|_| self.clears) else {
            // The entry is the row: one that names nothing is gone already.
            return Box::pin(async { Ok(()) });
        };
        let sql = format!(
            "UPDATE {table} SET {column} = NULL WHERE team_id = $1 AND webhook_id = $2 AND {id} = $3 AND {column} = $4",
            table = self.table,
            column = self.column,
            id = self.id
        );
        let at = time(due.at);
        self.db.submit(move |client| async move {
            client
                .execute(&sql, &[&team, &webhook, &row, &at])
                .await
                .map_err(from_driver)?;
            Ok(())
        })
    }
}
