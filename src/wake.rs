//! Waking a loop that sleeps until work is due ([`crate::runner`]): the handle the
//! services hold to say that work was armed, without knowing the loop that runs it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use herald_queue::Timestamp;
use tokio::sync::Notify;

/// Tells a runner that work may be due earlier than it sleeps (an entry was armed now, a
/// claim released). Cheap to clone; a wake while the runner is busy is kept for its next
/// wait.
#[derive(Debug, Clone)]
pub struct Wake {
    notify: Arc<Notify>,
    /// The earliest time given to [`Wake::wake_from`] since the last pass, in
    /// milliseconds; [`NOT_REWOUND`] when none was.
    earliest: Arc<AtomicU64>,
}

/// [`Wake::earliest`] when no wake asked for an earlier start.
const NOT_REWOUND: u64 = u64::MAX;

impl Default for Wake {
    fn default() -> Self {
        Wake::from_notify(Arc::default())
    }
}

impl Wake {
    /// A handle over `notify`, for users that already hand one out.
    pub fn from_notify(notify: Arc<Notify>) -> Self {
        Wake {
            notify,
            earliest: Arc::new(AtomicU64::new(NOT_REWOUND)),
        }
    }

    /// Wakes the runner.
    pub fn wake(&self) {
        self.notify.notify_one();
    }

    /// Wakes the runner for entries armed at `at` or later, which may sort before where a
    /// resuming runner's next pass starts: an entry takes its time before its write is
    /// durable, and a later one may be read in between. The next pass starts no later
    /// than `at`.
    pub fn wake_from(&self, at: Timestamp) {
        self.earliest.fetch_min(at.as_millis(), Ordering::AcqRel);
        self.notify.notify_one();
    }

    /// Completes at the next wake, at once if one came since the last wait.
    pub async fn woken(&self) {
        self.notify.notified().await;
    }

    /// The earliest time given to [`Wake::wake_from`] since the last call.
    pub(crate) fn take_earliest(&self) -> Option<Timestamp> {
        let earliest = self.earliest.swap(NOT_REWOUND, Ordering::AcqRel);
        (earliest != NOT_REWOUND).then(|| Timestamp::from_millis(earliest))
    }
}
