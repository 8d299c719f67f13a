//! The emails service after acceptance ([`super::accept`]): read one, list, reschedule and
//! cancel a scheduled email. Rules live here, for every adapter.

use herald_queue::{Id, RecipientState, Timestamp, Updated};

use super::{EmailRecord, EmailState, schedule, submit};
use crate::accounts::Caller;
use crate::services::{Error, Services};
use crate::storage::Change;
use crate::storage::page::PageRequest;

use super::lock;

/// The caller's email `id` with its delivery status and bodies.
pub fn get(services: &Services, caller: &Caller, id: Id) -> Result<EmailRecord, Error> {
    let mut record = load(services, caller, id)?;
    super::content::fill(services.spool(), &mut record)?;
    Ok(record)
}

/// The caller's email `id` with its delivery status, as stored: bodies kept in the
/// message are not read (what a change writes back).
fn load(services: &Services, caller: &Caller, id: Id) -> Result<EmailRecord, Error> {
    caller.require_full_access()?;
    services
        .emails()
        .get(caller.team_id, id)?
        .ok_or(Error::NotFound("Email not found"))
}

/// One page of the caller's team's emails with their delivery status, newest first.
pub fn list(services: &Services, caller: &Caller, page: &PageRequest) -> Result<(Vec<EmailRecord>, bool), Error> {
    caller.require_full_access()?;
    Ok(services.emails().list(caller.team_id, page)?)
}

/// Refuses changes to an email that is not scheduled or whose delivery has begun; else
/// claims its spool message, for the spool update that follows (which releases it).
fn still_scheduled(services: &Services, record: &EmailRecord, verb: &str) -> Result<(), Error> {
    let refused = |why: &str| Err(Error::invalid(format!("The email cannot be {verb}: {why}")));
    if record.last_event != EmailState::Scheduled {
        return refused(&format!(
            "it is not scheduled (its last event is {})",
            record.last_event
        ));
    }
    let spool = services.spool();
    let Some((envelope, _)) = spool.load(record.id)? else {
        return refused("it has left the queue");
    };
    let begun = spool.is_claimed(record.id)
        || envelope.due <= services.now()
        || envelope
            .recipients
            .iter()
            .any(|r| r.attempts > 0 || r.state != RecipientState::Pending);
    // Claimed as a delivery worker would claim it, so that no worker takes it between
    // this check and the change; the spool update that follows releases the claim.
    if begun || !spool.try_claim(record.id) {
        return refused("its delivery has already begun");
    }
    Ok(())
}

/// Moves the caller's scheduled email `id` to `scheduled_at` (an ISO 8601 time or
/// natural language such as "in 1 hour"); returns the new time.
pub fn reschedule(
    services: &Services,
    caller: &Caller,
    id: Id,
    scheduled_at: Option<String>,
) -> Result<Timestamp, Error> {
    caller.require_full_access()?;
    let text = scheduled_at.ok_or(Error::MissingField("scheduled_at"))?;
    let at = schedule::parse(&text, services.now()).map_err(Error::invalid)?;
    let _guard = lock(services, caller.team_id, id);
    let mut record = load(services, caller, id)?;
    still_scheduled(services, &record, "rescheduled")?;
    match services.spool().reschedule(record.id, at)? {
        Updated::Kept { .. } => {}
        Updated::Missing | Updated::Removed => {
            return Err(Error::invalid("The email cannot be rescheduled: it has left the queue"));
        }
    }
    record.scheduled_at = Some(at);
    let mut change = Change::new();
    services.emails().put_record(&mut change, &record)?;
    services.emails().commit(change)?;
    Ok(at)
}

/// Cancels the caller's scheduled email `id`: it leaves the queue with its `canceled`
/// state and event in the same write.
pub fn cancel(services: &Services, caller: &Caller, id: Id) -> Result<(), Error> {
    caller.require_full_access()?;
    let _guard = lock(services, caller.team_id, id);
    let mut record = load(services, caller, id)?;
    still_scheduled(services, &record, "canceled")?;
    let now = services.now();
    let outcome = services.spool().cancel(record.id, |_, batch| {
        Ok(Change::within(batch, |change| {
            submit::stage_canceled(change, services, &mut record, now)
        })??)
    })?;
    if outcome == Updated::Missing {
        return Err(Error::invalid("The email cannot be canceled: it has left the queue"));
    }
    Ok(())
}
