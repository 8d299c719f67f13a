//! What an idempotency key remembers: the answer its first request got, and the key
//! itself as a team's (a digest: the key as sent is never kept).

use std::time::Duration;

use herald_queue::{Id, Timestamp};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// How long a key is remembered.
pub const RETENTION: Duration = Duration::from_secs(24 * 3600);

/// A team's idempotency key, by the SHA-256 of the key as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdempotencyKey {
    /// The team.
    pub team_id: Id,
    /// SHA-256 of the key as sent.
    pub digest: [u8; 32],
}

impl IdempotencyKey {
    /// `key` as sent by `team_id`.
    pub fn of(team_id: Id, key: &str) -> IdempotencyKey {
        IdempotencyKey {
            team_id,
            digest: Sha256::digest(key.as_bytes()).into(),
        }
    }
}

/// What was answered for a key.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IdempotencyRecord {
    /// SHA-256 of the canonical JSON of the first request's body (of the message's bytes
    /// over SMTP), hex.
    pub body_sha256: String,
    /// What was answered, to answer again.
    #[serde(flatten)]
    pub answer: Answer,
    /// When.
    pub created_at: Timestamp,
}

/// What an idempotency key remembers of the request it first came with: its answer, in
/// the terms of the door it came through.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum Answer {
    /// An SMTP submission's: the email accepted (answered `250 2.0.0 OK <id>`).
    Smtp {
        /// The email.
        email_id: Id,
    },
    /// A REST request's: the status and the JSON body. Older builds also stored SMTP
    /// answers this way (status 250, body `{"id": ...}`).
    Http {
        /// The status.
        status: u16,
        /// The body.
        response: String,
    },
}

impl Answer {
    /// The email an SMTP submission was answered with, also from a record of an older
    /// build.
    pub fn email_id(&self) -> Option<Id> {
        match self {
            Answer::Smtp { email_id } => Some(*email_id),
            Answer::Http { response, .. } => serde_json::from_str::<Value>(response)
                .ok()
                .and_then(|v| v["id"].as_str().and_then(|id| id.parse().ok())),
        }
    }
}
