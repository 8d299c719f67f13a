//! Contacts: the people a team mails in bulk, one per address per team (Resend's
//! audience API), with the segments they belong to, their topic subscriptions and their
//! custom properties, created one at a time or imported from a CSV file.
//!
//! A contact that unsubscribes is not suppressed: suppressions stop transactional mail to
//! an address, unsubscribing (from everything, or from one topic) stops marketing mail to
//! a person. Broadcasts read [`Contact::receives`] to skip them.
//!
//! Segments, topics and property definitions are small per-team collections (each
//! bounded by a `[contacts]` limit); contacts are the big one. A contact's record names
//! its segments, topic choices and property values, and a segment's members are also
//! indexed by segment, so a segment's contacts page without reading anyone else's. When
//! a segment, topic or property goes, the records that name it are not rewritten (there
//! may be millions): what they say of it is ignored on reading, and dropped at the
//! contact's next write (see [`service`]), so a record names at most the live segments
//! and topics plus those deleted since its last write.

pub mod imports;
pub mod properties;
pub mod segments;
pub mod service;
mod store;
pub mod topics;

use std::collections::BTreeMap;

use herald_queue::{Id, Timestamp};
use serde_json::{Value, json};

pub use properties::ContactProperty;
pub use segments::Segment;
pub use store::{AudienceStore, ContactStore, RocksContacts};
pub use topics::{Subscription, Topic, TopicChoice};

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
                    json!({ "type": definition.kind.name(), "value": properties::text(value) }),
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
            visibility: topics::Visibility::Private,
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
