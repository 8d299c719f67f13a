//! Per-team rate limits (GCRA, exact under concurrency) and the IETF RateLimit header
//! fields (draft-ietf-httpapi-ratelimit-headers, the separate-field form Resend uses).
//!
//! Each team has one limiter with its quota: `count` requests per `per`, as a burst of
//! `count` that refills one request every `per / count`. Time comes from the injected
//! clock, so the limits follow the same time as everything else.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use herald_queue::{Id, SharedClock};
use hyper::header::{HeaderMap, HeaderName, HeaderValue};

use crate::config::Rate;
use crate::limits::{LocalRates, RateState, Take, refill_interval};

/// The decision for one request, with what the headers report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request may proceed.
    pub allowed: bool,
    /// Requests allowed per window.
    pub limit: u32,
    /// Requests left now.
    pub remaining: u32,
    /// Seconds until the full quota is available again.
    pub reset: u64,
    /// With a refusal: seconds until the next request is allowed.
    pub retry_after: Option<u64>,
    /// The window in seconds, for `ratelimit-policy`.
    pub window: u64,
}

impl Decision {
    /// Adds the RateLimit header fields (and `retry-after` on refusals) to `headers`.
    pub fn apply(&self, headers: &mut HeaderMap) {
        let mut set = |name: &'static str, value: String| {
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(HeaderName::from_static(name), value);
            }
        };
        set("ratelimit-policy", format!("{};w={}", self.limit, self.window));
        set("ratelimit-limit", self.limit.to_string());
        set("ratelimit-remaining", self.remaining.to_string());
        set("ratelimit-reset", self.reset.to_string());
        if let Some(retry) = self.retry_after {
            set("retry-after", retry.to_string());
        }
    }
}

/// The limits of every team (`K` = team id), or of every client address for requests
/// that carry no valid key (`K` = IP address), which also slows down key guessing. The
/// counting itself is the [`RateState`]'s: in memory on one node, shared in a cluster.
#[derive(Debug)]
pub struct RateLimits<K = Id> {
    default: Rate,
    state: Box<dyn RateState<K>>,
    overrides: Mutex<HashMap<K, Rate>>,
}

impl<K: std::hash::Hash + Eq + Copy + Send + std::fmt::Debug + 'static> RateLimits<K> {
    /// Limits of `default` per team unless a team has its own, counted in memory on
    /// `clock`.
    pub fn new(default: Rate, clock: SharedClock) -> Self {
        RateLimits::with_state(default, Box::new(LocalRates::new(clock)))
    }

    /// Limits of `default` per team, counted by `state`.
    pub fn with_state(default: Rate, state: Box<dyn RateState<K>>) -> Self {
        RateLimits {
            default,
            state,
            overrides: Mutex::new(HashMap::new()),
        }
    }

    /// Gives `team` its own limit, or (`None`) returns it to the default.
    pub fn set_override(&self, team: K, rate: Option<Rate>) {
        let mut overrides = self.overrides.lock().unwrap_or_else(PoisonError::into_inner);
        match rate {
            Some(rate) => overrides.insert(team, rate),
            None => overrides.remove(&team),
        };
    }

    /// Counts one request of `team` against its limit.
    pub fn check(&self, team: K) -> Decision {
        let rate = {
            let overrides = self.overrides.lock().unwrap_or_else(PoisonError::into_inner);
            overrides.get(&team).copied().unwrap_or(self.default)
        };
        let window = rate.per.as_secs().max(1);
        let refill = refill_interval(rate);
        match self.state.take(team, rate) {
            Take::Allowed { remaining } => {
                let used = rate.count.saturating_sub(remaining);
                Decision {
                    allowed: true,
                    limit: rate.count,
                    remaining,
                    reset: ceil_secs(refill * used),
                    retry_after: None,
                    window,
                }
            }
            Take::Refused { wait } => Decision {
                allowed: false,
                limit: rate.count,
                remaining: 0,
                reset: ceil_secs(refill * rate.count.saturating_sub(1) + wait),
                retry_after: Some(ceil_secs(wait).max(1)),
                window,
            },
        }
    }
}

fn ceil_secs(duration: Duration) -> u64 {
    duration.as_secs() + u64::from(duration.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use herald_queue::{ManualClock, Timestamp};

    use super::*;

    #[test]
    fn a_burst_of_the_limit_then_refusals_until_time_passes() {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
        let limits = RateLimits::new(
            Rate {
                count: 3,
                per: Duration::from_secs(3),
            },
            clock.clone(),
        );
        let team = herald_queue::IdGenerator::default().next(Timestamp::from_millis(1));
        let decisions: Vec<Decision> = (0..4).map(|_| limits.check(team)).collect();
        assert_eq!(
            decisions.iter().map(|d| d.remaining).collect::<Vec<_>>(),
            vec![2, 1, 0, 0]
        );
        assert!(decisions[..3].iter().all(|d| d.allowed));
        assert!(!decisions[3].allowed);
        assert_eq!(decisions[3].retry_after, Some(1));
        assert_eq!(decisions[2].reset, 3);
        clock.advance(Duration::from_secs(1));
        assert!(limits.check(team).allowed);
        assert!(!limits.check(team).allowed);
    }

    #[test]
    fn teams_are_limited_separately_and_overrides_apply() {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(5_000)));
        let limits = RateLimits::new(
            Rate {
                count: 1,
                per: Duration::from_secs(60),
            },
            clock,
        );
        let ids = herald_queue::IdGenerator::default();
        let (a, b) = (ids.next(Timestamp::from_millis(1)), ids.next(Timestamp::from_millis(1)));
        assert!(limits.check(a).allowed);
        assert!(!limits.check(a).allowed);
        assert!(limits.check(b).allowed);
        limits.set_override(
            a,
            Some(Rate {
                count: 5,
                per: Duration::from_secs(1),
            }),
        );
        let decision = limits.check(a);
        assert!(decision.allowed);
        assert_eq!((decision.limit, decision.remaining, decision.window), (5, 4, 1));
        let mut headers = HeaderMap::new();
        decision.apply(&mut headers);
        assert_eq!(headers["ratelimit-policy"], "5;w=1");
        assert_eq!(headers["ratelimit-remaining"], "4");
        assert!(headers.get("retry-after").is_none());
        limits.set_override(a, None);
        assert!(limits.check(a).allowed, "a changed limit starts afresh");
        assert!(!limits.check(a).allowed);
    }
}
