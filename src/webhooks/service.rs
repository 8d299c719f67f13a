//! The webhooks service: create (answering the signing secret), list, read, update
//! (endpoint, events, status), rotate the secret and delete a team's endpoints. Rules
//! live here, for every adapter; storage is [`super::WebhookStore`]'s.
//!
//! These operations block (the endpoint check waits on DNS): adapters call them from a
//! blocking thread inside the runtime.

use std::time::Duration;

use herald_queue::Id;

use super::model::{ENDPOINT_MAX, PreviousSecret, WEBHOOKS_PER_TEAM_MAX, Webhook, WebhookStatus};
use super::secret::SigningSecret;
use crate::accounts::Caller;
use crate::outbound::OutboundError;
use crate::services::{Error, RecordName, Services};
use crate::storage::page::PageRequest;

/// How long a rotated-out signing secret keeps signing requests next to the new one:
/// Svix's choice, a day for receivers to deploy the new secret.
pub const ROTATION_OVERLAP: Duration = Duration::from_secs(24 * 60 * 60);

/// Time allowed to resolve an endpoint's host when it is saved. A name that cannot be
/// resolved in this time is accepted: the address policy is enforced again at connect
/// time, and a slow resolver should not hold a request (and a blocking thread) longer.
const ENDPOINT_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// A webhook to create, as a caller asks for it.
#[derive(Debug, Clone, Default)]
pub struct NewWebhook {
    /// The http(s) URL events are posted to (required).
    pub endpoint: Option<String>,
    /// The event types it receives (required).
    pub events: Option<Vec<String>>,
}

/// A change to a webhook: `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct WebhookChange {
    /// A new endpoint.
    pub endpoint: Option<String>,
    /// New event types.
    pub events: Option<Vec<String>>,
    /// Enabled or disabled.
    pub status: Option<WebhookStatus>,
}

/// What a change of a team's webhooks (or their messages) locks: one lock for all of
/// them, since the team's count of webhooks is checked on create and they change rarely.
pub fn lock<'a>(services: &'a Services, caller: &Caller) -> crate::services::Held<'a> {
    services.lock_record(RecordName {
        table: "webhooks",
        key: caller.team_id.as_bytes(),
    })
}

/// Creates a webhook of the caller's team with a new signing secret.
pub fn create(services: &Services, caller: &Caller, new: NewWebhook) -> Result<Webhook, Error> {
    caller.require_full_access()?;
    let endpoint = endpoint(services, new.endpoint)?;
    let Some(events) = new.events else {
        return Err(Error::MissingField("events"));
    };
    let events = subscriptions(events)?;
    let signing_secret = SigningSecret::generate().map_err(|_| Error::Internal("the random generator failed"))?;
    let team_id = caller.team_id;
    let _guard = lock(services, caller);
    if services.webhooks().for_team(team_id)?.len() >= WEBHOOKS_PER_TEAM_MAX {
        return Err(Error::invalid(format!(
            "A team can have at most {WEBHOOKS_PER_TEAM_MAX} webhooks; delete one before adding another"
        )));
    }
    let webhook = Webhook {
        id: services.next_id(),
        team_id,
        endpoint,
        events,
        status: WebhookStatus::Enabled,
        signing_secret,
        previous_secret: None,
        created_at: services.now(),
    };
    services.webhooks().put(&webhook)?;
    Ok(webhook)
}

/// One page of the caller's team's webhooks, newest first, and whether more lie beyond.
pub fn list(services: &Services, caller: &Caller, page: &PageRequest) -> Result<(Vec<Webhook>, bool), Error> {
    caller.require_full_access()?;
    Ok(services.webhooks().list(caller.team_id, page)?)
}

/// The caller's webhook `id`.
pub fn get(services: &Services, caller: &Caller, id: Id) -> Result<Webhook, Error> {
    caller.require_full_access()?;
    services
        .webhooks()
        .get(caller.team_id, id)?
        .ok_or(Error::NotFound("Webhook not found"))
}

/// Changes the caller's webhook `id`; the fields not given keep their values.
pub fn update(services: &Services, caller: &Caller, id: Id, change: WebhookChange) -> Result<Webhook, Error> {
    caller.require_full_access()?;
    // Checked before the lock: the endpoint check may wait on DNS.
    let endpoint = change.endpoint.map(|text| endpoint(services, Some(text))).transpose()?;
    let events = change.events.map(subscriptions).transpose()?;
    let _guard = lock(services, caller);
    let mut webhook = get(services, caller, id)?;
    webhook.endpoint = endpoint.unwrap_or(webhook.endpoint);
    webhook.events = events.unwrap_or(webhook.events);
    webhook.status = change.status.unwrap_or(webhook.status);
    services.webhooks().put(&webhook)?;
    Ok(webhook)
}

/// Deletes the caller's webhook `id`.
pub fn delete(services: &Services, caller: &Caller, id: Id) -> Result<Webhook, Error> {
    caller.require_full_access()?;
    let _guard = lock(services, caller);
    let webhook = get(services, caller, id)?;
    services.webhooks().delete(&webhook)?;
    Ok(webhook)
}

/// Gives the caller's webhook `id` a new signing secret, answered once. The old one keeps
/// signing alongside it for [`ROTATION_OVERLAP`], so that receivers can switch without
/// dropping events: each request carries a signature by both.
pub fn rotate_secret(services: &Services, caller: &Caller, id: Id) -> Result<Webhook, Error> {
    caller.require_full_access()?;
    let signing_secret = SigningSecret::generate().map_err(|_| Error::Internal("the random generator failed"))?;
    let _guard = lock(services, caller);
    let mut webhook = get(services, caller, id)?;
    let old = std::mem::replace(&mut webhook.signing_secret, signing_secret);
    webhook.previous_secret = Some(PreviousSecret {
        secret: old,
        until: services.now().saturating_add(ROTATION_OVERLAP),
    });
    services.webhooks().put(&webhook)?;
    Ok(webhook)
}

/// The endpoint, checked by the outbound client as it will be when events are posted: an
/// absolute http(s) URL with a host and no user info, whose host is not (and does not
/// resolve to) a loopback, private, link-local or metadata address unless `[webhooks]
/// allow_private_endpoints` is set.
fn endpoint(services: &Services, text: Option<String>) -> Result<String, Error> {
    let Some(text) = text.map(|text| text.trim().to_owned()).filter(|text| !text.is_empty()) else {
        return Err(Error::MissingField("endpoint"));
    };
    if text.len() > ENDPOINT_MAX {
        return Err(Error::invalid(format!(
            "The `endpoint` field must be at most {ENDPOINT_MAX} bytes long"
        )));
    }
    let check = services.outbound().check(&text);
    // Called on a blocking thread, where waiting on the runtime is allowed.
    let checked = tokio::runtime::Handle::current().block_on(tokio::time::timeout(ENDPOINT_CHECK_TIMEOUT, check));
    match checked {
        Ok(Ok(())) => Ok(text),
        // A name that does not resolve now, or not within the time limit, may resolve later
        // (an endpoint set up before its DNS): accepted, since delivery checks the
        // addresses again when it connects.
        Ok(Err(OutboundError::Failed { .. })) | Err(_) => Ok(text),
        Ok(Err(refused @ OutboundError::Refused { .. })) => Err(Error::invalid(format!(
            "Invalid `endpoint` field: {refused} (`[webhooks] allow_private_endpoints` allows such endpoints for local development)"
        ))),
        Ok(Err(invalid)) => Err(Error::invalid(format!("Invalid `endpoint` field: {invalid}"))),
    }
}

/// The event types as stored.
fn subscriptions(names: Vec<String>) -> Result<Vec<String>, Error> {
    super::events(names).map_err(|why| Error::invalid(format!("Invalid `events` field: {why}")))
}
