//! Sign-in throttling: failed passwords and second-factor codes are counted per account
//! and per client address; past [`FAILURES_MAX`] in [`WINDOW`], that account or address
//! is refused for [`LOCKOUT`], with the same answer whatever was wrong.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures allowed in a window.
pub const FAILURES_MAX: u32 = 10;

/// The window failures are counted in.
pub const WINDOW: Duration = Duration::from_secs(15 * 60);

/// How long a locked account or address stays locked.
pub const LOCKOUT: Duration = Duration::from_secs(15 * 60);

/// Entries kept at most; past it, those with nothing to remember are dropped.
const ENTRIES_MAX: usize = 100_000;

#[derive(Debug, Clone, Copy)]
struct Entry {
    failures: u32,
    since: Instant,
    locked_until: Option<Instant>,
}

/// Failures by key (`ip:<address>`, `user:<email>`).
#[derive(Debug, Default)]
pub struct Guard {
    entries: Mutex<HashMap<String, Entry>>,
}

impl Guard {
    /// Whether any of `keys` is locked now.
    pub fn locked(&self, keys: &[String]) -> bool {
        let entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        keys.iter().any(|key| {
            entries
                .get(key)
                .and_then(|e| e.locked_until)
                .is_some_and(|until| until > now)
        })
    }

    /// Counts a failure against each of `keys`.
    pub fn fail(&self, keys: &[String]) {
        let mut entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        if entries.len() > ENTRIES_MAX {
            entries.retain(|_, e| now.duration_since(e.since) < WINDOW || e.locked_until.is_some_and(|u| u > now));
        }
        for key in keys {
            let entry = entries.entry(key.clone()).or_insert(Entry {
                failures: 0,
                since: now,
                locked_until: None,
            });
            if now.duration_since(entry.since) >= WINDOW {
                *entry = Entry {
                    failures: 0,
                    since: now,
                    locked_until: None,
                };
            }
            entry.failures += 1;
            if entry.failures >= FAILURES_MAX {
                entry.locked_until = Some(now + LOCKOUT);
                metrics::counter!("herald_dashboard_lockouts_total").increment(1);
            }
        }
    }

    /// Forgets the account's failures after a success (the address keeps its own).
    pub fn succeed(&self, key: &str) {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tenth_failure_locks() {
        let guard = Guard::default();
        let keys = vec!["user:a@b.test".to_owned()];
        for _ in 0..FAILURES_MAX - 1 {
            guard.fail(&keys);
        }
        assert!(!guard.locked(&keys));
        guard.fail(&keys);
        assert!(guard.locked(&keys));
        assert!(!guard.locked(&["user:other@b.test".to_owned()]));
    }
}
