//! The delivery decision: what one recipient's attempt amounts to, as a pure function of
//! its outcome, the attempts made, the time and the retry policy. Writing the decision
//! down (the recipient's state, its event, a suppression, the attempt log) is
//! [`super::outcome`]'s job; deciding needs no store.

use std::time::Duration;

use herald_queue::{RecipientState, Timestamp};
use serde_json::{Value, json};

use super::job::Outcome;
use super::reply::BounceKind;
use crate::emails::EmailState;
use crate::suppressions::Origin;

/// How deferred recipients are retried.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy<'a> {
    /// The wait before each retry; the last one repeats.
    pub intervals: &'a [Duration],
    /// When the message's lifetime runs out: a recipient still failing then bounces.
    pub expiry: Timestamp,
}

/// What one recipient's attempt amounts to.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// The receiver accepted it.
    Delivered,
    /// Try again at `next_attempt`; `first` when this was its first deferral (only that
    /// one is reported, as `email.delivery_delayed`).
    Deferred {
        /// When.
        next_attempt: Timestamp,
        /// Whether this is the recipient's first deferral.
        first: bool,
    },
    /// It kept failing until the message's lifetime ran out.
    Expired {
        /// The last reply.
        last_reply: String,
    },
    /// The receiver refused it for good.
    Bounced {
        /// Resend's bounce type and sub-type.
        kind: BounceKind,
        /// The reply's text.
        message: String,
        /// The whole reply.
        diagnostic: String,
    },
    /// herald could not send it at all.
    Failed {
        /// Why.
        reason: String,
    },
    /// Not attempted: the address is on the team's suppression list.
    Suppressed {
        /// Why it is there.
        origin: Origin,
    },
}

/// Decides `outcome` at `now`, for a recipient that has now had `attempts` attempts
/// answered. `jitter` scales the retry wait (the caller draws it from 0.9 to 1.1, so that
/// retries of many messages do not arrive together).
pub fn decide(outcome: &Outcome, attempts: u32, now: Timestamp, policy: RetryPolicy<'_>, jitter: f64) -> Decision {
    let reply = match outcome {
        Outcome::Suppressed(origin) => return Decision::Suppressed { origin: *origin },
        Outcome::Failed(reason) => return Decision::Failed { reason: reason.clone() },
        Outcome::Held { reply, until } => {
            if now >= policy.expiry {
                return Decision::Expired {
                    last_reply: reply.to_string(),
                };
            }
            return Decision::Deferred {
                next_attempt: (*until).max(now).min(policy.expiry),
                first: attempts == 1,
            };
        }
        Outcome::Replied { reply, .. } => reply,
    };
    if reply.is_success() {
        return Decision::Delivered;
    }
    // Anything that is not a 5xx (4xx, and herald's own answers for connections that
    // failed) is worth another try.
    if reply.is_transient() || !(500..600).contains(&reply.code) {
        if now >= policy.expiry {
            return Decision::Expired {
                last_reply: reply.to_string(),
            };
        }
        let wait = retry_wait(policy.intervals, attempts).mul_f64(jitter);
        return Decision::Deferred {
            next_attempt: now.saturating_add(wait).min(policy.expiry),
            first: attempts == 1,
        };
    }
    Decision::Bounced {
        kind: reply.bounce_kind(),
        message: reply.text(),
        diagnostic: reply.to_string(),
    }
}

/// The wait before attempt `attempts + 1`, before jitter: the interval for this attempt,
/// the last one repeating.
pub fn retry_wait(intervals: &[Duration], attempts: u32) -> Duration {
    let index = (attempts.max(1) as usize - 1).min(intervals.len().saturating_sub(1));
    intervals.get(index).copied().unwrap_or(Duration::from_secs(60))
}

impl Decision {
    /// The recipient's new state.
    pub fn state(&self, now: Timestamp) -> RecipientState {
        match self {
            Decision::Delivered => RecipientState::Delivered { at: now },
            Decision::Deferred { next_attempt, .. } => RecipientState::Deferred {
                next_attempt: *next_attempt,
            },
            Decision::Expired { .. } => RecipientState::Expired { at: now },
            Decision::Bounced { .. } | Decision::Failed { .. } => RecipientState::Bounced { at: now },
            Decision::Suppressed { .. } => RecipientState::Suppressed { at: now },
        }
    }

    /// The event the decision is reported as (on the email's timeline and, as
    /// `email.<state>`, to webhooks), with its details; `None` for a deferral after the
    /// first, which is not reported again.
    pub fn event(&self) -> Option<(EmailState, Value)> {
        Some(match self {
            Decision::Delivered => (EmailState::Delivered, json!({})),
            Decision::Deferred { first: true, .. } => (EmailState::DeliveryDelayed, json!({})),
            Decision::Deferred { first: false, .. } => return None,
            Decision::Expired { last_reply } => (
                EmailState::Bounced,
                json!({ "bounce": {
                    "type": "Transient",
                    "subType": "General",
                    "message": format!(
                        "Delivery kept failing until the message lifetime ran out; last reply: {last_reply}"
                    ),
                    "diagnosticCode": [last_reply],
                } }),
            ),
            Decision::Bounced {
                kind,
                message,
                diagnostic,
            } => (
                EmailState::Bounced,
                json!({ "bounce": {
                    "type": kind.kind,
                    "subType": kind.sub_type,
                    "message": message,
                    "diagnosticCode": [diagnostic],
                } }),
            ),
            Decision::Failed { reason } => (EmailState::Failed, json!({ "failed": { "reason": reason } })),
            Decision::Suppressed { origin } => (EmailState::Suppressed, suppressed_detail(*origin)),
        })
    }

    /// Whether the address joins the team's suppression list: a hard bounce (no such
    /// mailbox).
    pub fn suppresses(&self) -> bool {
        matches!(self, Decision::Bounced { kind, .. } if kind.is_hard())
    }
}

/// What an `email.suppressed` event says of why: Resend's `suppressed` object for an
/// address on the team's list for `origin` (a hand-added address reads as a bounce, the
/// closest of Resend's two reasons).
pub fn suppressed_detail(origin: Origin) -> Value {
    let reason = match origin {
        Origin::Complaint => "previous_complaint",
        Origin::Bounce | Origin::Manual => "previous_bounce",
    };
    json!({ "suppressed": {
        "message": "The recipient is on the team's suppression list",
        "reason": reason,
        "type": "OnAccountSuppressionList",
        "diagnosticCode": [],
    } })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::reply::Reply;

    fn replied(code: u16, text: &str) -> Outcome {
        Outcome::Replied {
            reply: Reply {
                code,
                lines: vec![text.to_owned()],
            },
            via: None,
        }
    }

    fn held(until: u64) -> Outcome {
        Outcome::Held {
            reply: Reply {
                code: 451,
                lines: vec!["4.4.5 warm-up".to_owned()],
            },
            until: Timestamp::from_millis(until),
        }
    }

    const INTERVALS: [Duration; 2] = [Duration::from_secs(60), Duration::from_secs(300)];

    fn policy(expiry: u64) -> RetryPolicy<'static> {
        RetryPolicy {
            intervals: &INTERVALS,
            expiry: Timestamp::from_millis(expiry),
        }
    }

    #[test]
    fn the_decision_table() {
        let now = Timestamp::from_millis(1_000_000);
        let at = |ms: u64| Timestamp::from_millis(ms);
        let cases: Vec<(Outcome, u32, u64, Decision)> = vec![
            (replied(250, "2.0.0 OK"), 1, 9_000_000, Decision::Delivered),
            (
                replied(451, "4.3.0 Try later"),
                1,
                9_000_000,
                Decision::Deferred {
                    next_attempt: at(1_060_000),
                    first: true,
                },
            ),
            (
                replied(451, "4.3.0 Try later"),
                2,
                9_000_000,
                Decision::Deferred {
                    next_attempt: at(1_300_000),
                    first: false,
                },
            ),
            (
                replied(451, "4.3.0 Try later"),
                7,
                9_000_000,
                Decision::Deferred {
                    next_attempt: at(1_300_000),
                    first: false,
                },
            ),
            // The wait never runs past the lifetime; at it, the recipient expires.
            (
                replied(421, "4.7.0 Busy"),
                3,
                1_100_000,
                Decision::Deferred {
                    next_attempt: at(1_100_000),
                    first: false,
                },
            ),
            (
                replied(421, "4.7.0 Busy"),
                3,
                1_000_000,
                Decision::Expired {
                    last_reply: "421 4.7.0 Busy".to_owned(),
                },
            ),
            // herald's own codes for connections that failed are retried like 4xx.
            (
                replied(0, "connection refused"),
                1,
                9_000_000,
                Decision::Deferred {
                    next_attempt: at(1_060_000),
                    first: true,
                },
            ),
            (
                Outcome::Failed("no route".to_owned()),
                0,
                9_000_000,
                Decision::Failed {
                    reason: "no route".to_owned(),
                },
            ),
            (
                Outcome::Suppressed(Origin::Complaint),
                0,
                9_000_000,
                Decision::Suppressed {
                    origin: Origin::Complaint,
                },
            ),
            // Held back (a region's warm-up): its own time, not the intervals', never
            // past the lifetime; at the lifetime it expires.
            (
                held(5_000_000),
                1,
                9_000_000,
                Decision::Deferred {
                    next_attempt: at(5_000_000),
                    first: true,
                },
            ),
            (
                held(5_000_000),
                2,
                3_000_000,
                Decision::Deferred {
                    next_attempt: at(3_000_000),
                    first: false,
                },
            ),
            (
                held(5_000_000),
                2,
                1_000_000,
                Decision::Expired {
                    last_reply: "451 4.4.5 warm-up".to_owned(),
                },
            ),
        ];
        for (outcome, attempts, expiry, wanted) in cases {
            assert_eq!(
                decide(&outcome, attempts, now, policy(expiry), 1.0),
                wanted,
                "{outcome:?}"
            );
        }
    }

    #[test]
    fn permanent_refusals_bounce_and_only_a_missing_mailbox_suppresses() {
        let now = Timestamp::from_millis(1);
        let missing = decide(&replied(550, "5.1.1 No such user"), 1, now, policy(9), 1.0);
        assert!(matches!(missing, Decision::Bounced { .. }));
        assert!(missing.suppresses());
        assert_eq!(missing.state(now), RecipientState::Bounced { at: now });
        let (state, data) = missing.event().expect("reported");
        assert_eq!(state, EmailState::Bounced);
        assert_eq!(data["bounce"]["type"], "Permanent");
        assert_eq!(data["bounce"]["diagnosticCode"][0], "550 5.1.1 No such user");
        let full = decide(&replied(552, "5.2.2 Mailbox full"), 1, now, policy(9), 1.0);
        assert!(!full.suppresses(), "a full mailbox is not a missing one");
        let deferred = Decision::Deferred {
            next_attempt: now,
            first: false,
        };
        assert_eq!(deferred.event(), None, "only the first deferral is reported");
    }

    #[test]
    fn jitter_scales_the_wait() {
        let now = Timestamp::from_millis(0);
        let Decision::Deferred { next_attempt, .. } = decide(&replied(451, "x"), 1, now, policy(u64::MAX), 1.1) else {
            panic!("deferred");
        };
        assert_eq!(next_attempt, Timestamp::from_millis(66_000));
    }
}
