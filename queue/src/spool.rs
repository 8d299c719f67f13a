//! The spool: messages waiting for delivery, their envelopes and the due index.
//!
//! A message enters with [`Spool::enqueue`] (one synced write batch with whatever records
//! the caller adds), is handed to delivery when its entry in [`Spool::DUE`] falls due
//! and [`Spool::try_claim`] gives it to one worker, changes state through
//! [`Spool::update`], and leaves the spool in the same write that gives its last recipient
//! a final outcome; its bytes with it, unless it was spooled to be retained
//! ([`NewMessage::retain`]). Nothing here knows SMTP or HTTP.

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use crate::batch::Batch;
use crate::clock::Timestamp;
use crate::commit::Pending;
use crate::due::{Due, DueIndex};
use crate::envelope::{Envelope, Recipient, RecipientState};
use crate::error::{Error, Refusal};
use crate::id::Id;
use crate::store::Store;
use crate::table::{self, Table};

/// The due index: each spooled message by its envelope's due time, the item key its
/// 16-byte id (24-byte keys, the layout every spool has had).
const DUE: DueIndex = DueIndex::new(Table::DUE);

/// Recipients per message at most. Bounds the envelope that every state change rewrites;
/// SMTP's own minimum is 100, and the API allows 50 each of to, cc and bcc.
pub const RECIPIENTS_MAX: usize = 1_000;

/// Read-modify-write of one envelope is serialised by one of this many locks, chosen by
/// the id: enough that unrelated messages rarely share one.
const STRIPES: usize = 64;

/// A message to spool.
#[derive(Debug, Clone)]
pub struct NewMessage {
    /// Its id, from [`Store::next_id`]; the caller usually keys its own records by it too.
    pub id: Id,
    /// The owning team.
    pub team: String,
    /// Envelope sender; empty for the null sender.
    pub sender: String,
    /// Envelope recipients, at least one.
    pub recipients: Vec<String>,
    /// Caller metadata kept with the envelope.
    pub metadata: BTreeMap<String, String>,
    /// Earliest time to deliver (scheduled sending); `None` is now.
    pub not_before: Option<Timestamp>,
    /// The RFC 5322 message, as it will be sent.
    pub raw: Vec<u8>,
    /// Whether the bytes stay in the store when the message leaves the spool, for the
    /// caller to read with [`Spool::retained`] and remove with [`Spool::forget`]: one copy
    /// of a message whose record would otherwise keep its content again.
    pub retain: bool,
}

/// The outcome of an enqueue: accepted (durable) or refused for now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// The message and every extra record are durable.
    Accepted(Id),
    /// Nothing was written; try again later.
    Refused(Refusal),
}

/// What pending work a spool found when it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Messages still waiting for delivery.
    pub messages: u64,
    /// Their recipients without a final outcome.
    pub recipients: u64,
    /// Due-index entries that were missing and were restored.
    pub repaired_due: u64,
    /// Due-index entries without an envelope, removed.
    pub removed_orphans: u64,
}

/// A due message handed to one delivery worker. Until it is released or updated, no
/// other claim returns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// The message.
    pub id: Id,
    /// When it was due.
    pub due: Timestamp,
}

/// What an update did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Updated {
    /// No such message (already final, or never spooled).
    Missing,
    /// The message stays, next due at `due`.
    Kept {
        /// Its next due time.
        due: Timestamp,
    },
    /// Every recipient is final; the message left the spool.
    Removed,
}

/// The spool. Cloning is cheap.
#[derive(Debug, Clone)]
pub struct Spool {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: Store,
    in_flight: Mutex<HashSet<Id>>,
    stripes: Vec<Mutex<()>>,
    /// Messages in the spool. Signed: a message can be delivered and removed before the
    /// task that spooled it has counted it in (its write was durable, delivery was
    /// quicker than the wake-up), so the count may dip below zero for that moment.
    depth: AtomicI64,
}

impl Spool {
    /// The due index: one entry per message with recipients to try, at the time the
    /// earliest of them is due. The spool arms, re-arms and disarms it in the same batch
    /// as the envelope; delivery's due-time runner reads it.
    pub const DUE: DueIndex = DUE;

    /// Opens the spool over `store`, checking the due index against the envelopes so
    /// that delivery resumes after a crash.
    pub fn open(store: Store) -> Result<(Spool, Recovery), Error> {
        let recovery = recover(&store)?;
        metrics::gauge!("herald_spool_messages").set(recovery.messages as f64);
        let spool = Spool {
            inner: Arc::new(Inner {
                store,
                in_flight: Mutex::new(HashSet::new()),
                stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
                depth: AtomicI64::new(i64::try_from(recovery.messages).unwrap_or(i64::MAX)),
            }),
        };
        Ok((spool, recovery))
    }

    /// The store under the spool.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Messages in the spool.
    pub fn depth(&self) -> u64 {
        u64::try_from(self.inner.depth.load(Ordering::Relaxed)).unwrap_or(0)
    }

    /// Spools `message` together with `extra` in one synced write. Await the result, or
    /// [`Enqueue::wait`] for it on a plain thread.
    pub fn enqueue(&self, message: NewMessage, extra: Batch) -> Enqueue {
        self.enqueue_many(vec![message], extra)
    }

    /// Spools several messages and `extra` in one synced write: all of them or none.
    /// Await the result, or [`Enqueue::wait`] for it; it names the first message's id
    /// when accepted.
    pub fn enqueue_many(&self, messages: Vec<NewMessage>, extra: Batch) -> Enqueue {
        let id = messages.first().map_or(Id::from_bytes([0; 16]), |m| m.id);
        let count = messages.len() as u64;
        let state = match self.prepare_all(messages, extra) {
            Err(error) => EnqueueState::Failed(Some(error)),
            Ok(batch) => match self.inner.store.submit(batch) {
                Ok(pending) => EnqueueState::Waiting(pending),
                Err(refusal) => EnqueueState::Refused(Some(refusal)),
            },
        };
        Enqueue {
            id,
            count,
            spool: self.clone(),
            state,
        }
    }

    fn prepare_all(&self, messages: Vec<NewMessage>, extra: Batch) -> Result<Batch, PrepareError> {
        if messages.is_empty() {
            return Err(PrepareError::Invalid(Error::InvalidMessage("no messages")));
        }
        // The caller's records (a batch's hundred emails) are the base, the messages are
        // added to it: the larger part is never moved.
        let mut batch = extra;
        for message in messages {
            batch.extend(self.prepare(message, Batch::new())?);
        }
        Ok(batch)
    }

    /// Whether a delivery worker holds a claim on the message now.
    pub fn is_claimed(&self, id: Id) -> bool {
        self.lock_in_flight().contains(&id)
    }

    /// Claims the message for the caller, as a delivery worker would, unless it is claimed
    /// already: `false` when a delivery attempt holds it. An operator's change (retry,
    /// delete) claims first and then [`Spool::update`]s, which releases the claim, so it
    /// never releases a worker's claim mid-attempt.
    pub fn try_claim(&self, id: Id) -> bool {
        self.lock_in_flight().insert(id)
    }

    /// Visits the spooled messages' envelopes in id order (the order they were accepted),
    /// starting after `after`, until `visit` returns `false`. Reads one envelope at a time,
    /// so a large spool costs time, not memory.
    pub fn walk(
        &self,
        after: Option<Id>,
        mut visit: impl FnMut(Id, Envelope) -> Result<bool, Error>,
    ) -> Result<(), Error> {
        let from = after.map(|id| id.as_bytes().to_vec());
        self.inner
            .store
            .for_each_raw_from(Table::ENVELOPES, from.as_deref(), |key, value| {
                let Some(id) = Id::from_slice(key) else {
                    return Err(Error::Corrupt {
                        table: Table::ENVELOPES.name(),
                        reason: format!("key of {} bytes", key.len()),
                    });
                };
                if Some(id) == after {
                    return Ok(true);
                }
                visit(id, table::decode_record(value)?)
            })
    }

    fn prepare(&self, message: NewMessage, extra: Batch) -> Result<Batch, PrepareError> {
        if let Err(refusal) = self.inner.store.admit() {
            return Err(PrepareError::Refused(refusal));
        }
        if message.recipients.is_empty() {
            return Err(PrepareError::Invalid(Error::InvalidMessage("no recipients")));
        }
        if message.recipients.len() > RECIPIENTS_MAX {
            return Err(PrepareError::Invalid(Error::InvalidMessage("too many recipients")));
        }
        if message.raw.is_empty() {
            return Err(PrepareError::Invalid(Error::InvalidMessage("empty message")));
        }
        let now = self.inner.store.now();
        let due = message.not_before.map_or(now, |at| at.max(now));
        let envelope = Envelope {
            team: message.team,
            sender: message.sender,
            recipients: message.recipients.into_iter().map(Recipient::new).collect(),
            metadata: message.metadata,
            created_at: now,
            first_due: due,
            due,
            size: message.raw.len() as u64,
            retain: message.retain,
        };
        let mut batch = Batch::new();
        let key = message.id.as_bytes().to_vec();
        batch.put_raw(Table::MESSAGES, key.clone(), message.raw);
        batch.put(&key, &envelope).map_err(PrepareError::Invalid)?;
        DUE.arm(&mut batch, due, message.id.as_bytes());
        batch.extend(extra);
        Ok(batch)
    }

    /// Hands out up to `limit` messages due now that are not already claimed, earliest
    /// first.
    pub fn claim_due(&self, limit: usize) -> Result<Vec<Claim>, Error> {
        let now = self.inner.store.now();
        let mut claims = Vec::new();
        let mut in_flight = self.lock_in_flight();
        self.inner.store.for_each_raw(DUE.table(), |key, _| {
            let Some((due, id)) = parse_due_key(key) else {
                return Err(Error::Corrupt {
                    table: DUE.table().name(),
                    reason: format!("key of {} bytes", key.len()),
                });
            };
            if due > now || claims.len() >= limit {
                return Ok(false);
            }
            if in_flight.insert(id) {
                claims.push(Claim { id, due });
            }
            Ok(true)
        })?;
        Ok(claims)
    }

    /// The earliest due time in the index, claimed or not.
    pub fn next_due(&self) -> Result<Option<Timestamp>, Error> {
        let mut next = None;
        self.inner.store.for_each_raw(DUE.table(), |key, _| {
            next = parse_due_key(key).map(|(due, _)| due);
            Ok(false)
        })?;
        Ok(next)
    }

    /// Gives a claim back without changing the message (a worker stopping mid-way).
    pub fn release(&self, id: Id) {
        self.lock_in_flight().remove(&id);
    }

    /// The envelope of a spooled message, without its bytes: `None` once it left the
    /// spool.
    pub fn envelope(&self, id: Id) -> Result<Option<Envelope>, Error> {
        self.inner.store.get::<Envelope>(id.as_bytes())
    }

    /// The envelope and raw bytes of a spooled message.
    pub fn load(&self, id: Id) -> Result<Option<(Envelope, Vec<u8>)>, Error> {
        let key = id.as_bytes();
        let Some(envelope) = self.inner.store.get::<Envelope>(key)? else {
            return Ok(None);
        };
        let Some(raw) = self.inner.store.get_raw(Table::MESSAGES, key)? else {
            return Err(Error::Corrupt {
                table: Table::MESSAGES.name(),
                reason: format!("envelope {id} has no message"),
            });
        };
        Ok(Some((envelope, raw)))
    }

    /// The bytes of message `id`, spooled or retained after it left the spool
    /// ([`NewMessage::retain`]); `None` when there are none.
    pub fn retained(&self, id: Id) -> Result<Option<Vec<u8>>, Error> {
        self.inner.store.get_raw(Table::MESSAGES, id.as_bytes())
    }

    /// Adds to `batch` the removal of the retained bytes of message `id`, unless it is
    /// still spooled (its delivery needs them; they stay until it leaves the spool and are
    /// removed by a later call). Nothing happens when there are none.
    pub fn forget(store: &Store, id: Id, batch: &mut Batch) -> Result<(), Error> {
        if store.get::<Envelope>(id.as_bytes())?.is_none() {
            batch.delete_raw(Table::MESSAGES, id.as_bytes().to_vec());
        }
        Ok(())
    }

    /// Changes a message's envelope with `change`, which may add records (events) to the
    /// batch, and commits it durably; removes the message when every recipient is final.
    /// Releases any claim on the message. Blocks until durable: call it from a delivery
    /// thread or `spawn_blocking`, never from an async task.
    pub fn update(
        &self,
        id: Id,
        change: impl FnOnce(&mut Envelope, &mut Batch) -> Result<(), Error>,
    ) -> Result<Updated, Error> {
        let result = self.update_locked(id, change);
        self.release(id);
        result
    }

    /// Changes many messages as [`Spool::update`] does, each with `change`, in one
    /// durable write: what a group of finished deliveries costs is one commit, not one
    /// each. Answers each item's result in order; a change that fails leaves its message
    /// as it was (the others are written), a failed commit fails every written one.
    /// Releases every claim. Blocks until durable.
    pub fn update_many<T>(
        &self,
        items: &[T],
        id_of: impl Fn(&T) -> Id,
        mut change: impl FnMut(&T, &mut Envelope, &mut Batch) -> Result<(), Error>,
    ) -> Vec<Result<Updated, Error>> {
        // Every stripe of the group, each once, in one order: other lockers hold one
        // stripe at a time, so the order alone rules out a deadlock.
        let mut stripes: Vec<usize> = items.iter().map(|item| self.stripe_of(id_of(item))).collect();
        stripes.sort_unstable();
        stripes.dedup();
        let guards: Vec<MutexGuard<'_, ()>> = stripes.iter().map(|&index| self.lock_stripe_at(index)).collect();
        let mut group = Batch::new();
        let mut results: Vec<Result<Updated, Error>> = items
            .iter()
            .map(|item| {
                let (updated, batch) = self.stage(id_of(item), |envelope, batch| change(item, envelope, batch))?;
                group.extend(batch);
                Ok(updated)
            })
            .collect();
        let committed = if group.is_empty() {
            Ok(())
        } else {
            self.inner.store.commit(group).wait().map_err(|error| match error {
                Error::Unavailable(refusal) => refusal,
                other => Refusal::Storage(other.to_string()),
            })
        };
        drop(guards);
        for result in &mut results {
            match (&committed, &*result) {
                (Err(refusal), Ok(Updated::Kept { .. } | Updated::Removed)) => {
                    *result = Err(Error::Unavailable(refusal.clone()));
                }
                (Ok(()), Ok(Updated::Removed)) => self.count_removed(),
                _ => {}
            }
        }
        for item in items {
            self.release(id_of(item));
        }
        results
    }

    fn update_locked(
        &self,
        id: Id,
        change: impl FnOnce(&mut Envelope, &mut Batch) -> Result<(), Error>,
    ) -> Result<Updated, Error> {
        let _stripe = self.lock_stripe(id);
        let (updated, batch) = self.stage(id, change)?;
        if updated == Updated::Missing {
            return Ok(updated);
        }
        self.inner.store.commit(batch).wait()?;
        if updated == Updated::Removed {
            self.count_removed();
        }
        Ok(updated)
    }

    fn count_removed(&self) {
        let depth = self.inner.depth.fetch_sub(1, Ordering::Relaxed) - 1;
        metrics::gauge!("herald_spool_messages").set(depth.max(0) as f64);
    }

    /// The batch that applies `change` to message `id`, under its stripe (the caller's).
    fn stage(
        &self,
        id: Id,
        change: impl FnOnce(&mut Envelope, &mut Batch) -> Result<(), Error>,
    ) -> Result<(Updated, Batch), Error> {
        let key = id.as_bytes().to_vec();
        let Some(mut envelope) = self.inner.store.get::<Envelope>(&key)? else {
            return Ok((Updated::Missing, Batch::new()));
        };
        let old_due = envelope.due;
        let mut batch = Batch::new();
        change(&mut envelope, &mut batch)?;
        let updated = match envelope.next_due() {
            None => {
                if !envelope.retain {
                    batch.delete_raw(Table::MESSAGES, key.clone());
                }
                batch.delete::<Envelope>(&key);
                DUE.disarm(&mut batch, old_due, id.as_bytes());
                Updated::Removed
            }
            Some(due) => {
                DUE.rearm(&mut batch, old_due, due, id.as_bytes());
                envelope.due = due;
                batch.put(&key, &envelope)?;
                Updated::Kept { due }
            }
        };
        Ok((updated, batch))
    }

    /// Moves every open recipient of a message to `at` (scheduled sending changed, or an
    /// operator's "retry now").
    pub fn reschedule(&self, id: Id, at: Timestamp) -> Result<Updated, Error> {
        self.update(id, |envelope, _| {
            envelope.due = at;
            for recipient in &mut envelope.recipients {
                if let RecipientState::Deferred { next_attempt } = &mut recipient.state {
                    *next_attempt = at;
                }
            }
            Ok(())
        })
    }

    /// Cancels every open recipient; `extra` adds the caller's records (the cancel event)
    /// to the same write.
    pub fn cancel(
        &self,
        id: Id,
        extra: impl FnOnce(&Envelope, &mut Batch) -> Result<(), Error>,
    ) -> Result<Updated, Error> {
        let now = self.inner.store.now();
        self.update(id, |envelope, batch| {
            for recipient in &mut envelope.recipients {
                if !recipient.state.is_final() {
                    recipient.state = RecipientState::Canceled { at: now };
                }
            }
            extra(envelope, batch)
        })
    }

    fn lock_in_flight(&self) -> MutexGuard<'_, HashSet<Id>> {
        // The set stays consistent under a panic elsewhere: inserts and removes are single
        // operations.
        self.inner.in_flight.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_stripe(&self, id: Id) -> MutexGuard<'_, ()> {
        self.lock_stripe_at(self.stripe_of(id))
    }

    fn lock_stripe_at(&self, index: usize) -> MutexGuard<'_, ()> {
        self.inner.stripes[index].lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn stripe_of(&self, id: Id) -> usize {
        usize::from(id.as_bytes()[15]) % self.inner.stripes.len()
    }
}

enum PrepareError {
    Refused(Refusal),
    Invalid(Error),
}

/// An enqueue on its way to disk. Resolves to the [`Admission`].
#[must_use = "an enqueue is not durable until it is awaited or waited for"]
pub struct Enqueue {
    id: Id,
    count: u64,
    spool: Spool,
    state: EnqueueState,
}

enum EnqueueState {
    Failed(Option<PrepareError>),
    Refused(Option<Refusal>),
    Waiting(Pending),
}

impl Enqueue {
    /// The id the message will have.
    pub fn id(&self) -> Id {
        self.id
    }

    /// Blocks until the message is durable or refused. Not for async tasks: await instead.
    pub fn wait(self) -> Result<Admission, Error> {
        let outcome = match self.state {
            EnqueueState::Failed(error) => Err(error),
            EnqueueState::Refused(refusal) => Ok(Err(refusal.unwrap_or(Refusal::Closed))),
            EnqueueState::Waiting(pending) => Ok(pending.wait()),
        };
        finish(&self.spool, self.id, self.count, outcome)
    }
}

impl Future for Enqueue {
    type Output = Result<Admission, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let outcome = match &mut this.state {
            EnqueueState::Failed(error) => Err(error.take()),
            EnqueueState::Refused(refusal) => Ok(Err(refusal.take().unwrap_or(Refusal::Closed))),
            EnqueueState::Waiting(pending) => match Pin::new(pending).poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(result) => Ok(result),
            },
        };
        Poll::Ready(finish(&this.spool, this.id, this.count, outcome))
    }
}

fn finish(
    spool: &Spool,
    id: Id,
    count: u64,
    outcome: Result<Result<(), Refusal>, Option<PrepareError>>,
) -> Result<Admission, Error> {
    match outcome {
        Ok(Ok(())) => {
            let added = i64::try_from(count).unwrap_or(i64::MAX);
            let depth = spool.inner.depth.fetch_add(added, Ordering::Relaxed) + added;
            metrics::counter!("herald_spool_enqueued_total").increment(count);
            metrics::gauge!("herald_spool_messages").set(depth.max(0) as f64);
            Ok(Admission::Accepted(id))
        }
        Ok(Err(refusal)) | Err(Some(PrepareError::Refused(refusal))) => {
            metrics::counter!("herald_spool_refused_total").increment(1);
            Ok(Admission::Refused(refusal))
        }
        Err(Some(PrepareError::Invalid(error))) => Err(error),
        Err(None) => Err(Error::Unavailable(Refusal::Closed)),
    }
}

/// Walks the envelopes and the due index once: counts what is pending, restores missing
/// due entries and drops entries whose envelope is gone. Both repairs are needed only if
/// the store was written by a build with a bug; a crash alone cannot cause them, since
/// every change writes envelope and index in one batch.
fn recover(store: &Store) -> Result<Recovery, Error> {
    let mut recovery = Recovery::default();
    let mut repair = Batch::new();
    store.for_each_raw(Table::ENVELOPES, |key, value| {
        let envelope: Envelope = table::decode(Table::ENVELOPES, value)?;
        let Some(id) = Id::from_slice(key) else {
            return Err(Error::Corrupt {
                table: Table::ENVELOPES.name(),
                reason: format!("key of {} bytes", key.len()),
            });
        };
        recovery.messages += 1;
        recovery.recipients += envelope.recipients.iter().filter(|r| !r.state.is_final()).count() as u64;
        if !DUE.contains(store, envelope.due, id.as_bytes())? {
            recovery.repaired_due += 1;
            DUE.arm(&mut repair, envelope.due, id.as_bytes());
        }
        Ok(true)
    })?;
    store.for_each_raw(DUE.table(), |key, _| {
        let orphan = match parse_due_key(key) {
            Some((_, id)) => store.get_raw(Table::ENVELOPES, id.as_bytes())?.is_none(),
            None => true,
        };
        if orphan {
            recovery.removed_orphans += 1;
            // Raw: a key of another shape has no (due, id) to disarm by.
            repair.delete_raw(DUE.table(), key.to_vec());
        }
        Ok(true)
    })?;
    if !repair.is_empty() {
        tracing::warn!(
            repaired = recovery.repaired_due,
            removed = recovery.removed_orphans,
            "repaired the spool's due index"
        );
        store.commit(repair).wait()?;
    }
    tracing::info!(
        messages = recovery.messages,
        recipients = recovery.recipients,
        "spool recovered"
    );
    Ok(recovery)
}

/// The due time and message id of a spool due-index key; `None` for a key of another
/// shape (the spool's item keys are exactly one id).
fn parse_due_key(key: &[u8]) -> Option<(Timestamp, Id)> {
    let due = Due::decode(key).filter(|due| due.key.len() == 16)?;
    Some((due.at, Id::from_slice(&due.key)?))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::id::IdGenerator;

    /// The key layout of every spool written so far: 8 bytes of due time, 16 of id.
    fn due_key(due: Timestamp, id: Id) -> Vec<u8> {
        Due::new(due, id.as_bytes().as_slice()).encode()
    }

    proptest! {
        #[test]
        fn due_keys_round_trip_and_sort_by_time_then_id(a in any::<u64>(), b in any::<u64>(), ida in any::<[u8; 16]>(), idb in any::<[u8; 16]>()) {
            let (ta, tb) = (Timestamp::from_millis(a), Timestamp::from_millis(b));
            let (ia, ib) = (Id::from_bytes(ida), Id::from_bytes(idb));
            let (ka, kb) = (due_key(ta, ia), due_key(tb, ib));
            prop_assert_eq!(ka.len(), 24);
            prop_assert_eq!(ka[..8].to_vec(), a.to_be_bytes().to_vec());
            prop_assert_eq!(parse_due_key(&ka), Some((ta, ia)));
            prop_assert_eq!(ka.cmp(&kb), (a, ida).cmp(&(b, idb)));
        }
    }

    #[test]
    fn malformed_due_keys_are_rejected() {
        let id = IdGenerator::default().next(Timestamp::from_millis(1));
        let key = due_key(Timestamp::from_millis(7), id);
        assert!(parse_due_key(&key[..23]).is_none());
        assert!(parse_due_key(&[key.as_slice(), b"x"].concat()).is_none());
    }
}
