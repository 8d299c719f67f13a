//! A broadcast and what became of each of its contacts: the records the broadcasts
//! service works on and its store keeps.

use herald_queue::{Id, Timestamp};
use serde_json::{Value, json};

use crate::wire;

/// Where a broadcast is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Being written; may be changed and deleted.
    Draft,
    /// Sent for a later time.
    Scheduled,
    /// Its emails are being made.
    Sending,
    /// Every contact had its email (or was skipped).
    Sent,
    /// Stopped before it was done.
    Canceled,
}

impl Status {
    /// herald's own name, in `progress.status`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Draft => "draft",
            Status::Scheduled => "scheduled",
            Status::Sending => "sending",
            Status::Sent => "sent",
            Status::Canceled => "canceled",
        }
    }

    /// Whether the worker still has to do something.
    pub fn is_queued(self) -> bool {
        matches!(self, Status::Scheduled | Status::Sending)
    }
}

/// What became of a broadcast's contacts so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    /// Contacts looked at.
    pub total: u64,
    /// Emails made.
    pub sent: u64,
    /// Skipped: unsubscribed, or out of the topic.
    pub unsubscribed: u64,
    /// Skipped: on the suppression list.
    pub suppressed: u64,
    /// Skipped: a value the personalisation needs is missing.
    pub failed: u64,
    /// Emails taken back from the queue by a cancel (kept as a counter of its own; read
    /// in with the broadcast).
    pub canceled: u64,
}

/// One broadcast.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Broadcast {
    /// Its id.
    pub id: Id,
    /// The owning team.
    pub team_id: Id,
    /// Its name.
    pub name: String,
    /// The segment it goes to.
    pub segment_id: Id,
    /// The sender, `addr` or `Name <addr>`.
    pub from: String,
    /// The subject (merge tags allowed).
    pub subject: String,
    /// Reply-To addresses.
    pub reply_to: Vec<String>,
    /// The HTML body (merge tags allowed).
    pub html: Option<String>,
    /// The text body (merge tags allowed).
    pub text: Option<String>,
    /// The editor's design the HTML was compiled from, when it was made in the editor
    /// (see [`crate::design`]); dropped when the HTML is edited as HTML.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mjml: Option<String>,
    /// The preview text shown after the subject in inboxes.
    pub preview_text: Option<String>,
    /// The topic it is sent on.
    pub topic_id: Option<Id>,
    /// Where it is.
    pub status: Status,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it goes (or went) out, if scheduled.
    pub scheduled_at: Option<Timestamp>,
    /// When its sending began.
    pub sent_at: Option<Timestamp>,
    /// When it finished or was canceled.
    #[serde(default)]
    pub finished_at: Option<Timestamp>,
    /// The last contact expanded (the segment is walked newest first): the next page
    /// starts after it.
    #[serde(default)]
    pub cursor: Option<Id>,
    /// What became of its contacts.
    #[serde(default)]
    pub counts: Counts,
    /// Whether its emails are counted by status as they move ([`super::store`]): so for every
    /// broadcast created since that began; the outcomes of older ones are read from every
    /// email.
    #[serde(default)]
    pub counted: bool,
}

impl Broadcast {
    /// Resend's status, which the SDKs decode: `draft`, `queued` or `sent` (herald's own
    /// finer status is in `progress`).
    pub fn wire_status(&self) -> &'static str {
        match self.status {
            Status::Draft => "draft",
            Status::Scheduled | Status::Sending => "queued",
            Status::Sent => "sent",
            Status::Canceled if self.counts.sent > 0 => "sent",
            Status::Canceled => "draft",
        }
    }

    /// herald's own field: the finer status and the counts.
    fn progress(&self) -> Value {
        json!({
            "status": self.status.name(),
            "total": self.counts.total,
            "sent": self.counts.sent,
            "unsubscribed": self.counts.unsubscribed,
            "suppressed": self.counts.suppressed,
            "failed": self.counts.failed,
            "canceled": self.counts.canceled,
            "finished_at": self.finished_at.map(wire::timestamp),
        })
    }

    /// A list item.
    pub fn summary_json(&self) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "audience_id": self.segment_id,
            "segment_id": self.segment_id,
            "status": self.wire_status(),
            "created_at": wire::timestamp(self.created_at),
            "scheduled_at": self.scheduled_at.map(wire::timestamp),
            "sent_at": self.sent_at.map(wire::timestamp),
            "topic_id": self.topic_id,
            "progress": self.progress(),
        })
    }

    /// `GET /broadcasts/{id}`.
    pub fn to_json(&self) -> Value {
        json!({
            "object": "broadcast",
            "id": self.id,
            "name": self.name,
            "audience_id": self.segment_id,
            "segment_id": self.segment_id,
            "from": self.from,
            "subject": self.subject,
            "reply_to": if self.reply_to.is_empty() { Value::Null } else { json!(self.reply_to) },
            "preview_text": self.preview_text,
            "status": self.wire_status(),
            "created_at": wire::timestamp(self.created_at),
            "scheduled_at": self.scheduled_at.map(wire::timestamp),
            "sent_at": self.sent_at.map(wire::timestamp),
            "topic_id": self.topic_id,
            "html": self.html,
            "text": self.text,
            "progress": self.progress(),
        })
    }
}

/// What became of one contact of a broadcast.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Its email was made.
    Sent,
    /// Skipped: unsubscribed, or out of the topic.
    Unsubscribed,
    /// Skipped: on the suppression list.
    Suppressed,
    /// Skipped: a value its personalisation needs is missing.
    Failed,
}

/// One contact of a broadcast, as expanded.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Recipient {
    /// The contact.
    pub contact_id: Id,
    /// Its address then.
    pub email: String,
    /// What became of it.
    pub outcome: Outcome,
    /// Its email, when one was made.
    pub email_id: Option<Id>,
    /// Why it was skipped, when it failed.
    pub reason: Option<String>,
}
