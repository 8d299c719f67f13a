//! Checks and building shared by every door an email comes in through (REST or SMTP):
//! check the sender may use the `from` domain, build the message, its record and first
//! event. [`super::accept`] then writes them all in one synced write.

use std::collections::BTreeMap;
use std::sync::Arc;

use herald_queue::{Id, NewMessage, Refusal, Timestamp};

use super::mime;
use super::record::{EmailRecord, Source};
use super::state::EmailState;
use super::validate::Email;
use crate::accounts::Permission;
use crate::counters::Metric;
use crate::domains::{Domain, DomainStatus};
use crate::events::EventKind;
use crate::services::Services;
use crate::storage::Change;

/// Who is sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sender {
    /// The team.
    pub team_id: Id,
    /// The key used.
    pub api_key_id: Option<Id>,
    /// The key's permission.
    pub permission: Permission,
    /// The one domain a sending key is bound to.
    pub domain_id: Option<Id>,
    /// The API request that sends it, whose log the email's page links to.
    pub request_log_id: Option<Id>,
}

/// Why an email was not accepted (besides invalid input, which validation reports).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The `from` domain is not a verified domain of the team.
    #[error("The {0} domain is not verified. Add and verify it with POST /domains and POST /domains/{{id}}/verify.")]
    DomainNotVerified(String),
    /// The key is bound to another domain.
    #[error("This API key may only send from {0}")]
    DomainNotAllowed(String),
    /// Storage refuses writes for now.
    #[error("{0}")]
    Unavailable(Refusal),
    /// The team's plan allows no more emails this day or month.
    #[error("{0}")]
    Quota(crate::quotas::Exceeded),
    /// A fault on herald's side.
    #[error("{0}")]
    Internal(String),
}

impl From<crate::storage::Error> for SendError {
    fn from(error: crate::storage::Error) -> Self {
        match error {
            crate::storage::Error::Unavailable(refusal) => SendError::Unavailable(refusal),
            other => SendError::Internal(other.to_string()),
        }
    }
}

impl From<herald_queue::Error> for SendError {
    fn from(error: herald_queue::Error) -> Self {
        crate::storage::Error::from(error).into()
    }
}

/// An email ready to spool.
#[derive(Debug)]
pub struct Prepared {
    /// Its id.
    pub id: Id,
    /// The spool message.
    pub message: NewMessage,
    /// Its record and first event.
    pub records: Change,
}

/// The verified domain `email` is sent from, if `sender` may use it.
pub fn authorize(state: &Services, sender: &Sender, email: &Email) -> Result<Arc<Domain>, SendError> {
    authorize_domain(state, sender, email.from.domain())
}

/// The verified domain `name` of the sender's team, if `sender` may send from it.
pub fn authorize_domain(state: &Services, sender: &Sender, name: &str) -> Result<Arc<Domain>, SendError> {
    let name = name.to_ascii_lowercase();
    let domain = state
        .domains()
        .by_name(sender.team_id, &name)?
        .filter(|d| d.status == DomainStatus::Verified)
        .ok_or_else(|| SendError::DomainNotVerified(name.clone()))?;
    if sender.permission == Permission::SendingAccess && sender.domain_id.is_some_and(|id| id != domain.id) {
        let bound = match sender.domain_id {
            Some(id) => state.domains().cached(sender.team_id, id)?,
            None => None,
        };
        let allowed = bound.map_or_else(|| "its own domain".to_owned(), |d| d.name.clone());
        return Err(SendError::DomainNotAllowed(allowed));
    }
    Ok(domain)
}

/// Builds the message, record and first event of `email` sent from `domain`.
pub fn prepare(
    state: &Services,
    sender: &Sender,
    email: &Email,
    domain: &Domain,
    source: Source,
) -> Result<Prepared, SendError> {
    let now = state.now();
    let id = state.next_id();
    let hostname = &state.config().server.hostname;
    // The unsubscribe link, links and the open pixel are written into what is sent; the
    // record keeps the email as it was given.
    let linked = crate::unsubscribe::apply(state, sender.team_id, id, email).map_err(SendError::Internal)?;
    let tracked = crate::tracking::apply(state, domain, id, &linked);
    let raw = mime::build(tracked.as_ref().unwrap_or(&linked), id, hostname, now)
        .map_err(|e| SendError::Internal(format!("cannot build the message: {e}")))?;
    // Bodies the built message gives back exactly are kept only there (see
    // `super::content`); attachments would keep the whole message for as long as the
    // record, so those keep their bodies here.
    // Only where the records are the node's too: a shared store keeps the bodies itself,
    // for every node to show.
    let reading = (tracked.is_none() && email.attachments.is_empty() && state.emails().content_in_spool())
        .then(|| super::content::holds(&raw, email.html.as_deref(), email.text.as_deref()))
        .flatten();
    let in_message = reading.is_some();
    let (kind, last_event) = match email.scheduled_at {
        Some(_) => (EventKind::EmailScheduled, EmailState::Scheduled),
        None => (EventKind::EmailSent, EmailState::Sent),
    };
    let record = EmailRecord {
        id,
        team_id: sender.team_id,
        api_key_id: sender.api_key_id,
        from: email.from.display(),
        to: email.to.iter().map(|m| m.address.clone()).collect(),
        cc: email.cc.iter().map(|m| m.address.clone()).collect(),
        bcc: email.bcc.iter().map(|m| m.address.clone()).collect(),
        reply_to: email.reply_to.iter().map(|m| m.address.clone()).collect(),
        subject: email.subject.clone(),
        html: email.html.clone().filter(|_| !in_message),
        text: email.text.clone().filter(|_| !in_message),
        tags: email.tags.clone(),
        created_at: now,
        scheduled_at: email.scheduled_at,
        message_id: format!("<{}>", mime::message_id(id, hostname)),
        last_event,
        size: raw.len() as u64,
        source,
        template: email.template,
        topic_id: email.topic_id,
        attempts: Vec::new(),
        content_expired: false,
        content_in_message: in_message,
        text_derived: reading.is_some_and(|r| r.text_derived),
        line_feeds: reading.is_some_and(|r| r.line_feeds),
        broadcast_id: email.broadcast_id,
        request_log_id: sender.request_log_id,
    };
    let mut records = Change::new();
    stage_new(&mut records, state, &record, now)?;
    crate::services::outbox::push(&mut records, state, sender.team_id, kind, || record.event_data(now))?;
    let mut metadata = BTreeMap::from([("domain_id".to_owned(), domain.id.to_string())]);
    if let Some(broadcast) = email.broadcast_id {
        // Delivery drops the email if the broadcast is canceled before its attempt.
        metadata.insert("broadcast_id".to_owned(), broadcast.to_string());
    }
    let message = NewMessage {
        id,
        team: sender.team_id.to_string(),
        sender: format!("{id}@{}", domain.return_path_host()),
        recipients: email.recipients(),
        metadata,
        not_before: email.scheduled_at,
        raw,
        retain: in_message,
    };
    Ok(Prepared { id, message, records })
}

/// An email that was never sent: a broadcast's recipient on the suppression list, or one
/// whose content could not be made. It is recorded settled at once, as Resend records it,
/// so that its event names an email that `GET /emails/{id}` shows.
#[derive(Debug)]
pub struct Unsent<'a> {
    /// The team.
    pub team_id: Id,
    /// `From`, as written.
    pub from: &'a str,
    /// The one recipient.
    pub to: &'a str,
    /// The subject.
    pub subject: &'a str,
    /// Its tags.
    pub tags: Vec<super::validate::Tag>,
    /// The broadcast it was one of.
    pub broadcast_id: Option<Id>,
    /// The topic it was sent on.
    pub topic_id: Option<Id>,
    /// Where it ended: [`EmailState::Suppressed`] or [`EmailState::Failed`].
    pub state: EmailState,
    /// What the event says beside the email's fields (its `suppressed` or `failed`).
    pub detail: serde_json::Value,
}

/// Writes into `batch` the record, status, timeline entry and event of an email that is
/// never sent; nothing enters the spool. Its id.
pub fn record_unsent(
    change: &mut Change,
    services: &Services,
    unsent: Unsent<'_>,
) -> Result<Id, crate::storage::Error> {
    debug_assert!(matches!(unsent.state, EmailState::Suppressed | EmailState::Failed));
    let hostname = &services.config().server.hostname;
    let now = services.now();
    let id = services.next_id();
    let record = EmailRecord {
        id,
        team_id: unsent.team_id,
        api_key_id: None,
        from: unsent.from.to_owned(),
        to: vec![unsent.to.to_owned()],
        cc: Vec::new(),
        bcc: Vec::new(),
        reply_to: Vec::new(),
        subject: unsent.subject.to_owned(),
        html: None,
        text: None,
        tags: unsent.tags,
        created_at: now,
        scheduled_at: None,
        message_id: format!("<{}>", mime::message_id(id, hostname)),
        last_event: unsent.state,
        size: 0,
        source: Source::Broadcast,
        template: None,
        topic_id: unsent.topic_id,
        attempts: Vec::new(),
        content_expired: false,
        content_in_message: false,
        text_derived: false,
        line_feeds: false,
        broadcast_id: unsent.broadcast_id,
        request_log_id: None,
    };
    stage_new(change, services, &record, now)?;
    if let Some(kind) = unsent.state.event_kind() {
        crate::services::outbox::push(change, services, unsent.team_id, kind, || {
            let mut data = record.event_data(now);
            if let (serde_json::Value::Object(data), serde_json::Value::Object(detail)) = (&mut data, unsent.detail) {
                if let Some(broadcast) = unsent.broadcast_id {
                    data.insert("broadcast_id".into(), serde_json::json!(broadcast));
                }
                data.extend(detail);
            }
            data
        })?;
    }
    Ok(id)
}

/// Stages into `change` a new email: its record, status and first event, through the
/// email store, and the counters its first event moves.
pub(crate) fn stage_new(
    change: &mut Change,
    services: &Services,
    record: &EmailRecord,
    now: Timestamp,
) -> Result<(), crate::storage::Error> {
    services.emails().create(change, record, now)?;
    let metric = Metric::of(record.last_event, &serde_json::Value::Null);
    services
        .counters()
        .count(change, record.team_id, &record.from, now, metric);
    Ok(())
}

/// Stages into `change` (which goes in a write of the spool's that takes the email out
/// of the queue) the cancellation of `record`: its `canceled` event, status and record, the counters
/// the event moves, and the start of its retention.
pub(crate) fn stage_canceled(
    change: &mut Change,
    services: &Services,
    record: &mut EmailRecord,
    now: Timestamp,
) -> Result<(), crate::storage::Error> {
    let emails = services.emails();
    let mut status = record.status();
    emails.record_event(change, &mut status, EmailState::Canceled, serde_json::Value::Null, now)?;
    record.last_event = status.last_event;
    emails.put_record(change, record)?;
    emails.put_status(change, &status)?;
    emails.arm_final(change, record.team_id, record.id, now);
    services
        .counters()
        .count(change, record.team_id, &record.from, now, Metric::Canceled);
    Ok(())
}
