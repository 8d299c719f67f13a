//! `/webhooks`: create (answering the signing secret), list, read, update (endpoint,
//! events, status) and delete the team's webhook endpoints. The rules are
//! [`crate::webhooks::service`]'s.

use serde_json::json;

use super::{Ctx, Reply};
use crate::http::pagination::{PageRequest, envelope};
use crate::http::{ApiError, format};
use crate::webhooks::service::{self, NewWebhook, WebhookChange};
use crate::webhooks::{Webhook, WebhookStatus};

#[derive(Debug, serde::Deserialize)]
struct CreateBody {
    endpoint: Option<String>,
    events: Option<Vec<String>>,
}

/// `POST /webhooks`.
pub fn create(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: CreateBody = ctx.request.json()?;
    let new = NewWebhook {
        endpoint: body.endpoint,
        events: body.events,
    };
    let webhook = service::create(ctx.state, ctx.caller, new)?;
    Ok(Reply::created(webhook.created_json()))
}

/// `GET /webhooks`, newest first; everything unless `limit` is given, as Resend's list
/// does.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, None)?;
    let (found, has_more) = service::list(ctx.state, ctx.caller, &page)?;
    Ok(Reply::ok(envelope(
        found.iter().map(Webhook::summary_json).collect(),
        has_more,
    )))
}

/// `GET /webhooks/{id}`.
pub fn get(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let webhook = service::get(ctx.state, ctx.caller, format::id(id, "webhook")?)?;
    Ok(Reply::ok(webhook.to_json()))
}

#[derive(Debug, serde::Deserialize)]
struct UpdateBody {
    endpoint: Option<String>,
    events: Option<Vec<String>>,
    status: Option<WebhookStatus>,
}

/// `PATCH /webhooks/{id}`: any of `endpoint`, `events` and `status`; the fields not
/// given keep their values.
pub fn update(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let body: UpdateBody = ctx.request.json()?;
    let change = WebhookChange {
        endpoint: body.endpoint,
        events: body.events,
        status: body.status,
    };
    let webhook = service::update(ctx.state, ctx.caller, format::id(id, "webhook")?, change)?;
    Ok(Reply::ok(json!({ "object": "webhook", "id": webhook.id })))
}

/// `DELETE /webhooks/{id}`.
pub fn delete(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let webhook = service::delete(ctx.state, ctx.caller, format::id(id, "webhook")?)?;
    Ok(Reply::ok(
        json!({ "object": "webhook", "id": webhook.id, "deleted": true }),
    ))
}

/// `POST /webhooks/{id}/signing-secret/rotate`: a new signing secret, answered once; the
/// old one keeps signing beside it for a day.
pub fn rotate_secret(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let webhook = service::rotate_secret(ctx.state, ctx.caller, format::id(id, "webhook")?)?;
    Ok(Reply::ok(json!({
        "object": "webhook",
        "id": webhook.id,
        "signing_secret": webhook.signing_secret.expose(),
    })))
}
