//! Expiring records: a kind of record that leaves the store when its retention is over
//! keeps a due index of `(time its retention counts from, item key)` entries, and says
//! here how one item is expired. The stores that own the records implement [`Expiry`]
//! and hand the retention engine ([`crate::retention`]) the [`Sweep`] that runs it.

use std::sync::Arc;

use herald_queue::{Batch, Due, DueIndex, Store};

use super::Error;
use super::due::{self, DueQueue};

/// One kind of expiring record, in the node's RocksDB.
pub(crate) trait Expiry: Send + Sync + 'static {
    /// Its name in logs and metrics (`emails`, `content`, ...).
    const KIND: &'static str;

    /// Its index.
    const INDEX: DueIndex;

    /// Adds to `batch` what expires the item of `due` (deletions, or a rewrite without
    /// the expired part). The sweep disarms the entry itself. An item that is gone, or
    /// whose record says the entry is stale, adds nothing.
    fn expire(&self, store: &Store, due: &Due, batch: &mut Batch) -> Result<(), Error>;
}

/// What the retention engine runs for one kind of record: its queue of entries, and how
/// a batch of due ones is expired.
pub trait Sweep: Send + Sync + 'static {
    /// The kind's name in logs and metrics (`emails`, `content`, ...).
    fn kind(&self) -> &'static str;
    /// The entries, by the time the retention counts from.
    fn queue(&self) -> Arc<dyn DueQueue>;
    /// Expires the items of `due` in one durable write and drops their entries; returns
    /// how many. Blocks. An item that cannot be read is left as it is and its entry
    /// dropped (said in the log once), rather than failing every later pass.
    fn expire(&self, due: &[&Due]) -> Result<usize, Error>;
}

/// The sweep of `expiry` over `store`.
pub(crate) fn sweep<E: Expiry>(store: &Store, expiry: E) -> Arc<dyn Sweep> {
    Arc::new(RocksSweep {
        store: store.clone(),
        expiry,
    })
}

/// [`Sweep`] of an [`Expiry`] in the node's RocksDB.
struct RocksSweep<E> {
    store: Store,
    expiry: E,
}

impl<E: Expiry> Sweep for RocksSweep<E> {
    fn kind(&self) -> &'static str {
        E::KIND
    }

    fn queue(&self) -> Arc<dyn DueQueue> {
        due::rocks(&self.store, E::INDEX)
    }

    fn expire(&self, due: &[&Due]) -> Result<usize, Error> {
        expire_now(&self.store, &self.expiry, due)
    }
}

/// Expires `due`'s items of `expiry` in one batch and commits it; returns how many.
/// Blocks. See [`Sweep::expire`].
pub(crate) fn expire_now<E: Expiry>(store: &Store, expiry: &E, due: &[&Due]) -> Result<usize, Error> {
    let mut batch = Batch::new();
    for entry in due {
        let mut own = Batch::new();
        match expiry.expire(store, entry, &mut own) {
            Ok(()) => batch.extend(own),
            Err(error) => {
                tracing::error!(kind = E::KIND, key = ?entry.key, %error, "cannot expire a record; leaving it");
            }
        }
        E::INDEX.disarm(&mut batch, entry.at, &entry.key);
    }
    store.commit(batch).wait()?;
    metrics::counter!("herald_expired_total", "kind" => E::KIND).increment(due.len() as u64);
    Ok(due.len())
}
