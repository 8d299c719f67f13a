//! Time as herald reads it: one injected clock for everything that waits.
//!
//! Production uses [`SystemClock`]; in-memory tests drive a [`ManualClock`] forward instead
//! of sleeping. Timestamps are milliseconds since the Unix epoch, which is also the
//! resolution of UUIDv7 ids and of the due index.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The Unix epoch.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// A timestamp `millis` milliseconds after the epoch.
    pub const fn from_millis(millis: u64) -> Self {
        Timestamp(millis)
    }

    /// Milliseconds since the epoch.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// The timestamp `duration` later, saturating at the end of time.
    #[must_use]
    pub fn saturating_add(self, duration: Duration) -> Self {
        let millis = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        Timestamp(self.0.saturating_add(millis))
    }

    /// How long after `earlier` this is, or zero when it is not later.
    pub fn saturating_since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }

    /// The same instant as a [`SystemTime`].
    pub fn to_system_time(self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.0)
    }

    /// The instant of a [`SystemTime`]; times before the epoch become the epoch.
    pub fn from_system_time(time: SystemTime) -> Self {
        let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
        Timestamp(u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0)
    }
}

/// A source of the current time. Implementations must be cheap and monotone enough for
/// scheduling: a clock that steps back only delays work, it never loses it.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// A shared clock handle.
pub type SharedClock = Arc<dyn Clock>;

/// The operating system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_system_time(SystemTime::now())
    }
}

/// A clock that moves only when told to, for tests that drive time in memory.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicU64,
}

impl ManualClock {
    /// A clock stopped at `start`.
    pub fn new(start: Timestamp) -> Self {
        ManualClock {
            now: AtomicU64::new(start.as_millis()),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let millis = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        self.now.fetch_add(millis, Ordering::SeqCst);
    }

    /// Sets the clock to `to`.
    pub fn set(&self, to: Timestamp) {
        self.now.store(to.as_millis(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.now.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(Timestamp::from_millis(1_000));
        assert_eq!(clock.now(), Timestamp::from_millis(1_000));
        clock.advance(Duration::from_secs(2));
        assert_eq!(clock.now(), Timestamp::from_millis(3_000));
        clock.set(Timestamp::from_millis(5));
        assert_eq!(clock.now(), Timestamp::from_millis(5));
    }

    #[test]
    fn timestamp_arithmetic_saturates() {
        let end = Timestamp::from_millis(u64::MAX);
        assert_eq!(end.saturating_add(Duration::from_secs(1)), end);
        assert_eq!(Timestamp::EPOCH.saturating_since(end), Duration::ZERO);
        let t = Timestamp::from_millis(1_500);
        assert_eq!(Timestamp::from_system_time(t.to_system_time()), t);
    }
}
