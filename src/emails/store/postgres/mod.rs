//! Emails in PostgreSQL (`emails`, `email_events`, `email_attempts`; see the schema's
//! sixth migration): any node shows any email, also after the node that sent it is gone.
//! The message bytes stay in the spool of the node that accepted the email; what this
//! store erases of them (the bodies kept for an email's content) goes through that
//! node's store, in the change's own batch.
//!
//! Every write is staged into a [`Change`] as statements, committed with it, with the
//! counts of a broadcast whose email enters or changes status (the broadcasts' store's
//! `stage_count`).

pub(super) mod retention;
pub(super) mod rows;

use std::sync::Arc;
use std::time::Duration;

use herald_queue::{Id, Spool, Store, Timestamp};
use serde_json::Value;

use self::rows::{COLUMNS, Stored, attempts_of, record, status_of};
use super::EmailStore;
use crate::broadcasts::store::postgres::stage_count;
use crate::emails::record::{EmailEvent, EmailRecord, EmailStatus};
use crate::emails::state::EmailState;
use crate::storage::expiry::Sweep;
use crate::storage::page::PageRequest;
use crate::storage::postgres::{
    Postgres, Statement, Value as SqlValue, enum_text, from_driver, page_of, page_params, page_sql, text_enum, time,
    timestamp,
};
use crate::storage::{Change, Error};

/// Emails in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresEmails {
    db: Postgres,
    node: Store,
}

impl PostgresEmails {
    /// Emails in `db`, whose schema is migrated; `node` is the node's own store (its spool
    /// and the clock and ids the timeline's events are made with).
    pub fn new(db: Postgres, node: Store) -> PostgresEmails {
        PostgresEmails { db, node }
    }

    fn stage(&self, change: &mut Change, sql: &'static str, values: Vec<SqlValue>) {
        change.stage_shared(Statement::new(&self.db, sql, values));
    }

    /// Stages the timeline event of `email_id`.
    fn append(&self, change: &mut Change, email_id: Id, kind: EmailState, data: Value, at: Timestamp) {
        let event = EmailEvent {
            id: self.node.next_id(),
            email_id,
            kind,
            created_at: at,
            data,
        };
        self.stage(change, rows::INSERT_EVENT, rows::event_values(&event));
    }

    /// Stages the rewrite of `email_id`'s attempt log.
    fn stage_attempts(&self, change: &mut Change, status: &EmailStatus) {
        self.stage(
            change,
            "DELETE FROM email_attempts WHERE email_id = $1",
            vec![Box::new(status.id.uuid())],
        );
        for (position, attempt) in status.attempts.iter().enumerate() {
            self.stage(
                change,
                rows::INSERT_ATTEMPT,
                rows::attempt_values(status.id, position, attempt),
            );
        }
    }

    /// `found` with the attempt logs read for them.
    async fn with_attempts(client: &tokio_postgres::Client, mut found: Vec<Stored>) -> Result<Vec<Stored>, Error> {
        let ids: Vec<uuid::Uuid> = found.iter().map(|stored| stored.record.id.uuid()).collect();
        let mut attempts = attempts_of(client, &ids).await?;
        for stored in &mut found {
            stored.record.attempts = attempts.remove(&stored.record.id).unwrap_or_default();
        }
        Ok(found)
    }

    /// The email `id` of `team_id`, as read.
    fn stored(&self, team_id: Id, id: Id) -> Result<Option<Stored>, Error> {
        self.db.run(async |client| {
            let sql = format!("SELECT {COLUMNS} FROM emails WHERE team_id = $1 AND id = $2");
            let row = client
                .query_opt(&sql, &[&team_id.uuid(), &id.uuid()])
                .await
                .map_err(from_driver)?;
            let Some(row) = row else {
                return Ok(None);
            };
            let found = Self::with_attempts(client, vec![record(&row)?]).await?;
            Ok(found.into_iter().next())
        })
    }
}

/// The id bound of `before` (an id, or its first bytes: a time), padded to an id: ids
/// before it are the ones less than the padded bound.
fn bound(before: Option<&[u8]>) -> Option<uuid::Uuid> {
    before.map(|bytes| {
        let mut padded = [0_u8; 16];
        let used = bytes.len().min(16);
        padded[..used].copy_from_slice(&bytes[..used]);
        uuid::Uuid::from_bytes(padded)
    })
}

impl EmailStore for PostgresEmails {
    fn get(&self, team_id: Id, id: Id) -> Result<Option<EmailRecord>, Error> {
        Ok(self.stored(team_id, id)?.map(|stored| stored.record))
    }

    fn status(&self, team_id: Id, id: Id) -> Result<Option<EmailStatus>, Error> {
        Ok(self.stored(team_id, id)?.as_ref().map(status_of))
    }

    fn list(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<EmailRecord>, bool), Error> {
        self.db.run(async |client| {
            let sql = format!(
                "SELECT {COLUMNS} FROM emails WHERE team_id = $1 AND {}",
                page_sql(page, 2, 3)
            );
            let (cursor, limit) = page_params(page);
            let rows = client
                .query(&sql, &[&team_id.uuid(), &cursor, &limit])
                .await
                .map_err(from_driver)?;
            let found = rows.iter().map(record).collect::<Result<Vec<_>, _>>()?;
            let (found, more) = page_of(found, page);
            let found = Self::with_attempts(client, found).await?;
            Ok((found.into_iter().map(|stored| stored.record).collect(), more))
        })
    }

    fn statuses(&self, team_id: Id, before: Option<&[u8]>, limit: usize) -> Result<Vec<EmailStatus>, Error> {
        let bound = bound(before);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.db.run(async |client| {
            let sql = format!(
                "SELECT {COLUMNS} FROM emails WHERE team_id = $1 AND ($2::uuid IS NULL OR id < $2)
                 ORDER BY id DESC LIMIT $3"
            );
            let rows = client
                .query(&sql, &[&team_id.uuid(), &bound, &limit])
                .await
                .map_err(from_driver)?;
            // A row that cannot be read is skipped, as RocksDB's pages skip it.
            let found: Vec<Stored> = rows.iter().filter_map(|row| record(row).ok()).collect();
            let found = Self::with_attempts(client, found).await?;
            Ok(found.iter().map(status_of).collect())
        })
    }

    fn ids_in_state(
        &self,
        team_id: Id,
        state: EmailState,
        before: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<Id>, Error> {
        let bound = bound(before);
        let state = enum_text(&state);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.db.run(async |client| {
            let rows = client
                .query(
                    "SELECT id FROM emails WHERE team_id = $1 AND last_event = $2 AND ($3::uuid IS NULL OR id < $3)
                     ORDER BY id DESC LIMIT $4",
                    &[&team_id.uuid(), &state, &bound, &limit],
                )
                .await
                .map_err(from_driver)?;
            Ok(rows.iter().map(|row| Id::from(row.get::<_, uuid::Uuid>(0))).collect())
        })
    }

    fn timeline(&self, id: Id) -> Result<Vec<EmailEvent>, Error> {
        self.db.run(async |client| {
            let rows = client
                .query(
                    "SELECT id, email_id, kind, created_at, data FROM email_events WHERE email_id = $1 ORDER BY id",
                    &[&id.uuid()],
                )
                .await
                .map_err(from_driver)?;
            rows.iter()
                .map(|row| {
                    Ok(EmailEvent {
                        id: Id::from(row.get::<_, uuid::Uuid>(0)),
                        email_id: Id::from(row.get::<_, uuid::Uuid>(1)),
                        kind: text_enum("email_events", row.get(2))?,
                        created_at: timestamp(row.get(3)),
                        data: row.get(4),
                    })
                })
                .collect()
        })
    }

    fn create(&self, change: &mut Change, record: &EmailRecord, at: Timestamp) -> Result<(), Error> {
        self.stage(change, rows::INSERT, rows::create_values(record));
        if let Some(broadcast) = record.broadcast_id {
            stage_count(change, &self.db, record.team_id, broadcast, record.last_event, 1);
        }
        self.stage_attempts(change, &record.status());
        self.append(change, record.id, record.last_event, Value::Null, at);
        Ok(())
    }

    fn record_event(
        &self,
        change: &mut Change,
        status: &mut EmailStatus,
        kind: EmailState,
        data: Value,
        at: Timestamp,
    ) -> Result<bool, Error> {
        let before = status.last_event;
        let next = before.after(kind);
        let moved = next != status.last_event;
        status.last_event = next;
        if moved && let Some(broadcast) = status.broadcast_id {
            stage_count(change, &self.db, status.team_id, broadcast, before, -1);
            stage_count(change, &self.db, status.team_id, broadcast, next, 1);
        }
        if moved {
            self.stage(
                change,
                "UPDATE emails SET last_event = $2 WHERE id = $1",
                vec![Box::new(status.id.uuid()), Box::new(enum_text(&next))],
            );
        }
        self.append(change, status.id, kind, data, at);
        Ok(moved)
    }

    fn put_status(&self, change: &mut Change, status: &EmailStatus) -> Result<(), Error> {
        self.stage(change, rows::UPDATE_STATUS, rows::status_values(status));
        self.stage_attempts(change, status);
        Ok(())
    }

    fn put_record(&self, change: &mut Change, record: &EmailRecord) -> Result<(), Error> {
        self.stage(change, rows::UPDATE_RECORD, rows::record_values(record));
        Ok(())
    }

    fn erase_team(&self, change: &mut Change, team_id: Id, limit: usize) -> Result<Vec<Id>, Error> {
        let fetch = i64::try_from(limit).unwrap_or(i64::MAX);
        let ids: Vec<uuid::Uuid> = self.db.run(async |client| {
            let rows = client
                .query(
                    "SELECT id FROM emails WHERE team_id = $1 ORDER BY id LIMIT $2",
                    &[&team_id.uuid(), &fetch],
                )
                .await
                .map_err(from_driver)?;
            Ok(rows.iter().map(|row| row.get(0)).collect())
        })?;
        for id in &ids {
            // The bodies the spool kept for the content, unless the message is queued.
            Spool::forget(&self.node, Id::from(*id), change.batch())?;
        }
        self.stage(
            change,
            "DELETE FROM emails WHERE id = ANY($1)",
            vec![Box::new(ids.clone())],
        );
        Ok(ids.into_iter().map(Id::from).collect())
    }

    fn expiries(&self, emails: Option<Duration>, content: Option<Duration>) -> [Arc<dyn Sweep>; 2] {
        retention::sweeps(&self.db, &self.node, emails, content)
    }

    fn content_in_spool(&self) -> bool {
        false
    }

    fn arm_final(&self, change: &mut Change, _team_id: Id, id: Id, at: Timestamp) {
        self.stage(
            change,
            "UPDATE emails SET records_due_at = $2, content_due_at = $2 WHERE id = $1",
            vec![Box::new(id.uuid()), Box::new(time(at))],
        );
    }

    fn commit(&self, change: Change) -> Result<(), Error> {
        Ok(self.node.commit(change.into_local()?).wait()?)
    }
}
