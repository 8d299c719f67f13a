//! Events as the services write them: one for a team only when it has a webhook to
//! hear of it (the outbox only feeds webhooks), made with the change that caused it.
//! The record is [`crate::events`]'; the outbox is kept by [`crate::webhooks::log`].

use herald_queue::Id;
use serde_json::Value;

use super::Services;
use crate::events::{Event, EventKind};
use crate::storage::Change;

/// Adds an event of `kind` for `team_id` to `change` (see [`new`]).
pub fn push(
    change: &mut Change,
    services: &Services,
    team_id: Id,
    kind: EventKind,
    data: impl FnOnce() -> Value,
) -> Result<Id, crate::storage::Error> {
    match new(services, team_id, kind, data)? {
        Some(event) => {
            services.webhook_log().stage_event(change, &event)?;
            Ok(event.id)
        }
        None => Ok(services.next_id()),
    }
}

/// An event of `kind` for `team_id`, to be written with the change that caused it; `data`
/// makes its payload, only when there is an event to write.
///
/// The outbox only feeds webhooks: for a team that has none, there is no event (it is as
/// if it happened before the team's first webhook existed), which spares a write now and
/// its fan-out later on every email of such teams.
pub fn new(
    services: &Services,
    team_id: Id,
    kind: EventKind,
    data: impl FnOnce() -> Value,
) -> Result<Option<Event>, crate::storage::Error> {
    let id = services.next_id();
    if !services.webhooks().any(team_id)? {
        return Ok(None);
    }
    Ok(Some(Event {
        id,
        team_id,
        kind,
        created_at: services.now(),
        data: data(),
    }))
}
