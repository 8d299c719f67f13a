//! Events: what happened to a resource, written in the same batch as the change that
//! caused it, into the outbox the webhook dispatcher drains.

use herald_queue::{Batch, Id, Record, Store, Table, Timestamp};
use serde_json::Value;

/// One event, as queued for webhooks.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Event {
    /// The event's id.
    pub id: Id,
    /// The team whose webhooks receive it.
    pub team_id: Id,
    /// The event type, such as `domain.created`.
    #[serde(rename = "type")]
    pub kind: String,
    /// When it happened.
    pub created_at: Timestamp,
    /// The payload's `data` object.
    pub data: Value,
}

impl Record for Event {
    const TABLE: Table = Table::OUTBOX;
}

/// Adds an event of `kind` for `team_id` to `batch`, keyed by its time-ordered id so the
/// outbox drains in order.
pub fn push(batch: &mut Batch, store: &Store, team_id: Id, kind: &str, data: Value) -> Result<Id, herald_queue::Error> {
    let event = Event {
        id: store.next_id(),
        team_id,
        kind: kind.to_owned(),
        created_at: store.now(),
        data,
    };
    batch.put(event.id.as_bytes(), &event)?;
    Ok(event.id)
}
