//! Where idempotency keys are kept. [`IdempotencyStore`] is what the idempotency service
//! holds keys in flight, reads and stages records through, and what its expiry engine
//! expires them through; [`LocalIdempotency`] keeps the keys in flight in memory and the
//! records in the node's RocksDB: in [`Table::IDEMPOTENCY`] under the team id and the
//! key's digest, each with an entry in [`Table::IDEMPOTENCY_EXPIRY`] ([`EXPIRY`]) under
//! the time it was written, which falls due [`RETENTION`] later. [`PostgresIdempotency`]
//! keeps the records in PostgreSQL, one row per key across the cluster.
//!
//! The keys and encodings of both tables are this module's alone.

mod copy;
mod in_flight;
mod postgres;

use std::sync::Arc;

use herald_queue::{Batch, Due, DueIndex, Id, RawEntry, Record, Scan, Store, Table, Timestamp};

use super::record::{IdempotencyKey, IdempotencyRecord, RETENTION};
use crate::storage::due::{self, DueQueue};
use crate::storage::{Change, Error};
use in_flight::KeysInFlight;

pub use copy::copy;
pub use postgres::PostgresIdempotency;

/// Records examined per write when expiring or indexing.
pub(crate) const SWEEP_BATCH: usize = 1_000;

/// Records by the time they were written, then team and key: a due index whose entries
/// fall due [`RETENTION`] after their time (a runner delay), so the table reads as it
/// did before it was one.
const EXPIRY: DueIndex = DueIndex::new(Table::IDEMPOTENCY_EXPIRY);

/// The key in [`Table::META`] that says every record has its entry in
/// [`Table::IDEMPOTENCY_EXPIRY`]: set once records written before the index existed have
/// been given theirs. (Records a downgraded build writes after that get no entry: they
/// still expire for [`super::Idempotency::begin`], but stay on disk.)
const INDEXED: &[u8] = b"idempotency_expiry_indexed";

/// What idempotency keeps for the nodes that answer one team: which keys are in flight
/// (so that two requests with one key never both send), and the records of what was
/// answered. [`LocalIdempotency`] keeps both on this node (a set in memory, records in
/// RocksDB); [`PostgresIdempotency`] keeps the keys in flight in memory too and the
/// records in a table every node shares, whose unique row per key lets one of two nodes
/// answering a key at once commit its email.
///
/// A record is staged into the change that writes the email it answers with
/// ([`super::InFlight::record`]), as the durability contract asks.
pub trait IdempotencyStore: Send + Sync + std::fmt::Debug {
    /// Holds `key` as in flight; `false` when it already is.
    fn hold(&self, key: &IdempotencyKey) -> bool;
    /// Releases `key`.
    fn release(&self, key: &IdempotencyKey);
    /// The record under `key`.
    fn get(&self, key: &IdempotencyKey) -> Result<Option<IdempotencyRecord>, Error>;
    /// Stages `record` under `key`, to expire [`RETENTION`] after its `created_at`.
    fn stage(&self, change: &mut Change, key: &IdempotencyKey, record: &IdempotencyRecord) -> Result<(), Error>;
    /// Deletes the records of the due expiry entries `due` (of [`EXPIRY`]) and the
    /// entries, in one write; how many records it deleted. A key in flight is left for
    /// later, and held from the read until the delete is committed, so a request
    /// answering under it meanwhile is told it is in flight instead of having its new
    /// record deleted. A record written again after its entry was made is newer than the
    /// entry and stays, for its own entry to remove. A record that cannot be decoded is
    /// deleted: no request could be answered from it.
    fn expire(&self, due: &[Due]) -> Result<usize, Error>;
    /// Deletes every record past [`RETENTION`] at `now`, oldest first, reading only those
    /// that are due; how many. The rules of [`IdempotencyStore::expire`] hold: a key in
    /// flight is left for a later sweep, and a record written again since its entry was
    /// made stays.
    fn sweep(&self, now: Timestamp) -> Result<usize, Error>;
    /// The records by the time they were written, for the expiry engine's due runner
    /// (whose handler calls [`IdempotencyStore::expire`]).
    fn expiry_queue(&self) -> Arc<dyn DueQueue>;
    /// Gives every record written before the expiry index existed its entry there
    /// (deleting instead the expired ones at `now` and any that cannot be decoded), then
    /// marks the work done so later calls skip it; how many records it deleted. Reads
    /// every record, once.
    fn backfill(&self, now: Timestamp) -> Result<usize, Error>;
    /// Erases the deleted team `team_id`'s records, durably: `true` while more is left
    /// (call again). Their expiry entries delete nothing when they fall due.
    fn erase_team(&self, team_id: Id) -> Result<bool, Error>;
}

impl Record for IdempotencyRecord {
    const TABLE: Table = Table::IDEMPOTENCY;
}

/// The key of `key`'s record.
fn record_key(key: &IdempotencyKey) -> Vec<u8> {
    [key.team_id.as_bytes().as_slice(), key.digest.as_slice()].concat()
}

/// The idempotency key whose record is under `bytes`, if they are one's.
fn key_of(bytes: &[u8]) -> Option<IdempotencyKey> {
    let team_id = Id::from_slice(bytes.get(..16)?)?;
    let digest: [u8; 32] = bytes.get(16..)?.try_into().ok()?;
    Some(IdempotencyKey { team_id, digest })
}

/// Idempotency on one node: keys in flight in memory, records in the node's RocksDB.
#[derive(Debug)]
pub struct LocalIdempotency {
    store: Store,
    in_flight: KeysInFlight,
}

/// Holds the key of the record under `bytes` with `held`: `false` when it is in flight.
/// Bytes that are no key's are nobody's to hold.
fn hold_record(held: &mut in_flight::Held<'_>, bytes: &[u8]) -> bool {
    key_of(bytes).is_none_or(|key| held.hold(key))
}

impl LocalIdempotency {
    /// Idempotency over `store`.
    pub fn new(store: Store) -> LocalIdempotency {
        LocalIdempotency {
            store,
            in_flight: KeysInFlight::default(),
        }
    }

    /// Walks the records from the first, [`SWEEP_BATCH`] at a time. `visit` stages a
    /// page's writes and holds the keys it must; the writes are committed before the keys
    /// are released, and the walk ends at the table's end.
    fn in_pages(&self, mut visit: impl FnMut(&[RawEntry], &mut Batch, &mut in_flight::Held<'_>)) -> Result<(), Error> {
        let mut after: Option<Vec<u8>> = None;
        loop {
            let page = self.store.scan_raw(
                Table::IDEMPOTENCY,
                Scan {
                    after: after.as_deref(),
                    limit: SWEEP_BATCH,
                    ..Scan::prefix(b"")
                },
            )?;
            let mut batch = Batch::new();
            let mut held = self.in_flight.holding();
            visit(&page, &mut batch, &mut held);
            if !batch.is_empty() {
                self.store.commit(batch).wait()?;
            }
            drop(held);
            if page.len() < SWEEP_BATCH {
                return Ok(());
            }
            after = page.last().map(|(key, _)| key.clone());
        }
    }
}

impl IdempotencyStore for LocalIdempotency {
    fn hold(&self, key: &IdempotencyKey) -> bool {
        self.in_flight.hold(key)
    }

    fn release(&self, key: &IdempotencyKey) {
        self.in_flight.release(key);
    }

    fn get(&self, key: &IdempotencyKey) -> Result<Option<IdempotencyRecord>, Error> {
        Ok(self.store.get::<IdempotencyRecord>(record_key(key))?)
    }

    fn stage(&self, change: &mut Change, key: &IdempotencyKey, record: &IdempotencyRecord) -> Result<(), Error> {
        let batch = change.batch();
        let bytes = record_key(key);
        batch.put(&bytes, record)?;
        EXPIRY.arm(batch, record.created_at, &bytes);
        Ok(())
    }

    fn expire(&self, due: &[Due]) -> Result<usize, Error> {
        let mut batch = Batch::new();
        let mut held = self.in_flight.holding();
        let mut deleted = 0;
        for entry in due {
            if !hold_record(&mut held, &entry.key) {
                continue;
            }
            let expired = match self.store.get::<IdempotencyRecord>(&entry.key).map_err(Error::from) {
                Ok(record) => record.is_some_and(|r| r.created_at <= entry.at),
                Err(error @ Error::Corrupt { .. }) => {
                    tracing::warn!(%error, "deleting an idempotency record that cannot be read");
                    true
                }
                Err(error) => return Err(error),
            };
            if expired {
                batch.delete::<IdempotencyRecord>(&entry.key);
                deleted += 1;
            }
            EXPIRY.disarm(&mut batch, entry.at, &entry.key);
        }
        if !batch.is_empty() {
            self.store.commit(batch).wait()?;
        }
        drop(held);
        Ok(deleted)
    }

    fn expiry_queue(&self) -> Arc<dyn DueQueue> {
        due::rocks(&self.store, EXPIRY)
    }

    fn sweep(&self, now: Timestamp) -> Result<usize, Error> {
        let horizon = Timestamp::from_millis(
            now.as_millis()
                .saturating_sub(u64::try_from(RETENTION.as_millis()).unwrap_or(u64::MAX)),
        );
        let mut deleted = 0;
        let mut after: Option<Due> = None;
        loop {
            let page = EXPIRY.due(&self.store, horizon, after.as_ref(), SWEEP_BATCH)?;
            deleted += self.expire(&page)?;
            if page.len() < SWEEP_BATCH {
                return Ok(deleted);
            }
            after = page.last().cloned();
        }
    }

    fn backfill(&self, now: Timestamp) -> Result<usize, Error> {
        if self.store.get_raw(Table::META, INDEXED)?.is_some() {
            return Ok(0);
        }
        let mut deleted = 0;
        self.in_pages(|page, batch, held| {
            for (key, bytes) in page {
                if !hold_record(held, key) {
                    // Being answered: the record it writes comes with its entry.
                    continue;
                }
                match herald_queue::decode_record::<IdempotencyRecord>(bytes) {
                    Ok(record) if now.saturating_since(record.created_at) < RETENTION => {
                        EXPIRY.arm(batch, record.created_at, key);
                    }
                    Ok(_) => {
                        batch.delete::<IdempotencyRecord>(key);
                        deleted += 1;
                    }
                    Err(error) => {
                        tracing::warn!(%error, "deleting an idempotency record that cannot be read");
                        batch.delete::<IdempotencyRecord>(key);
                        deleted += 1;
                    }
                }
            }
            if page.len() < SWEEP_BATCH {
                batch.put_raw(Table::META, INDEXED.to_vec(), b"1".to_vec());
            }
        })?;
        Ok(deleted)
    }

    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        // Keyed by team first: one range tombstone, however many.
        let mut batch = Batch::new();
        batch.delete_prefix(Table::IDEMPOTENCY, team_id.as_bytes());
        self.store.commit(batch).wait()?;
        Ok(false)
    }
}

#[cfg(test)]
mod tests;
