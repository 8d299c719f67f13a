//! The webhook log's records: a message (one event for one endpoint, sent until it is
//! delivered or its retries run out) and each attempt to deliver it.

use herald_queue::{Id, Timestamp};

use crate::events::EventKind;
use crate::wire;

/// Where a message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageState {
    /// Waiting for its next attempt.
    Pending,
    /// An attempt got a 2xx.
    Delivered,
    /// The last retry failed.
    Failed,
}

/// One event for one webhook.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WebhookMessage {
    /// The event's id (the message id is `msg_<event id>`).
    pub event_id: Id,
    /// The webhook.
    pub webhook_id: Id,
    /// The team.
    pub team_id: Id,
    /// The event type.
    pub kind: EventKind,
    /// The JSON body, as sent on every attempt.
    pub body: String,
    /// Attempts made.
    pub attempts: u32,
    /// Where it stands.
    pub state: MessageState,
    /// When it is next due, while pending.
    pub next_attempt: Timestamp,
    /// Its attempts in the request log, oldest first (the latest of them, as many as the dispatcher keeps).
    #[serde(default)]
    pub attempt_ids: Vec<Id>,
    /// When it became final (delivered or failed): what its retention counts from.
    #[serde(default)]
    pub finished_at: Option<Timestamp>,
}

impl WebhookMessage {
    /// The id receivers see in `webhook-id` / `svix-id`.
    pub fn message_id(&self) -> String {
        format!("msg_{}", self.event_id)
    }
}

/// One attempt, as the request log lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WebhookAttempt {
    /// Its id (time-ordered).
    pub id: Id,
    /// The message's event id.
    pub event_id: Id,
    /// The event type.
    pub kind: EventKind,
    /// 1 for the first try.
    pub attempt: u32,
    /// The response status, when there was a response.
    pub status: Option<u16>,
    /// Why there was no (successful) response.
    pub error: Option<String>,
    /// The start of the response body.
    pub response: String,
    /// How long the request took.
    pub latency_ms: u64,
    /// When it was made.
    pub at: Timestamp,
}

impl WebhookAttempt {
    /// The API object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "object": "webhook_delivery",
            "id": self.id,
            "message_id": format!("msg_{}", self.event_id),
            "event_type": self.kind,
            "attempt": self.attempt,
            "response_status": self.status,
            "error": self.error,
            "response_body": self.response,
            "latency_ms": self.latency_ms,
            "created_at": wire::timestamp(self.at),
        })
    }
}
