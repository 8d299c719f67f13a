//! A suppressed address as every layer speaks of it: the record, why it was added, and
//! how addresses compare.

use herald_queue::{Id, Timestamp};
use serde_json::{Value, json};

use crate::wire;

/// Why an address is suppressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A hard bounce.
    Bounce,
    /// A spam complaint.
    Complaint,
    /// Added through the API.
    Manual,
}

/// One suppressed address.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Suppression {
    /// Its id.
    pub id: Id,
    /// The team.
    pub team_id: Id,
    /// The address, lower case.
    pub email: String,
    /// Why.
    pub origin: Origin,
    /// The email that caused it, if any.
    pub source_id: Option<Id>,
    /// When it was added.
    pub created_at: Timestamp,
}

impl Suppression {
    /// A new entry `id` for `email`, made at `created_at`.
    pub fn new(
        (id, created_at): (Id, Timestamp),
        team_id: Id,
        email: &str,
        origin: Origin,
        source_id: Option<Id>,
    ) -> Self {
        Suppression {
            id,
            team_id,
            email: normalize(email),
            origin,
            source_id,
            created_at,
        }
    }

    /// The API object.
    pub fn to_json(&self) -> Value {
        let mut value = self.summary_json();
        if let Value::Object(map) = &mut value {
            map.shift_insert(0, "object".into(), json!("suppression"));
        }
        value
    }

    /// The entry in `GET /suppressions`: the API object without `object`, as Resend
    /// lists it.
    pub fn summary_json(&self) -> Value {
        json!({
            "id": self.id,
            "email": self.email,
            "origin": self.origin,
            "source_id": self.source_id,
            "created_at": wire::timestamp(self.created_at),
        })
    }

    /// The payload of `suppression.added` and `suppression.removed` events.
    pub fn event_json(&self) -> Value {
        self.summary_json()
    }
}

/// Addresses compare case-insensitively here: mailbox local parts are case-sensitive in
/// theory, but no receiving system in use treats them so, and a suppression that a
/// capital letter could bypass would not protect the sender's reputation.
pub fn normalize(email: &str) -> String {
    email.trim().to_lowercase()
}
