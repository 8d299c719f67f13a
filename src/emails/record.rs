//! The email record (`GET /emails/{id}`), its status and the events of its timeline:
//! what they hold, not where they are kept ([`super::store`]).

use herald_queue::{Id, Timestamp};
use serde_json::{Value, json};

use super::state::EmailState;
use crate::wire;

/// Where an email came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `POST /emails` or `/emails/batch`.
    Api,
    /// SMTP submission.
    Smtp,
    /// A broadcast to a segment.
    Broadcast,
}

impl Source {
    /// The label of metrics about it.
    pub fn label(self) -> &'static str {
        match self {
            Source::Api => "api",
            Source::Smtp => "smtp",
            Source::Broadcast => "broadcast",
        }
    }
}

/// An email as recorded, keyed by team and email id in `Table::EMAILS`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EmailRecord {
    /// The email's id (also its spool id).
    pub id: Id,
    /// The owning team.
    pub team_id: Id,
    /// The key that sent it.
    pub api_key_id: Option<Id>,
    /// `From`, as written.
    pub from: String,
    /// `To` addresses.
    pub to: Vec<String>,
    /// `Cc` addresses.
    pub cc: Vec<String>,
    /// `Bcc` addresses.
    pub bcc: Vec<String>,
    /// `Reply-To` addresses.
    pub reply_to: Vec<String>,
    /// Subject.
    pub subject: String,
    /// HTML body.
    pub html: Option<String>,
    /// Text body.
    pub text: Option<String>,
    /// Tags.
    pub tags: Vec<Tag>,
    /// When it was accepted.
    pub created_at: Timestamp,
    /// When it is scheduled to go, if it was scheduled.
    pub scheduled_at: Option<Timestamp>,
    /// `Message-ID`, with angle brackets.
    pub message_id: String,
    /// The latest event: `sent`, `scheduled`, `canceled`, `delivered`, ...
    pub last_event: EmailState,
    /// Size of the built message in bytes.
    pub size: u64,
    /// Where it came in.
    pub source: Source,
    /// The template (and version) it was rendered from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<TemplateRef>,
    /// The topic it was sent on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<Id>,
    /// The latest delivery attempts, for debugging (oldest first, at most
    /// [`EmailRecord::ATTEMPTS_KEPT`]).
    #[serde(default)]
    pub attempts: Vec<AttemptLog>,
    /// Whether `html` and `text` were removed by `[retention] content` (the record stays
    /// until `[retention] emails`).
    #[serde(default)]
    pub content_expired: bool,
    /// Whether `html` and `text` are not stored here but read from the sent message,
    /// which the spool retains (an SMTP submission whose bodies went out unchanged; see
    /// [`super::content`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub content_in_message: bool,
    /// With `content_in_message`: the message's text part was made from its html (the
    /// sender gave no text), so `text` reads as none, as it was given.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub text_derived: bool,
    /// With `content_in_message`: the bodies were given with bare line feeds, which the
    /// message carries as CRLF, and read with line feeds again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub line_feeds: bool,
    /// The broadcast it is one of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broadcast_id: Option<Id>,
    /// The API request that created it (its request log's id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_log_id: Option<Id>,
}

/// A summary of one delivery attempt to one destination.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AttemptLog {
    /// When it ended.
    pub at: Timestamp,
    /// The recipients it carried.
    pub recipients: Vec<String>,
    /// The MX host (or relay), when one was reached.
    pub host: Option<String>,
    /// Its address.
    pub ip: Option<String>,
    /// The source address it was made from, when the region binds one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The TLS version, when encrypted.
    pub tls: Option<String>,
    /// The reply (or herald's reason, when no server answered).
    pub reply: String,
}

impl EmailRecord {
    /// Attempt summaries kept on the record.
    pub const ATTEMPTS_KEPT: usize = 20;

    /// The key in `Table::EMAILS`.
    pub fn key(team_id: Id, id: Id) -> Vec<u8> {
        [team_id.as_bytes().as_slice(), id.as_bytes()].concat()
    }

    /// The list item (`GET /emails`).
    pub fn summary_json(&self) -> Value {
        json!({
            "id": self.id,
            "to": self.to,
            "from": self.from,
            "created_at": wire::timestamp(self.created_at),
            "subject": self.subject,
            "bcc": non_empty(&self.bcc),
            "cc": non_empty(&self.cc),
            "reply_to": non_empty(&self.reply_to),
            "last_event": self.last_event,
            "scheduled_at": self.scheduled_at.map(wire::timestamp),
            "message_id": self.message_id,
        })
    }

    /// The full record (`GET /emails/{id}`).
    pub fn to_json(&self) -> Value {
        let mut value = self.summary_json();
        if let Value::Object(map) = &mut value {
            map.shift_insert(0, "object".into(), json!("email"));
            map.insert("html".into(), json!(self.html));
            map.insert("text".into(), json!(self.text));
            map.insert("tags".into(), json!(self.tags));
            // herald's own field: `html` and `text` are null because retention removed them.
            map.insert("content_expired".into(), json!(self.content_expired));
            if let Some(topic) = self.topic_id {
                map.insert("topic_id".into(), json!(topic));
            }
            // herald's own field: the template and version it was rendered from.
            if let Some(template) = &self.template {
                map.insert(
                    "template".into(),
                    json!({ "id": template.id, "version_id": template.version_id }),
                );
            }
        }
        value
    }

    /// The `data` of this email's webhook events.
    pub fn event_data(&self, at: Timestamp) -> Value {
        self.status().event_data(at)
    }

    /// Its status record, as at acceptance.
    pub fn status(&self) -> EmailStatus {
        EmailStatus {
            id: self.id,
            team_id: self.team_id,
            from: self.from.clone(),
            to: self.to.clone(),
            subject: self.subject.clone(),
            message_id: self.message_id.clone(),
            tags: self.tags.clone(),
            last_event: self.last_event,
            attempts: self.attempts.clone(),
            template_id: self.template.map(|t| t.id),
            api_key_id: self.api_key_id,
            opened: false,
            clicked: false,
            broadcast_id: self.broadcast_id,
        }
    }

    /// Takes `last_event` and the attempt log from the status record, which delivery
    /// keeps current.
    pub fn merge(&mut self, status: Option<EmailStatus>) {
        if let Some(status) = status {
            self.last_event = status.last_event;
            self.attempts = status.attempts;
        }
    }
}

/// What delivery reads and writes of an email: the fields its events carry, its latest
/// event and its attempt log, kept apart from the record so that a status change never
/// rewrites the email's bodies. Keyed like the record, in `Table::EMAIL_STATUS`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EmailStatus {
    /// The email's id.
    pub id: Id,
    /// The owning team.
    pub team_id: Id,
    /// `From`, as written.
    pub from: String,
    /// `To` addresses.
    pub to: Vec<String>,
    /// Subject.
    pub subject: String,
    /// `Message-ID`.
    pub message_id: String,
    /// Tags.
    pub tags: Vec<Tag>,
    /// The latest event.
    pub last_event: EmailState,
    /// The latest delivery attempts, oldest first.
    pub attempts: Vec<AttemptLog>,
    /// The template it was rendered from, for its events' `template_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_id: Option<Id>,
    /// The API key that sent it (absent on emails stored before it was kept here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_id: Option<Id>,
    /// Whether a person (not a machine) has opened it: its first open counts as unique.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub opened: bool,
    /// Whether a person has clicked a link in it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clicked: bool,
    /// The broadcast it is one of (stored since broadcasts count their emails by
    /// status; see [`crate::broadcasts::store`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broadcast_id: Option<Id>,
}

impl EmailStatus {
    /// The `data` of this email's webhook events.
    pub fn event_data(&self, at: Timestamp) -> Value {
        let tags: serde_json::Map<String, Value> = self.tags.iter().map(|t| (t.name.clone(), json!(t.value))).collect();
        let mut data = json!({
            "email_id": self.id,
            "created_at": wire::iso8601(at),
            "from": self.from,
            "to": self.to,
            "subject": self.subject,
            "message_id": self.message_id,
            "tags": tags,
        });
        // Resend's field for emails sent with a template (the SDKs' event types have it).
        if let (Some(template), Value::Object(map)) = (self.template_id, &mut data) {
            map.insert("template_id".into(), json!(template));
        }
        data
    }
}

fn non_empty(list: &[String]) -> Value {
    if list.is_empty() { Value::Null } else { json!(list) }
}

/// One event on an email's timeline, keyed by email id and event id in
/// `Table::EVENTS`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EmailEvent {
    /// The event's id.
    pub id: Id,
    /// The email.
    pub email_id: Id,
    /// `sent`, `scheduled`, `canceled`, ...
    pub kind: EmailState,
    /// When.
    pub created_at: Timestamp,
    /// Details (a delivery's reply, a bounce's reason, ...).
    pub data: Value,
}

impl EmailEvent {
    /// The key in `Table::EVENTS`.
    pub fn key(email_id: Id, id: Id) -> Vec<u8> {
        [email_id.as_bytes().as_slice(), id.as_bytes()].concat()
    }
}

/// A tag.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tag {
    /// Name.
    pub name: String,
    /// Value.
    pub value: String,
}

/// The template and version an email was rendered from, kept on its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TemplateRef {
    /// The template.
    pub id: Id,
    /// The published version it sent.
    pub version_id: Id,
}
