//! The suppression list: addresses a team's mail is no longer sent to, because they
//! bounced hard, complained, or were added by hand.
//!
//! Each entry is stored twice in the same batch: by team and lower-cased address in
//! [`Table::SUPPRESSIONS`] (what delivery checks before connecting) and by team and id
//! in [`Table::SUPPRESSION_IDS`] (what `GET /suppressions/{id}` finds).

use herald_queue::{Batch, Id, Record, Store, Table, Timestamp};
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

impl Record for Suppression {
    const TABLE: Table = Table::SUPPRESSIONS;
}

/// The id index entry: points at the address.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SuppressionId {
    /// The suppressed address, lower case.
    pub email: String,
}

impl Record for SuppressionId {
    const TABLE: Table = Table::SUPPRESSION_IDS;
}

impl Suppression {
    /// The key in [`Table::SUPPRESSIONS`]: team id then the lower-cased address.
    pub fn key(team_id: Id, email: &str) -> Vec<u8> {
        [team_id.as_bytes().as_slice(), normalize(email).as_bytes()].concat()
    }

    /// The key in [`Table::SUPPRESSION_IDS`].
    pub fn id_key(team_id: Id, id: Id) -> Vec<u8> {
        [team_id.as_bytes().as_slice(), id.as_bytes()].concat()
    }

    /// A new entry for `email`.
    pub fn new(store: &Store, team_id: Id, email: &str, origin: Origin, source_id: Option<Id>) -> Self {
        Suppression {
            id: store.next_id(),
            team_id,
            email: normalize(email),
            origin,
            source_id,
            created_at: store.now(),
        }
    }

    /// Adds both entries to `batch`.
    pub fn put(&self, batch: &mut Batch) -> Result<(), herald_queue::Error> {
        batch.put(Self::key(self.team_id, &self.email), self)?;
        batch.put(
            Self::id_key(self.team_id, self.id),
            &SuppressionId {
                email: self.email.clone(),
            },
        )
    }

    /// Removes both entries in `batch`.
    pub fn delete(&self, batch: &mut Batch) {
        batch.delete::<Suppression>(Self::key(self.team_id, &self.email));
        batch.delete::<SuppressionId>(Self::id_key(self.team_id, self.id));
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

/// The team's entry for `email`, if it is suppressed.
pub fn find(store: &Store, team_id: Id, email: &str) -> Result<Option<Suppression>, herald_queue::Error> {
    store.get::<Suppression>(Suppression::key(team_id, email))
}

/// The team's entry with id `id`, if there is one.
pub fn find_by_id(store: &Store, team_id: Id, id: Id) -> Result<Option<Suppression>, herald_queue::Error> {
    let Some(index) = store.get::<SuppressionId>(Suppression::id_key(team_id, id))? else {
        return Ok(None);
    };
    // The two reads are not one snapshot: between them the address may have been removed
    // and added again under a new id. Only the entry with this id answers.
    Ok(find(store, team_id, &index.email)?.filter(|found| found.id == id))
}

/// Addresses compare case-insensitively here: mailbox local parts are case-sensitive in
/// theory, but no receiving system in use treats them so, and a suppression that a
/// capital letter could bypass would not protect the sender's reputation.
pub fn normalize(email: &str) -> String {
    email.trim().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_ignore_case() {
        let team = Id::from_bytes([7; 16]);
        assert_eq!(
            Suppression::key(team, "Bob@Example.ORG"),
            Suppression::key(team, "bob@example.org")
        );
    }
}
