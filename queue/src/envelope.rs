//! What the spool knows about a message besides its bytes: sender, recipients and each
//! recipient's delivery state.

use std::collections::BTreeMap;

use crate::clock::Timestamp;
use crate::table::{Record, Table};

/// A spooled message's envelope. Stored under the message id in [`Table::ENVELOPES`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Envelope {
    /// The team the message belongs to.
    pub team: String,
    /// The envelope sender (`MAIL FROM`); empty for a null sender.
    pub sender: String,
    /// Every recipient, in the order given, with its state.
    pub recipients: Vec<Recipient>,
    /// Caller metadata carried with the message (email id, tags, ...).
    pub metadata: BTreeMap<String, String>,
    /// When the message was accepted.
    pub created_at: Timestamp,
    /// The first time delivery was due: the message's lifetime counts from here.
    pub first_due: Timestamp,
    /// When the message is next due; the due index holds `(due, id)` for it. Pending
    /// recipients are due at this time; deferred ones at their own next attempt, and
    /// `due` is the earliest of those.
    pub due: Timestamp,
    /// Size of the raw message in bytes.
    pub size: u64,
    /// Whether the message's bytes stay in the store when it leaves the spool
    /// ([`crate::NewMessage::retain`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retain: bool,
}

impl Envelope {
    /// Whether every recipient has a final outcome, so the message can leave the spool.
    pub fn is_final(&self) -> bool {
        self.recipients.iter().all(|r| r.state.is_final())
    }

    /// The earliest time a non-final recipient is due, or `None` when all are final.
    pub fn next_due(&self) -> Option<Timestamp> {
        self.recipients
            .iter()
            .filter_map(|r| match r.state {
                RecipientState::Pending => Some(self.due),
                RecipientState::Deferred { next_attempt } => Some(next_attempt),
                _ => None,
            })
            .min()
    }

    /// Recipients that are due at `now`, by index.
    pub fn due_recipients(&self, now: Timestamp) -> impl Iterator<Item = (usize, &Recipient)> {
        self.recipients.iter().enumerate().filter(move |(_, r)| match r.state {
            RecipientState::Pending => self.due <= now,
            RecipientState::Deferred { next_attempt } => next_attempt <= now,
            _ => false,
        })
    }
}

impl Record for Envelope {
    const TABLE: Table = Table::ENVELOPES;
}

/// One recipient of a spooled message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Recipient {
    /// The address (`RCPT TO`).
    pub address: String,
    /// Where its delivery stands.
    pub state: RecipientState,
    /// Delivery attempts made so far.
    pub attempts: u32,
    /// The last reply or error from the receiving side, for records and bounces.
    pub last_response: Option<String>,
    /// When the receiving side last answered an attempt for it (older builds did not
    /// record it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempt_at: Option<Timestamp>,
}

impl Recipient {
    /// A recipient nobody has tried yet.
    pub fn new(address: impl Into<String>) -> Self {
        Recipient {
            address: address.into(),
            state: RecipientState::Pending,
            attempts: 0,
            last_response: None,
            last_attempt_at: None,
        }
    }
}

/// Where one recipient's delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RecipientState {
    /// Not yet attempted; due with the message.
    Pending,
    /// Temporarily failed; try again at `next_attempt`.
    Deferred {
        /// When to try again.
        next_attempt: Timestamp,
    },
    /// Accepted by the receiving server.
    Delivered {
        /// When.
        at: Timestamp,
    },
    /// Permanently refused by the receiving server.
    Bounced {
        /// When.
        at: Timestamp,
    },
    /// Still failing when the message lifetime ran out.
    Expired {
        /// When.
        at: Timestamp,
    },
    /// Canceled before delivery.
    Canceled {
        /// When.
        at: Timestamp,
    },
    /// Not attempted because the address is on the suppression list.
    Suppressed {
        /// When.
        at: Timestamp,
    },
}

impl RecipientState {
    /// Whether this is a final outcome.
    pub fn is_final(&self) -> bool {
        !matches!(self, RecipientState::Pending | RecipientState::Deferred { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(states: &[RecipientState]) -> Envelope {
        Envelope {
            team: "t".into(),
            sender: "a@example.com".into(),
            recipients: states
                .iter()
                .enumerate()
                .map(|(i, state)| Recipient {
                    state: *state,
                    ..Recipient::new(format!("r{i}@example.net"))
                })
                .collect(),
            metadata: BTreeMap::new(),
            created_at: Timestamp::from_millis(10),
            first_due: Timestamp::from_millis(10),
            due: Timestamp::from_millis(10),
            size: 1,
            retain: false,
        }
    }

    #[test]
    fn next_due_is_the_earliest_open_recipient() {
        let t = Timestamp::from_millis;
        let env = envelope(&[
            RecipientState::Delivered { at: t(5) },
            RecipientState::Deferred { next_attempt: t(500) },
            RecipientState::Deferred { next_attempt: t(90) },
        ]);
        assert_eq!(env.next_due(), Some(t(90)));
        assert!(!env.is_final());
        assert_eq!(env.due_recipients(t(100)).map(|(i, _)| i).collect::<Vec<_>>(), vec![2]);
        let pending = envelope(&[
            RecipientState::Pending,
            RecipientState::Deferred { next_attempt: t(500) },
        ]);
        assert_eq!(pending.next_due(), Some(t(10)));
        let done = envelope(&[
            RecipientState::Bounced { at: t(1) },
            RecipientState::Canceled { at: t(2) },
        ]);
        assert!(done.is_final());
        assert_eq!(done.next_due(), None);
    }
}
