//! Queues of items waiting for a time: what the due-time runner ([`crate::runner`])
//! walks. A store keeps each of its queues beside the records it schedules (armed in the
//! same write as the item's new state) and hands the runner the queue, never its table.

use std::fmt;
use std::sync::Arc;

use herald_queue::{Batch, Due, DueIndex, Store, Timestamp};

use super::{Committing, Error};

/// One queue of `(time, item key)` entries, earliest first.
pub trait DueQueue: Send + Sync + fmt::Debug {
    /// The time now, on the clock the queue's entries are armed by.
    fn now(&self) -> Timestamp;
    /// Up to `limit` entries at or before `horizon`, earliest first, starting after
    /// `after` when given. Blocks: call it off the async workers.
    fn due(&self, horizon: Timestamp, after: Option<&Due>, limit: usize) -> Result<Vec<Due>, Error>;
    /// The time of the earliest entry after `horizon`, if any. Blocks.
    fn next_after(&self, horizon: Timestamp) -> Result<Option<Timestamp>, Error>;
    /// Removes the entry `due`, durably: for an entry found to name nothing (its item
    /// is gone, or the key is not one the queue's owner ever wrote).
    fn disarm(&self, due: &Due) -> Committing;
}

/// A queue kept as a due index in the node's RocksDB.
pub(crate) fn rocks(store: &Store, index: DueIndex) -> Arc<dyn DueQueue> {
    Arc::new(RocksQueue {
        store: store.clone(),
        index,
    })
}

/// [`DueQueue`] over a [`DueIndex`] of `store`.
struct RocksQueue {
    store: Store,
    index: DueIndex,
}

impl fmt::Debug for RocksQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RocksQueue")
            .field("table", &self.index.table())
            .finish_non_exhaustive()
    }
}

impl DueQueue for RocksQueue {
    fn now(&self) -> Timestamp {
        self.store.now()
    }

    fn due(&self, horizon: Timestamp, after: Option<&Due>, limit: usize) -> Result<Vec<Due>, Error> {
        Ok(self.index.due(&self.store, horizon, after, limit)?)
    }

    fn next_after(&self, horizon: Timestamp) -> Result<Option<Timestamp>, Error> {
        Ok(self.index.next_due_after(&self.store, horizon)?)
    }

    fn disarm(&self, due: &Due) -> Committing {
        let mut batch = Batch::new();
        self.index.disarm(&mut batch, due.at, &due.key);
        let commit = self.store.commit(batch);
        Box::pin(async move { Ok(commit.await?) })
    }
}
