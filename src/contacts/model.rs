//! Contacts' records as every layer speaks of them: a contact, the segments, topics and
//! property definitions it names, and imports with their refused rows. The contact store
//! keeps them; the services in this module's siblings change them.

use std::collections::BTreeMap;

use herald_queue::{Id, Timestamp};
use serde_json::{Value, json};

use crate::wire;

/// One contact.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Contact {
    /// Its id.
    pub id: Id,
    /// The owning team.
    pub team_id: Id,
    /// The address, as written.
    pub email: String,
    /// First name.
    pub first_name: Option<String>,
    /// Last name.
    pub last_name: Option<String>,
    /// Whether the contact opted out of broadcasts.
    pub unsubscribed: bool,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// The segments it belongs to, in the order it joined them.
    #[serde(default)]
    pub segments: Vec<Id>,
    /// Its own topic choices; a topic it never chose follows the topic's default.
    #[serde(default)]
    pub topics: Vec<TopicChoice>,
    /// Custom property values by property id (not key: a property deleted and made
    /// again under the same key starts empty): strings and numbers, checked against the
    /// team's definitions when written.
    #[serde(default)]
    pub properties: BTreeMap<Id, Value>,
}

/// How an address is looked up: the domain part lower-cased (domains are
/// case-insensitive), the local part as written (RFC 5321 leaves it to the receiver).
pub fn normalize(email: &str) -> String {
    match email.rsplit_once('@') {
        Some((local, domain)) => format!("{local}@{}", domain.to_ascii_lowercase()),
        None => email.to_owned(),
    }
}

impl Contact {
    /// The list item (`GET /contacts`).
    pub fn summary_json(&self) -> Value {
        json!({
            "id": self.id,
            "email": self.email,
            "first_name": self.first_name,
            "last_name": self.last_name,
            "created_at": wire::timestamp(self.created_at),
            "unsubscribed": self.unsubscribed,
        })
    }

    /// The full object (`GET /contacts/{id-or-email}`): its properties as the Rust SDK
    /// decodes them, `{"key": {"type": ..., "value": "..."}}` with every value as text,
    /// for each property `definitions` holds that the contact has a value for, or whose
    /// fallback it then takes.
    pub fn to_json(&self, definitions: &[ContactProperty]) -> Value {
        let mut properties = serde_json::Map::new();
        for definition in definitions {
            let value = self
                .properties
                .get(&definition.id)
                .filter(|value| definition.kind.admits(value))
                .or(definition.fallback_value.as_ref());
            if let Some(value) = value {
                properties.insert(
                    definition.key.clone(),
                    json!({ "type": definition.kind.name(), "value": text(value) }),
                );
            }
        }
        let mut value = self.summary_json();
        if let Value::Object(map) = &mut value {
            map.shift_insert(0, "object".into(), json!("contact"));
            map.insert("properties".into(), Value::Object(properties));
        }
        value
    }

    /// The `data` of `contact.*` events, as Resend sends it. `audience_id` (the first
    /// segment, from when a contact had one audience) is text in every SDK's type, and
    /// the Rust SDK refuses a `null`: a contact in no segment has `""`.
    pub fn event_json(&self) -> Value {
        json!({
            "id": self.id,
            "audience_id": self.segments.first().map_or_else(String::new, Id::to_string),
            "segment_ids": self.segments,
            "created_at": wire::iso8601(self.created_at),
            "updated_at": wire::iso8601(self.updated_at),
            "email": self.email,
            "first_name": self.first_name,
            "last_name": self.last_name,
            "unsubscribed": self.unsubscribed,
        })
    }

    /// The contact's subscription to `topic`: its own choice, else the topic's default.
    pub fn subscription(&self, topic: &Topic) -> Subscription {
        self.topics
            .iter()
            .find(|choice| choice.id == topic.id)
            .map_or(topic.default_subscription, |choice| choice.subscription)
    }

    /// Whether a broadcast (on `topic`, when it has one) goes to this contact: not when it
    /// unsubscribed from everything, nor when it is out of the topic.
    pub fn receives(&self, topic: Option<&Topic>) -> bool {
        !self.unsubscribed && topic.is_none_or(|topic| self.subscription(topic) == Subscription::OptIn)
    }
}

/// A property's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PropertyType {
    /// Text.
    String,
    /// A JSON number.
    Number,
}

impl PropertyType {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            PropertyType::String => "string",
            PropertyType::Number => "number",
        }
    }

    /// Whether `value` is of this type.
    pub fn admits(self, value: &Value) -> bool {
        match self {
            PropertyType::String => value.is_string(),
            PropertyType::Number => value.is_number(),
        }
    }

    /// `text` (a CSV cell) as a value of this type, or why not.
    pub fn parse(self, text: &str) -> Result<Value, String> {
        match self {
            PropertyType::String => Ok(Value::String(text.to_owned())),
            PropertyType::Number => text
                .trim()
                .parse::<serde_json::Number>()
                .map(Value::Number)
                .map_err(|_| format!("{text:?} is not a number")),
        }
    }
}

/// One property definition.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ContactProperty {
    /// Its id.
    pub id: Id,
    /// The owning team.
    pub team_id: Id,
    /// The key contacts' values are stored under.
    pub key: String,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: PropertyType,
    /// What a contact without a value reads as.
    pub fallback_value: Option<Value>,
    /// When it was created.
    pub created_at: Timestamp,
}

impl ContactProperty {
    /// The answer to `GET /contact-properties/{id}` (with `object`) or a list item.
    pub fn to_json(&self, object: bool) -> Value {
        let mut value = json!({
            "id": self.id,
            "key": self.key,
            "type": self.kind.name(),
            "fallback_value": self.fallback_value,
            "created_at": wire::timestamp(self.created_at),
        });
        if let (true, Value::Object(map)) = (object, &mut value) {
            map.shift_insert(0, "object".into(), json!("contact_property"));
        }
        value
    }
}

/// One segment.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Segment {
    /// Its id.
    pub id: Id,
    /// The owning team.
    pub team_id: Id,
    /// Its name.
    pub name: String,
    /// When it was created.
    pub created_at: Timestamp,
}

impl Segment {
    /// The list item; `object` names it (`segment`, or `audience` on the legacy routes).
    pub fn to_json(&self, object: Option<&str>) -> Value {
        let mut value = json!({
            "id": self.id,
            "name": self.name,
            "created_at": wire::timestamp(self.created_at),
        });
        if let (Some(object), Value::Object(map)) = (object, &mut value) {
            map.shift_insert(0, "object".into(), json!(object));
        }
        value
    }
}

/// A contact's subscription to a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subscription {
    /// Receives the topic's mail.
    OptIn,
    /// Does not.
    OptOut,
}

impl Subscription {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Subscription::OptIn => "opt_in",
            Subscription::OptOut => "opt_out",
        }
    }
}

/// Who sees a topic on the preferences page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// Every contact.
    Public,
    /// Only contacts subscribed to it.
    #[default]
    Private,
}

/// One contact's choice for one topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TopicChoice {
    /// The topic.
    pub id: Id,
    /// The choice.
    pub subscription: Subscription,
}

/// One topic.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Topic {
    /// Its id.
    pub id: Id,
    /// The owning team.
    pub team_id: Id,
    /// Its name.
    pub name: String,
    /// What it is about.
    pub description: Option<String>,
    /// The subscription of contacts that never chose.
    pub default_subscription: Subscription,
    /// Who sees it.
    pub visibility: Visibility,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl Topic {
    /// The answer to `GET /topics/{id}` (with `object`) or a list item (without).
    pub fn to_json(&self, object: bool) -> Value {
        let mut value = json!({
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "default_subscription": self.default_subscription.name(),
            "visibility": self.visibility,
            "created_at": wire::timestamp(self.created_at),
        });
        if let (true, Value::Object(map)) = (object, &mut value) {
            map.shift_insert(0, "object".into(), json!("topic"));
        }
        value
    }

    /// The `data` of `topic.*` events, as Resend sends it.
    pub(crate) fn event_json(&self, deleted: bool) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "default_subscription": self.default_subscription.name(),
            "visibility": self.visibility,
            "deleted": deleted,
            "created_at": wire::iso8601(self.created_at),
            "updated_at": wire::iso8601(self.updated_at),
        })
    }
}

/// Where an import is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportStatus {
    /// Waiting for the worker.
    Queued,
    /// Being read.
    InProgress,
    /// Every row read.
    Completed,
    /// Stopped: the file could not be read.
    Failed,
}

impl ImportStatus {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            ImportStatus::Queued => "queued",
            ImportStatus::InProgress => "in_progress",
            ImportStatus::Completed => "completed",
            ImportStatus::Failed => "failed",
        }
    }

    /// Whether the worker is done with it.
    pub fn is_final(self) -> bool {
        matches!(self, ImportStatus::Completed | ImportStatus::Failed)
    }

    /// The status named `name`.
    pub fn parse(name: &str) -> Option<ImportStatus> {
        [
            ImportStatus::Queued,
            ImportStatus::InProgress,
            ImportStatus::Completed,
            ImportStatus::Failed,
        ]
        .into_iter()
        .find(|status| status.name() == name)
    }
}

/// What happened to an import's rows so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ImportCounts {
    /// Rows read.
    pub total: u64,
    /// Contacts created.
    pub created: u64,
    /// Existing contacts changed (`on_conflict: upsert`).
    pub updated: u64,
    /// Rows whose contact existed and was left as it was.
    pub skipped: u64,
    /// Rows refused.
    pub failed: u64,
}

/// What to do with a row whose address the team already has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnConflict {
    /// Update the contact with the row's values.
    #[default]
    Upsert,
    /// Leave the contact as it is.
    Skip,
}

/// One import.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ContactImport {
    /// Its id.
    pub id: Id,
    /// The owning team.
    pub team_id: Id,
    /// Where it is.
    pub status: ImportStatus,
    /// When it was uploaded.
    pub created_at: Timestamp,
    /// When the worker finished it.
    pub completed_at: Option<Timestamp>,
    /// Its rows so far.
    pub counts: ImportCounts,
    /// Which CSV column holds which field.
    pub columns: Columns,
    /// Existing contacts: updated or left.
    pub on_conflict: OnConflict,
    /// Segments every imported contact joins.
    pub segments: Vec<Id>,
    /// Topic choices every imported contact takes.
    pub topics: Vec<TopicChoice>,
    /// The byte offset of the next row to read.
    pub offset: u64,
    /// The line number of the next row to read (the header is line 1).
    pub line: u64,
    /// Why it failed.
    pub failure: Option<String>,
}

/// A row an import refused.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ImportError {
    /// Its place among the file's rows (the first after the header is 1): the key it is
    /// kept and paged by, which lines are not (a file with bare `\r` line ends, say).
    pub row: u64,
    /// Its line in the file (the header is line 1).
    pub line: u64,
    /// Why.
    pub reason: String,
}

impl ContactImport {
    /// A list item.
    pub fn summary_json(&self) -> Value {
        json!({
            "id": self.id,
            "status": self.status.name(),
            "created_at": wire::timestamp(self.created_at),
            "completed_at": self.completed_at.map(wire::timestamp),
            "counts": self.counts,
        })
    }

    /// The answer to `GET /contacts/imports/{id}`, with a page of refused rows and
    /// whether more follow it.
    pub fn to_json(&self, errors: &[ImportError], more_errors: bool) -> Value {
        let mut value = self.summary_json();
        if let Value::Object(map) = &mut value {
            map.shift_insert(0, "object".into(), json!("contact_import"));
            map.insert("errors".into(), json!(errors));
            map.insert("errors_has_more".into(), json!(more_errors));
            map.insert("errors_total".into(), json!(self.counts.failed));
            map.insert("failure_reason".into(), json!(self.failure));
        }
        value
    }
}

/// The columns resolved to positions in each row.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Columns {
    /// The address.
    pub email: usize,
    /// First name.
    pub first_name: Option<usize>,
    /// Last name.
    pub last_name: Option<usize>,
    /// Unsubscribed.
    pub unsubscribed: Option<usize>,
    /// Properties.
    pub properties: Vec<PropertyColumn>,
}

/// One property's column.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PropertyColumn {
    /// The property's id.
    pub id: Id,
    /// The property's key.
    pub key: String,
    /// Its position.
    pub index: usize,
    /// Its definition's type.
    pub kind: PropertyType,
    /// Whether cells are booleans, kept as `true` or `false`.
    pub boolean: bool,
}

/// A value as the answers show it: text as it is, a number in its decimal form.
pub fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_domain_part_is_compared_without_case_and_the_local_part_as_written() {
        assert_eq!(normalize("Bob.Smith@Example.COM"), "Bob.Smith@example.com");
        assert_ne!(normalize("bob@example.com"), normalize("Bob@example.com"));
    }

    #[test]
    fn broadcasts_skip_the_unsubscribed_and_those_out_of_their_topic() {
        let at = Timestamp::from_millis(0);
        let id = |n: u8| Id::from_bytes([n; 16]);
        let topic = |n: u8, default_subscription| Topic {
            id: id(n),
            team_id: id(0),
            name: "t".into(),
            description: None,
            default_subscription,
            visibility: Visibility::Private,
            created_at: at,
            updated_at: at,
        };
        let (news, offers) = (topic(1, Subscription::OptIn), topic(2, Subscription::OptOut));
        let mut contact = Contact {
            id: id(9),
            team_id: id(0),
            email: "ann@example.com".into(),
            first_name: None,
            last_name: None,
            unsubscribed: false,
            created_at: at,
            updated_at: at,
            segments: Vec::new(),
            topics: vec![TopicChoice {
                id: news.id,
                subscription: Subscription::OptOut,
            }],
            properties: BTreeMap::new(),
        };
        assert!(contact.receives(None));
        assert!(!contact.receives(Some(&news)), "its own opt-out");
        assert!(!contact.receives(Some(&offers)), "the topic's default");
        contact.topics.push(TopicChoice {
            id: offers.id,
            subscription: Subscription::OptIn,
        });
        assert!(contact.receives(Some(&offers)), "its own opt-in");
        contact.unsubscribed = true;
        assert!(!contact.receives(None) && !contact.receives(Some(&offers)));
    }
}
