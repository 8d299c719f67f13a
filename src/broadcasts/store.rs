//! Where broadcasts are kept: [`Table::BROADCASTS`] by team and id, their contacts'
//! markers in [`Table::BROADCAST_RECIPIENTS`] by team, broadcast and contact, and the
//! worker's queue [`Table::BROADCAST_QUEUE`] (an entry while a broadcast is scheduled or
//! sending, kept in the batch that writes the broadcast).

use herald_queue::{Batch, Error, Id, Record, Scan, Store, Table};

use super::{Broadcast, Recipient};
use crate::storage::page::PageRequest;

impl Record for Broadcast {
    const TABLE: Table = Table::BROADCASTS;
}

impl Record for Recipient {
    const TABLE: Table = Table::BROADCAST_RECIPIENTS;
}

/// The key of broadcast `id` of `team_id`.
pub fn key(team_id: Id, id: Id) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), id.as_bytes()].concat()
}

/// The key of `contact_id`'s marker in broadcast `id` of `team_id`.
fn recipient_key(team_id: Id, id: Id, contact_id: Id) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), id.as_bytes(), contact_id.as_bytes()].concat()
}

/// The broadcast `id` of `team_id`.
pub fn get(store: &Store, team_id: Id, id: Id) -> Result<Option<Broadcast>, Error> {
    store.get::<Broadcast>(key(team_id, id))
}

/// One page of `team_id`'s broadcasts, newest first.
pub fn page(store: &Store, team_id: Id, page: &PageRequest) -> Result<(Vec<Broadcast>, bool), Error> {
    page.load(store, team_id.as_bytes())
}

/// Stages `broadcast` with its place in the worker's queue: there while it is queued.
pub fn stage(batch: &mut Batch, broadcast: &Broadcast) -> Result<(), Error> {
    let queued = [broadcast.id.as_bytes().as_slice(), broadcast.team_id.as_bytes()].concat();
    if broadcast.status.is_queued() {
        batch.put_raw(Table::BROADCAST_QUEUE, queued, Vec::new());
    } else {
        batch.delete_raw(Table::BROADCAST_QUEUE, queued);
    }
    batch.put(key(broadcast.team_id, broadcast.id), broadcast)
}

/// Writes `broadcast`, durably.
pub fn put(store: &Store, broadcast: &Broadcast) -> Result<(), Error> {
    let mut batch = Batch::new();
    stage(&mut batch, broadcast)?;
    store.commit(batch).wait()
}

/// Deletes a draft, durably.
pub fn delete(store: &Store, broadcast: &Broadcast) -> Result<(), Error> {
    let mut batch = Batch::new();
    batch.delete::<Broadcast>(key(broadcast.team_id, broadcast.id));
    batch.delete_raw(
        Table::BROADCAST_QUEUE,
        [broadcast.id.as_bytes().as_slice(), broadcast.team_id.as_bytes()].concat(),
    );
    store.commit(batch).wait()
}

/// Stages the marker of one contact of `broadcast`.
pub fn stage_recipient(batch: &mut Batch, broadcast: &Broadcast, recipient: &Recipient) -> Result<(), Error> {
    batch.put(
        recipient_key(broadcast.team_id, broadcast.id, recipient.contact_id),
        recipient,
    )
}

/// The marker of `contact_id` in `broadcast`, if it was expanded.
pub fn recipient(store: &Store, broadcast: &Broadcast, contact_id: Id) -> Result<Option<Recipient>, Error> {
    store.get::<Recipient>(recipient_key(broadcast.team_id, broadcast.id, contact_id))
}

/// Up to `limit` markers of `broadcast` after the contact `after` (in contact id order).
pub fn recipients(
    store: &Store,
    broadcast: &Broadcast,
    after: Option<Id>,
    limit: usize,
) -> Result<Vec<Recipient>, Error> {
    let prefix = key(broadcast.team_id, broadcast.id);
    let after = after.map(|contact| recipient_key(broadcast.team_id, broadcast.id, contact));
    Ok(store
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

/// The queued broadcasts, oldest first; entries that outlived their broadcast (sent,
/// canceled, or erased with its team) are dropped when met.
pub fn queued(store: &Store) -> Result<Vec<Broadcast>, Error> {
    let mut found = Vec::new();
    let mut stale = Batch::new();
    for (key, _) in store.scan_raw(Table::BROADCAST_QUEUE, Scan::prefix(&[]))? {
        let (Some(id), Some(team)) = (
            key.get(..16).and_then(Id::from_slice),
            key.get(16..).and_then(Id::from_slice),
        ) else {
            stale.delete_raw(Table::BROADCAST_QUEUE, key);
            continue;
        };
        match get(store, team, id)? {
            Some(broadcast) if broadcast.status.is_queued() => found.push(broadcast),
            _ => stale.delete_raw(Table::BROADCAST_QUEUE, key),
        }
    }
    if !stale.is_empty() {
        store.commit(stale).wait()?;
    }
    Ok(found)
}
