//! Reading the queue: one message, a filtered page of them, and counts.

use std::collections::HashMap;

use herald_queue::{Envelope, Id, Recipient, RecipientState, Timestamp};
use serde_json::{Value, json};

use super::{QueueError, QueueState, Scope, destination};
use crate::services::Services;
use crate::wire;

/// Destination domains a stats report lists at most, the busiest first; the rest are
/// only counted. A queue stuck on a million domains must not make a million-line answer.
pub const STATS_DOMAINS_MAX: usize = 100;

/// One spooled message as the operator sees it.
#[derive(Debug, Clone)]
pub struct QueuedMessage {
    /// The message's (and its email's) id.
    pub id: Id,
    /// Where it stands.
    pub state: QueueState,
    /// Its envelope.
    pub envelope: Envelope,
    /// When the queue was looked at.
    pub now: Timestamp,
}

impl QueuedMessage {
    /// The recipients not yet final.
    fn open(&self) -> impl Iterator<Item = &Recipient> {
        self.envelope.recipients.iter().filter(|r| !r.state.is_final())
    }

    /// The most attempts any recipient has had.
    pub fn attempts(&self) -> u32 {
        self.envelope.recipients.iter().map(|r| r.attempts).max().unwrap_or(0)
    }

    /// The last reply an open recipient got, the latest attempt's where several did.
    pub fn last_reply(&self) -> Option<&str> {
        self.open()
            .filter(|r| r.last_response.is_some())
            .max_by_key(|r| r.attempts)
            .and_then(|r| r.last_response.as_deref())
    }

    /// The line of `herald queue list` (`GET /queue`).
    pub fn summary_json(&self) -> Value {
        let age = self.now.saturating_since(self.envelope.created_at);
        json!({
            "id": self.id,
            "team_id": self.envelope.team,
            "status": self.state.name(),
            "return_path": self.envelope.sender,
            "created_at": wire::timestamp(self.envelope.created_at),
            "age_seconds": age.as_secs(),
            "next_attempt_at": self.envelope.next_due().map(wire::timestamp),
            "attempts": self.attempts(),
            "recipients_left": self.open().count(),
            "recipients": self.envelope.recipients.len(),
            "last_reply": self.last_reply(),
            "size": self.envelope.size,
        })
    }
}

/// `herald queue list` (`GET /queue`): up to `limit` messages in `scope`, oldest first,
/// after the message `after`; only those in `state`, and with an open recipient at
/// `domain`, when given. Also whether more follow.
pub fn list(
    state: &Services,
    scope: Scope,
    filter: (Option<QueueState>, Option<&str>),
    after: Option<Id>,
    limit: usize,
) -> Result<(Vec<QueuedMessage>, bool), QueueError> {
    let (wanted, domain) = filter;
    let domain = domain.map(destination);
    let now = state.now();
    let mut found = Vec::new();
    let mut more = false;
    state.spool().walk(after, |id, envelope| {
        if !scope.sees(&envelope) {
            return Ok(true);
        }
        let message = QueuedMessage {
            id,
            state: QueueState::of(&envelope, state.spool().is_claimed(id), now),
            envelope,
            now,
        };
        let at_domain = domain
            .as_deref()
            .is_none_or(|domain| message.open().any(|r| destination(&r.address) == domain));
        if wanted.is_some_and(|wanted| wanted != message.state) || !at_domain {
            return Ok(true);
        }
        if found.len() == limit {
            more = true;
            return Ok(false);
        }
        found.push(message);
        Ok(true)
    })?;
    Ok((found, more))
}

/// `herald queue show ID` (`GET /queue/{id}`): the envelope, each recipient's state and
/// the attempt log.
pub fn show(state: &Services, scope: Scope, id: Id) -> Result<Value, QueueError> {
    let Some((envelope, _)) = state.spool().load(id)? else {
        return Err(QueueError::NotFound(id));
    };
    if !scope.sees(&envelope) {
        return Err(QueueError::NotFound(id));
    }
    let now = state.now();
    let team = envelope.team.parse::<Id>().ok();
    let status = match team {
        Some(team) => state.emails().status(team, id)?,
        None => None,
    };
    let expires_at = envelope
        .first_due
        .saturating_add(state.config().delivery.message_lifetime);
    let message = QueuedMessage {
        id,
        state: QueueState::of(&envelope, state.spool().is_claimed(id), now),
        envelope,
        now,
    };
    let mut value = message.summary_json();
    if let Value::Object(map) = &mut value {
        map.shift_insert(0, "object".into(), json!("queued_email"));
        map.insert(
            "first_due_at".into(),
            json!(wire::timestamp(message.envelope.first_due)),
        );
        map.insert("expires_at".into(), json!(wire::timestamp(expires_at)));
        map.insert(
            "recipient_states".into(),
            message.envelope.recipients.iter().map(recipient_json).collect(),
        );
        map.insert("header_from".into(), json!(status.as_ref().map(|s| &s.from)));
        map.insert("subject".into(), json!(status.as_ref().map(|s| &s.subject)));
        map.insert("last_event".into(), json!(status.as_ref().map(|s| &s.last_event)));
        let attempts: Vec<Value> = status
            .iter()
            .flat_map(|s| &s.attempts)
            .map(|attempt| {
                json!({
                    "at": wire::timestamp(attempt.at),
                    "recipients": attempt.recipients,
                    "host": attempt.host,
                    "ip": attempt.ip,
                    "source": attempt.source,
                    "tls": attempt.tls,
                    "reply": attempt.reply,
                })
            })
            .collect();
        map.insert("attempt_log".into(), json!(attempts));
    }
    Ok(value)
}

fn recipient_json(recipient: &Recipient) -> Value {
    let (state, at) = match recipient.state {
        RecipientState::Pending => ("pending", None),
        RecipientState::Deferred { next_attempt } => ("deferred", Some(next_attempt)),
        RecipientState::Delivered { at } => ("delivered", Some(at)),
        RecipientState::Bounced { at } => ("bounced", Some(at)),
        RecipientState::Expired { at } => ("expired", Some(at)),
        RecipientState::Canceled { at } => ("canceled", Some(at)),
        RecipientState::Suppressed { at } => ("suppressed", Some(at)),
    };
    let mut value = json!({
        "address": recipient.address,
        "state": state,
        "attempts": recipient.attempts,
        "last_reply": recipient.last_response,
    });
    let field = if state == "deferred" { "next_attempt_at" } else { "at" };
    value[field] = json!(at.map(wire::timestamp));
    value
}

/// The counts of `herald queue stats` (`GET /queue/stats`).
#[derive(Debug, Clone)]
pub struct Stats {
    /// Messages by state.
    pub by_state: HashMap<QueueState, u64>,
    /// Per destination domain: messages and open recipients there, and how many of those
    /// recipients are deferred.
    pub by_domain: HashMap<String, DomainCounts>,
    /// Open recipients in all.
    pub recipients: u64,
    /// The oldest message: its id and when it was accepted.
    pub oldest: Option<(Id, Timestamp)>,
    /// When the queue was looked at.
    pub now: Timestamp,
    /// The room each store table takes, largest first: how retention keeps the disk
    /// bounded.
    pub tables: Vec<herald_queue::TableSize>,
    /// The regions' source addresses: connections, today's messages, warm-up (the
    /// operator's view only).
    pub sources: Vec<crate::regions::stats::SourceStats>,
}

/// One destination domain's share of the queue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DomainCounts {
    /// Messages with an open recipient there.
    pub messages: u64,
    /// Open recipients there.
    pub recipients: u64,
    /// Of those, deferred ones.
    pub deferred: u64,
}

impl Stats {
    /// Messages in all.
    pub fn messages(&self) -> u64 {
        self.by_state.values().sum()
    }

    /// The answer of `GET /queue/stats`: domains with the most open recipients first, at
    /// most [`STATS_DOMAINS_MAX`].
    pub fn to_json(&self) -> Value {
        let mut domains: Vec<(&String, &DomainCounts)> = self.by_domain.iter().collect();
        domains.sort_by(|a, b| b.1.recipients.cmp(&a.1.recipients).then(a.0.cmp(b.0)));
        let listed: Vec<Value> = domains
            .iter()
            .take(STATS_DOMAINS_MAX)
            .map(|(domain, counts)| {
                json!({
                    "domain": domain,
                    "messages": counts.messages,
                    "recipients": counts.recipients,
                    "deferred": counts.deferred,
                })
            })
            .collect();
        let by_state: serde_json::Map<String, Value> = QueueState::ALL
            .iter()
            .map(|state| {
                (
                    state.name().to_owned(),
                    json!(self.by_state.get(state).copied().unwrap_or(0)),
                )
            })
            .collect();
        json!({
            "object": "queue_stats",
            "messages": self.messages(),
            "recipients": self.recipients,
            "by_status": by_state,
            "domains": self.by_domain.len(),
            "by_domain": listed,
            "oldest": self.oldest.map(|(id, at)| json!({
                "id": id,
                "created_at": wire::timestamp(at),
                "age_seconds": self.now.saturating_since(at).as_secs(),
            })),
            "sources": self.sources.iter().map(crate::regions::stats::SourceStats::to_json).collect::<Vec<_>>(),
            "tables": self.tables.iter().map(|size| json!({
                "table": size.table.name(),
                "disk_bytes": size.disk_bytes,
                "memory_bytes": size.memory_bytes,
                "keys": size.keys,
            })).collect::<Vec<_>>(),
        })
    }
}

/// Counts the messages in `scope` by state and by destination domain. Walks the whole
/// spool, one envelope at a time.
pub fn stats(state: &Services, scope: Scope) -> Result<Stats, QueueError> {
    let now = state.now();
    let mut stats = Stats {
        by_state: HashMap::new(),
        by_domain: HashMap::new(),
        recipients: 0,
        oldest: None,
        now,
        tables: Vec::new(),
        sources: Vec::new(),
    };
    // Table sizes are the host's, not a team's: the operator's view only.
    if scope == Scope::All {
        let mut tables = state.node().table_sizes();
        tables.sort_by_key(|size| std::cmp::Reverse(size.disk_bytes + size.memory_bytes));
        stats.tables = tables;
        stats.sources = crate::regions::stats::all(state.regions(), state.today());
    }
    state.spool().walk(None, |id, envelope| {
        if !scope.sees(&envelope) {
            return Ok(true);
        }
        let queue_state = QueueState::of(&envelope, state.spool().is_claimed(id), now);
        *stats.by_state.entry(queue_state).or_default() += 1;
        if stats.oldest.is_none_or(|(_, at)| envelope.created_at < at) {
            stats.oldest = Some((id, envelope.created_at));
        }
        let mut counted: Vec<String> = Vec::new();
        for recipient in envelope.recipients.iter().filter(|r| !r.state.is_final()) {
            let domain = destination(&recipient.address);
            let counts = stats.by_domain.entry(domain.clone()).or_default();
            counts.recipients += 1;
            if matches!(recipient.state, RecipientState::Deferred { .. }) {
                counts.deferred += 1;
            }
            if !counted.contains(&domain) {
                counts.messages += 1;
                counted.push(domain);
            }
            stats.recipients += 1;
        }
        Ok(true)
    })?;
    Ok(stats)
}
