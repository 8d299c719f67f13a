//! The operator's view of the spool, as `herald queue` and `/queue` show it: what is
//! waiting, why, and for whom; and the two things an operator does to it: try again now,
//! or give up on a message. Plain functions over the
//! [`Services`](crate::services::Services), for any adapter (the REST API today, the
//! dashboard later); each sees only its [`Scope`]'s mail.
//!
//! A message's state, in the order it is judged:
//! - `in_flight`: a delivery attempt holds it now;
//! - `deferred`: a recipient failed temporarily and waits for its next attempt, which is
//!   still to come;
//! - `scheduled`: nothing tried yet, due later (`scheduled_at`);
//! - `due`: due now, waiting for a delivery worker.

mod actions;
mod view;

pub use actions::{Deleted, Retried, RetryTarget, delete, retry};
pub use view::{QueuedMessage, Stats, list, show, stats};

use herald_queue::{Envelope, Id, RecipientState, Timestamp};

/// Whose mail an operation sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// One team's (a team's full-access key).
    Team(Id),
    /// Every team's (the operator's key).
    All,
}

impl Scope {
    /// Whether `envelope` is within the scope.
    pub fn sees(&self, envelope: &Envelope) -> bool {
        match self {
            Scope::All => true,
            Scope::Team(team) => envelope.team.parse::<Id>().is_ok_and(|owner| owner == *team),
        }
    }
}

/// Where a queued message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueState {
    /// Due now, waiting for a delivery worker.
    Due,
    /// Not tried yet, due later.
    Scheduled,
    /// A recipient failed temporarily and waits for its next attempt.
    Deferred,
    /// A delivery attempt holds it now.
    InFlight,
}

impl QueueState {
    /// Every state, in the order reports list them.
    pub const ALL: [QueueState; 4] = [
        QueueState::Due,
        QueueState::Scheduled,
        QueueState::Deferred,
        QueueState::InFlight,
    ];

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            QueueState::Due => "due",
            QueueState::Scheduled => "scheduled",
            QueueState::Deferred => "deferred",
            QueueState::InFlight => "in_flight",
        }
    }

    /// The state named `name` (`in-flight` as the command line spells it, too).
    pub fn parse(name: &str) -> Option<QueueState> {
        QueueState::ALL
            .into_iter()
            .find(|state| state.name() == name || state.name().replace('_', "-") == name)
    }

    /// The state of `envelope` at `now`, `claimed` when a delivery attempt holds it.
    pub fn of(envelope: &Envelope, claimed: bool, now: Timestamp) -> QueueState {
        // A deferred recipient whose next attempt has come is due again, like new mail.
        let deferred = envelope
            .recipients
            .iter()
            .any(|r| matches!(r.state, RecipientState::Deferred { next_attempt } if next_attempt > now));
        if claimed {
            QueueState::InFlight
        } else if deferred {
            QueueState::Deferred
        } else if envelope.due > now {
            QueueState::Scheduled
        } else {
            QueueState::Due
        }
    }
}

/// The domain of `address`, lower case (the destination a recipient is delivered to).
pub fn destination(address: &str) -> String {
    address
        .rsplit_once('@')
        .map_or(address, |(_, domain)| domain)
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// Why an operation on the queue failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// No message with that id in the caller's scope.
    #[error("No queued email with id {0}")]
    NotFound(Id),
    /// A delivery attempt holds the message; it can be changed once the attempt ends.
    #[error("Email {0} is being delivered right now; try again when the attempt ends")]
    InFlight(Id),
    /// The message has nothing that retrying would change.
    #[error("{0}")]
    NothingToRetry(String),
    /// Storage failed or refused.
    #[error(transparent)]
    Storage(#[from] crate::storage::Error),
}

impl From<herald_queue::Error> for QueueError {
    fn from(error: herald_queue::Error) -> QueueError {
        QueueError::Storage(error.into())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use herald_queue::Recipient;

    use super::*;

    fn envelope(states: &[RecipientState], due: u64) -> Envelope {
        Envelope {
            team: Id::from_bytes([7; 16]).to_string(),
            sender: "a@example.test".into(),
            recipients: states
                .iter()
                .map(|state| Recipient {
                    state: *state,
                    ..Recipient::new("b@example.org")
                })
                .collect(),
            metadata: BTreeMap::new(),
            created_at: Timestamp::from_millis(1),
            first_due: Timestamp::from_millis(1),
            due: Timestamp::from_millis(due),
            size: 10,
            retain: false,
        }
    }

    #[test]
    fn states_are_judged_in_flight_first_then_deferred_then_by_due_time() {
        let now = Timestamp::from_millis(100);
        let deferred = RecipientState::Deferred {
            next_attempt: Timestamp::from_millis(500),
        };
        let pending = envelope(&[RecipientState::Pending], 50);
        assert_eq!(QueueState::of(&pending, false, now), QueueState::Due);
        assert_eq!(QueueState::of(&pending, true, now), QueueState::InFlight);
        let later = envelope(&[RecipientState::Pending], 200);
        assert_eq!(QueueState::of(&later, false, now), QueueState::Scheduled);
        let waiting = envelope(&[RecipientState::Pending, deferred], 500);
        assert_eq!(QueueState::of(&waiting, false, now), QueueState::Deferred);
        let retried = RecipientState::Deferred { next_attempt: now };
        let again = envelope(&[retried], 100);
        assert_eq!(
            QueueState::of(&again, false, now),
            QueueState::Due,
            "its retry has come"
        );
        assert_eq!(QueueState::parse("in-flight"), Some(QueueState::InFlight));
        assert_eq!(QueueState::parse("in_flight"), Some(QueueState::InFlight));
        assert_eq!(QueueState::parse("stuck"), None);
    }

    #[test]
    fn a_team_scope_sees_only_its_own_mail() {
        let mail = envelope(&[RecipientState::Pending], 1);
        assert!(Scope::All.sees(&mail));
        assert!(Scope::Team(Id::from_bytes([7; 16])).sees(&mail));
        assert!(!Scope::Team(Id::from_bytes([8; 16])).sees(&mail));
        assert_eq!(destination("Bob@Example.ORG"), "example.org");
    }
}
