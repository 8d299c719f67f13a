//! The webhook request log (`GET /webhooks/{id}/deliveries`) and replay
//! (`POST /webhooks/{id}/deliveries/{delivery_id}/replay`).

use herald_queue::Id;
use serde_json::json;

use super::{Ctx, Reply};
use crate::http::pagination::{PageRequest, envelope};
use crate::http::{ApiError, format};
use crate::webhooks::WebhookAttempt;
use crate::webhooks::history;

/// Attempts per page unless `limit` says otherwise.
const DEFAULT_LIMIT: usize = 20;

/// `GET /webhooks/{id}/deliveries`: every attempt, newest first.
pub fn list(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id: Id = format::id(id, "webhook")?;
    let page = PageRequest::parse(ctx.request, Some(DEFAULT_LIMIT))?;
    let (attempts, has_more) = history::attempts(ctx.state, ctx.caller, id, &page)?;
    Ok(Reply::ok(envelope(
        attempts.iter().map(WebhookAttempt::to_json).collect(),
        has_more,
    )))
}

/// `POST /webhooks/{id}/deliveries/{delivery_id}/replay`: sends the attempt's message
/// again now, with a fresh retry schedule, whether it succeeded or failed.
pub fn replay(ctx: &Ctx<'_>, id: &str, delivery: &str) -> Result<Reply, ApiError> {
    let id: Id = format::id(id, "webhook")?;
    let delivery: Id = format::id(delivery, "delivery")?;
    let message = history::replay_delivery(ctx.state, ctx.caller, id, delivery)?;
    Ok(Reply::ok(
        json!({ "object": "webhook_message", "id": message.message_id(), "replayed": true }),
    ))
}
