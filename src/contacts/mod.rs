//! Contacts: the people a team mails in bulk, one per address per team (Resend's
//! audience API). A contact that unsubscribes is not suppressed: suppressions stop
//! transactional mail to an address, unsubscribing stops marketing mail to a person.
//! Segments, topics, properties and imports come with the rest of the audience API.

pub mod service;
mod store;

use herald_queue::{Id, Timestamp};
use serde_json::{Value, json};

pub use store::{ContactStore, RocksContacts};

use crate::wire;

/// One contact.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

    /// The full object (`GET /contacts/{id-or-email}`).
    pub fn to_json(&self) -> Value {
        let mut value = self.summary_json();
        if let Value::Object(map) = &mut value {
            map.shift_insert(0, "object".into(), json!("contact"));
            map.insert("properties".into(), json!({}));
        }
        value
    }

    /// The `data` of `contact.*` events, as Resend sends it.
    pub fn event_json(&self) -> Value {
        json!({
            "id": self.id,
            "audience_id": null,
            "segment_ids": [],
            "created_at": wire::iso8601(self.created_at),
            "updated_at": wire::iso8601(self.updated_at),
            "email": self.email,
            "first_name": self.first_name,
            "last_name": self.last_name,
            "unsubscribed": self.unsubscribed,
        })
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
}
