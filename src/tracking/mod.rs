//! Open and click tracking (Resend's model): per domain, off by default, and active only
//! when a flag is on and the domain's tracking host (`<tracking_subdomain>.<domain>`, a
//! CNAME to `[tracking] cname_target`) is verified, so tracking links always name the
//! sender's own domain. At acceptance, an email's links and open pixel are rewritten
//! ([`rewrite`]) to signed URLs on that host ([`links`]); herald's HTTP listener answers
//! them ([`record`] writes the `email.opened` / `email.clicked` event) with a pixel or a
//! redirect.

pub mod links;
pub mod message;
pub mod rewrite;

use herald_queue::Id;
use serde_json::{Value, json};

pub use links::{Signer, Tracked};

use crate::counters::Metric;
use crate::domains::Domain;
use crate::emails::{Email, EmailState, EmailStore};
use crate::services::{Error, Services};
use crate::storage::Change;
use crate::wire;

/// An open or click this soon after acceptance is a machine's (a link scanner's).
const MACHINE_WINDOW_MS: u64 = 10_000;

/// User agents of known link scanners and privacy proxies, whose opens and clicks are
/// flagged as a machine's (Apple Mail Privacy Protection's proxy sends a bare
/// `Mozilla/5.0`).
const MACHINES: &[&str] = &[
    "bingpreview",
    "barracuda",
    "mimecast",
    "proofpoint",
    "symantec",
    "trendmicro",
    "python-requests",
    "curl/",
    "go-http-client",
    "headlesschrome",
];

/// How one email's links and pixel are written: on its domain's tracking host, signed.
struct Links<'a> {
    signer: &'a Signer,
    base: String,
    team_id: Id,
    email_id: Id,
    opens: bool,
    clicks: bool,
    /// The prefix of unsubscribe links, which are never tracked.
    unsubscribe: String,
}

impl<'a> Links<'a> {
    /// The links of `email_id`, when `domain` tracks opens or clicks now; `None` when it
    /// tracks neither (or the signing key is missing).
    fn of(services: &'a Services, domain: &Domain, email_id: Id) -> Option<Links<'a>> {
        let (opens, clicks) = (domain.tracks(true), domain.tracks(false));
        if !opens && !clicks {
            return None;
        }
        Some(Links {
            signer: services.tracking_signer()?,
            base: format!(
                "{}://{}",
                services.config().tracking.scheme.name(),
                domain.tracking_host()?
            ),
            team_id: domain.team_id,
            email_id,
            opens,
            clicks,
            unsubscribe: crate::unsubscribe::prefix(services),
        })
    }

    /// The tracked URL of link `index` to `target`, when clicks are tracked.
    fn click(&self, index: u16, target: &str) -> Option<String> {
        if !self.clicks || target.starts_with(&self.unsubscribe) {
            return None;
        }
        let path = self.signer.click_path(self.team_id, self.email_id, index, target)?;
        Some(format!("{}{path}", self.base))
    }

    /// The open pixel's URL, when opens are tracked.
    fn pixel(&self) -> Option<String> {
        self.opens
            .then(|| format!("{}{}", self.base, self.signer.open_path(self.team_id, self.email_id)))
    }
}

/// `email` with its links and open pixel rewritten for tracking, when `domain` tracks
/// opens or clicks now; `None` when it tracks neither (or the signing key is missing).
pub fn apply(services: &Services, domain: &Domain, email_id: Id, email: &Email) -> Option<Email> {
    let links = Links::of(services, domain, email_id)?;
    let click = |index: u16, target: &str| links.click(index, target);
    let click: Option<rewrite::Click<'_>> = links.clicks.then_some(&click);
    let mut tracked = email.clone();
    match &email.html {
        Some(html) => match rewrite::html(html, click, links.pixel().as_deref()) {
            Ok(rewritten) => tracked.html = Some(rewritten),
            Err(error) => {
                tracing::warn!(%error, email_id = %email_id, "sending without tracking");
                return None;
            }
        },
        // A text-only message has no pixel to show; its links can still be counted.
        None => match (click, &email.text) {
            (Some(click), Some(text)) => tracked.text = Some(rewrite::text(text, click)),
            _ => return None,
        },
    }
    Some(tracked)
}

/// Whether [`apply_to_message`] rewrites mail from `domain` now: it tracks opens or clicks, on
/// a tracking host, with a signing key.
pub fn rewrites_message(services: &Services, domain: &Domain) -> bool {
    Links::of(services, domain, Id::from_bytes([0; 16])).is_some()
}

/// A message submitted whole (`raw`, parsed as `parsed`) rewritten for tracking, when
/// `domain` tracks opens or clicks now; `None` when it tracks neither or nothing changed.
pub fn apply_to_message(
    services: &Services,
    domain: &Domain,
    email_id: Id,
    raw: &[u8],
    parsed: &mail_parser::Message<'_>,
) -> Option<Vec<u8>> {
    let links = Links::of(services, domain, email_id)?;
    let click = |index: u16, target: &str| links.click(index, target);
    let click: Option<rewrite::Click<'_>> = links.clicks.then_some(&click);
    message::rewrite(raw, parsed, click, links.pixel().as_deref())
}

/// The verified tracking host `host` of `team_id`'s domains, if it is one.
pub fn tracking_domain(services: &Services, team_id: Id, host: &str) -> Result<Option<std::sync::Arc<Domain>>, Error> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let mut rest = host.as_str();
    while let Some((_, parent)) = rest.split_once('.') {
        if let Some(domain) = services.domains().by_name(team_id, parent)?
            && domain.tracking_host().as_deref() == Some(host.as_str())
            && domain.checks.tracking == crate::domains::RecordStatus::Verified
        {
            return Ok(Some(domain));
        }
        rest = parent;
    }
    Ok(None)
}

/// Who opened or clicked.
#[derive(Debug, Clone)]
pub struct Visitor {
    /// The client's address.
    pub ip: std::net::IpAddr,
    /// Its `User-Agent`.
    pub user_agent: String,
}

/// Writes the open or click `tracked` names: on the email's timeline, its `last_event`,
/// the daily counters (a machine's apart), and `email.opened` / `email.clicked` for
/// webhooks, in one batch. An email that is gone (expired, its team erased) is ignored.
pub fn record(services: &Services, tracked: &Tracked, visitor: &Visitor) -> Result<(), Error> {
    let (team_id, email_id, kind) = match tracked {
        Tracked::Open { team_id, email_id } => (*team_id, *email_id, EmailState::Opened),
        Tracked::Click { team_id, email_id, .. } => (*team_id, *email_id, EmailState::Clicked),
    };
    let emails = services.emails();
    let _guard = crate::emails::lock(services, team_id, email_id);
    let Some(mut status) = emails.status(team_id, email_id)? else {
        return Ok(());
    };
    let now = services.now();
    let agent = visitor.user_agent.to_ascii_lowercase();
    let machine = visitor.user_agent.trim() == "Mozilla/5.0"
        || MACHINES.iter().any(|m| agent.contains(m))
        || email_id
            .timestamp()
            .is_some_and(|sent| now.as_millis().saturating_sub(sent.as_millis()) < MACHINE_WINDOW_MS);
    let mut extra = json!({ "machine": machine });
    if let Tracked::Click { target, .. } = tracked {
        extra["click"] = json!({
            "ipAddress": visitor.ip.to_string(),
            "link": target,
            "timestamp": wire::iso8601(now),
            "userAgent": visitor.user_agent,
        });
    }
    // A person's first open or click of the email is its unique one.
    let first = !machine
        && match kind {
            EmailState::Clicked => !std::mem::replace(&mut status.clicked, true),
            _ => !std::mem::replace(&mut status.opened, true),
        }
        && !seen_before(emails, email_id, kind)?;
    let mut change = Change::new();
    emails.record_event(&mut change, &mut status, kind, extra.clone(), now)?;
    emails.put_status(&mut change, &status)?;
    if machine {
        metrics::counter!("herald_tracking_machine_total", "kind" => kind.name()).increment(1);
    } else {
        let counters = services.counters();
        counters.count(&mut change, team_id, &status.from, now, Metric::of(kind, &Value::Null));
        if first {
            let unique = if kind == EmailState::Clicked {
                Metric::UniqueClicked
            } else {
                Metric::UniqueOpened
            };
            counters.count(&mut change, team_id, &status.from, now, unique);
        }
    }
    metrics::counter!("herald_tracking_total", "kind" => kind.name()).increment(1);
    if let Some(webhook_kind) = kind.event_kind() {
        crate::services::outbox::push(&mut change, services, team_id, webhook_kind, || {
            let mut data = status.event_data(now);
            if let (Value::Object(data), Value::Object(extra)) = (&mut data, &extra) {
                data.extend(extra.clone());
            }
            data
        })?;
    }
    services.commit(change)?;
    Ok(())
}

/// Whether an email's timeline already has a person's `kind` (an open or click recorded
/// before emails carried the flags that say so).
fn seen_before(emails: &dyn EmailStore, email_id: Id, kind: EmailState) -> Result<bool, Error> {
    Ok(emails
        .timeline(email_id)?
        .iter()
        .any(|event| event.kind == kind && event.data["machine"] != Value::Bool(true)))
}
