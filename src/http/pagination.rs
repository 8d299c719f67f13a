//! Cursor pagination on the wire, shared by every list: the `limit`, `after` and `before`
//! query parameters, and the `{"object": "list", "has_more", "data"}` envelope. The page
//! itself and how it loads are [`crate::storage::page`]'s.

use herald_queue::Id;
use serde_json::{Value, json};

use super::{ApiError, ApiRequest};

pub use crate::storage::page::{Cursor, LIMIT_MAX, PageRequest};

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
