//! The broadcasts service: the rules every adapter (REST, dashboard) goes through.

use herald_queue::{Id, RecipientState, Updated};

use super::{Broadcast, Counts, Outcome, Recipient, Status, personalise};
use crate::accounts::Caller;
use crate::emails::EmailState;
use crate::emails::record::EmailStatus;
use crate::emails::schedule;
use crate::emails::submit::{self, SendError};
use crate::services::{Error, Services};
use crate::services::{parse_id, required_text};
use crate::storage::Change;
use crate::storage::page::PageRequest;

/// Longest name, in characters.
const NAME_MAX: usize = 256;

/// Longest subject, in characters.
const SUBJECT_MAX: usize = 998;

/// A broadcast's fields as a caller gives them (create) or changes them (update:
/// `None` leaves a field as it is).
#[derive(Debug, Clone, Default)]
pub struct Fields {
    /// The name.
    pub name: Option<String>,
    /// The segment (or Resend's older `audience_id`).
    pub segment_id: Option<String>,
    /// The sender.
    pub from: Option<String>,
    /// The subject.
    pub subject: Option<String>,
    /// Reply-To addresses.
    pub reply_to: Option<Vec<String>>,
    /// The HTML body.
    pub html: Option<String>,
    /// The text body.
    pub text: Option<String>,
    /// The preview text.
    pub preview_text: Option<String>,
    /// The topic: `Some(None)` (a `null`) takes it away.
    pub topic_id: Option<Option<String>>,
    /// A design from the editor: its compiled HTML replaces the HTML, and the MJML is
    /// kept beside it. It must keep the unsubscribe link.
    pub design: Option<crate::design::Compiled>,
}

/// The caller's broadcast `id`.
pub fn get(services: &Services, caller: &Caller, id: &str) -> Result<Broadcast, Error> {
    caller.require_full_access()?;
    let mut broadcast = services
        .broadcasts()
        .get(caller.team_id, parse_id(id, "broadcast")?)?
        .ok_or(Error::NotFound("Broadcast not found"))?;
    broadcast.counts.canceled = canceled_count(services, &broadcast)?;
    Ok(broadcast)
}

/// One page of the caller's broadcasts, newest first.
pub fn list(services: &Services, caller: &Caller, page: &PageRequest) -> Result<(Vec<Broadcast>, bool), Error> {
    caller.require_full_access()?;
    let (mut found, has_more) = services.broadcasts().page(caller.team_id, page)?;
    for broadcast in &mut found {
        broadcast.counts.canceled = canceled_count(services, broadcast)?;
    }
    Ok((found, has_more))
}

/// Applies `fields` to `broadcast`, checking each given one.
fn apply(services: &Services, broadcast: &mut Broadcast, fields: Fields) -> Result<(), Error> {
    let team = broadcast.team_id;
    if let Some(name) = fields.name {
        broadcast.name = required_text(Some(name), "name", NAME_MAX)?;
    }
    if let Some(segment) = fields.segment_id {
        let id = parse_id(&segment, "segment")?;
        segment_of(services, team, id)?;
        broadcast.segment_id = id;
    }
    if let Some(from) = fields.from {
        broadcast.from = required_text(Some(from), "from", 998)?;
    }
    if let Some(subject) = fields.subject {
        broadcast.subject = required_text(Some(subject), "subject", SUBJECT_MAX)?;
    }
    if let Some(reply_to) = fields.reply_to {
        broadcast.reply_to = reply_to;
    }
    if let Some(html) = fields.html {
        let html = Some(html).filter(|h| !h.is_empty());
        if html != broadcast.html {
            // Edited as HTML: the design no longer says what sends.
            broadcast.html = html;
            broadcast.mjml = None;
        }
    }
    if let Some(design) = fields.design {
        if !design.html().contains(crate::unsubscribe::MARKER) {
            return Err(Error::invalid(format!(
                "A broadcast's design keeps its unsubscribe block (a link to {})",
                crate::unsubscribe::MARKER
            )));
        }
        let (mjml, html) = design.into_parts();
        broadcast.html = Some(html);
        broadcast.mjml = Some(mjml);
    }
    if let Some(text) = fields.text {
        broadcast.text = Some(text).filter(|t| !t.is_empty());
    }
    if let Some(preview) = fields.preview_text {
        broadcast.preview_text = Some(preview).filter(|p| !p.is_empty());
    }
    if let Some(topic) = fields.topic_id {
        broadcast.topic_id = match topic.as_deref().map_or("", str::trim) {
            "" => None,
            text => {
                let id = parse_id(text, "topic")?;
                services
                    .audience()
                    .topic(team, id)?
                    .ok_or_else(|| Error::invalid(format!("Invalid `topic_id` field: the team has no topic {id}")))?;
                Some(id)
            }
        };
    }
    Ok(())
}

/// Everything a send needs, checked: the sender's domain verified for the caller, the
/// parts parsed and their merge tags known, the segment there.
fn check(services: &Services, caller: &Caller, broadcast: &Broadcast) -> Result<(), Error> {
    personalise::prepare(broadcast, services.audience().properties(broadcast.team_id)?)?;
    if let Some(topic) = broadcast.topic_id
        && services.audience().topic(broadcast.team_id, topic)?.is_none()
    {
        return Err(Error::invalid(format!(
            "Invalid `topic_id` field: the team has no topic {topic}"
        )));
    }
    let from = crate::emails::address::Mailbox::parse(&broadcast.from)
        .map_err(|e| Error::invalid(format!("Invalid `from` field: {e}")))?;
    submit::authorize_domain(services, &sender(caller), from.domain()).map_err(|error| match error {
        SendError::DomainNotVerified(_) | SendError::DomainNotAllowed(_) | SendError::Quota(_) => {
            Error::invalid(error.to_string())
        }
        // The store refused or failed: the answer the rest of the API gives, not a 422.
        SendError::Unavailable(refusal) => Error::Store(crate::storage::Error::Unavailable(refusal)),
        SendError::Internal(error) => {
            tracing::error!(%error, "cannot read a broadcast's sending domain");
            Error::Internal("cannot read the sending domain")
        }
    })?;
    Ok(())
}

/// The segment `id` of `team`: a refusal naming the field when the team has none, and
/// the store's own error when it cannot be read.
fn segment_of(services: &Services, team: Id, id: Id) -> Result<crate::contacts::segments::Segment, Error> {
    match crate::contacts::segments::find(services, team, id) {
        Err(Error::NotFound(_)) => Err(Error::invalid(format!(
            "Invalid `segment_id` field: the team has no segment {id}"
        ))),
        found => found,
    }
}

fn sender(caller: &Caller) -> submit::Sender {
    submit::Sender {
        team_id: caller.team_id,
        api_key_id: Some(caller.key_id),
        permission: caller.permission,
        domain_id: caller.domain_id,
        request_log_id: None,
    }
}

/// Creates a draft; with `send`, sends it at once (or at `scheduled_at`). Its id.
pub fn create(
    services: &Services,
    caller: &Caller,
    fields: Fields,
    send_now: bool,
    scheduled_at: Option<String>,
) -> Result<Id, Error> {
    caller.require_full_access()?;
    if scheduled_at.is_some() && !send_now {
        return Err(Error::invalid(
            "`scheduled_at` needs `send: true`; or send later with POST /broadcasts/{id}/send",
        ));
    }
    let Some(segment) = fields.segment_id.clone().filter(|s| !s.trim().is_empty()) else {
        return Err(Error::MissingField("segment_id"));
    };
    let now = services.now();
    let mut broadcast = Broadcast {
        id: services.next_id(),
        team_id: caller.team_id,
        name: String::new(),
        segment_id: parse_id(&segment, "segment")?,
        from: required_text(fields.from.clone(), "from", 998)?,
        subject: required_text(fields.subject.clone(), "subject", SUBJECT_MAX)?,
        reply_to: Vec::new(),
        html: None,
        text: None,
        mjml: None,
        preview_text: None,
        topic_id: None,
        status: Status::Draft,
        created_at: now,
        scheduled_at: None,
        sent_at: None,
        finished_at: None,
        cursor: None,
        counts: Counts::default(),
        counted: true,
    };
    let name = fields.name.clone().filter(|n| !n.trim().is_empty());
    apply(services, &mut broadcast, fields)?;
    if name.is_none() {
        broadcast.name = broadcast.subject.chars().take(NAME_MAX).collect();
    }
    check(services, caller, &broadcast)?;
    if send_now {
        queue(services, caller, &mut broadcast, scheduled_at)?;
    }
    services.broadcasts().put(&broadcast)?;
    if send_now {
        services.broadcast_wake().wake();
    }
    Ok(broadcast.id)
}

/// Changes a draft. Its id.
pub fn update(services: &Services, caller: &Caller, id: &str, fields: Fields) -> Result<Id, Error> {
    let _guard = services.broadcast_lock();
    let mut broadcast = get(services, caller, id)?;
    if broadcast.status != Status::Draft {
        return Err(Error::invalid(format!(
            "Only draft broadcasts can be changed; this one is {}",
            broadcast.status.name()
        )));
    }
    apply(services, &mut broadcast, fields)?;
    check(services, caller, &broadcast)?;
    services.broadcasts().put(&broadcast)?;
    Ok(broadcast.id)
}

/// Deletes a draft. Its id.
pub fn delete(services: &Services, caller: &Caller, id: &str) -> Result<Id, Error> {
    let _guard = services.broadcast_lock();
    let broadcast = get(services, caller, id)?;
    if broadcast.status != Status::Draft {
        return Err(Error::invalid(format!(
            "Only draft broadcasts can be deleted; this one is {} (cancel it first if it is queued)",
            broadcast.status.name()
        )));
    }
    services.broadcasts().delete(&broadcast)?;
    Ok(broadcast.id)
}

/// Makes `broadcast` (a draft) scheduled or sending, after checking it can go.
fn queue(services: &Services, caller: &Caller, broadcast: &mut Broadcast, at: Option<String>) -> Result<(), Error> {
    check(services, caller, broadcast)?;
    let segment = segment_of(services, broadcast.team_id, broadcast.segment_id)?;
    let first = PageRequest {
        limit: 1,
        cursor: crate::storage::page::Cursor::Start,
    };
    if services
        .contacts()
        .segment_page(broadcast.team_id, segment.id, &first)?
        .0
        .is_empty()
    {
        return Err(Error::invalid(format!(
            "The segment {} has no contacts: nothing to send",
            segment.id
        )));
    }
    let now = services.now();
    let at = at
        .filter(|a| !a.trim().is_empty())
        .map(|a| schedule::parse(&a, now).map_err(Error::invalid))
        .transpose()?;
    broadcast.scheduled_at = at;
    broadcast.status = match at {
        Some(at) if at > now => Status::Scheduled,
        _ => Status::Sending,
    };
    Ok(())
}

/// Sends a draft now or at `scheduled_at`. Its id.
pub fn send(services: &Services, caller: &Caller, id: &str, scheduled_at: Option<String>) -> Result<Id, Error> {
    let _guard = services.broadcast_lock();
    let mut broadcast = get(services, caller, id)?;
    if broadcast.status != Status::Draft {
        return Err(Error::invalid(format!(
            "The broadcast cannot be sent: it is {}, not a draft",
            broadcast.status.name()
        )));
    }
    queue(services, caller, &mut broadcast, scheduled_at)?;
    services.broadcasts().put(&broadcast)?;
    services.broadcast_wake().wake();
    Ok(broadcast.id)
}

/// Copies a broadcast into a new draft. The copy's id.
pub fn duplicate(services: &Services, caller: &Caller, id: &str) -> Result<Id, Error> {
    let original = get(services, caller, id)?;
    let copy = Broadcast {
        id: services.next_id(),
        name: format!("{} (copy)", original.name).chars().take(NAME_MAX).collect(),
        status: Status::Draft,
        created_at: services.now(),
        scheduled_at: None,
        sent_at: None,
        finished_at: None,
        cursor: None,
        counts: Counts::default(),
        counted: true,
        ..original
    };
    services.broadcasts().put(&copy)?;
    Ok(copy.id)
}

/// Cancels a scheduled or sending broadcast: no more emails are made, and those still
/// waiting in the queue (not handed to delivery) are canceled with their records. How
/// many were canceled.
pub fn cancel(services: &Services, caller: &Caller, id: &str) -> Result<(Id, u64), Error> {
    let _guard = services.broadcast_lock();
    let mut broadcast = get(services, caller, id)?;
    if !broadcast.status.is_queued() {
        return Err(Error::invalid(format!(
            "The broadcast cannot be canceled: it is {}",
            broadcast.status.name()
        )));
    }
    broadcast.status = Status::Canceled;
    broadcast.finished_at = Some(services.now());
    services.broadcasts().put(&broadcast)?;
    let mut canceled = 0;
    let mut after = None;
    loop {
        let page = services.broadcasts().recipients(&broadcast, after, 1_000)?;
        let Some(last) = page.last() else { break };
        after = Some(last.contact_id);
        for recipient in &page {
            if let Some(email) = recipient.email_id
                && cancel_email(services, &broadcast, email)?
            {
                canceled += 1;
            }
        }
    }
    Ok((broadcast.id, canceled))
}

/// Takes one email out of the queue if delivery has not begun on it. One that delivery
/// has claimed is dropped by delivery itself before its attempt ([`cancel_claimed`]).
fn cancel_email(services: &Services, broadcast: &Broadcast, id: Id) -> Result<bool, Error> {
    let spool = services.spool();
    let Some(envelope) = spool.envelope(id)? else {
        return Ok(false);
    };
    let begun = envelope
        .recipients
        .iter()
        .any(|r| r.attempts > 0 || r.state != RecipientState::Pending);
    if begun || !spool.try_claim(id) {
        return Ok(false);
    }
    cancel_claimed(services, broadcast.team_id, broadcast.id, id)
}

/// How many of `broadcast`'s emails were taken back from the queue.
pub fn canceled_count(services: &Services, broadcast: &Broadcast) -> Result<u64, Error> {
    Ok(services.broadcasts().canceled(broadcast.team_id, broadcast.id)?)
}

/// Whether `broadcast_id` of `team_id` was canceled: delivery asks before each attempt
/// of a broadcast's email.
pub fn is_canceled(services: &Services, team_id: Id, broadcast_id: Id) -> Result<bool, Error> {
    Ok(services
        .broadcasts()
        .get(team_id, broadcast_id)?
        .is_some_and(|b| b.status == Status::Canceled))
}

/// Cancels the email `id` of the canceled broadcast `broadcast_id`, whose spool claim
/// the caller holds (the spool update releases it): its record and event, and the
/// broadcast's count, in one write. Whether it was still in the queue.
pub fn cancel_claimed(services: &Services, team_id: Id, broadcast_id: Id, id: Id) -> Result<bool, Error> {
    let spool = services.spool();
    let _guard = crate::emails::lock(services, team_id, id);
    let Some(mut record) = services.emails().get(team_id, id)? else {
        spool.release(id);
        return Ok(false);
    };
    let now = services.now();
    let outcome = spool.cancel(id, |_, batch| {
        Ok(Change::within(batch, |change| {
            services.broadcasts().count_canceled(change, team_id, broadcast_id);
            submit::stage_canceled(change, services, &mut record, now)
        })??)
    })?;
    Ok(outcome != Updated::Missing)
}

/// Which recipients `GET /broadcasts/{id}/recipients` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Emails made.
    Sent,
    /// Delivered (or opened, or clicked).
    Delivered,
    /// Opened (or clicked).
    Opened,
    /// Clicked.
    Clicked,
    /// Bounced.
    Bounced,
    /// Complained.
    Complained,
    /// Skipped as unsubscribed or out of the topic.
    Unsubscribed,
    /// Skipped as suppressed.
    Suppressed,
}

impl Kind {
    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<Kind> {
        Some(match name {
            "sent" => Kind::Sent,
            "delivered" => Kind::Delivered,
            "opened" => Kind::Opened,
            "clicked" => Kind::Clicked,
            "bounced" => Kind::Bounced,
            "complained" => Kind::Complained,
            "unsubscribed" => Kind::Unsubscribed,
            "suppressed" => Kind::Suppressed,
            _ => return None,
        })
    }

    fn admits(self, recipient: &Recipient, state: Option<EmailState>) -> bool {
        use EmailState::{Bounced, Clicked, Complained, Delivered, Opened};
        match self {
            Kind::Sent => recipient.outcome == Outcome::Sent,
            Kind::Unsubscribed => recipient.outcome == Outcome::Unsubscribed,
            Kind::Suppressed => recipient.outcome == Outcome::Suppressed,
            Kind::Delivered => matches!(state, Some(Delivered | Opened | Clicked)),
            Kind::Opened => matches!(state, Some(Opened | Clicked)),
            Kind::Clicked => state == Some(Clicked),
            Kind::Bounced => state == Some(Bounced),
            Kind::Complained => state == Some(Complained),
        }
    }
}

/// A recipient with its email's latest state.
pub type Listed = (Recipient, Option<EmailState>);

/// Up to `limit` recipients of the caller's broadcast `id` of `kind` (and whose address
/// contains `email`), in contact order after the contact `after`; whether more follow.
pub fn recipients(
    services: &Services,
    caller: &Caller,
    id: &str,
    kind: Kind,
    email: Option<&str>,
    after: Option<Id>,
    limit: usize,
) -> Result<(Vec<Listed>, bool), Error> {
    let broadcast = get(services, caller, id)?;
    let needle = email.map(str::to_ascii_lowercase);
    let mut found = Vec::new();
    let mut cursor = after;
    loop {
        let page = services.broadcasts().recipients(&broadcast, cursor, 500)?;
        let Some(last) = page.last() else {
            return Ok((found, false));
        };
        cursor = Some(last.contact_id);
        for recipient in page {
            if needle
                .as_ref()
                .is_some_and(|n| !recipient.email.to_ascii_lowercase().contains(n.as_str()))
            {
                continue;
            }
            let state = match recipient.email_id {
                Some(email) => services
                    .emails()
                    .status(broadcast.team_id, email)?
                    .map(|s| s.last_event),
                None => None,
            };
            if kind.admits(&recipient, state) {
                if found.len() == limit {
                    return Ok((found, true));
                }
                found.push((recipient, state));
            }
        }
    }
}

/// A broadcast's emails by how far they got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcomes {
    /// Delivered (or opened, or clicked).
    pub delivered: u64,
    /// Opened (or clicked).
    pub opened: u64,
    /// Clicked.
    pub clicked: u64,
    /// Bounced.
    pub bounced: u64,
    /// Complained.
    pub complained: u64,
}

/// The outcomes of the caller's broadcast `id`'s emails: from its counts by status
/// ([`super::store`]), or for a broadcast from before them, each email's latest state
/// read once (not once per kind, as listing each kind would).
pub fn outcomes(services: &Services, caller: &Caller, id: &str) -> Result<Outcomes, Error> {
    let broadcast = get(services, caller, id)?;
    if broadcast.counted {
        let now = services.broadcasts().states(broadcast.team_id, broadcast.id)?;
        let count = |states: &[EmailState]| states.iter().map(|s| now.get(s).copied().unwrap_or(0)).sum();
        use EmailState::{Bounced, Clicked, Complained, Delivered, Opened};
        return Ok(Outcomes {
            delivered: count(&[Delivered, Opened, Clicked]),
            opened: count(&[Opened, Clicked]),
            clicked: count(&[Clicked]),
            bounced: count(&[Bounced]),
            complained: count(&[Complained]),
        });
    }
    let mut outcomes = Outcomes::default();
    each_state(services, &broadcast, |_, status| {
        use EmailState::{Bounced, Clicked, Complained, Delivered, Opened};
        let state = status.last_event;
        let counts: [(&mut u64, bool); 5] = [
            (&mut outcomes.delivered, matches!(state, Delivered | Opened | Clicked)),
            (&mut outcomes.opened, matches!(state, Opened | Clicked)),
            (&mut outcomes.clicked, state == Clicked),
            (&mut outcomes.bounced, state == Bounced),
            (&mut outcomes.complained, state == Complained),
        ];
        for (count, admitted) in counts {
            *count += u64::from(admitted);
        }
    })?;
    Ok(outcomes)
}

/// Calls `each` with every email of `broadcast` and its status, in contact order.
fn each_state(services: &Services, broadcast: &Broadcast, mut each: impl FnMut(Id, &EmailStatus)) -> Result<(), Error> {
    let mut after = None;
    loop {
        let page = services.broadcasts().recipients(broadcast, after, 1_000)?;
        let Some(last) = page.last() else {
            return Ok(());
        };
        after = Some(last.contact_id);
        for email in page.iter().filter_map(|r| r.email_id) {
            if let Some(status) = services.emails().status(broadcast.team_id, email)? {
                each(email, &status);
            }
        }
    }
}

/// One link of a broadcast and how often it was clicked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClickedLink {
    /// The link.
    pub url: String,
    /// Clicks in all.
    pub clicks: u64,
    /// Recipients who clicked it.
    pub unique_clicks: u64,
}

/// The links of the caller's broadcast `id` that were clicked, most clicked first,
/// counted from the timelines of its emails a person clicked (people's clicks only, not
/// link scanners'): the others have no such click to read.
pub fn clicked_links(services: &Services, caller: &Caller, id: &str) -> Result<Vec<ClickedLink>, Error> {
    let broadcast = get(services, caller, id)?;
    let mut links: std::collections::BTreeMap<String, (u64, u64)> = std::collections::BTreeMap::new();
    let mut clicked = Vec::new();
    each_state(services, &broadcast, |email, status| {
        if status.clicked {
            clicked.push(email);
        }
    })?;
    for email in clicked {
        let events = services.emails().timeline(email)?;
        let mut seen = std::collections::HashSet::new();
        for event in events {
            if event.kind != EmailState::Clicked || event.data["machine"] == true {
                continue;
            }
            let Some(url) = event.data["click"]["link"].as_str() else {
                continue;
            };
            let entry = links.entry(url.to_owned()).or_default();
            entry.0 += 1;
            if seen.insert(url.to_owned()) {
                entry.1 += 1;
            }
        }
    }
    let mut found: Vec<ClickedLink> = links
        .into_iter()
        .map(|(url, (clicks, unique_clicks))| ClickedLink {
            url,
            clicks,
            unique_clicks,
        })
        .collect();
    found.sort_by(|a, b| b.clicks.cmp(&a.clicks).then_with(|| a.url.cmp(&b.url)));
    Ok(found)
}
