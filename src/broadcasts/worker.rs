//! The broadcast worker: expands queued broadcasts a page of contacts at a time.
//!
//! Each page's emails, the contacts' markers and the broadcast's progress (its cursor,
//! counts and status) go to disk in one synced write with the spool messages, so a crash
//! resumes after the last page written; a contact with a marker is never sent again, even
//! if the segment's order changed under the cursor.
//!
//! Pacing: while delivery runs, at most [`WINDOW`] of the worker's emails wait in the
//! spool for a first attempt (due, or in delivery's hands); past that the worker waits
//! for delivery to catch up.
//! Delivery takes due mail oldest first, so a transactional email accepted during a
//! broadcast waits behind that window at most, never behind the rest of the broadcast.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use herald_queue::{Id, RecipientState};
use serde_json::json;

use super::{Broadcast, Outcome, Recipient, Status, personalise};
use crate::accounts::Permission;
use crate::emails::EmailState;
use crate::emails::accept::accept_with;
use crate::emails::record::Source;
use crate::emails::submit::{self, Sender};
use crate::services::{Error, Services};
use crate::shutdown::Shutdown;
use crate::storage::Change;
use crate::storage::page::{Cursor, PageRequest};

/// Contacts expanded per write.
const PAGE: usize = 500;

/// A page ends early once its emails (message and record) pass this many bytes.
const PAGE_BYTES_MAX: usize = 32 * 1024 * 1024;

/// The most emails of broadcasts waiting in the spool for their first attempt.
pub const WINDOW: usize = 1_000;

/// The longest the worker sleeps with nothing to do (a send wakes it sooner); a
/// scheduled broadcast starts within this of its time.
const IDLE: Duration = Duration::from_millis(500);

/// The wait while delivery catches up with the window.
const PACE: Duration = Duration::from_millis(20);

/// What the worker keeps between passes.
#[derive(Debug, Default)]
struct Pacer {
    /// The emails made, oldest first, that may still wait for a first attempt.
    pending: VecDeque<Id>,
    /// Whose turn it is among the broadcasts due.
    turn: usize,
}

/// What a pass did.
enum Pass {
    /// Nothing to do now.
    Idle,
    /// A page was written; more may follow at once.
    More,
    /// The window is full.
    Paced,
}

/// Runs until shutdown, sending what is queued, resuming what a restart interrupted.
pub async fn run(services: Arc<Services>, mut shutdown: Shutdown) {
    let wake = services.broadcast_wake().clone();
    let pending: Arc<Mutex<Pacer>> = Arc::default();
    while !shutdown.is_triggered() {
        let (state, pending) = (Arc::clone(&services), Arc::clone(&pending));
        let pass = tokio::task::spawn_blocking(move || {
            let mut pending = pending.lock().unwrap_or_else(PoisonError::into_inner);
            step(&state, &mut pending)
        })
        .await;
        let wait = match pass {
            Ok(Ok(Pass::More)) => continue,
            Ok(Ok(Pass::Paced)) => PACE,
            Ok(Ok(Pass::Idle)) => IDLE,
            Ok(Err(error)) => {
                tracing::warn!(%error, "a broadcast page failed; retrying");
                IDLE
            }
            Err(error) => {
                tracing::error!(%error, "a broadcast task failed");
                IDLE
            }
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = wake.woken() => {}
            () = shutdown.triggered() => return,
        }
    }
}

/// The room left in the window (`PAGE` when delivery is off: nothing would drain it):
/// the emails still waiting in the spool are counted from the oldest, which leave first.
fn room(services: &Services, pending: &mut VecDeque<Id>) -> Result<usize, Error> {
    if !services.config().delivery.enabled {
        pending.clear();
        return Ok(PAGE);
    }
    let spool = services.spool();
    while let Some(id) = pending.front() {
        // Waiting for delivery, or in its hands: ahead of any mail accepted now. A
        // deferred email waits for its retry time and holds nothing up meanwhile.
        let waiting = spool
            .envelope(*id)?
            .is_some_and(|envelope| envelope.recipients.iter().any(|r| r.state == RecipientState::Pending));
        if waiting {
            break;
        }
        pending.pop_front();
    }
    Ok(WINDOW.saturating_sub(pending.len()).min(PAGE))
}

/// Works one page of the oldest broadcast that is due.
fn step(services: &Services, pacer: &mut Pacer) -> Result<Pass, Error> {
    let now = services.now();
    let due: Vec<Broadcast> = services
        .broadcasts()
        .queued()?
        .into_iter()
        .filter(|b| b.status == Status::Sending || b.scheduled_at.is_none_or(|at| at <= now))
        .collect();
    // Broadcasts due together take turns, a page each: a million-contact one does not
    // hold back another team's hundred.
    let Some(due) = due.get(pacer.turn % due.len().max(1)).cloned() else {
        return Ok(Pass::Idle);
    };
    pacer.turn = pacer.turn.wrapping_add(1);
    let pending = &mut pacer.pending;
    let room = room(services, pending)?;
    if room == 0 {
        return Ok(Pass::Paced);
    }
    let _guard = services.broadcast_lock();
    // Read again under the lock: a cancel may have come first.
    let Some(broadcast) = services
        .broadcasts()
        .get(due.team_id, due.id)?
        .filter(|b| b.status.is_queued())
    else {
        return Ok(Pass::More);
    };
    page(services, broadcast, room, pending)?;
    Ok(Pass::More)
}

/// Stops `broadcast` for good, saying why in the log.
fn stop(services: &Services, mut broadcast: Broadcast, why: &str) -> Result<(), Error> {
    tracing::warn!(broadcast_id = %broadcast.id, team_id = %broadcast.team_id, why, "broadcast stopped");
    broadcast.status = Status::Canceled;
    broadcast.finished_at = Some(services.now());
    services.broadcasts().put(&broadcast)?;
    Ok(())
}

/// Expands the next page (of at most `limit` contacts) of `broadcast`'s segment.
fn page(services: &Services, mut broadcast: Broadcast, limit: usize, pending: &mut VecDeque<Id>) -> Result<(), Error> {
    let team = broadcast.team_id;
    let now = services.now();
    if broadcast.status == Status::Scheduled {
        broadcast.status = Status::Sending;
    }
    broadcast.sent_at.get_or_insert(now);
    // What was checked at send time may have changed since: a property deleted, the
    // domain removed.
    let prepared = match personalise::prepare(&broadcast, services.audience().properties(team)?) {
        Ok(prepared) => prepared,
        Err(error) => return stop(services, broadcast, &error.to_string()),
    };
    let sender = Sender {
        team_id: team,
        api_key_id: None,
        permission: Permission::FullAccess,
        domain_id: None,
        request_log_id: None,
    };
    let from_domain = broadcast
        .from
        .rsplit_once('@')
        .map_or("", |(_, d)| d.trim_end_matches('>'));
    let domain = match submit::authorize_domain(services, &sender, from_domain) {
        Ok(domain) => domain,
        // Deleted: nothing will send it again.
        Err(error)
            if services
                .domains()
                .by_name(team, &from_domain.to_ascii_lowercase())?
                .is_none() =>
        {
            return stop(services, broadcast, &error.to_string());
        }
        // Being verified again, or a storage fault: tried again later.
        Err(error) => return Err(Error::invalid(error.to_string())),
    };
    let topic = match broadcast.topic_id {
        Some(id) => match services.audience().topic(team, id)? {
            Some(topic) => Some(topic),
            // Without its topic, nobody's choice about it can be honoured.
            None => return stop(services, broadcast, "its topic was deleted"),
        },
        None => None,
    };
    let request = PageRequest {
        limit,
        cursor: broadcast.cursor.map_or(Cursor::Start, Cursor::After),
    };
    let (ids, has_more) = services.contacts().segment_ids(team, broadcast.segment_id, &request)?;
    let mut change = Change::new();
    let mut emails = Vec::with_capacity(ids.len());
    let mut bytes = 0usize;
    let mut shares = Vec::new();
    let allowance = crate::quotas::Allowance::of(services.plan_of(team)?);
    let mut last = None;
    for id in &ids {
        // A page's write stays within a budget however large the broadcast's body is.
        if bytes > PAGE_BYTES_MAX {
            break;
        }
        last = Some(*id);
        let Some(contact) = services
            .contacts()
            .get(team, *id)?
            .filter(|c| c.segments.contains(&broadcast.segment_id))
        else {
            continue;
        };
        if services.broadcasts().recipient(&broadcast, contact.id)?.is_some() {
            continue;
        }
        broadcast.counts.total += 1;
        let mut recipient = Recipient {
            contact_id: contact.id,
            email: contact.email.clone(),
            outcome: Outcome::Sent,
            email_id: None,
            reason: None,
        };
        if !contact.receives(topic.as_ref()) {
            recipient.outcome = Outcome::Unsubscribed;
            broadcast.counts.unsubscribed += 1;
        } else if let Some(suppression) = services.suppressions().find(team, &contact.email)? {
            recipient.outcome = Outcome::Suppressed;
            broadcast.counts.suppressed += 1;
            // Recorded as the contact would have got it, where its content can be made.
            let subject = prepared
                .render(&broadcast, &contact)
                .map_or(broadcast.subject.clone(), |e| e.subject);
            let detail = crate::delivery::decide::suppressed_detail(suppression.origin);
            let unsent = Skipped {
                prepared: &prepared,
                address: &contact.email,
                subject: &subject,
            };
            recipient.email_id = Some(skipped(
                &mut change,
                services,
                &broadcast,
                unsent,
                EmailState::Suppressed,
                detail,
            )?);
        } else {
            // Over the plan's quota, or a contact the content cannot be rendered for: the
            // recipient fails with the reason.
            let rendered = match over_quota(services, &mut change, &mut shares, (team, allowance), now)? {
                Some(period) => Err(period.failure_reason().to_owned()),
                None => prepared.render(&broadcast, &contact),
            };
            match rendered {
                Err(reason) => {
                    recipient.outcome = Outcome::Failed;
                    broadcast.counts.failed += 1;
                    let detail = json!({ "failed": { "reason": reason } });
                    let unsent = Skipped {
                        prepared: &prepared,
                        address: &contact.email,
                        subject: &broadcast.subject,
                    };
                    recipient.email_id = Some(skipped(
                        &mut change,
                        services,
                        &broadcast,
                        unsent,
                        EmailState::Failed,
                        detail,
                    )?);
                    recipient.reason = Some(reason);
                }
                Ok(email) => {
                    let made = submit::prepare(services, &sender, &email, &domain, Source::Broadcast)
                        .map_err(|e| Error::invalid(e.to_string()))?;
                    recipient.email_id = Some(made.id);
                    bytes += made.message.raw.len() * 2;
                    broadcast.counts.sent += 1;
                    emails.push(made);
                }
            }
        }
        services
            .broadcasts()
            .stage_recipient(&mut change, &broadcast, &recipient)?;
    }
    if let Some(last) = last {
        broadcast.cursor = Some(last);
    }
    if !has_more && last == ids.last().copied() {
        broadcast.status = Status::Sent;
        broadcast.finished_at = Some(now);
        tracing::info!(broadcast_id = %broadcast.id, team_id = %team, counts = ?broadcast.counts, "broadcast sent");
    }
    services.broadcasts().stage(&mut change, &broadcast)?;
    let ids: Vec<Id> = emails.iter().map(|e| e.id).collect();
    let written = if ids.is_empty() {
        services.broadcasts().commit(change).map_err(Error::from)
    } else {
        accept_with(services, emails, change, Source::Broadcast)
            .and_then(|accepting| accepting.wait())
            .map(|_| ())
            .map_err(|e| Error::invalid(e.to_string()))
    };
    if let Err(error) = written {
        // The page is done again: its recipients take their quota again then.
        for share in shares {
            services.quotas().give_back(share);
        }
        return Err(error);
    }
    metrics::counter!("herald_broadcast_emails_total").increment(ids.len() as u64);
    pending.extend(ids);
    Ok(())
}

/// A contact that is not sent its email, and the subject its record shows.
#[derive(Clone, Copy)]
struct Skipped<'a> {
    prepared: &'a personalise::Prepared,
    address: &'a str,
    subject: &'a str,
}

/// Records the email of a contact that is not sent one (`state` is `suppressed` or
/// `failed`, `detail` what its event says of why); its id.
fn skipped(
    change: &mut Change,
    services: &Services,
    broadcast: &Broadcast,
    contact: Skipped<'_>,
    state: EmailState,
    detail: serde_json::Value,
) -> Result<Id, Error> {
    let unsent = submit::Unsent {
        team_id: broadcast.team_id,
        from: &broadcast.from,
        to: contact.address,
        subject: contact.subject,
        tags: vec![contact.prepared.tag().clone()],
        broadcast_id: Some(broadcast.id),
        topic_id: broadcast.topic_id,
        state,
        detail,
    };
    Ok(submit::record_unsent(change, services, unsent)?)
}

/// Takes one email of the team's `allowance` for a recipient, adding its counters to
/// `change`; the period that has none left instead.
fn over_quota(
    services: &Services,
    change: &mut Change,
    shares: &mut Vec<crate::quotas::Share>,
    (team, allowance): (Id, crate::quotas::Allowance),
    now: herald_queue::Timestamp,
) -> Result<Option<crate::quotas::Period>, Error> {
    Ok(
        match services
            .quotas()
            .take(services.counters(), team, allowance, 1, now, change)?
        {
            Ok(share) => {
                shares.push(share);
                None
            }
            Err(exceeded) => Some(exceeded.period),
        },
    )
}
