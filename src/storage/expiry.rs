//! Expiring records: a kind of record that leaves the store when its retention is over
//! keeps a due index of `(time its retention counts from, item key)` entries, and says
//! here how one item is expired. The stores that own the records implement it; the
//! retention engine ([`crate::retention`]) runs them.

use herald_queue::{Batch, Due, DueIndex, Store};

use super::Error;

/// One kind of expiring record.
pub trait Expiry: Send + Sync + 'static {
    /// Its name in logs and metrics (`emails`, `content`, ...).
    const KIND: &'static str;

    /// Its index.
    const INDEX: DueIndex;

    /// Adds to `batch` what expires the item of `due` (deletions, or a rewrite without
    /// the expired part). The sweep disarms the entry itself. An item that is gone, or
    /// whose record says the entry is stale, adds nothing.
    fn expire(&self, store: &Store, due: &Due, batch: &mut Batch) -> Result<(), Error>;
}

/// Expires `due`'s items in one batch and commits it; returns how many. Blocks. An item
/// that cannot be read is left as it is and its entry dropped (said in the log once),
/// rather than failing every later pass.
pub fn expire_now<E: Expiry>(store: &Store, expiry: &E, due: &[&Due]) -> Result<usize, Error> {
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
