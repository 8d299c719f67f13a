//! Teams.

use herald_queue::{Id, Timestamp};

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
    /// The `[[plans]]` entry whose allowances it has; unlimited without one.
    #[serde(default)]
    pub plan: Option<String>,
    /// When it was deleted: its records are being erased, and the team is gone from the
    /// API.
    #[serde(default)]
    pub deleted_at: Option<Timestamp>,
}
