//! Free-space admission: refuse new mail before the disk fills instead of failing a write
//! half-way and losing it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::Refusal;

/// How stale a free-space reading may be. A `statvfs` per enqueue would be cheap enough,
/// but one per interval keeps the hot path free of syscalls while still noticing a filling
/// disk (and space coming back) within a fraction of a second.
const RECHECK_INTERVAL: Duration = Duration::from_millis(250);

/// Tracks free space on the data directory's file system.
#[derive(Debug)]
pub(crate) struct DiskGuard {
    path: PathBuf,
    minimum: u64,
    started: Instant,
    available: AtomicU64,
    checked_at_millis: AtomicU64,
}

impl DiskGuard {
    pub(crate) fn new(path: PathBuf, minimum: u64) -> Self {
        let guard = DiskGuard {
            path,
            minimum,
            started: Instant::now(),
            available: AtomicU64::new(u64::MAX),
            checked_at_millis: AtomicU64::new(0),
        };
        guard.refresh();
        guard
    }

    /// `Ok` when at least the minimum is free, from a reading at most
    /// [`RECHECK_INTERVAL`] old.
    pub(crate) fn admit(&self) -> Result<(), Refusal> {
        if self.minimum == 0 {
            return Ok(());
        }
        let now = self.elapsed_millis();
        let checked = self.checked_at_millis.load(Ordering::Relaxed);
        if now.saturating_sub(checked) >= millis(RECHECK_INTERVAL) {
            self.refresh();
        }
        let available = self.available.load(Ordering::Relaxed);
        if available < self.minimum {
            metrics::counter!("herald_spool_commit_refused_total", "reason" => "disk_low").increment(1);
            return Err(Refusal::DiskLow {
                available,
                minimum: self.minimum,
            });
        }
        Ok(())
    }

    /// The last reading of free bytes.
    pub(crate) fn available(&self) -> u64 {
        self.available.load(Ordering::Relaxed)
    }

    /// The configured minimum.
    pub(crate) fn minimum(&self) -> u64 {
        self.minimum
    }

    fn refresh(&self) {
        match fs4::available_space(&self.path) {
            Ok(bytes) => {
                self.available.store(bytes, Ordering::Relaxed);
                metrics::gauge!("herald_spool_disk_available_bytes").set(bytes as f64);
            }
            // A failed statvfs says nothing about space; keep the last reading and say so.
            Err(error) => tracing::warn!(%error, path = %self.path.display(), "cannot read free disk space"),
        }
        self.checked_at_millis.store(self.elapsed_millis(), Ordering::Relaxed);
    }

    fn elapsed_millis(&self) -> u64 {
        millis(self.started.elapsed())
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_below_the_minimum_and_admits_above_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let roomy = DiskGuard::new(dir.path().to_owned(), 1);
        assert!(roomy.admit().is_ok());
        let impossible = DiskGuard::new(dir.path().to_owned(), u64::MAX);
        match impossible.admit() {
            Err(Refusal::DiskLow { available, minimum }) => {
                assert_eq!(minimum, u64::MAX);
                assert!(available < minimum);
            }
            other => panic!("expected DiskLow, got {other:?}"),
        }
        let disabled = DiskGuard::new(dir.path().to_owned(), 0);
        assert!(disabled.admit().is_ok());
    }
}
