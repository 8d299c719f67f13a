//! Writing an attempt's outcomes: each recipient's new state, its event (timeline and
//! webhook outbox), the email record's `last_event` and attempt log, and suppressions
//! for hard bounces, all in the one spool update that releases the claim. What each
//! outcome amounts to is [`super::decide`]'s to say.
//!
//! The outcome thread writes them, every message finished since its last write in one
//! durable commit: the workers never wait for a disk, and a finished message costs a
//! share of one fsync however many finish at once.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use herald_queue::{Envelope, RecipientState, Timestamp};
use rand::Rng;
use serde_json::{Value, json};

use super::decide::{RetryPolicy, decide};
use super::job::{MessageJob, Outcome, Via};
use super::reply::Reply;
use crate::config::DeliveryConfig;
use crate::emails::EmailState;
use crate::emails::record::{AttemptLog, EmailRecord, EmailStatus};
use crate::events::EventKind;
use crate::services::Services;
use crate::storage::Change;
use crate::suppressions::{self, Origin, Suppression};

/// Messages whose outcomes are written in one commit at most: bounds one write's size
/// and the time the first of them waits for the last.
pub const GROUP_MAX: usize = 512;

/// Writes the outcomes of `jobs` in one durable write, and releases their claims (their
/// runner claims as the jobs drop). Blocks until durable.
pub fn write(services: &Services, jobs: Vec<Arc<MessageJob>>) {
    let (spool, config) = (services.spool(), &services.config().delivery);
    let mut pending: Vec<(Arc<MessageJob>, Vec<Option<Outcome>>)> = Vec::with_capacity(jobs.len());
    for job in jobs {
        let results = job.take_results();
        if results.iter().all(Option::is_none) {
            spool.release(job.id);
        } else {
            pending.push((job, results));
        }
    }
    // A failed write must not be dropped: the recipients would be due again at once and
    // delivered again. Storage refusals (a full commit queue) pass; keep trying a while.
    let mut wait = Duration::from_millis(50);
    for attempt in 1..=WRITE_ATTEMPTS {
        if pending.is_empty() {
            return;
        }
        let mut suppressed = HashSet::new();
        // Each email's record is read and rewritten below: under its lock, taken before
        // the spool's (as every other change of an email takes them), so that an open,
        // a click or a bounce by mail landing meanwhile is neither lost nor counted twice.
        let locked = crate::emails::lock_many(services, pending.iter().map(|(job, _)| (job.team_id, job.id)));
        let written = spool.update_many(
            &pending,
            |(job, _)| job.id,
            |(job, results), envelope, batch| {
                Ok(Change::within(batch, |change| {
                    apply(services, config, job, results, &mut suppressed, envelope, change)
                })??)
            },
        );
        drop(locked);
        let mut failed = Vec::new();
        for (item, result) in pending.into_iter().zip(written) {
            match result {
                Ok(_) => {}
                Err(error) if attempt == WRITE_ATTEMPTS => {
                    // The claim is released; the recipients stay as they were and are
                    // tried again (at least once delivery).
                    tracing::error!(email_id = %item.0.id, %error, "cannot record delivery outcomes");
                }
                Err(error) => {
                    tracing::warn!(email_id = %item.0.id, %error, attempt, "recording delivery outcomes failed; retrying");
                    failed.push(item);
                }
            }
        }
        pending = failed;
        if !pending.is_empty() {
            std::thread::sleep(wait);
            wait = (wait * 2).min(Duration::from_secs(5));
        }
    }
}

/// Tries at writing one attempt's outcomes (about a minute in all).
const WRITE_ATTEMPTS: u32 = 16;

fn apply(
    services: &Services,
    config: &DeliveryConfig,
    job: &MessageJob,
    results: &[Option<Outcome>],
    suppressed_now: &mut HashSet<(herald_queue::Id, String)>,
    envelope: &mut Envelope,
    change: &mut Change,
) -> Result<(), crate::storage::Error> {
    let _span = tracing::info_span!("delivery", email_id = %job.id).entered();
    let now = services.now();
    // A record that cannot be read loses its events, not the delivery state.
    let mut record = services.emails().status(job.team_id, job.id).unwrap_or_else(|error| {
        tracing::error!(email_id = %job.id, %error, "cannot read the email record");
        None
    });
    let mut logs: Vec<(Option<Via>, String, Vec<String>)> = Vec::new();
    let policy = RetryPolicy {
        intervals: &config.retry_intervals,
        expiry: envelope.first_due.saturating_add(config.message_lifetime),
    };
    for (index, result) in results.iter().enumerate() {
        let (Some(result), Some(recipient)) = (result, envelope.recipients.get_mut(index)) else {
            continue;
        };
        if recipient.state.is_final() {
            continue; // canceled while in flight
        }
        let address = recipient.address.clone();
        match result {
            Outcome::Failed(reason) => recipient.last_response = Some(reason.clone()),
            Outcome::Replied { reply, via } => {
                recipient.attempts += 1;
                recipient.last_response = Some(reply.to_string());
                recipient.last_attempt_at = Some(now);
                push_log(&mut logs, via.as_ref(), reply, &address);
            }
            Outcome::Held { reply, .. } => {
                recipient.attempts += 1;
                recipient.last_response = Some(reply.to_string());
                recipient.last_attempt_at = Some(now);
                push_log(&mut logs, None, reply, &address);
            }
            Outcome::Suppressed(_) => {}
        }
        let jitter = rand::rng().random_range(0.9..=1.1);
        let decision = decide(result, recipient.attempts, now, policy, jitter);
        if decision.suppresses()
            && suppressed_now.insert((job.team_id, suppressions::normalize(&address)))
            && services.suppressions().find(job.team_id, &address)?.is_none()
        {
            let entry = Suppression::new(
                (services.next_id(), services.now()),
                job.team_id,
                &address,
                Origin::Bounce,
                Some(job.id),
            );
            services.suppressions().stage(change, &entry)?;
            crate::services::outbox::push(change, services, job.team_id, EventKind::SuppressionAdded, || {
                entry.event_json()
            })?;
        }
        recipient.state = decision.state(now);
        count(&recipient.state);
        tracing::debug!(recipient = %address, outcome = ?recipient.state, reply = ?recipient.last_response, "delivery outcome");
        if let Some((state, data)) = decision.event() {
            event(services, change, record.as_mut(), job, &address, state, now, &data)?;
        }
    }
    // Each transaction made from a source address counts against its day (warm-up):
    // one per transaction the attempt made (each piece of the message is one, even
    // over the same connection), however its recipients were answered.
    let mut counted: Vec<u64> = Vec::new();
    for via in logs.iter().filter_map(|(via, _, _)| via.as_ref()) {
        if let Some(source) = via.source
            && !counted.contains(&via.transaction)
        {
            counted.push(via.transaction);
            crate::regions::count(services.counters(), change, source, now, 1);
        }
    }
    if let Some(mut record) = record {
        for (via, reply, recipients) in logs {
            record.attempts.push(AttemptLog {
                at: now,
                recipients,
                host: via.as_ref().map(|v| v.host.clone()),
                ip: via.as_ref().and_then(|v| v.ip).map(|ip| ip.to_string()),
                source: via.as_ref().and_then(|v| v.source).map(|ip| ip.to_string()),
                tls: via.and_then(|v| v.tls),
                reply,
            });
        }
        let excess = record.attempts.len().saturating_sub(EmailRecord::ATTEMPTS_KEPT);
        record.attempts.drain(..excess);
        services.emails().put_status(change, &record)?;
    }
    if envelope.next_due().is_none() {
        // Every recipient is final: the message leaves the spool in this write, and its
        // record's retention starts.
        services.emails().arm_final(change, job.team_id, job.id, now);
    }
    Ok(())
}

/// Counts an outcome in `herald_delivery_outcomes_total`.
fn count(state: &RecipientState) {
    let outcome = match state {
        RecipientState::Pending => "pending",
        RecipientState::Deferred { .. } => "deferred",
        RecipientState::Delivered { .. } => "delivered",
        RecipientState::Bounced { .. } => "bounced",
        RecipientState::Expired { .. } => "expired",
        RecipientState::Canceled { .. } => "canceled",
        RecipientState::Suppressed { .. } => "suppressed",
    };
    metrics::counter!("herald_delivery_outcomes_total", "outcome" => outcome).increment(1);
}

/// Groups recipients that shared an attempt (same host, same reply) into one log entry.
fn push_log(logs: &mut Vec<(Option<Via>, String, Vec<String>)>, via: Option<&Via>, reply: &Reply, address: &str) {
    let text = reply.to_string();
    if let Some((_, _, recipients)) = logs.iter_mut().find(|(v, r, _)| v.as_ref() == via && *r == text) {
        recipients.push(address.to_owned());
    } else {
        logs.push((via.cloned(), text, vec![address.to_owned()]));
    }
}

/// Adds one recipient's event: on the email's timeline and, as `email.<kind>`, in the
/// webhook outbox; `last_event` follows.
#[allow(clippy::too_many_arguments)]
fn event(
    services: &Services,
    change: &mut Change,
    record: Option<&mut EmailStatus>,
    job: &MessageJob,
    address: &str,
    kind: EmailState,
    at: Timestamp,
    extra: &Value,
) -> Result<(), crate::storage::Error> {
    let Some(record) = record else {
        return Ok(());
    };
    let data = merge(json!({ "to": [address] }), extra);
    services.emails().record_event(change, record, kind, data, at)?;
    let metric = crate::counters::Metric::of(kind, extra);
    services.counters().count(change, job.team_id, &record.from, at, metric);
    let Some(webhook_kind) = kind.event_kind() else {
        return Ok(());
    };
    crate::services::outbox::push(change, services, record.team_id, webhook_kind, || {
        let mut data = record.event_data(at);
        data["to"] = json!([address]);
        merge(data, extra)
    })?;
    Ok(())
}

fn merge(mut base: Value, extra: &Value) -> Value {
    if let (Value::Object(base), Value::Object(extra)) = (&mut base, extra) {
        for (key, value) in extra {
            base.insert(key.clone(), value.clone());
        }
    }
    base
}
