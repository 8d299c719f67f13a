//! Events: what happened to a resource, written with the change that caused it into the
//! outbox the webhook dispatcher drains (kept by [`crate::webhooks::log`]).

use herald_queue::{Id, Timestamp};
use serde_json::Value;

/// Every kind of event herald can report, by its wire name (`email.sent`, ...): the
/// names webhooks subscribe to. Written with the change that causes them; some have no
/// source yet (opens, clicks, complaints, contacts) and are accepted in subscriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum EventKind {
    /// `email.sent`: accepted for delivery now.
    #[serde(rename = "email.sent")]
    EmailSent,
    /// `email.scheduled`: accepted for delivery later.
    #[serde(rename = "email.scheduled")]
    EmailScheduled,
    /// `email.delivered`: a receiver accepted it.
    #[serde(rename = "email.delivered")]
    EmailDelivered,
    /// `email.delivery_delayed`: a receiver deferred it (once per recipient).
    #[serde(rename = "email.delivery_delayed")]
    EmailDeliveryDelayed,
    /// `email.bounced`: a receiver refused it for good, or its lifetime ran out.
    #[serde(rename = "email.bounced")]
    EmailBounced,
    /// `email.complained`: a recipient marked it as spam.
    #[serde(rename = "email.complained")]
    EmailComplained,
    /// `email.opened`.
    #[serde(rename = "email.opened")]
    EmailOpened,
    /// `email.clicked`.
    #[serde(rename = "email.clicked")]
    EmailClicked,
    /// `email.failed`: herald could not send it (no route, a bad domain, ...).
    #[serde(rename = "email.failed")]
    EmailFailed,
    /// `email.suppressed`: not sent, the address is on the suppression list.
    #[serde(rename = "email.suppressed")]
    EmailSuppressed,
    /// `domain.created`.
    #[serde(rename = "domain.created")]
    DomainCreated,
    /// `domain.updated`.
    #[serde(rename = "domain.updated")]
    DomainUpdated,
    /// `domain.deleted`.
    #[serde(rename = "domain.deleted")]
    DomainDeleted,
    /// `contact.created`.
    #[serde(rename = "contact.created")]
    ContactCreated,
    /// `contact.updated`.
    #[serde(rename = "contact.updated")]
    ContactUpdated,
    /// `contact.deleted`.
    #[serde(rename = "contact.deleted")]
    ContactDeleted,
    /// `contact.topics.updated`: a contact's topic subscriptions changed.
    #[serde(rename = "contact.topics.updated")]
    ContactTopicsUpdated,
    /// `topic.created`.
    #[serde(rename = "topic.created")]
    TopicCreated,
    /// `topic.updated`.
    #[serde(rename = "topic.updated")]
    TopicUpdated,
    /// `topic.deleted`.
    #[serde(rename = "topic.deleted")]
    TopicDeleted,
    /// `suppression.added`.
    #[serde(rename = "suppression.added")]
    SuppressionAdded,
    /// `suppression.removed`.
    #[serde(rename = "suppression.removed")]
    SuppressionRemoved,
}

impl EventKind {
    /// Every kind, in the order lists of them are shown.
    pub const ALL: [EventKind; 22] = [
        EventKind::EmailSent,
        EventKind::EmailDelivered,
        EventKind::EmailDeliveryDelayed,
        EventKind::EmailBounced,
        EventKind::EmailComplained,
        EventKind::EmailOpened,
        EventKind::EmailClicked,
        EventKind::EmailFailed,
        EventKind::EmailScheduled,
        EventKind::EmailSuppressed,
        EventKind::DomainCreated,
        EventKind::DomainUpdated,
        EventKind::DomainDeleted,
        EventKind::ContactCreated,
        EventKind::ContactUpdated,
        EventKind::ContactDeleted,
        EventKind::ContactTopicsUpdated,
        EventKind::TopicCreated,
        EventKind::TopicUpdated,
        EventKind::TopicDeleted,
        EventKind::SuppressionAdded,
        EventKind::SuppressionRemoved,
    ];

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::EmailSent => "email.sent",
            EventKind::EmailScheduled => "email.scheduled",
            EventKind::EmailDelivered => "email.delivered",
            EventKind::EmailDeliveryDelayed => "email.delivery_delayed",
            EventKind::EmailBounced => "email.bounced",
            EventKind::EmailComplained => "email.complained",
            EventKind::EmailOpened => "email.opened",
            EventKind::EmailClicked => "email.clicked",
            EventKind::EmailFailed => "email.failed",
            EventKind::EmailSuppressed => "email.suppressed",
            EventKind::DomainCreated => "domain.created",
            EventKind::DomainUpdated => "domain.updated",
            EventKind::DomainDeleted => "domain.deleted",
            EventKind::ContactCreated => "contact.created",
            EventKind::ContactUpdated => "contact.updated",
            EventKind::ContactDeleted => "contact.deleted",
            EventKind::ContactTopicsUpdated => "contact.topics.updated",
            EventKind::TopicCreated => "topic.created",
            EventKind::TopicUpdated => "topic.updated",
            EventKind::TopicDeleted => "topic.deleted",
            EventKind::SuppressionAdded => "suppression.added",
            EventKind::SuppressionRemoved => "suppression.removed",
        }
    }

    /// The kind named `name`, if there is one.
    pub fn parse(name: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One event, as queued for webhooks.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Event {
    /// The event's id.
    pub id: Id,
    /// The team whose webhooks receive it.
    pub team_id: Id,
    /// The event type, such as `domain.created`.
    #[serde(rename = "type")]
    pub kind: EventKind,
    /// When it happened.
    pub created_at: Timestamp,
    /// The payload's `data` object.
    pub data: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_their_wire_names() {
        for kind in EventKind::ALL {
            assert_eq!(EventKind::parse(kind.name()), Some(kind));
            let json = serde_json::to_string(&kind).expect("encode");
            assert_eq!(json, format!("\"{}\"", kind.name()));
            assert_eq!(serde_json::from_str::<EventKind>(&json).expect("decode"), kind);
        }
        assert_eq!(EventKind::parse("email.received"), None);
    }
}
