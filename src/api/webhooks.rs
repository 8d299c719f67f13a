//! `/webhooks`: create (answering the signing secret), list, read, update (endpoint,
//! events, status) and delete the team's webhook endpoints.

use std::time::Duration;

use herald_queue::{Batch, Id};
use serde_json::json;

use super::{Ctx, Reply};
use crate::http::pagination::{PageRequest, envelope};
use crate::http::{ApiError, format};
use crate::outbound::OutboundError;
use crate::webhooks::{
    self, ENDPOINT_MAX, PreviousSecret, SigningSecret, WEBHOOKS_PER_TEAM_MAX, Webhook, WebhookStatus,
};

/// How long a rotated-out signing secret keeps signing requests next to the new one:
/// Svix's choice, a day for receivers to deploy the new secret.
pub const ROTATION_OVERLAP: Duration = Duration::from_secs(24 * 60 * 60);

/// Time allowed to resolve an endpoint's host when it is saved. A name that cannot be
/// resolved in this time is accepted: the address policy is enforced again at connect
/// time, and a slow resolver should not hold a request (and a blocking thread) longer.
const ENDPOINT_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, serde::Deserialize)]
struct CreateBody {
    endpoint: Option<String>,
    events: Option<Vec<String>>,
}

/// `POST /webhooks`.
pub fn create(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: CreateBody = ctx.request.json()?;
    let endpoint = endpoint(ctx, body.endpoint)?;
    let Some(events) = body.events else {
        return Err(ApiError::missing_field("events"));
    };
    let events = subscriptions(events)?;
    let signing_secret = SigningSecret::generate().map_err(|_| ApiError::internal(&"the random generator failed"))?;
    let (store, team_id) = (&ctx.state.store, ctx.caller.team_id);
    let _guard = ctx.state.lock_record(team_webhooks(ctx));
    if webhooks::for_team(store, team_id)?.len() >= WEBHOOKS_PER_TEAM_MAX {
        return Err(ApiError::validation(format!(
            "A team can have at most {WEBHOOKS_PER_TEAM_MAX} webhooks; delete one before adding another"
        )));
    }
    let webhook = Webhook {
        id: store.next_id(),
        team_id,
        endpoint,
        events,
        status: WebhookStatus::Enabled,
        signing_secret,
        previous_secret: None,
        created_at: store.now(),
    };
    let mut batch = Batch::new();
    batch.put(Webhook::key(team_id, webhook.id), &webhook)?;
    store.commit(batch).wait()?;
    Ok(Reply::created(webhook.created_json()))
}

/// `GET /webhooks`, newest first; everything unless `limit` is given, as Resend's list
/// does.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, None)?;
    let (found, has_more) = page.load::<Webhook>(&ctx.state.store, ctx.caller.team_id.as_bytes())?;
    Ok(Reply::ok(envelope(
        found.iter().map(Webhook::summary_json).collect(),
        has_more,
    )))
}

/// `GET /webhooks/{id}`.
pub fn get(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    Ok(Reply::ok(load(ctx, id)?.to_json()))
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
    // Checked before the lock: the endpoint check may wait on DNS.
    let endpoint = body.endpoint.map(|text| endpoint(ctx, Some(text))).transpose()?;
    let events = body.events.map(subscriptions).transpose()?;
    let _guard = ctx.state.lock_record(team_webhooks(ctx));
    let mut webhook = load(ctx, id)?;
    webhook.endpoint = endpoint.unwrap_or(webhook.endpoint);
    webhook.events = events.unwrap_or(webhook.events);
    webhook.status = body.status.unwrap_or(webhook.status);
    let store = &ctx.state.store;
    let mut batch = Batch::new();
    batch.put(Webhook::key(webhook.team_id, webhook.id), &webhook)?;
    store.commit(batch).wait()?;
    Ok(Reply::ok(json!({ "object": "webhook", "id": webhook.id })))
}

/// `DELETE /webhooks/{id}`.
pub fn delete(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let _guard = ctx.state.lock_record(team_webhooks(ctx));
    let webhook = load(ctx, id)?;
    let store = &ctx.state.store;
    let mut batch = Batch::new();
    batch.delete::<Webhook>(Webhook::key(webhook.team_id, webhook.id));
    store.commit(batch).wait()?;
    Ok(Reply::ok(
        json!({ "object": "webhook", "id": webhook.id, "deleted": true }),
    ))
}

/// `POST /webhooks/{id}/signing-secret/rotate`: a new signing secret, answered once. The
/// old one keeps signing alongside it for [`ROTATION_OVERLAP`], so that receivers can
/// switch without dropping events: each request carries a signature by both.
pub fn rotate_secret(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let signing_secret = SigningSecret::generate().map_err(|_| ApiError::internal(&"the random generator failed"))?;
    let _guard = ctx.state.lock_record(team_webhooks(ctx));
    let mut webhook = load(ctx, id)?;
    let store = &ctx.state.store;
    let old = std::mem::replace(&mut webhook.signing_secret, signing_secret);
    webhook.previous_secret = Some(PreviousSecret {
        secret: old,
        until: store.now().saturating_add(ROTATION_OVERLAP),
    });
    let mut batch = Batch::new();
    batch.put(Webhook::key(webhook.team_id, webhook.id), &webhook)?;
    store.commit(batch).wait()?;
    Ok(Reply::ok(json!({
        "object": "webhook",
        "id": webhook.id,
        "signing_secret": webhook.signing_secret.expose(),
    })))
}

/// The caller's webhook named by a path segment.
fn load(ctx: &Ctx<'_>, id: &str) -> Result<Webhook, ApiError> {
    let id: Id = format::id(id, "webhook")?;
    webhooks::find(&ctx.state.store, ctx.caller.team_id, id)?.ok_or_else(|| ApiError::not_found("Webhook not found"))
}

/// The `endpoint` field, checked by the outbound client as it will be when events are
/// posted: an absolute http(s) URL with a host and no user info, whose host is not (and
/// does not resolve to) a loopback, private, link-local or metadata address unless
/// `[webhooks] allow_private_endpoints` is set.
fn endpoint(ctx: &Ctx<'_>, text: Option<String>) -> Result<String, ApiError> {
    let Some(text) = text.map(|text| text.trim().to_owned()).filter(|text| !text.is_empty()) else {
        return Err(ApiError::missing_field("endpoint"));
    };
    if text.len() > ENDPOINT_MAX {
        return Err(ApiError::validation(format!(
            "The `endpoint` field must be at most {ENDPOINT_MAX} bytes long"
        )));
    }
    let check = ctx.state.outbound.check(&text);
    // Handlers run on the blocking pool, where waiting on the runtime is allowed.
    let checked = tokio::runtime::Handle::current().block_on(tokio::time::timeout(ENDPOINT_CHECK_TIMEOUT, check));
    match checked {
        Ok(Ok(())) => Ok(text),
        // A name that does not resolve now, or not within the time limit, may resolve later
        // (an endpoint set up before its DNS): accepted, since delivery checks the
        // addresses again when it connects.
        Ok(Err(OutboundError::Failed { .. })) | Err(_) => Ok(text),
        Ok(Err(refused @ OutboundError::Refused { .. })) => Err(ApiError::validation(format!(
            "Invalid `endpoint` field: {refused} (`[webhooks] allow_private_endpoints` allows such endpoints for local development)"
        ))),
        Ok(Err(invalid)) => Err(ApiError::validation(format!("Invalid `endpoint` field: {invalid}"))),
    }
}

/// The `events` field as stored.
fn subscriptions(names: Vec<String>) -> Result<Vec<String>, ApiError> {
    webhooks::events(names).map_err(|why| ApiError::validation(format!("Invalid `events` field: {why}")))
}

/// What a change of the team's webhooks (or their messages) locks: one lock for all of
/// them, since the team's count of webhooks is checked on create and they change rarely.
pub(super) fn team_webhooks<'a>(ctx: &Ctx<'a>) -> crate::services::RecordName<'a> {
    crate::services::RecordName {
        table: herald_queue::Table::WEBHOOKS.name(),
        key: ctx.caller.team_id.as_bytes(),
    }
}
