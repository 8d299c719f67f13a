//! Where broadcasts are kept. [`BroadcastStore`] is what the broadcasts service and its
//! worker read and write through; [`RocksBroadcasts`] keeps them in the node's RocksDB:
//! broadcasts in [`Table::BROADCASTS`] by team and id, their contacts' markers in
//! [`Table::BROADCAST_RECIPIENTS`] by team, broadcast and contact, the worker's queue in
//! [`Table::BROADCAST_QUEUE`] (an entry while a broadcast is scheduled or sending, written
//! with the broadcast), and each broadcast's emails counted by status ([`counts`]) with
//! the emails taken back by a cancel, in [`Table::COUNTERS`] under the team.
//!
//! [`PostgresBroadcasts`] keeps them in PostgreSQL.
//!
//! The keys and encodings of these tables' broadcast entries are this module's alone.

mod copy;
pub(crate) mod counts;
pub(crate) mod postgres;

use std::collections::BTreeMap;

use herald_queue::{Batch, Id, Record, Scan, Store, Table};

pub use self::copy::copy;
pub use self::postgres::PostgresBroadcasts;
use super::model::{Broadcast, Recipient};
use crate::emails::state::EmailState;
use crate::storage::page::PageRequest;
use crate::storage::{Change, Error};

/// Broadcasts by team, with their contacts' markers, the worker's queue and the counts
/// of their emails.
pub trait BroadcastStore: Send + Sync + std::fmt::Debug {
    /// The broadcast `id` of `team_id`.
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Broadcast>, Error>;
    /// One page of `team_id`'s broadcasts, newest first, and whether more lie beyond it.
    fn page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Broadcast>, bool), Error>;
    /// The broadcasts scheduled or sending, oldest first.
    fn queued(&self) -> Result<Vec<Broadcast>, Error>;
    /// Writes `broadcast` (and its place in the worker's queue), durably.
    fn put(&self, broadcast: &Broadcast) -> Result<(), Error>;
    /// Stages the write of `broadcast` (and its place in the worker's queue).
    fn stage(&self, change: &mut Change, broadcast: &Broadcast) -> Result<(), Error>;
    /// Deletes a draft, durably.
    fn delete(&self, broadcast: &Broadcast) -> Result<(), Error>;
    /// The marker of `contact_id` in `broadcast`, if that contact was expanded.
    fn recipient(&self, broadcast: &Broadcast, contact_id: Id) -> Result<Option<Recipient>, Error>;
    /// Up to `limit` markers of `broadcast` after the contact `after`, in contact id
    /// order.
    fn recipients(&self, broadcast: &Broadcast, after: Option<Id>, limit: usize) -> Result<Vec<Recipient>, Error>;
    /// Stages the marker of one contact of `broadcast`.
    fn stage_recipient(&self, change: &mut Change, broadcast: &Broadcast, recipient: &Recipient) -> Result<(), Error>;
    /// How many of `broadcast`'s emails are in each status now (statuses with none left
    /// out), as the email store counts them while they move.
    fn states(&self, team_id: Id, broadcast: Id) -> Result<BTreeMap<EmailState, u64>, Error>;
    /// How many of `broadcast`'s emails a cancel took back from the queue.
    fn canceled(&self, team_id: Id, broadcast: Id) -> Result<u64, Error>;
    /// Stages one more email of `broadcast` taken back from the queue.
    fn count_canceled(&self, change: &mut Change, team_id: Id, broadcast: Id);
    /// Erases the deleted team `team_id`'s broadcasts, markers and counts, durably:
    /// `true` while more is left (call again).
    fn erase_team(&self, team_id: Id) -> Result<bool, Error>;
    /// Commits `change` durably.
    fn commit(&self, change: Change) -> Result<(), Error>;
}

impl Record for Broadcast {
    const TABLE: Table = Table::BROADCASTS;
}

impl Record for Recipient {
    const TABLE: Table = Table::BROADCAST_RECIPIENTS;
}

/// The key of broadcast `id` of `team_id`.
fn key(team_id: Id, id: Id) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), id.as_bytes()].concat()
}

/// The key of `broadcast`'s entry in the worker's queue: the broadcast first, so the
/// queue is in the order broadcasts were made.
fn queue_key(broadcast: &Broadcast) -> Vec<u8> {
    [broadcast.id.as_bytes().as_slice(), broadcast.team_id.as_bytes()].concat()
}

/// The key of `contact_id`'s marker in broadcast `id` of `team_id`.
fn recipient_key(team_id: Id, id: Id, contact_id: Id) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), id.as_bytes(), contact_id.as_bytes()].concat()
}

/// Broadcasts in the node's RocksDB.
#[derive(Debug, Clone)]
pub struct RocksBroadcasts {
    store: Store,
}

impl RocksBroadcasts {
    /// Broadcasts in `store`.
    pub fn new(store: Store) -> RocksBroadcasts {
        RocksBroadcasts { store }
    }
}

/// Stages `broadcast` with its place in the worker's queue: there while it is queued.
fn stage(batch: &mut Batch, broadcast: &Broadcast) -> Result<(), Error> {
    if broadcast.status.is_queued() {
        batch.put_raw(Table::BROADCAST_QUEUE, queue_key(broadcast), Vec::new());
    } else {
        batch.delete_raw(Table::BROADCAST_QUEUE, queue_key(broadcast));
    }
    Ok(batch.put(key(broadcast.team_id, broadcast.id), broadcast)?)
}

impl BroadcastStore for RocksBroadcasts {
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Broadcast>, Error> {
        Ok(self.store.get::<Broadcast>(key(team_id, id))?)
    }

    fn page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Broadcast>, bool), Error> {
        Ok(page.load(&self.store, team_id.as_bytes())?)
    }

    fn queued(&self) -> Result<Vec<Broadcast>, Error> {
        let mut found = Vec::new();
        // Entries that outlived their broadcast (sent, canceled, or erased with its team)
        // are dropped when met.
        let mut stale = Batch::new();
        for (entry, _) in self.store.scan_raw(Table::BROADCAST_QUEUE, Scan::prefix(&[]))? {
            let (Some(id), Some(team)) = (
                entry.get(..16).and_then(Id::from_slice),
                entry.get(16..).and_then(Id::from_slice),
            ) else {
                stale.delete_raw(Table::BROADCAST_QUEUE, entry);
                continue;
            };
            match self.get(team, id)? {
                Some(broadcast) if broadcast.status.is_queued() => found.push(broadcast),
                _ => stale.delete_raw(Table::BROADCAST_QUEUE, entry),
            }
        }
        if !stale.is_empty() {
            self.store.commit(stale).wait()?;
        }
        Ok(found)
    }

    fn put(&self, broadcast: &Broadcast) -> Result<(), Error> {
        let mut batch = Batch::new();
        stage(&mut batch, broadcast)?;
        Ok(self.store.commit(batch).wait()?)
    }

    fn stage(&self, change: &mut Change, broadcast: &Broadcast) -> Result<(), Error> {
        stage(change.batch(), broadcast)
    }

    fn delete(&self, broadcast: &Broadcast) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.delete::<Broadcast>(key(broadcast.team_id, broadcast.id));
        batch.delete_raw(Table::BROADCAST_QUEUE, queue_key(broadcast));
        Ok(self.store.commit(batch).wait()?)
    }

    fn recipient(&self, broadcast: &Broadcast, contact_id: Id) -> Result<Option<Recipient>, Error> {
        Ok(self
            .store
            .get::<Recipient>(recipient_key(broadcast.team_id, broadcast.id, contact_id))?)
    }

    fn recipients(&self, broadcast: &Broadcast, after: Option<Id>, limit: usize) -> Result<Vec<Recipient>, Error> {
        let prefix = key(broadcast.team_id, broadcast.id);
        let after = after.map(|contact| recipient_key(broadcast.team_id, broadcast.id, contact));
        Ok(self
            .store
            .scan::<Recipient>(Scan {
                prefix: &prefix,
                after: after.as_deref(),
                reverse: false,
                limit,
            })?
            .into_iter()
            .map(|(_, recipient)| recipient)
            .collect())
    }

    fn stage_recipient(&self, change: &mut Change, broadcast: &Broadcast, recipient: &Recipient) -> Result<(), Error> {
        Ok(change.batch().put(
            recipient_key(broadcast.team_id, broadcast.id, recipient.contact_id),
            recipient,
        )?)
    }

    fn states(&self, team_id: Id, broadcast: Id) -> Result<BTreeMap<EmailState, u64>, Error> {
        counts::read(&self.store, team_id, broadcast)
    }

    fn canceled(&self, team_id: Id, broadcast: Id) -> Result<u64, Error> {
        counts::canceled(&self.store, team_id, broadcast)
    }

    fn count_canceled(&self, change: &mut Change, team_id: Id, broadcast: Id) {
        counts::count_canceled(change.batch(), team_id, broadcast);
    }

    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        // Keyed by team first: one range tombstone each, however many. The queue's
        // entries of the team's broadcasts are dropped when next met.
        let mut batch = Batch::new();
        batch.delete_prefix(Table::BROADCASTS, team_id.as_bytes());
        batch.delete_prefix(Table::BROADCAST_RECIPIENTS, team_id.as_bytes());
        counts::erase_team(&mut batch, team_id);
        self.store.commit(batch).wait()?;
        Ok(false)
    }

    fn commit(&self, change: Change) -> Result<(), Error> {
        Ok(self.store.commit(change.into_local()?).wait()?)
    }
}
