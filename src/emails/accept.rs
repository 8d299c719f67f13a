//! The one way mail comes in, whichever door it used (REST or SMTP): the prepared emails'
//! spool entries, their records and first events, and the idempotency record go to disk
//! in one synced write; once that is durable the acceptance is counted and delivery is
//! woken. Nothing is acknowledged before.

use herald_queue::{Admission, Enqueue, Id, Timestamp};

use crate::storage::Change;

use super::idempotency::{Answer, InFlight};
use super::record::Source;
use super::submit::{Prepared, SendError};
use crate::quotas::{Allowance, Share};
use crate::services::Services;

/// Emails on their way to disk. [`Accepting::wait`] on a blocking thread, or
/// [`Accepting::durable`] on an async task, for their ids.
#[must_use = "nothing is accepted until it is durable: wait for it"]
pub struct Accepting<'a> {
    state: &'a Services,
    ids: Vec<Id>,
    source: Source,
    enqueue: Enqueue,
    /// Before the spool gave the emails their due times: delivery is woken from here.
    since: Timestamp,
    /// The quota the emails took, given back if they are not written.
    shares: Vec<Share>,
}

/// Starts the write of `prepared` from `source`, with the record of `remember`'s answer
/// under its idempotency key when the request carried one.
pub fn accept<'a>(
    state: &'a Services,
    prepared: Vec<Prepared>,
    remember: Option<(&InFlight<'_>, Answer)>,
    source: Source,
) -> Result<Accepting<'a>, SendError> {
    let mut records = Change::new();
    if let Some((in_flight, answer)) = remember {
        in_flight.record(&mut records, answer, state.now())?;
    }
    accept_with(state, prepared, records, source)
}

/// Starts the write of `prepared` from `source` with `records`, more records that go in
/// the same synced write (a broadcast's markers and progress).
pub fn accept_with(
    state: &Services,
    prepared: Vec<Prepared>,
    mut records: Change,
    source: Source,
) -> Result<Accepting<'_>, SendError> {
    let ids: Vec<Id> = prepared.iter().map(|p| p.id).collect();
    // A broadcast takes its quota recipient by recipient, as it expands.
    let shares = if source == Source::Broadcast {
        Vec::new()
    } else {
        take_quota(state, &prepared, &mut records)?
    };
    let messages = prepared
        .into_iter()
        .map(|p| {
            records.extend(p.records);
            p.message
        })
        .collect();
    let since = state.now();
    // The records shared through a database are committed here, before the spool's
    // write; if that fails, nothing was accepted and the quota taken goes back.
    let records = match records.into_local() {
        Ok(records) => records,
        Err(error) => {
            for share in shares {
                state.quotas().give_back(share);
            }
            return Err(error.into());
        }
    };
    Ok(Accepting {
        state,
        ids,
        source,
        enqueue: state.spool().enqueue_many(messages, records),
        since,
        shares,
    })
}

impl Accepting<'_> {
    /// Blocks until the emails are durable (their ids) or refused. Not for async tasks.
    pub fn wait(self) -> Result<Vec<Id>, SendError> {
        let admission = self.enqueue.wait();
        done(
            self.state,
            self.ids,
            self.source,
            self.since,
            self.shares,
            Ok(admission?),
        )
    }

    /// Waits, without blocking the task's thread, until the emails are durable (their
    /// ids) or refused.
    pub async fn durable(self) -> Result<Vec<Id>, SendError> {
        let admission = self.enqueue.await;
        done(
            self.state,
            self.ids,
            self.source,
            self.since,
            self.shares,
            Ok(admission?),
        )
    }
}

fn done(
    state: &Services,
    ids: Vec<Id>,
    source: Source,
    since: Timestamp,
    shares: Vec<Share>,
    admission: Result<Admission, crate::storage::Error>,
) -> Result<Vec<Id>, SendError> {
    if !matches!(admission, Ok(Admission::Accepted(_))) {
        for share in shares {
            state.quotas().give_back(share);
        }
    }
    match admission? {
        Admission::Accepted(_) => {
            for id in &ids {
                tracing::debug!(email_id = %id, source = source.label(), "email accepted");
            }
            // Another email may have taken a later time, committed first and been read
            // already: these sort before it.
            state.delivery_wake().wake_from(since);
            metrics::counter!("herald_emails_accepted_total", "source" => source.label()).increment(ids.len() as u64);
            Ok(ids)
        }
        Admission::Refused(refusal) => Err(SendError::Unavailable(refusal)),
    }
}

/// Takes the quota of `prepared` (each recipient one email) from each team's plan,
/// adding the counters to `records`; refuses it whole when a team would go over.
fn take_quota(state: &Services, prepared: &[Prepared], records: &mut Change) -> Result<Vec<Share>, SendError> {
    let mut counts: Vec<(Id, u64)> = Vec::new();
    for email in prepared {
        let team = email
            .message
            .team
            .parse::<Id>()
            .map_err(|_| SendError::Internal(format!("email {} has no team", email.id)))?;
        let count = email.message.recipients.len() as u64;
        match counts.iter_mut().find(|(t, _)| *t == team) {
            Some((_, n)) => *n += count,
            None => counts.push((team, count)),
        }
    }
    let now = state.now();
    let mut shares = Vec::with_capacity(counts.len());
    for (team, count) in counts {
        let allowance = Allowance::of(state.plan_of(team)?);
        match state
            .quotas()
            .take(state.counters(), team, allowance, count, now, records)?
        {
            Ok(share) => shares.push(share),
            Err(exceeded) => {
                for share in shares {
                    state.quotas().give_back(share);
                }
                return Err(SendError::Quota(exceeded));
            }
        }
    }
    Ok(shares)
}
