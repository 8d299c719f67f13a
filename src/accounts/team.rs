//! Teams.

use herald_queue::{Id, Record, Scan, Store, Table, Timestamp};

/// A team: the owner of keys, domains, emails and every other resource.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Team {
    /// The team's id.
    pub id: Id,
    /// A display name.
    pub name: String,
    /// Whether the team is the operator's (the first team): its full-access keys may
    /// create other teams.
    pub operator: bool,
    /// When it was created.
    pub created_at: Timestamp,
    /// The team's own API rate limit (`"100/s"`), overriding `[api] rate_limit`.
    #[serde(default)]
    pub rate_limit: Option<String>,
}

impl Record for Team {
    const TABLE: Table = Table::TEAMS;
}

impl Team {
    /// Every team, oldest first. Teams are few (one per tenant), so this reads a bounded
    /// amount.
    pub fn all(store: &Store) -> Result<Vec<Team>, herald_queue::Error> {
        Ok(store
            .scan::<Team>(Scan::prefix(b""))?
            .into_iter()
            .map(|(_, team)| team)
            .collect())
    }

    /// The team `id`, if there is one.
    pub fn find(store: &Store, id: Id) -> Result<Option<Team>, herald_queue::Error> {
        store.get::<Team>(id.as_bytes())
    }
}
