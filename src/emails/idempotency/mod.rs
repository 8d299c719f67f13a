//! `Idempotency-Key`: the same key with the same body within 24 hours returns the first
//! response and sends nothing; with another body it is refused; while the first request
//! is still in flight a second one is refused. Exactly one email per key, even under
//! concurrent requests: the in-flight set admits one request per key at a time, and the
//! record is written in the same write as the email. (The set is per node; across the
//! nodes of a cluster the record's row, one per key, lets one email commit and turns the
//! other request away to try again: see [`PostgresIdempotency`].)
//!
//! The records and the keys in flight are kept by an [`IdempotencyStore`]; records expire
//! [`RETENTION`] after they were written, on the [due-time runner](crate::runner)
//! ([`expiry`]).

pub mod expiry;
mod record;
pub(crate) mod store;

use herald_queue::{Id, Timestamp};
use serde_json::Value;
use sha2::{Digest, Sha256};

pub use record::{Answer, IdempotencyKey, IdempotencyRecord, RETENTION};
pub use store::{IdempotencyStore, LocalIdempotency, PostgresIdempotency};

use crate::storage::Change;

/// Longest key accepted.
pub const KEY_MAX: usize = 256;

/// What a key says about a request.
#[derive(Debug)]
pub enum Outcome<'a> {
    /// First use (or the old one expired): go ahead; the guard holds the key until the
    /// request finishes.
    Fresh(InFlight<'a>),
    /// Seen with the same body: answer this again.
    Replay(Answer),
    /// Seen with another body.
    Mismatch,
    /// A request with this key is still being processed.
    Concurrent,
}

/// Idempotency keys: the requests in flight and the answers remembered.
#[derive(Debug)]
pub struct Idempotency {
    keys: Box<dyn IdempotencyStore>,
}

/// Holds a key as in flight; releases it when dropped.
#[derive(Debug)]
pub struct InFlight<'a> {
    keys: &'a Idempotency,
    /// The key held.
    pub key: IdempotencyKey,
    /// The body's hash.
    pub body_sha256: String,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.keys.keys.release(&self.key);
    }
}

impl InFlight<'_> {
    /// Stages the record of the answer into the change that sends the email.
    pub fn record(&self, change: &mut Change, answer: Answer, now: Timestamp) -> Result<(), crate::storage::Error> {
        let record = IdempotencyRecord {
            body_sha256: self.body_sha256.clone(),
            answer,
            created_at: now,
        };
        self.keys.keys.stage(change, &self.key, &record)
    }
}

impl Idempotency {
    /// Idempotency kept by `keys`.
    pub fn with_store(keys: Box<dyn IdempotencyStore>) -> Idempotency {
        Idempotency { keys }
    }

    /// Where the keys are kept: for the engine that expires them.
    pub fn keys(&self) -> &dyn IdempotencyStore {
        &*self.keys
    }

    /// Looks `key` up for `team_id` and a request whose body hashes to `body_sha256`, at
    /// `now`.
    pub fn begin(
        &self,
        now: Timestamp,
        team_id: Id,
        key: &str,
        body_sha256: String,
    ) -> Result<Outcome<'_>, crate::storage::Error> {
        let key = IdempotencyKey::of(team_id, key);
        if !self.keys.hold(&key) {
            return Ok(Outcome::Concurrent);
        }
        let guard = InFlight {
            keys: self,
            key,
            body_sha256,
        };
        match self.keys.get(&guard.key)? {
            Some(record) if now.saturating_since(record.created_at) < RETENTION => {
                if record.body_sha256 == guard.body_sha256 {
                    Ok(Outcome::Replay(record.answer))
                } else {
                    Ok(Outcome::Mismatch)
                }
            }
            _ => Ok(Outcome::Fresh(guard)),
        }
    }
}

/// SHA-256 (hex) of the canonical form of a JSON body: object keys sorted at every level,
/// no insignificant whitespace. Bodies that differ only in key order or spacing are the
/// same request.
pub fn body_hash(body: &Value) -> String {
    let mut canonical = String::new();
    write_canonical(body, &mut canonical);
    Sha256::digest(canonical.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// SHA-256 (hex) of raw bytes: "the same message" for SMTP's `Resend-Idempotency-Key`
/// is the same bytes as submitted, before herald adds its headers.
pub fn bytes_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_keep_their_door_and_older_records_still_decode() {
        let id = Id::from_bytes([9; 16]);
        let smtp = IdempotencyRecord {
            body_sha256: "h".into(),
            answer: Answer::Smtp { email_id: id },
            created_at: Timestamp::from_millis(1),
        };
        let json = serde_json::to_string(&smtp).expect("encode");
        assert!(!json.contains("status"), "no HTTP status for SMTP: {json}");
        let back: IdempotencyRecord = serde_json::from_str(&json).expect("decode");
        assert_eq!(back.answer.email_id(), Some(id));
        // As builds before the typed answer stored an SMTP submission's.
        let older = format!(r#"{{"body_sha256":"h","status":250,"response":"{{\"id\":\"{id}\"}}","created_at":1}}"#);
        let older: IdempotencyRecord = serde_json::from_str(&older).expect("decode");
        assert!(matches!(older.answer, Answer::Http { status: 250, .. }));
        assert_eq!(older.answer.email_id(), Some(id));
        let api: IdempotencyRecord =
            serde_json::from_str(r#"{"body_sha256":"h","status":200,"response":"{}","created_at":1}"#).expect("decode");
        assert_eq!(
            api.answer,
            Answer::Http {
                status: 200,
                response: "{}".into()
            }
        );
    }

    #[test]
    fn key_order_and_spacing_do_not_change_the_hash() {
        let a: Value =
            serde_json::from_str(r#"{"to":["a@b.test"],"from":"x@y.test","n":{"b":1,"a":2}}"#).expect("json");
        let b: Value =
            serde_json::from_str(r#"{ "n": {"a":2, "b":1}, "from":"x@y.test", "to":[ "a@b.test" ] }"#).expect("json");
        let c: Value =
            serde_json::from_str(r#"{"to":["a@b.test"],"from":"x@y.test","n":{"b":1,"a":3}}"#).expect("json");
        assert_eq!(body_hash(&a), body_hash(&b));
        assert_ne!(body_hash(&a), body_hash(&c));
    }
}
