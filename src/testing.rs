//! What the crate's unit tests share: a real store in a temp directory on the injected
//! clock.

use std::path::Path;
use std::sync::Arc;

use herald_queue::{ManualClock, Store, StoreOptions, Timestamp};

/// A store in `dir` whose clock starts at `start_millis` and moves only when the test
/// advances it; no free-space floor.
pub(crate) fn store(dir: &Path, start_millis: u64) -> (Store, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(start_millis)));
    let mut options = StoreOptions::new(dir);
    options.min_free_space = 0;
    options.clock = clock.clone();
    (Store::open(options).expect("open the store"), clock)
}
