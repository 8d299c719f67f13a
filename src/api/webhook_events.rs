//! The webhook event log as the SDKs read it (`resend.webhooks.events`): one entry per
//! event sent to the webhook, its status and payload, its attempts, and replay.
//!
//! - `GET /webhooks/{id}/events`: newest first, cursor pagination.
//! - `GET /webhooks/{id}/events/{event_id}`: status, next attempt and the payload.
//! - `GET /webhooks/{id}/events/{event_id}/attempts`: newest first.
//! - `POST /webhooks/{id}/events/{event_id}/replay`: send it again now.
//!
//! An event here is a [`WebhookMessage`]; its id is the event's id, and receivers see
//! it as `msg_<id>` in `webhook-id`.

use herald_queue::{Id, Timestamp};
use serde_json::{Value, json};

use super::{Ctx, Reply};
use crate::http::pagination::{Cursor, PageRequest, envelope};
use crate::http::{ApiError, format};
use crate::webhooks::history;
use crate::webhooks::{MessageState, WebhookMessage};

/// Events or attempts per page unless `limit` says otherwise.
const DEFAULT_LIMIT: usize = 20;

/// `GET /webhooks/{id}/events`.
pub fn list(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id: Id = format::id(id, "webhook")?;
    let page = PageRequest::parse(ctx.request, Some(DEFAULT_LIMIT))?;
    let (messages, has_more) = history::messages(ctx.state, ctx.caller, id, &page)?;
    Ok(Reply::ok(envelope(messages.iter().map(summary).collect(), has_more)))
}

/// `GET /webhooks/{id}/events/{event_id}`.
pub fn get(ctx: &Ctx<'_>, id: &str, event: &str) -> Result<Reply, ApiError> {
    let message = message(ctx, id, event)?;
    let mut value = summary(&message);
    if let Value::Object(map) = &mut value {
        map.shift_insert(0, "object".into(), json!("webhook_event"));
        let next = (message.state == MessageState::Pending).then(|| format::timestamp(message.next_attempt));
        map.insert("next_attempt_at".into(), json!(next));
        let payload = serde_json::from_str::<Value>(&message.body).unwrap_or(Value::Null);
        map.insert("payload".into(), payload);
    }
    Ok(Reply::ok(value))
}

/// `GET /webhooks/{id}/events/{event_id}/attempts`: `limit` and `after` (an attempt id)
/// page through the attempts the event's record lists.
pub fn attempts(ctx: &Ctx<'_>, id: &str, event: &str) -> Result<Reply, ApiError> {
    let message = message(ctx, id, event)?;
    let page = PageRequest::parse(ctx.request, Some(DEFAULT_LIMIT))?;
    let newest_first: Vec<Id> = message.attempt_ids.iter().rev().copied().collect();
    let start = match page.cursor {
        Cursor::Start => 0,
        Cursor::After(after) => newest_first.iter().position(|id| *id == after).map_or(0, |at| at + 1),
        Cursor::Before(_) => {
            return Err(ApiError::validation(
                "The `before` parameter is not supported for attempts; use `after`",
            ));
        }
    };
    let wanted: Vec<Id> = newest_first.iter().skip(start).take(page.limit).copied().collect();
    let mut data = Vec::new();
    for attempt in history::attempts_of(ctx.state, &message, &wanted)? {
        {
            data.push(json!({
                "id": attempt.id,
                "http_status_code": attempt.status,
                // The response body's start; the error when there was no response.
                "response": match (attempt.status, attempt.error) {
                    (None, Some(error)) => format!("no response: {error}"),
                    _ => attempt.response,
                },
                "sent_at": format::timestamp(attempt.at),
            }));
        }
    }
    let has_more = newest_first.len() > start.saturating_add(page.limit);
    Ok(Reply::ok(envelope(data, has_more)))
}

/// `POST /webhooks/{id}/events/{event_id}/replay`: due now with a fresh retry schedule,
/// whether it succeeded, failed or is still being retried.
pub fn replay(ctx: &Ctx<'_>, id: &str, event: &str) -> Result<Reply, ApiError> {
    let (webhook, event_id) = ids(id, event)?;
    history::replay_event(ctx.state, ctx.caller, webhook, event_id)?;
    Ok(Reply::ok(json!({ "object": "webhook_event", "id": event })))
}

/// The list entry: id, type, creation time and status.
fn summary(message: &WebhookMessage) -> Value {
    let status = match message.state {
        MessageState::Delivered => "success",
        MessageState::Failed => "failed",
        MessageState::Pending if message.attempts == 0 => "pending",
        MessageState::Pending => "attempting",
    };
    let created_at = message.event_id.timestamp().unwrap_or(Timestamp::from_millis(0));
    json!({
        "id": message.event_id,
        "type": message.kind,
        "created_at": format::timestamp(created_at),
        "status": status,
    })
}

/// The webhook and event ids of the path (`msg_<id>` or `<id>`).
fn ids(id: &str, event: &str) -> Result<(Id, Id), ApiError> {
    let webhook: Id = format::id(id, "webhook")?;
    let event: Id = format::id(event.strip_prefix("msg_").unwrap_or(event), "event")?;
    Ok((webhook, event))
}

/// The caller's webhook event named by the path.
fn message(ctx: &Ctx<'_>, id: &str, event: &str) -> Result<WebhookMessage, ApiError> {
    let (webhook, event) = ids(id, event)?;
    Ok(history::message(ctx.state, ctx.caller, webhook, event)?)
}
