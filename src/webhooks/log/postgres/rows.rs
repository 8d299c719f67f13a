//! A message's row and an attempt's: the statements that write them and the columns
//! they are read from. Shared by [`super::PostgresWebhookLog`] and the copy of a node's
//! log ([`super::super::copy`]), so that both write the same rows.

use std::time::SystemTime;

use herald_queue::Id;
use tokio_postgres::Row;

use crate::storage::Error;
use crate::storage::postgres::{Value, enum_text, text_enum, time, timestamp};
use crate::webhooks::message::{MessageState, WebhookAttempt, WebhookMessage};

/// The messages' table, for corrupt-record errors.
const MESSAGES: &str = "webhook_messages";

/// The attempts' table, for corrupt-record errors.
const ATTEMPTS: &str = "webhook_attempts";

/// The columns a message is read from, in the order [`message`] reads them.
pub(super) const MESSAGE_COLUMNS: &str =
    "team_id, webhook_id, event_id, kind, body::text, attempts, state, next_attempt, attempt_ids, finished_at";

/// Writes a new message ([`message_values`]) and leaves one already there as it is: a
/// fan-out run again after a crash changes nothing, not even a message that moved on.
pub(super) const INSERT_MESSAGE: &str = "INSERT INTO webhook_messages (team_id, webhook_id, event_id, kind, body,
        attempts, state, next_attempt, attempt_ids, finished_at, due_at)
    VALUES ($1, $2, $3, $4, $5::text::json, $6, $7, $8, $9, $10, $11)
    ON CONFLICT (team_id, webhook_id, event_id) DO NOTHING";

/// Writes a message as it is now ([`message_values`]), new or not.
pub(in crate::webhooks::log) const WRITE_MESSAGE: &str =
    "INSERT INTO webhook_messages (team_id, webhook_id, event_id, kind, body,
        attempts, state, next_attempt, attempt_ids, finished_at, due_at)
    VALUES ($1, $2, $3, $4, $5::text::json, $6, $7, $8, $9, $10, $11)
    ON CONFLICT (team_id, webhook_id, event_id) DO UPDATE SET kind = EXCLUDED.kind, body = EXCLUDED.body,
        attempts = EXCLUDED.attempts, state = EXCLUDED.state, next_attempt = EXCLUDED.next_attempt,
        attempt_ids = EXCLUDED.attempt_ids, finished_at = EXCLUDED.finished_at, due_at = EXCLUDED.due_at";

/// The columns an attempt is read from, in the order [`attempt`] reads them.
pub(super) const ATTEMPT_COLUMNS: &str = "id, event_id, kind, attempt, status, error, response, latency_ms, at";

/// Writes an attempt ([`attempt_values`]); an attempt never changes, so one written
/// already stays.
pub(in crate::webhooks::log) const INSERT_ATTEMPT: &str =
    "INSERT INTO webhook_attempts (id, team_id, webhook_id, event_id, kind,
        attempt, status, error, response, latency_ms, at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
    ON CONFLICT (id) DO NOTHING";

/// The values of [`INSERT_MESSAGE`] and [`WRITE_MESSAGE`] for `message`: due at its next
/// attempt while pending, out of the dispatcher's queue once final.
pub(in crate::webhooks::log) fn message_values(message: &WebhookMessage) -> Vec<Value> {
    let due_at = (message.state == MessageState::Pending).then(|| time(message.next_attempt));
    vec![
        Box::new(message.team_id.uuid()),
        Box::new(message.webhook_id.uuid()),
        Box::new(message.event_id.uuid()),
        Box::new(enum_text(&message.kind)),
        Box::new(message.body.clone()),
        Box::new(count(message.attempts)),
        Box::new(enum_text(&message.state)),
        Box::new(time(message.next_attempt)),
        Box::new(message.attempt_ids.iter().map(Id::uuid).collect::<Vec<_>>()),
        Box::new(message.finished_at.map(time)),
        Box::new(due_at),
    ]
}

/// The values of [`INSERT_ATTEMPT`] for `attempt`, of `team_id`'s webhook `webhook_id`.
pub(in crate::webhooks::log) fn attempt_values(team_id: Id, webhook_id: Id, attempt: &WebhookAttempt) -> Vec<Value> {
    vec![
        Box::new(attempt.id.uuid()),
        Box::new(team_id.uuid()),
        Box::new(webhook_id.uuid()),
        Box::new(attempt.event_id.uuid()),
        Box::new(enum_text(&attempt.kind)),
        Box::new(count(attempt.attempt)),
        Box::new(attempt.status.map(i32::from)),
        Box::new(attempt.error.clone()),
        Box::new(attempt.response.clone()),
        Box::new(i64::try_from(attempt.latency_ms).unwrap_or(i64::MAX)),
        Box::new(time(attempt.at)),
    ]
}

/// A count of attempts as an `integer` column keeps it. Counts stay far below its
/// limit (the retry schedule makes tens), which is kept should one ever pass it.
fn count(attempts: u32) -> i32 {
    i32::try_from(attempts).unwrap_or(i32::MAX)
}

fn id(row: &Row, index: usize) -> Id {
    Id::from(row.get::<_, uuid::Uuid>(index))
}

/// The message of `row` ([`MESSAGE_COLUMNS`]).
pub(super) fn message(row: &Row) -> Result<WebhookMessage, Error> {
    Ok(WebhookMessage {
        team_id: id(row, 0),
        webhook_id: id(row, 1),
        event_id: id(row, 2),
        kind: text_enum(MESSAGES, row.get(3))?,
        body: row.get(4),
        attempts: u32::try_from(row.get::<_, i32>(5)).unwrap_or(0),
        state: text_enum(MESSAGES, row.get(6))?,
        next_attempt: timestamp(row.get(7)),
        attempt_ids: row.get::<_, Vec<uuid::Uuid>>(8).into_iter().map(Id::from).collect(),
        finished_at: row.get::<_, Option<SystemTime>>(9).map(timestamp),
    })
}

/// The attempt of `row` ([`ATTEMPT_COLUMNS`]).
pub(super) fn attempt(row: &Row) -> Result<WebhookAttempt, Error> {
    Ok(WebhookAttempt {
        id: id(row, 0),
        event_id: id(row, 1),
        kind: text_enum(ATTEMPTS, row.get(2))?,
        attempt: u32::try_from(row.get::<_, i32>(3)).unwrap_or(0),
        status: row
            .get::<_, Option<i32>>(4)
            .map(|status| u16::try_from(status).unwrap_or(0)),
        error: row.get(5),
        response: row.get(6),
        latency_ms: u64::try_from(row.get::<_, i64>(7)).unwrap_or(0),
        at: timestamp(row.get(8)),
    })
}
