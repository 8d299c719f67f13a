//! The webhook request log (`GET /webhooks/{id}/deliveries`) and replay
//! (`POST /webhooks/{id}/deliveries/{delivery_id}/replay`).

use herald_queue::Id;
use serde_json::json;

use super::{Ctx, Reply, webhook_events};
use crate::http::pagination::{PageRequest, envelope};
use crate::http::{ApiError, format};
use crate::webhooks::dispatch::{WebhookAttempt, WebhookMessage};

/// Attempts per page unless `limit` says otherwise.
const DEFAULT_LIMIT: usize = 20;

/// `GET /webhooks/{id}/deliveries`: every attempt, newest first.
pub fn list(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let webhook = webhook_events::webhook(ctx, id)?;
    let page = PageRequest::parse(ctx.request, Some(DEFAULT_LIMIT))?;
    let prefix = [ctx.caller.team_id.as_bytes().as_slice(), webhook.as_bytes()].concat();
    let (attempts, has_more) = page.load::<WebhookAttempt>(&ctx.state.store, &prefix)?;
    Ok(Reply::ok(envelope(
        attempts.iter().map(WebhookAttempt::to_json).collect(),
        has_more,
    )))
}

/// `POST /webhooks/{id}/deliveries/{delivery_id}/replay`: sends the attempt's message
/// again now, with a fresh retry schedule, whether it succeeded or failed.
pub fn replay(ctx: &Ctx<'_>, id: &str, delivery: &str) -> Result<Reply, ApiError> {
    let webhook = webhook_events::webhook(ctx, id)?;
    let delivery: Id = format::id(delivery, "delivery")?;
    let store = &ctx.state.store;
    let team = ctx.caller.team_id;
    let attempt = store
        .get::<WebhookAttempt>(WebhookAttempt::key(team, webhook, delivery))?
        .ok_or_else(|| ApiError::not_found("Delivery not found"))?;
    let _guard = ctx.state.lock_record(super::webhooks::team_webhooks(ctx));
    let message = store
        .get::<WebhookMessage>(WebhookMessage::key_of(team, webhook, attempt.event_id))?
        .ok_or_else(|| ApiError::not_found("The delivery's message no longer exists"))?;
    let message = webhook_events::requeue(ctx, message)?;
    Ok(Reply::ok(
        json!({ "object": "webhook_message", "id": message.message_id(), "replayed": true }),
    ))
}
