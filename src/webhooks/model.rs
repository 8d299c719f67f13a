//! The stored webhook: where events go, which kinds, whether it is on, and the secret
//! its requests are signed with.

use herald_queue::{Id, Timestamp};
use serde_json::{Value, json};

use super::secret::SigningSecret;
use crate::events::EventKind;
use crate::wire;

/// Webhooks one team may have. Every event of a team is fanned out to each of its
/// webhooks, so this bounds the work and the outbound requests one event can cause.
pub const WEBHOOKS_PER_TEAM_MAX: usize = 100;

/// Longest endpoint URL accepted, in bytes: browsers and proxies commonly stop at about
/// 2 KiB, and an endpoint longer than that is a mistake, not a need.
pub const ENDPOINT_MAX: usize = 2048;

/// Whether a webhook receives events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WebhookStatus {
    /// Events are delivered.
    Enabled,
    /// Events are not delivered (nor kept for later).
    Disabled,
}

/// A webhook endpoint of a team.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Webhook {
    /// Its id.
    pub id: Id,
    /// The owning team.
    pub team_id: Id,
    /// The http(s) URL events are posted to.
    pub endpoint: String,
    /// The event kinds it subscribes to, by name: each one of [`EventKind::ALL`], without
    /// repeats,
    /// in the order the caller gave them.
    pub events: Vec<String>,
    /// Whether it receives events.
    pub status: WebhookStatus,
    /// The key its requests are signed with.
    pub signing_secret: SigningSecret,
    /// The key it was signed with before the last rotation, while receivers may still
    /// check with it: requests carry a signature by each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_secret: Option<PreviousSecret>,
    /// When it was created.
    pub created_at: Timestamp,
}

/// A rotated-out signing secret and when it stops being used.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PreviousSecret {
    /// The old secret.
    pub secret: SigningSecret,
    /// Requests made after this carry only the new secret's signature.
    pub until: Timestamp,
}

impl Webhook {
    /// The secrets requests are signed with at `now`: the current one, then the previous
    /// one while its overlap lasts.
    pub fn signing_keys(&self, now: Timestamp) -> Vec<&SigningSecret> {
        let previous = self
            .previous_secret
            .as_ref()
            .filter(|previous| now < previous.until)
            .map(|previous| &previous.secret);
        std::iter::once(&self.signing_secret).chain(previous).collect()
    }

    /// Whether an event of `kind` is delivered to this webhook.
    pub fn receives(&self, kind: EventKind) -> bool {
        self.status == WebhookStatus::Enabled && self.events.iter().any(|event| event == kind.name())
    }

    /// The answer to `POST /webhooks`.
    pub fn created_json(&self) -> Value {
        json!({
            "object": "webhook",
            "id": self.id,
            "signing_secret": self.signing_secret.expose(),
        })
    }

    /// The full resource (`GET /webhooks/{id}`). It includes the signing secret, as
    /// Resend's does (the SDKs' types require it).
    pub fn to_json(&self) -> Value {
        let mut value = self.summary_json();
        if let Value::Object(map) = &mut value {
            map.shift_insert(0, "object".into(), json!("webhook"));
            map.insert("signing_secret".into(), json!(self.signing_secret.expose()));
        }
        value
    }

    /// The entry in `GET /webhooks`: no `object`, no secret.
    pub fn summary_json(&self) -> Value {
        json!({
            "id": self.id,
            "endpoint": self.endpoint,
            "events": self.events,
            "status": self.status,
            "created_at": wire::timestamp(self.created_at),
        })
    }
}

/// Why an `events` list is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EventsError {
    /// The list is empty.
    #[error("must name at least one event type")]
    Empty,
    /// A name is not one of [`EventKind::ALL`].
    #[error("{0:?} is not an event type; the types are {kinds}", kinds = EventKind::ALL.map(EventKind::name).join(", "))]
    Unknown(String),
    /// A Resend event about receiving mail (`email.received`, `inbox.*`), which herald
    /// never fires.
    #[error("{0:?} is about receiving mail, and herald does not receive mail (inbound email is not supported)")]
    Inbound(String),
}

/// Whether `name` is one of Resend's events about mail received: the inbound product
/// herald does not have.
fn is_inbound(name: &str) -> bool {
    name == "email.received" || name.starts_with("inbox.")
}

/// A subscription list as stored: every name known, repeats dropped, order kept.
pub fn events(names: Vec<String>) -> Result<Vec<String>, EventsError> {
    if names.is_empty() {
        return Err(EventsError::Empty);
    }
    let mut kept: Vec<String> = Vec::with_capacity(names.len().min(EventKind::ALL.len()));
    for name in names {
        if is_inbound(&name) {
            return Err(EventsError::Inbound(name));
        }
        if EventKind::parse(&name).is_none() {
            return Err(EventsError::Unknown(name));
        }
        if !kept.contains(&name) {
            kept.push(name);
        }
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn events_must_be_known_and_lose_repeats_in_order() {
        assert_eq!(
            events(names(&["email.bounced", "domain.created", "email.bounced"])),
            Ok(names(&["email.bounced", "domain.created"]))
        );
        assert_eq!(events(Vec::new()), Err(EventsError::Empty));
        let err = events(names(&["email.sent", "email.exploded"])).expect_err("unknown");
        assert_eq!(err, EventsError::Unknown("email.exploded".into()));
        assert!(err.to_string().contains("email.delivery_delayed"), "{err}");
        assert!(events(names(&["Email.Sent"])).is_err(), "names are case-sensitive");
        for inbound in ["email.received", "inbox.thread.created"] {
            let err = events(names(&["email.sent", inbound])).expect_err("inbound");
            assert_eq!(err, EventsError::Inbound(inbound.into()));
            assert!(err.to_string().contains("does not receive mail"), "{err}");
        }
        let all: Vec<&str> = EventKind::ALL.map(EventKind::name).to_vec();
        assert_eq!(events(names(&all)).map(|kept| kept.len()), Ok(EventKind::ALL.len()));
    }

    #[test]
    fn only_enabled_webhooks_receive_their_kinds_and_debug_hides_the_secret() {
        let secret = SigningSecret::generate().expect("random");
        let mut webhook = Webhook {
            id: Id::from_slice(&[1; 16]).expect("id"),
            team_id: Id::from_slice(&[2; 16]).expect("id"),
            endpoint: "https://example.com/hook".into(),
            events: names(&["email.sent"]),
            status: WebhookStatus::Enabled,
            signing_secret: secret.clone(),
            previous_secret: None,
            created_at: Timestamp::from_millis(1_680_560_022_674),
        };
        assert!(webhook.receives(EventKind::EmailSent));
        assert!(!webhook.receives(EventKind::EmailDelivered));
        webhook.status = WebhookStatus::Disabled;
        assert!(!webhook.receives(EventKind::EmailSent));
        assert!(!format!("{webhook:?}").contains(secret.expose()));

        let summary = webhook.summary_json();
        assert!(summary.get("signing_secret").is_none() && summary.get("object").is_none());
        assert_eq!(summary["status"], "disabled");
        assert_eq!(summary["created_at"], "2023-04-03 22:13:42.674000+00");
        let full = webhook.to_json();
        assert_eq!(full["object"], "webhook");
        assert_eq!(full["signing_secret"], secret.expose());
    }
}
