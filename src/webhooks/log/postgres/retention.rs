//! `[retention] webhook_messages` on PostgreSQL: final messages from `finished_at`,
//! attempts from when they were made, in one queue (as RocksDB keeps them in one index)
//! and deleted together, a batch per transaction.

use std::sync::Arc;

use herald_queue::{Due, SharedClock, Timestamp};

use super::queue::KeyedRows;
use crate::storage::due::DueQueue;
use crate::storage::expiry::{Expiry, Sweep};
use crate::storage::postgres::{Postgres, from_driver, time};
use crate::storage::{Committing, Error};
use crate::webhooks::log::Messages;

/// The log's retention over `db`, on `clock`.
pub(super) fn sweep(db: &Postgres, clock: &SharedClock) -> Arc<dyn Sweep> {
    Arc::new(Retention {
        queue: Arc::new(Entries {
            messages: KeyedRows::finished(db, clock.clone()),
            attempts: KeyedRows::attempts(db, clock.clone()),
        }),
        db: db.clone(),
    })
}

/// Final messages and attempts as one queue, each page merged from the two tables' in
/// the order of RocksDB's index (time, then the tagged key).
#[derive(Debug)]
struct Entries {
    messages: KeyedRows,
    attempts: KeyedRows,
}

impl DueQueue for Entries {
    fn now(&self) -> Timestamp {
        self.messages.now()
    }

    fn due(&self, horizon: Timestamp, after: Option<&Due>, limit: usize) -> Result<Vec<Due>, Error> {
        // The first `limit` entries of the two are among the first `limit` of each.
        let mut entries = self.messages.due(horizon, after, limit)?;
        entries.extend(self.attempts.due(horizon, after, limit)?);
        entries.sort_by(|a, b| (a.at, &a.key).cmp(&(b.at, &b.key)));
        entries.truncate(limit);
        Ok(entries)
    }

    fn next_after(&self, horizon: Timestamp) -> Result<Option<Timestamp>, Error> {
        let messages = self.messages.next_after(horizon)?;
        let attempts = self.attempts.next_after(horizon)?;
        Ok(messages.into_iter().chain(attempts).min())
    }

    fn disarm(&self, _due: &Due) -> Committing {
        // The entry is the row: it leaves when the row is deleted, or stops being final.
        Box::pin(async { Ok(()) })
    }
}

/// Deletes the rows of due entries.
struct Retention {
    queue: Arc<Entries>,
    db: Postgres,
}

impl Sweep for Retention {
    fn kind(&self) -> &'static str {
        Messages::KIND
    }

    fn queue(&self) -> Arc<dyn DueQueue> {
        self.queue.clone()
    }

    fn expire(&self, due: &[&Due]) -> Result<usize, Error> {
        let (mut teams, mut webhooks, mut events, mut finished) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut attempts = Vec::new();
        for entry in due {
            if let Some([team, webhook, event]) = self.queue.messages.row_of(&entry.key) {
                teams.push(team);
                webhooks.push(webhook);
                events.push(event);
                finished.push(time(entry.at));
            } else if let Some([_, _, id]) = self.queue.attempts.row_of(&entry.key) {
                attempts.push(id);
            }
            // Any other key is none this queue answered: it has no row to delete.
        }
        self.db.run(async |client| {
            let transaction = client.transaction().await.map_err(from_driver)?;
            // A message replayed since its entry was read is pending again, or final at
            // another time: it stays, as on RocksDB.
            transaction
                .execute(
                    "DELETE FROM webhook_messages AS m
                     USING unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::timestamptz[])
                        AS gone (team_id, webhook_id, event_id, finished_at)
                     WHERE m.team_id = gone.team_id AND m.webhook_id = gone.webhook_id
                        AND m.event_id = gone.event_id AND m.finished_at = gone.finished_at
                        AND m.state <> 'pending'",
                    &[&teams, &webhooks, &events, &finished],
                )
                .await
                .map_err(from_driver)?;
            transaction
                .execute("DELETE FROM webhook_attempts WHERE id = ANY($1)", &[&attempts])
                .await
                .map_err(from_driver)?;
            transaction.commit().await.map_err(from_driver)
        })?;
        metrics::counter!("herald_expired_total", "kind" => Messages::KIND).increment(due.len() as u64);
        Ok(due.len())
    }
}
