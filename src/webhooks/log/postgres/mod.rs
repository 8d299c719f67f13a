//! The webhook log with its messages and attempts in PostgreSQL (`webhook_messages`,
//! `webhook_attempts`; see the schema's eighth migration), for any node to list and send,
//! and the event outbox in the node's RocksDB, where it is written in the same batch as
//! the change an event reports (the storage map's "events not yet shipped").
//!
//! Writes of messages and attempts are staged into a [`Change`] as statements, committed
//! with it. The dispatcher's queue is a column of the messages' rows
//! ([`queue::KeyedRows::due`]), the retention's their own times ([`retention`]).

mod queue;
mod retention;
pub(super) mod rows;

use std::sync::Arc;

use futures_util::future::try_join_all;
use herald_queue::{Batch, Id, Store, Timestamp};
use tokio_postgres::types::ToSql;

use self::queue::{KeyedRows, row_ids};
use self::rows::{
    ATTEMPT_COLUMNS, INSERT_ATTEMPT, INSERT_MESSAGE, MESSAGE_COLUMNS, WRITE_MESSAGE, attempt, attempt_values, message,
    message_values,
};
use super::{Committing, WebhookLog, outbox, stage_event, take_events};
use crate::events::Event;
use crate::storage::due::DueQueue;
use crate::storage::expiry::Sweep;
use crate::storage::page::PageRequest;
use crate::storage::postgres::{Postgres, Statement, Value, from_driver, page_of, page_params, page_sql};
use crate::storage::{Change, Error};
use crate::webhooks::message::{WebhookAttempt, WebhookMessage};

/// Messages, then attempts, deleted per statement when a team is erased: a pass holds
/// the tables' locks on that many rows, and a large team's log is erased over passes.
const ERASE_BATCH: i64 = 500;

/// The webhook log: its outbox in the node's RocksDB, its messages and attempts in
/// PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresWebhookLog {
    db: Postgres,
    node: Store,
}

impl PostgresWebhookLog {
    /// The log in `db`, whose schema is migrated; `node` is the node's own store (its
    /// outbox, and the clock the queues go by).
    pub fn new(db: Postgres, node: Store) -> PostgresWebhookLog {
        PostgresWebhookLog { db, node }
    }

    fn stage(&self, change: &mut Change, sql: &'static str, values: Vec<Value>) {
        change.stage_shared(Statement::new(&self.db, sql, values));
    }
}

impl WebhookLog for PostgresWebhookLog {
    fn stage_event(&self, change: &mut Change, event: &Event) -> Result<(), Error> {
        stage_event(change.batch(), event)
    }

    fn outbox(&self, after: Option<Id>, limit: usize) -> Result<Vec<Event>, Error> {
        outbox(&self.node, after, limit)
    }

    /// Writes the messages in one transaction, then takes the events out of the outbox:
    /// two durable writes, in that order. A failure between them leaves the events to be
    /// fanned out again, and their messages, written already, are then left as they are
    /// (whatever became of them since): an event is never lost nor its messages made
    /// twice. The other order would lose the events of a failure between the writes.
    fn fan_out(&self, events: &[Event], messages: &[WebhookMessage]) -> Result<(), Error> {
        if !messages.is_empty() {
            let values: Vec<Vec<Value>> = messages.iter().map(message_values).collect();
            self.db.run(async |client| {
                let transaction = client.transaction().await.map_err(from_driver)?;
                let statement = &transaction.prepare(INSERT_MESSAGE).await.map_err(from_driver)?;
                // The rows are sent one after another without waiting for each answer
                // (the driver pipelines them), then awaited together.
                let sent = &transaction;
                try_join_all(values.iter().map(|values| async move {
                    let params: Vec<&(dyn ToSql + Sync)> = values.iter().map(|value| &**value as _).collect();
                    sent.execute(statement, &params).await
                }))
                .await
                .map_err(from_driver)?;
                transaction.commit().await.map_err(from_driver)
            })?;
        }
        let mut batch = Batch::new();
        take_events(&mut batch, events);
        Ok(self.node.commit(batch).wait()?)
    }

    fn due(&self, key: &[u8]) -> Result<Option<WebhookMessage>, Error> {
        let Some([team_id, webhook_id, event_id]) = row_ids(key) else {
            return Ok(None);
        };
        self.message(Id::from(team_id), Id::from(webhook_id), Id::from(event_id))
    }

    fn due_queue(&self) -> Arc<dyn DueQueue> {
        Arc::new(KeyedRows::due(&self.db, self.node.clock().clone()))
    }

    fn expiry(&self) -> Arc<dyn Sweep> {
        retention::sweep(&self.db, self.node.clock())
    }

    fn message(&self, team_id: Id, webhook_id: Id, event_id: Id) -> Result<Option<WebhookMessage>, Error> {
        self.db.run(async |client| {
            let sql = format!(
                "SELECT {MESSAGE_COLUMNS} FROM webhook_messages WHERE team_id = $1 AND webhook_id = $2 AND event_id = $3"
            );
            let row = client
                .query_opt(&sql, &[&team_id.uuid(), &webhook_id.uuid(), &event_id.uuid()])
                .await
                .map_err(from_driver)?;
            row.as_ref().map(message).transpose()
        })
    }

    fn messages(&self, team_id: Id, webhook_id: Id, page: &PageRequest) -> Result<(Vec<WebhookMessage>, bool), Error> {
        self.db.run(async |client| {
            // Pages go by a column named `id`; a message's is its event's. The planner
            // flattens the subquery, so the primary key still serves the page.
            let sql = format!(
                "SELECT {MESSAGE_COLUMNS} FROM (SELECT *, event_id AS id FROM webhook_messages) AS messages
                 WHERE team_id = $1 AND webhook_id = $2 AND {}",
                page_sql(page, 3, 4)
            );
            let (cursor, limit) = page_params(page);
            let rows = client
                .query(&sql, &[&team_id.uuid(), &webhook_id.uuid(), &cursor, &limit])
                .await
                .map_err(from_driver)?;
            let found = rows.iter().map(message).collect::<Result<Vec<_>, _>>()?;
            Ok(page_of(found, page))
        })
    }

    fn attempt(&self, team_id: Id, webhook_id: Id, id: Id) -> Result<Option<WebhookAttempt>, Error> {
        self.db.run(async |client| {
            let sql = format!(
                "SELECT {ATTEMPT_COLUMNS} FROM webhook_attempts WHERE team_id = $1 AND webhook_id = $2 AND id = $3"
            );
            let row = client
                .query_opt(&sql, &[&team_id.uuid(), &webhook_id.uuid(), &id.uuid()])
                .await
                .map_err(from_driver)?;
            row.as_ref().map(attempt).transpose()
        })
    }

    fn attempts(&self, team_id: Id, webhook_id: Id, page: &PageRequest) -> Result<(Vec<WebhookAttempt>, bool), Error> {
        self.db.run(async |client| {
            let sql = format!(
                "SELECT {ATTEMPT_COLUMNS} FROM webhook_attempts WHERE team_id = $1 AND webhook_id = $2 AND {}",
                page_sql(page, 3, 4)
            );
            let (cursor, limit) = page_params(page);
            let rows = client
                .query(&sql, &[&team_id.uuid(), &webhook_id.uuid(), &cursor, &limit])
                .await
                .map_err(from_driver)?;
            let found = rows.iter().map(attempt).collect::<Result<Vec<_>, _>>()?;
            Ok(page_of(found, page))
        })
    }

    /// The row keeps one due time (`due_at`), rewritten with the message: `was_due`,
    /// the entry RocksDB disarms, needs nothing of its own here.
    fn stage_message(
        &self,
        change: &mut Change,
        message: &WebhookMessage,
        _was_due: Option<Timestamp>,
        attempt: Option<&WebhookAttempt>,
    ) -> Result<(), Error> {
        if let Some(attempt) = attempt {
            let values = attempt_values(message.team_id, message.webhook_id, attempt);
            self.stage(change, INSERT_ATTEMPT, values);
        }
        self.stage(change, WRITE_MESSAGE, message_values(message));
        Ok(())
    }

    fn stage_removal(&self, change: &mut Change, message: &WebhookMessage, _was_due: Timestamp) {
        self.stage(
            change,
            "DELETE FROM webhook_messages WHERE team_id = $1 AND webhook_id = $2 AND event_id = $3",
            vec![
                Box::new(message.team_id.uuid()),
                Box::new(message.webhook_id.uuid()),
                Box::new(message.event_id.uuid()),
            ],
        );
    }

    fn commit(&self, change: Change) -> Result<(), Error> {
        Ok(self.node.commit(change.into_local()?).wait()?)
    }

    fn commit_async(&self, change: Change) -> Committing {
        // Statements for the database run before the node's write, here, on the calling
        // thread: a change is opaque outside storage, and this is how it is committed.
        let batch = match change.into_local() {
            Ok(batch) => batch,
            Err(error) => return Box::pin(async move { Err(error) }),
        };
        let commit = self.node.commit(batch);
        Box::pin(async move { Ok(commit.await?) })
    }

    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        self.db.run(async |client| {
            // One more row of each is picked than is deleted, to tell whether any is
            // left without another pass. A statement's data-modifying WITH runs whether
            // or not the rest reads it.
            let row = client
                .query_one(
                    "WITH messages AS (
                        SELECT webhook_id, event_id FROM webhook_messages WHERE team_id = $1
                        ORDER BY webhook_id, event_id LIMIT $2::bigint + 1
                     ), attempts AS (
                        SELECT webhook_id, id FROM webhook_attempts WHERE team_id = $1
                        ORDER BY webhook_id, id LIMIT $2::bigint + 1
                     ), messages_gone AS (
                        DELETE FROM webhook_messages WHERE team_id = $1 AND (webhook_id, event_id) IN
                            (SELECT webhook_id, event_id FROM messages ORDER BY webhook_id, event_id LIMIT $2)
                     ), attempts_gone AS (
                        DELETE FROM webhook_attempts WHERE id IN
                            (SELECT id FROM attempts ORDER BY webhook_id, id LIMIT $2)
                     )
                     SELECT (SELECT count(*) FROM messages) > $2 OR (SELECT count(*) FROM attempts) > $2",
                    &[&team_id.uuid(), &ERASE_BATCH],
                )
                .await
                .map_err(from_driver)?;
            Ok(row.get(0))
        })
    }
}
