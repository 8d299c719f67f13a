//! The records of users and their sessions, as every layer speaks of them.

use herald_queue::{Id, Timestamp};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::wire;

/// What a user may do in their team.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Sees everything; may not create keys, delete domains or manage members.
    Member,
    /// Manages keys, domains, webhooks and suppressions.
    Admin,
    /// And the team's members.
    Owner,
}

impl Role {
    /// The role named `name`.
    pub fn parse(name: &str) -> Option<Role> {
        match name {
            "member" => Some(Role::Member),
            "admin" => Some(Role::Admin),
            "owner" => Some(Role::Owner),
            _ => None,
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Role::Member => "member",
            Role::Admin => "admin",
            Role::Owner => "owner",
        }
    }
}

/// One user.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct User {
    /// Its id.
    pub id: Id,
    /// The team it belongs to.
    pub team_id: Id,
    /// The address it signs in with, as given.
    pub email: String,
    /// Its role.
    pub role: Role,
    /// The Argon2id PHC string of its password; `None` until an invitation is taken.
    pub password_hash: Option<String>,
    /// The TOTP secret, once enrolled.
    #[serde(default)]
    pub totp_secret: Option<Vec<u8>>,
    /// SHA-256 digests of the recovery codes not yet used.
    #[serde(default)]
    pub recovery_codes: Vec<String>,
    /// When it was added.
    pub created_at: Timestamp,
}

impl User {
    /// The answer of `POST /users` and the members list.
    pub fn to_json(&self) -> Value {
        json!({
            "object": "user",
            "id": self.id,
            "team_id": self.team_id,
            "email": self.email,
            "role": self.role.name(),
            "mfa": self.totp_secret.is_some(),
            "invited": self.password_hash.is_none(),
            "created_at": wire::timestamp(self.created_at),
        })
    }
}

/// `email` as compared: trimmed, lower-cased.
pub fn normalize(email: &str) -> String {
    email.trim().to_ascii_lowercase()
}

/// One session.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Session {
    /// The user's team.
    pub team_id: Id,
    /// The user.
    pub user_id: Id,
    /// When it began.
    pub created_at: Timestamp,
    /// When it was last used.
    pub last_seen: Timestamp,
    /// Whether the user gave its second factor (or has none).
    pub mfa_passed: bool,
    /// The CSRF token forms of this session carry.
    pub csrf: String,
    /// A TOTP secret being enrolled, until a code confirms it.
    #[serde(default)]
    pub pending_totp: Option<Vec<u8>>,
}

/// The SHA-256 of `token`: what is stored.
pub fn digest(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}
