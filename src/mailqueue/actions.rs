//! Changing the queue: retry deferred mail now, or delete a message (its undelivered
//! recipients end as `canceled`). Each change claims the message first, as a delivery
//! worker does, so that it never races an attempt under way.

use herald_queue::{Envelope, Id, RecipientState, Updated};
use serde_json::{Value, json};

use super::{QueueError, Scope, destination};
use crate::emails::EmailState;
use crate::services::Services;
use crate::storage::Change;

/// Which deferred mail to retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryTarget {
    /// One message.
    Message(Id),
    /// Every deferred recipient at this destination domain.
    Domain(String),
    /// Every deferred recipient in the scope.
    All,
}

/// What a retry did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retried {
    /// Messages made due now.
    pub messages: u64,
    /// Recipients made due now.
    pub recipients: u64,
    /// Messages left alone because a delivery attempt held them (they are being tried).
    pub in_flight: u64,
}

impl Retried {
    /// The answer of `POST /queue/retry`.
    pub fn to_json(&self) -> Value {
        json!({
            "object": "queue_retry",
            "messages": self.messages,
            "recipients": self.recipients,
            "skipped_in_flight": self.in_flight,
        })
    }
}

/// How soon after a receiver's last answer a team's retry may try it again. A team may
/// bring its deferred mail forward, but receivers that greylist or throttle (`421`,
/// `451`) need the pause, and hammering them hurts the reputation of addresses every
/// team sends from. The operator's retries are not held back.
pub const TEAM_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_secs(60);

/// Makes the deferred recipients of `target` in `scope` due now, as `postqueue -f` does
/// for Postfix (for a team: no sooner than [`TEAM_RETRY_PAUSE`] after the receiver's last
/// answer). Scheduled mail keeps its time (change it with `PATCH /emails/{id}`), and mail
/// in flight is being tried already.
pub fn retry(state: &Services, scope: Scope, target: &RetryTarget) -> Result<Retried, QueueError> {
    let mut retried = Retried::default();
    let (domain, ids) = match target {
        RetryTarget::Message(id) => {
            let envelope = load(state, scope, *id)?;
            let now = state.now();
            if !envelope
                .recipients
                .iter()
                .any(|r| matches!(r.state, RecipientState::Deferred { next_attempt } if next_attempt > now))
            {
                return Err(QueueError::NothingToRetry(format!(
                    "Email {id} has no deferred recipient: it is due or scheduled, not waiting for a retry"
                )));
            }
            (None, vec![*id])
        }
        RetryTarget::Domain(domain) => (Some(destination(domain)), deferred_ids(state, scope, Some(domain))?),
        RetryTarget::All => (None, deferred_ids(state, scope, None)?),
    };
    for id in ids {
        if !state.spool().try_claim(id) {
            if matches!(target, RetryTarget::Message(_)) {
                return Err(QueueError::InFlight(id));
            }
            retried.in_flight += 1;
            continue;
        }
        let now = state.now();
        let mut recipients = 0;
        // `update` releases the claim taken above, whatever happens.
        state.spool().update(id, |envelope, _| {
            for recipient in &mut envelope.recipients {
                let here = domain.as_deref().is_none_or(|d| destination(&recipient.address) == d);
                let earliest = match (scope, recipient.last_attempt_at) {
                    (Scope::Team(_), Some(last)) => now.max(last.saturating_add(TEAM_RETRY_PAUSE)),
                    _ => now,
                };
                if let RecipientState::Deferred { next_attempt } = &mut recipient.state
                    && here
                    && *next_attempt > earliest
                {
                    *next_attempt = earliest;
                    recipients += 1;
                }
            }
            Ok(())
        })?;
        if recipients > 0 {
            retried.messages += 1;
            retried.recipients += recipients;
        }
    }
    if retried.messages > 0 {
        state.wake_delivery();
    }
    Ok(retried)
}

/// The messages in `scope` with a deferred recipient (at `domain`, when given).
fn deferred_ids(state: &Services, scope: Scope, domain: Option<&str>) -> Result<Vec<Id>, QueueError> {
    let domain = domain.map(destination);
    let mut ids = Vec::new();
    state.spool().walk(None, |id, envelope| {
        let deferred = envelope.recipients.iter().any(|r| {
            matches!(r.state, RecipientState::Deferred { .. })
                && domain.as_deref().is_none_or(|d| destination(&r.address) == d)
        });
        if deferred && scope.sees(&envelope) {
            ids.push(id);
        }
        Ok(true)
    })?;
    Ok(ids)
}

/// What a delete did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deleted {
    /// The message.
    pub id: Id,
    /// Its recipients that ended as `canceled`.
    pub canceled: usize,
}

impl Deleted {
    /// The answer of `DELETE /queue/{id}`.
    pub fn to_json(&self) -> Value {
        json!({ "object": "queued_email", "id": self.id, "deleted": true, "canceled": self.canceled })
    }
}

/// Takes message `id` out of the queue: each undelivered recipient ends as `canceled`,
/// with a `canceled` event on the email's timeline naming it (as a cancel over the API
/// writes), and the email's last event becomes `canceled`. Refused while a delivery
/// attempt holds the message, whose outcome would otherwise contradict the record.
pub fn delete(state: &Services, scope: Scope, id: Id) -> Result<Deleted, QueueError> {
    let loaded = load(state, scope, id)?;
    if !state.spool().try_claim(id) {
        return Err(QueueError::InFlight(id));
    }
    // The email's record changes with its envelope: under the email's lock, so that an
    // open or a bounce by mail arriving meanwhile is not written over.
    let _guard = loaded
        .team
        .parse::<Id>()
        .ok()
        .map(|team| crate::emails::lock(state, team, id));
    let emails = state.emails();
    let now = state.now();
    let mut canceled = 0;
    let updated = state.spool().update(id, |envelope, batch| {
        Ok(Change::within(batch, |change| {
            let team = envelope.team.parse::<Id>().ok();
            let mut status = match team {
                Some(team) => emails.status(team, id)?,
                None => None,
            };
            for recipient in &mut envelope.recipients {
                if recipient.state.is_final() {
                    continue;
                }
                recipient.state = RecipientState::Canceled { at: now };
                canceled += 1;
                if let Some(status) = status.as_mut() {
                    let data = json!({ "to": [recipient.address], "reason": "deleted from the queue by an operator" });
                    emails.record_event(change, status, EmailState::Canceled, data, now)?;
                }
                if let Some(team) = team {
                    let from = status.as_ref().map_or("", |s| s.from.as_str());
                    let metric = crate::counters::Metric::Canceled;
                    state.counters().count(change, team, from, now, metric);
                }
            }
            if let Some(status) = status.as_ref() {
                emails.put_status(change, status)?;
            }
            if let Some(team) = team {
                emails.arm_final(change, team, id, now);
            }
            Ok::<(), crate::storage::Error>(())
        })??)
    })?;
    match updated {
        Updated::Missing => Err(QueueError::NotFound(id)),
        Updated::Kept { .. } | Updated::Removed => Ok(Deleted { id, canceled }),
    }
}

/// The envelope of message `id`, if it is in `scope`.
fn load(state: &Services, scope: Scope, id: Id) -> Result<Envelope, QueueError> {
    match state.spool().load(id)? {
        Some((envelope, _)) if scope.sees(&envelope) => Ok(envelope),
        _ => Err(QueueError::NotFound(id)),
    }
}
