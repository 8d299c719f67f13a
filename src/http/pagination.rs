//! Cursor pagination shared by every list: `limit`, `after`, `before`, `has_more`.
//!
//! Lists are newest first. Records are keyed `<team id><item id>` with UUIDv7 item ids,
//! so newest first is a reverse scan of the team's prefix; `after=X` continues with items
//! older than X, `before=X` returns the items just newer than X.

use herald_queue::{Id, Record, Scan, Store};
use serde_json::{Value, json};

use super::{ApiError, ApiRequest};

/// Largest page.
pub const LIMIT_MAX: usize = 100;

/// A page request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    /// Items per page.
    pub limit: usize,
    /// Where to start.
    pub cursor: Cursor,
}

/// A position in a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cursor {
    /// From the newest item.
    Start,
    /// Items older than this one.
    After(Id),
    /// Items newer than this one.
    Before(Id),
}

impl PageRequest {
    /// Reads `limit`, `after` and `before`. Without `limit`, `default_limit` applies;
    /// `None` means everything, as Resend's older lists (domains, API keys) do.
    pub fn parse(request: &ApiRequest, default_limit: Option<usize>) -> Result<PageRequest, ApiError> {
        let limit = match request.query("limit") {
            Some(text) => match text.parse::<usize>() {
                Ok(n) if (1..=LIMIT_MAX).contains(&n) => n,
                _ => {
                    return Err(ApiError::validation(format!(
                        "The `limit` parameter must be a number between 1 and {LIMIT_MAX}, got {text:?}"
                    )));
                }
            },
            None => default_limit.unwrap_or(usize::MAX),
        };
        let cursor = match (request.query("after"), request.query("before")) {
            (Some(_), Some(_)) => {
                return Err(ApiError::validation(
                    "The `after` and `before` parameters cannot be used together",
                ));
            }
            (Some(after), None) => Cursor::After(cursor_id(after, "after")?),
            (None, Some(before)) => Cursor::Before(cursor_id(before, "before")?),
            (None, None) => Cursor::Start,
        };
        Ok(PageRequest { limit, cursor })
    }

    /// One page of the records of type `R` under `prefix` (16 bytes of team id), whose
    /// keys are `prefix + item id`. Returns the page, newest first, and whether more items
    /// lie beyond it in the direction of travel.
    pub fn load<R: Record>(&self, store: &Store, prefix: &[u8]) -> Result<(Vec<R>, bool), ApiError> {
        let fetch = self.limit.saturating_add(1);
        let cursor_key = |id: Id| [prefix, id.as_bytes().as_slice()].concat();
        let (mut items, reversed) = match self.cursor {
            Cursor::Start => (
                store.scan::<R>(Scan {
                    prefix,
                    after: None,
                    reverse: true,
                    limit: fetch,
                })?,
                false,
            ),
            Cursor::After(id) => {
                let key = cursor_key(id);
                (
                    store.scan::<R>(Scan {
                        prefix,
                        after: Some(&key),
                        reverse: true,
                        limit: fetch,
                    })?,
                    false,
                )
            }
            Cursor::Before(id) => {
                let key = cursor_key(id);
                (
                    store.scan::<R>(Scan {
                        prefix,
                        after: Some(&key),
                        reverse: false,
                        limit: fetch,
                    })?,
                    true,
                )
            }
        };
        let has_more = items.len() > self.limit;
        items.truncate(self.limit);
        if reversed {
            items.reverse();
        }
        Ok((items.into_iter().map(|(_, record)| record).collect(), has_more))
    }
}

fn cursor_id(text: &str, name: &str) -> Result<Id, ApiError> {
    text.parse().map_err(|_| {
        ApiError::validation(format!(
            "The `{name}` parameter must be an id from this list, got {text:?}"
        ))
    })
}

/// The list envelope: `{"object": "list", "has_more", "data"}`.
pub fn envelope(data: Vec<Value>, has_more: bool) -> Value {
    let mut map = serde_json::Map::new();
    map.insert("object".into(), json!("list"));
    map.insert("has_more".into(), json!(has_more));
    map.insert("data".into(), Value::Array(data));
    Value::Object(map)
}
