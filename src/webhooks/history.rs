//! The webhook event log a team reads: the messages (one event for one endpoint) and the
//! attempts to deliver them, and replay. The webhook log ([`super::log`]) keeps their
//! records; these are the operations the adapters call, checked against the caller's team.

use herald_queue::Id;

use super::message::{MessageState, WebhookAttempt, WebhookMessage};
use crate::accounts::Caller;
use crate::services::{Error, Services};
use crate::storage::Change;
use crate::storage::page::PageRequest;

/// The id of the caller's webhook `id`, if it exists.
fn webhook(services: &Services, caller: &Caller, id: Id) -> Result<Id, Error> {
    services
        .webhooks()
        .get(caller.team_id, id)?
        .map(|webhook| webhook.id)
        .ok_or(Error::NotFound("Webhook not found"))
}

/// One page of the messages of the caller's webhook `id`, newest first.
pub fn messages(
    services: &Services,
    caller: &Caller,
    id: Id,
    page: &PageRequest,
) -> Result<(Vec<WebhookMessage>, bool), Error> {
    caller.require_full_access()?;
    let webhook = webhook(services, caller, id)?;
    Ok(services.webhook_log().messages(caller.team_id, webhook, page)?)
}

/// The message of event `event` for the caller's webhook `id`.
pub fn message(services: &Services, caller: &Caller, id: Id, event: Id) -> Result<WebhookMessage, Error> {
    caller.require_full_access()?;
    let webhook = webhook(services, caller, id)?;
    services
        .webhook_log()
        .message(caller.team_id, webhook, event)?
        .ok_or(Error::NotFound("Webhook event not found"))
}

/// The attempts `ids` of `message` that are still recorded, in the order given.
pub fn attempts_of(services: &Services, message: &WebhookMessage, ids: &[Id]) -> Result<Vec<WebhookAttempt>, Error> {
    let mut found = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(attempt) = services
            .webhook_log()
            .attempt(message.team_id, message.webhook_id, *id)?
        {
            found.push(attempt);
        }
    }
    Ok(found)
}

/// One page of every attempt of the caller's webhook `id`, newest first.
pub fn attempts(
    services: &Services,
    caller: &Caller,
    id: Id,
    page: &PageRequest,
) -> Result<(Vec<WebhookAttempt>, bool), Error> {
    caller.require_full_access()?;
    let webhook = webhook(services, caller, id)?;
    Ok(services.webhook_log().attempts(caller.team_id, webhook, page)?)
}

/// Sends the message of event `event` to the caller's webhook `id` again now, with a
/// fresh retry schedule, whether it succeeded, failed or is still being retried.
pub fn replay_event(services: &Services, caller: &Caller, id: Id, event: Id) -> Result<WebhookMessage, Error> {
    caller.require_full_access()?;
    let _guard = super::service::lock(services, caller);
    let message = message(services, caller, id, event)?;
    Ok(replay(services, message)?)
}

/// Sends the message of the caller's webhook `id`'s attempt `delivery` again now.
pub fn replay_delivery(services: &Services, caller: &Caller, id: Id, delivery: Id) -> Result<WebhookMessage, Error> {
    caller.require_full_access()?;
    let webhook = webhook(services, caller, id)?;
    let attempt = services
        .webhook_log()
        .attempt(caller.team_id, webhook, delivery)?
        .ok_or(Error::NotFound("Delivery not found"))?;
    let _guard = super::service::lock(services, caller);
    let message = services
        .webhook_log()
        .message(caller.team_id, webhook, attempt.event_id)?
        .ok_or(Error::NotFound("The delivery's message no longer exists"))?;
    Ok(replay(services, message)?)
}

/// Makes `message` due now with no attempts counted, in one write (`POST
/// /webhooks/{id}/events/{event_id}/replay` and the deliveries' replay). The caller holds
/// the team's webhooks lock.
fn replay(state: &Services, mut message: WebhookMessage) -> Result<WebhookMessage, crate::storage::Error> {
    let was_due = (message.state == MessageState::Pending).then_some(message.next_attempt);
    message.state = MessageState::Pending;
    message.finished_at = None;
    message.attempts = 0;
    message.next_attempt = state.now();
    let log = state.webhook_log();
    let mut change = Change::new();
    log.stage_message(&mut change, &message, was_due, None)?;
    log.commit(change)?;
    state.webhook_wake().wake();
    Ok(message)
}
