//! Limits that nodes will share: per-key GCRA rate state (API rate limits by team or
//! client address) and per-destination pacing and connection leases. On one node they
//! live in memory ([`LocalRates`], [`LocalDestinations`]); a cluster keeps them in a
//! shared store (Valkey) behind the same traits (DESIGN.md, "Scale beyond one machine"),
//! so a team's limit and a destination's connection cap hold across all nodes.
//!
//! Time is the injected clock's ([`InjectedClock`]), as everywhere else.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use governor::clock::Clock as GovernorClock;
use governor::middleware::{NoOpMiddleware, StateInformationMiddleware};
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use herald_queue::SharedClock;

use crate::config::Rate;

/// governor's view of herald's clock: time since the epoch as a `Duration`.
#[derive(Debug, Clone)]
pub struct InjectedClock(pub SharedClock);

impl GovernorClock for InjectedClock {
    type Instant = Duration;

    fn now(&self) -> Duration {
        Duration::from_millis(self.0.now().as_millis())
    }
}

/// What taking one request from a rate limit found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// Allowed; this many more would be allowed at once now.
    Allowed {
        /// The burst capacity left.
        remaining: u32,
    },
    /// Refused; the next request is allowed after this wait.
    Refused {
        /// The wait.
        wait: Duration,
    },
}

/// GCRA state by key: `rate.count` requests per `rate.per`, as a burst of `count` that
/// refills one every `per / count`.
pub trait RateState<K>: Send + Sync + std::fmt::Debug {
    /// Takes one request of `key` at `rate`. A key whose rate changed starts afresh.
    fn take(&self, key: K, rate: Rate) -> Take;
}

type Limiter = RateLimiter<NotKeyed, InMemoryState, InjectedClock, StateInformationMiddleware>;

/// Rate state in memory, exact under concurrency (one limiter per key).
#[derive(Debug)]
pub struct LocalRates<K> {
    clock: SharedClock,
    keys: Mutex<HashMap<K, Entry>>,
}

/// One key's limiter, its rate, and when it last took a request.
#[derive(Debug)]
struct Entry {
    rate: Rate,
    limiter: Arc<Limiter>,
    last: herald_queue::Timestamp,
}

/// Keys held before idle ones are dropped: keys come from clients (addresses, links),
/// so their number must not grow without bound.
const KEYS_MAX: usize = 65_536;

impl<K> LocalRates<K> {
    /// Rate state on `clock`.
    pub fn new(clock: SharedClock) -> LocalRates<K> {
        LocalRates {
            clock,
            keys: Mutex::new(HashMap::new()),
        }
    }
}

/// The interval in which a quota of `rate` refills one request.
pub fn refill_interval(rate: Rate) -> Duration {
    (rate.per / rate.count.max(1)).max(Duration::from_nanos(1))
}

fn limiter(rate: Rate, clock: &SharedClock) -> Limiter {
    let burst = NonZeroU32::new(rate.count).unwrap_or(NonZeroU32::MIN);
    // `with_period` fails only for a zero period; `refill_interval` is at least 1 ns.
    let quota = Quota::with_period(refill_interval(rate))
        .unwrap_or_else(|| Quota::per_second(burst))
        .allow_burst(burst);
    RateLimiter::direct_with_clock(quota, InjectedClock(clock.clone())).with_middleware::<StateInformationMiddleware>()
}

impl<K: std::hash::Hash + Eq + Copy + Send + std::fmt::Debug> RateState<K> for LocalRates<K> {
    fn take(&self, key: K, rate: Rate) -> Take {
        let limiter = {
            let now = self.clock.now();
            let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
            if keys.len() >= KEYS_MAX && !keys.contains_key(&key) {
                // A key unused for its rate's whole period has its full quota again: to
                // drop it is to forget nothing.
                keys.retain(|_, entry| now.saturating_since(entry.last) < entry.rate.per);
            }
            let entry = keys.entry(key).or_insert_with(|| Entry {
                rate,
                limiter: Arc::new(limiter(rate, &self.clock)),
                last: now,
            });
            if entry.rate != rate {
                // The key's limit changed: start it afresh with the new quota.
                entry.rate = rate;
                entry.limiter = Arc::new(limiter(rate, &self.clock));
            }
            entry.last = now;
            Arc::clone(&entry.limiter)
        };
        match limiter.check() {
            Ok(snapshot) => Take::Allowed {
                remaining: snapshot.remaining_burst_capacity(),
            },
            Err(not_until) => Take::Refused {
                wait: not_until.wait_time_from(InjectedClock(self.clock.clone()).now()),
            },
        }
    }
}

/// One destination's pacing: messages spread evenly at its rate.
pub trait Pacer: Send + Sync {
    /// Takes one message's turn now, or tells how long to wait for it.
    fn take(&self) -> Result<(), Duration>;
}

/// Per-destination limits: the pacing of its messages and leases on its connections.
pub trait DestinationLimits: Send + Sync + std::fmt::Debug {
    /// The pacer of destination `key` at `rate`.
    fn pacer(&self, key: &str, rate: Rate) -> Box<dyn Pacer>;
    /// A lease on one more connection to destination `key`, of at most `max`; `None`
    /// when every one is taken. The lease ends when dropped.
    fn lease(&self, key: &str, max: usize) -> Option<Lease>;
}

/// A lease on one connection to a destination; released when dropped.
pub struct Lease {
    release: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl Lease {
    /// A lease that `release` ends.
    pub fn new(release: impl FnOnce() + Send + Sync + 'static) -> Lease {
        Lease {
            release: Some(Box::new(release)),
        }
    }
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lease")
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            release();
        }
    }
}

/// Destination limits of one node. The delivery engine already counts its own
/// connections per destination against the cap, so a lease here is the node's count
/// itself: it never refuses one the engine asks for. A shared implementation counts
/// every node's connections.
#[derive(Debug)]
pub struct LocalDestinations {
    clock: SharedClock,
}

impl LocalDestinations {
    /// Destination limits on `clock`.
    pub fn new(clock: SharedClock) -> LocalDestinations {
        LocalDestinations { clock }
    }
}

/// A GCRA pacer allowing no burst, on the injected clock. That clock counts milliseconds,
/// so a destination paces at most one message per millisecond (1000/s); a destination
/// rate above that is a rate no receiver publishes.
struct LocalPacer {
    limiter: RateLimiter<NotKeyed, InMemoryState, InjectedClock, NoOpMiddleware<Duration>>,
    clock: InjectedClock,
}

impl Pacer for LocalPacer {
    fn take(&self) -> Result<(), Duration> {
        self.limiter
            .check()
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }
}

impl DestinationLimits for LocalDestinations {
    fn pacer(&self, _key: &str, rate: Rate) -> Box<dyn Pacer> {
        let period = rate.per / rate.count.max(1);
        let quota = Quota::with_period(period.max(Duration::from_micros(1)))
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
            .allow_burst(NonZeroU32::MIN);
        let clock = InjectedClock(self.clock.clone());
        Box::new(LocalPacer {
            limiter: RateLimiter::direct_with_clock(quota, clock.clone()),
            clock,
        })
    }

    fn lease(&self, _key: &str, _max: usize) -> Option<Lease> {
        Some(Lease::new(|| {}))
    }
}

#[cfg(test)]
mod tests {
    use herald_queue::{ManualClock, Timestamp};

    use super::*;

    #[test]
    fn idle_keys_are_dropped_once_there_are_too_many() {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
        let rates: LocalRates<u32> = LocalRates::new(clock.clone());
        let rate = Rate {
            count: 1,
            per: Duration::from_secs(60),
        };
        for key in 0..u32::try_from(KEYS_MAX).expect("fits") {
            assert!(matches!(rates.take(key, rate), Take::Allowed { .. }));
        }
        // Within the period every key is still counting: none is dropped, none forgotten.
        assert!(matches!(rates.take(KEYS_MAX as u32, rate), Take::Allowed { .. }));
        assert!(matches!(rates.take(0, rate), Take::Refused { .. }));
        clock.advance(Duration::from_secs(61));
        assert!(matches!(rates.take(u32::MAX, rate), Take::Allowed { .. }));
        assert_eq!(rates.keys.lock().expect("lock").len(), 1, "the idle ones went");
    }

    #[test]
    fn pacing_follows_the_injected_clock() {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
        let limits = LocalDestinations::new(clock.clone());
        let pacer = limits.pacer(
            "example.com",
            Rate {
                count: 2,
                per: Duration::from_secs(1),
            },
        );
        assert_eq!(pacer.take(), Ok(()));
        assert_eq!(pacer.take(), Err(Duration::from_millis(500)), "no burst");
        clock.advance(Duration::from_millis(500));
        assert_eq!(pacer.take(), Ok(()), "the next turn comes with the clock, not the wall");
    }

    #[test]
    fn rate_state_refills_with_the_injected_clock_and_restarts_on_a_new_rate() {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
        let rates = LocalRates::<u8>::new(clock.clone());
        let rate = Rate {
            count: 2,
            per: Duration::from_secs(2),
        };
        assert_eq!(rates.take(1, rate), Take::Allowed { remaining: 1 });
        assert_eq!(rates.take(1, rate), Take::Allowed { remaining: 0 });
        assert_eq!(
            rates.take(1, rate),
            Take::Refused {
                wait: Duration::from_secs(1)
            }
        );
        assert_eq!(rates.take(2, rate), Take::Allowed { remaining: 1 }, "keys are apart");
        clock.advance(Duration::from_secs(1));
        assert_eq!(rates.take(1, rate), Take::Allowed { remaining: 0 });
        let wider = Rate {
            count: 5,
            per: Duration::from_secs(5),
        };
        assert_eq!(rates.take(1, wider), Take::Allowed { remaining: 4 });
    }
}
