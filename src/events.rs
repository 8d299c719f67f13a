//! Events: what happened to a resource, written in the same batch as the change that
//! caused it, into the outbox the webhook dispatcher drains.

use herald_queue::{Batch, Id, Record, Scan, Store, Table, Timestamp};
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
/// outbox drains in order; `data` makes its payload, only when the event is written.
///
/// The outbox only feeds webhooks: for a team that has none, nothing is written (the
/// event is as if it happened before the team's first webhook existed), which spares a
/// write now and its fan-out later on every email of such teams.
pub fn push(
    batch: &mut Batch,
    store: &Store,
    team_id: Id,
    kind: &str,
    data: impl FnOnce() -> Value,
) -> Result<Id, herald_queue::Error> {
    let id = store.next_id();
    let any_webhook = store.scan_raw(
        Table::WEBHOOKS,
        Scan {
            prefix: team_id.as_bytes(),
            after: None,
            reverse: false,
            limit: 1,
        },
    )?;
    if any_webhook.is_empty() {
        return Ok(id);
    }
    let event = Event {
        id,
        team_id,
        kind: kind.to_owned(),
        created_at: store.now(),
        data: data(),
    };
    batch.put(event.id.as_bytes(), &event)?;
    Ok(event.id)
}
