//! One logged request.

use herald_queue::{Id, Timestamp};

/// One logged request: its caller, what was asked and answered (bodies redacted and
/// capped by the HTTP adapter), and how long it took.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RequestLog {
    /// The log's id.
    pub id: Id,
    /// The caller's team.
    pub team_id: Id,
    /// The key used.
    pub api_key_id: Id,
    /// HTTP method.
    pub method: String,
    /// Path, without the query.
    pub path: String,
    /// The query string, if any.
    pub query: Option<String>,
    /// Response status.
    pub status: u16,
    /// The client's `User-Agent`.
    pub user_agent: Option<String>,
    /// Time to answer, in milliseconds.
    pub duration_ms: u64,
    /// The request body, redacted and capped.
    pub request_body: Option<String>,
    /// The response body, redacted and capped.
    pub response_body: Option<String>,
    /// When the request arrived.
    pub created_at: Timestamp,
}
