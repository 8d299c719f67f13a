//! Bounces and complaints that come back by mail.
//!
//! herald's return path is `<email id>@<return-path host>` (VERP), and the MX record each
//! domain publishes for that host points at herald. Listeners with `mx = true` take mail
//! without AUTH or TLS, as a receiving MX sends it, but only for recipients at the
//! return-path host of a verified domain ([`check_recipient`]); every other recipient is
//! refused at `RCPT`, so an `mx` listener is never a relay.
//!
//! What arrives is parsed ([`report`]) and matched to its email by the VERP address, else
//! by the returned original's `Message-ID` ([`intake`]):
//! - a delivery status notification's failed recipients become `email.bounced` (Permanent
//!   or Transient, with the diagnostic code), hard bounces joining the suppression list as
//!   synchronous ones do; delayed ones become `email.delivery_delayed`;
//! - an abuse report (ARF) becomes `email.complained` and a suppression with origin
//!   `complaint`;
//! - anything else (auto-replies, out-of-office, junk, reports matching no email) is
//!   dropped after `250` and counted in `herald_feedback_total`: never delivered anywhere,
//!   never bounced back.

pub mod report;
mod return_paths;

use herald_queue::{Id, Timestamp};
use serde_json::{Value, json};

use crate::delivery::reply::Reply as SmtpReply;
use crate::emails::EmailState;
use crate::emails::record::EmailStatus;
use crate::events::EventKind;
use crate::services::{Error, Services};
use crate::storage::Change;
use crate::suppressions::{self, Origin, Suppression};
use report::{Action, Report};

pub use return_paths::ReturnPaths;

/// The local part complaints (feedback loops) may be sent to besides the VERP address.
pub const FBL_LOCAL_PART: &str = "fbl";

/// The local part and lower-cased host of `address`.
fn split(address: &str) -> Option<(&str, String)> {
    let (local, host) = address.rsplit_once('@')?;
    Some((local, host.trim_end_matches('.').to_ascii_lowercase()))
}

/// Whether an inbound transaction may have the recipient `to`: an address at the
/// return-path host of a verified domain. The refusal is `550 5.7.1`.
pub fn check_recipient(services: &Services, to: &str) -> Result<(), herald_smtp::Reply> {
    let refused = || {
        herald_smtp::Reply::new(
            550,
            "5.7.1",
            "Relay access denied: this server takes mail only for its return-path addresses",
        )
    };
    let (_, host) = split(to).ok_or_else(refused)?;
    match services.return_paths().teams(services.domains(), &host) {
        Ok(teams) if !teams.is_empty() => Ok(()),
        Ok(_) => Err(refused()),
        Err(error) => {
            tracing::warn!(%error, "cannot look up return-path hosts");
            Err(herald_smtp::Reply::new(
                451,
                "4.3.0",
                "Temporary lookup failure, try again later",
            ))
        }
    }
}

/// What became of one inbound message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intake {
    /// A DSN: this many bounces and delays recorded.
    Delivery(usize),
    /// An abuse report recorded.
    Complaint,
    /// Dropped: not a report, a report of another kind, or matching no email of ours.
    Dropped(&'static str),
}

impl Intake {
    fn label(self) -> &'static str {
        match self {
            // A DSN without one usable recipient block.
            Intake::Delivery(0) => "malformed",
            Intake::Delivery(_) => "dsn",
            Intake::Complaint => "complaint",
            Intake::Dropped(why) => why,
        }
    }
}

/// Takes in one message sent to `recipients` (checked return-path addresses).
pub fn intake(services: &Services, recipients: &[String], message: &[u8]) -> Result<Intake, Error> {
    let parsed = report::parse(message);
    let outcome = match &parsed {
        Report::Other => Intake::Dropped("other"),
        Report::Delivery(dsn) => match find_email(services, recipients, dsn.original_message_id.as_deref(), None)? {
            None => Intake::Dropped("unmatched"),
            Some(status) => Intake::Delivery(delivery(services, status, dsn)?),
        },
        Report::Feedback(arf) if !is_complaint(&arf.feedback_type) => Intake::Dropped("feedback_other"),
        Report::Feedback(arf) => {
            let found = find_email(
                services,
                recipients,
                arf.original_message_id.as_deref(),
                arf.original_mail_from.as_deref(),
            )?;
            match found {
                None => Intake::Dropped("unmatched"),
                Some(status) => {
                    complaint(services, status, arf)?;
                    Intake::Complaint
                }
            }
        }
    };
    metrics::counter!("herald_feedback_total", "kind" => outcome.label()).increment(1);
    Ok(outcome)
}

/// ARF feedback types that are complaints about the mail (RFC 5965 and 6650): not
/// `not-spam` nor `auth-failure` (a DMARC/SPF report about someone else's mail).
fn is_complaint(kind: &str) -> bool {
    matches!(kind, "abuse" | "fraud" | "virus" | "other")
}

/// The email a report is about: the VERP address it was sent to, else the returned
/// original's `Message-ID` (`<id>@<hostname>`), else the ARF's `Original-Mail-From`, within
/// the teams owning the return-path host it came to.
fn find_email(
    services: &Services,
    recipients: &[String],
    message_id: Option<&str>,
    mail_from: Option<&str>,
) -> Result<Option<EmailStatus>, Error> {
    let hostname = &services.config().server.hostname;
    for recipient in recipients {
        let Some((local, host)) = split(recipient) else {
            continue;
        };
        let teams = services.return_paths().teams(services.domains(), &host)?;
        let mut candidates: Vec<Id> = Vec::new();
        candidates.extend(local.parse::<Id>().ok());
        if let Some((id, at)) = message_id.and_then(|m| m.trim_matches(['<', '>']).split_once('@'))
            && at.eq_ignore_ascii_case(hostname)
        {
            candidates.extend(id.parse::<Id>().ok());
        }
        if let Some((id, _)) = mail_from.and_then(|m| m.trim_matches(['<', '>']).split_once('@')) {
            candidates.extend(id.parse::<Id>().ok());
        }
        for team in &teams {
            for id in &candidates {
                if let Some(status) = services.emails().status(*team, *id)? {
                    return Ok(Some(status));
                }
            }
        }
    }
    Ok(None)
}

/// The addresses `status`'s email was sent to (to, cc and bcc), normalised: a report
/// counts only for them, so a forged one cannot suppress anyone else.
fn sent_to(services: &Services, status: &EmailStatus) -> Result<Vec<String>, Error> {
    let record = services.emails().get(status.team_id, status.id)?;
    let addresses = match record {
        Some(record) => [record.to, record.cc, record.bcc].concat(),
        None => status.to.clone(),
    };
    Ok(addresses.iter().map(|a| suppressions::normalize(a)).collect())
}

/// Records a DSN's failed and delayed recipients (those the email was sent to); how many.
fn delivery(services: &Services, status: EmailStatus, dsn: &report::Dsn) -> Result<usize, Error> {
    let ours = sent_to(services, &status)?;
    let mut events = Vec::new();
    for recipient in &dsn.recipients {
        if !ours.contains(&suppressions::normalize(&recipient.recipient)) {
            metrics::counter!("herald_feedback_total", "kind" => "foreign_recipient").increment(1);
            continue;
        }
        match recipient.action {
            Action::Failed => {
                let code = if recipient.status.starts_with('5') { 550 } else { 450 };
                let diagnostic = recipient
                    .diagnostic
                    .clone()
                    .unwrap_or_else(|| format!("{code} {}", recipient.status));
                let reply = SmtpReply::local(code, &recipient.status, &diagnostic);
                let mut kind = reply.bounce_kind();
                if code == 450 {
                    kind.kind = "Transient";
                }
                let extra = json!({ "bounce": {
                    "type": kind.kind,
                    "subType": kind.sub_type,
                    "message": format!("The receiving server reported a failure after accepting the message: {diagnostic}"),
                    "diagnosticCode": [diagnostic],
                } });
                let suppress = kind.is_hard().then_some(Origin::Bounce);
                events.push((recipient.recipient.clone(), EmailState::Bounced, extra, suppress));
            }
            Action::Delayed => {
                let extra = json!({ "delivery_delayed": {
                    "status": recipient.status,
                    "diagnosticCode": recipient.diagnostic.iter().collect::<Vec<_>>(),
                } });
                events.push((recipient.recipient.clone(), EmailState::DeliveryDelayed, extra, None));
            }
            Action::Delivered | Action::Relayed | Action::Expanded => {}
        }
    }
    let count = events.len();
    record(services, status, events)?;
    Ok(count)
}

/// Records an abuse report: `email.complained`, and the address suppressed.
fn complaint(services: &Services, status: EmailStatus, arf: &report::Arf) -> Result<(), Error> {
    // Who complained: the report says (one the email was sent to), else the email had
    // one recipient.
    let ours = sent_to(services, &status)?;
    let address = match &arf.original_rcpt_to {
        Some(given) if ours.contains(&suppressions::normalize(given)) => Some(given.clone()),
        Some(_) => {
            metrics::counter!("herald_feedback_total", "kind" => "foreign_recipient").increment(1);
            return Ok(());
        }
        None => (ours.len() == 1).then(|| status.to.first().cloned()).flatten(),
    };
    let extra = json!({ "complaint": {
        "type": arf.feedback_type,
        "userAgent": arf.user_agent,
        "arrivalDate": arf.arrival_date,
    } });
    let suppress = address.as_ref().map(|_| Origin::Complaint);
    record(
        services,
        status,
        vec![(address.unwrap_or_default(), EmailState::Complained, extra, suppress)],
    )
}

/// One recipient's event: its address, the email's new state, the event's data, and the
/// suppression it causes.
type Note = (String, EmailState, Value, Option<Origin>);

/// Writes each `(address, state, data, suppression)` on the email's timeline, its
/// `last_event`, the counters and the webhook outbox, with the suppressions, in one batch.
fn record(services: &Services, status: EmailStatus, events: Vec<Note>) -> Result<(), Error> {
    if events.is_empty() {
        return Ok(());
    }
    let emails = services.emails();
    let _guard = crate::emails::lock(services, status.team_id, status.id);
    // Read again under the lock: a concurrent open or delivery may have moved it.
    let mut status = emails.status(status.team_id, status.id)?.unwrap_or(status);
    let now: Timestamp = services.now();
    let mut change = Change::new();
    let mut suppressed = std::collections::HashSet::new();
    for (address, state, extra, suppress) in events {
        let mut data = extra.clone();
        if !address.is_empty() {
            data["to"] = json!([address]);
        }
        emails.record_event(&mut change, &mut status, state, data.clone(), now)?;
        let metric = crate::counters::Metric::of(state, &data);
        services
            .counters()
            .count(&mut change, status.team_id, &status.from, now, metric);
        if let Some(kind) = state.event_kind() {
            crate::services::outbox::push(&mut change, services, status.team_id, kind, || {
                let mut payload = status.event_data(now);
                if let (Value::Object(payload), Value::Object(data)) = (&mut payload, &data) {
                    payload.extend(data.clone());
                }
                payload
            })?;
        }
        if let Some(origin) = suppress
            && !address.is_empty()
            && suppressed.insert(suppressions::normalize(&address))
            && services.suppressions().find(status.team_id, &address)?.is_none()
        {
            let entry = Suppression::new(
                (services.next_id(), services.now()),
                status.team_id,
                &address,
                origin,
                Some(status.id),
            );
            services.suppressions().stage(&mut change, &entry)?;
            crate::services::outbox::push(
                &mut change,
                services,
                status.team_id,
                EventKind::SuppressionAdded,
                || entry.event_json(),
            )?;
        }
    }
    emails.put_status(&mut change, &status)?;
    services.commit(change)?;
    Ok(())
}
