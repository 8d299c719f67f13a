//! Where the webhook log is kept. [`WebhookLog`] is what the dispatcher, the event
//! outbox's writers and the log the API lists go through; [`RocksWebhookLog`] keeps it in
//! the node's RocksDB: outbox events in [`Table::OUTBOX`] by their time-ordered ids,
//! messages in [`Table::WEBHOOK_MESSAGES`] by team, webhook and event, attempts in
//! [`Table::WEBHOOK_ATTEMPTS`] by team, webhook and attempt id, pending messages by their
//! next attempt in [`Table::WEBHOOK_DUE`] ([`DUE`], which the dispatcher's due runner
//! walks) and the log's retention in [`Table::WEBHOOK_EXPIRY`]. [`PostgresWebhookLog`]
//! keeps the outbox there too (it is written with the node's own changes) and the
//! messages and attempts in PostgreSQL, for every node to list.
//!
//! The keys and encodings of these tables are this module's alone.

mod copy;
mod postgres;

use std::sync::Arc;

use herald_queue::{Batch, Due, DueIndex, Id, Record, Scan, Store, Table, Timestamp};

use super::message::{MessageState, WebhookAttempt, WebhookMessage};
use crate::events::Event;
use crate::storage::due::{self, DueQueue};
use crate::storage::expiry::{self, Expiry, Sweep};
use crate::storage::page::PageRequest;
use crate::storage::{Change, Error};

pub use self::copy::copy;
pub use self::postgres::PostgresWebhookLog;
pub use crate::storage::Committing;

/// The event outbox, webhook messages and their attempts.
pub trait WebhookLog: Send + Sync + std::fmt::Debug {
    /// Stages `event` into the outbox, to be fanned out once `change` lands.
    fn stage_event(&self, change: &mut Change, event: &Event) -> Result<(), Error>;
    /// Up to `limit` events of the outbox, oldest first, after the id `after` when given
    /// (any 16 bytes: a time bound).
    fn outbox(&self, after: Option<Id>, limit: usize) -> Result<Vec<Event>, Error>;
    /// Takes `events` out of the outbox and writes `messages`, each due at its next
    /// attempt, durably: an event is never lost between the two nor fanned out twice.
    /// RocksDB does both in one write; a backend that cannot writes the messages first,
    /// leaving any already written as they are, so that a failure between the writes
    /// only has the events fanned out again, harmlessly.
    fn fan_out(&self, events: &[Event], messages: &[WebhookMessage]) -> Result<(), Error>;
    /// The message a due entry of [`DUE`] names, whatever became of it since.
    fn due(&self, key: &[u8]) -> Result<Option<WebhookMessage>, Error>;
    /// Pending messages by their next attempt, for the dispatcher's due runner; an entry
    /// found stale (its message sent, replayed or deleted since) is disarmed through it.
    fn due_queue(&self) -> Arc<dyn DueQueue>;
    /// The log's retention (`[retention] webhook_messages`), for the retention engine.
    fn expiry(&self) -> Arc<dyn Sweep>;
    /// The message of event `event_id` for `team_id`'s webhook `webhook_id`.
    fn message(&self, team_id: Id, webhook_id: Id, event_id: Id) -> Result<Option<WebhookMessage>, Error>;
    /// One page of the messages of `team_id`'s webhook `webhook_id`, newest first.
    fn messages(&self, team_id: Id, webhook_id: Id, page: &PageRequest) -> Result<(Vec<WebhookMessage>, bool), Error>;
    /// The attempt `id` of `team_id`'s webhook `webhook_id`.
    fn attempt(&self, team_id: Id, webhook_id: Id, id: Id) -> Result<Option<WebhookAttempt>, Error>;
    /// One page of the attempts of `team_id`'s webhook `webhook_id`, newest first.
    fn attempts(&self, team_id: Id, webhook_id: Id, page: &PageRequest) -> Result<(Vec<WebhookAttempt>, bool), Error>;
    /// Stages `message` as it is now, no longer due at `was_due` when it was pending: due
    /// at its next attempt while pending, its retention counted from `finished_at` once
    /// final; with `attempt` recorded beside it (its retention counted from when it was
    /// made).
    fn stage_message(
        &self,
        change: &mut Change,
        message: &WebhookMessage,
        was_due: Option<Timestamp>,
        attempt: Option<&WebhookAttempt>,
    ) -> Result<(), Error>;
    /// Stages the removal of `message`, due at `was_due` (its endpoint is gone).
    fn stage_removal(&self, change: &mut Change, message: &WebhookMessage, was_due: Timestamp);
    /// Commits `change` durably, blocking until it is.
    fn commit(&self, change: Change) -> Result<(), Error>;
    /// Commits `change` durably, without blocking.
    fn commit_async(&self, change: Change) -> Committing;
    /// Erases the deleted team `team_id`'s messages and attempts, durably: `true` while
    /// more is left (call again). Their due and retention entries are dropped when met.
    fn erase_team(&self, team_id: Id) -> Result<bool, Error>;
}

/// Pending messages by their next attempt: big-endian due time, then the message's key
/// (team, webhook and event ids).
pub(crate) const DUE: DueIndex = DueIndex::new(Table::WEBHOOK_DUE);

/// Messages and attempts by the time their retention counts from. Item keys are a tag
/// byte and the record's key, as the two kinds share the index.
pub(crate) const EXPIRY: DueIndex = DueIndex::new(Table::WEBHOOK_EXPIRY);

const MESSAGE: u8 = b'm';
const ATTEMPT: u8 = b'a';

impl Record for Event {
    const TABLE: Table = Table::OUTBOX;
}

impl Record for WebhookMessage {
    const TABLE: Table = Table::WEBHOOK_MESSAGES;
}

impl Record for WebhookAttempt {
    const TABLE: Table = Table::WEBHOOK_ATTEMPTS;
}

/// Adds `event` to `batch`, keyed by its time-ordered id so the outbox drains in order:
/// for stores that write an event with their own records.
pub(crate) fn stage_event(batch: &mut Batch, event: &Event) -> Result<(), Error> {
    Ok(batch.put(event.id.as_bytes(), event)?)
}

/// Writes `events` into the node's outbox in `store`, durably: for a store whose records
/// are committed elsewhere (a shared database) before the events that report them.
pub(crate) fn commit_events<'a>(store: &Store, events: impl IntoIterator<Item = &'a Event>) -> Result<(), Error> {
    let mut batch = Batch::new();
    for event in events {
        stage_event(&mut batch, event)?;
    }
    if batch.is_empty() {
        return Ok(());
    }
    Ok(store.commit(batch).wait()?)
}

/// Up to `limit` events of the outbox in `store`, oldest first, after `after` when given:
/// [`WebhookLog::outbox`] on either backend.
fn outbox(store: &Store, after: Option<Id>, limit: usize) -> Result<Vec<Event>, Error> {
    let events = store.scan::<Event>(Scan {
        prefix: b"",
        after: after.as_ref().map(|id| id.as_bytes().as_slice()),
        reverse: false,
        limit,
    })?;
    Ok(events.into_iter().map(|(_, event)| event).collect())
}

/// Adds to `batch` the removal of `events` from the outbox, once fanned out.
fn take_events(batch: &mut Batch, events: &[Event]) {
    for event in events {
        batch.delete::<Event>(event.id.as_bytes());
    }
}

/// The key of the message of event `event_id` for webhook `webhook_id` of `team_id`.
fn message_key(team_id: Id, webhook_id: Id, event_id: Id) -> Vec<u8> {
    [
        team_id.as_bytes().as_slice(),
        webhook_id.as_bytes(),
        event_id.as_bytes(),
    ]
    .concat()
}

/// The key of `message`.
pub(crate) fn key_of(message: &WebhookMessage) -> Vec<u8> {
    message_key(message.team_id, message.webhook_id, message.event_id)
}

/// The key of the attempt `id` of `team_id`'s webhook `webhook_id`.
fn attempt_key(team_id: Id, webhook_id: Id, id: Id) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), webhook_id.as_bytes(), id.as_bytes()].concat()
}

/// The webhook of the message under `key` (as a due entry names it), if it is one.
pub(crate) fn webhook_of(key: &[u8]) -> Option<Id> {
    key.get(16..32).filter(|_| key.len() == 48).and_then(Id::from_slice)
}

fn tagged(tag: u8, key: &[u8]) -> Vec<u8> {
    let mut tagged = Vec::with_capacity(1 + key.len());
    tagged.push(tag);
    tagged.extend_from_slice(key);
    tagged
}

/// `[retention] webhook_messages`: a message leaves counted from its final outcome
/// (delivered, or failed after its last retry), so a message still being retried is
/// never expired; an attempt from when it was made.
#[derive(Debug, Clone, Copy, Default)]
pub struct Messages;

impl Expiry for Messages {
    const KIND: &'static str = "webhook_messages";
    const INDEX: DueIndex = EXPIRY;

    fn expire(&self, store: &Store, due: &Due, batch: &mut Batch) -> Result<(), Error> {
        expire(store, due, batch)
    }
}

/// Stages the expiry of the entry `due` of [`EXPIRY`]: an attempt goes; a message goes
/// unless it was replayed since (pending again, or final at another time, when its
/// current entry decides).
fn expire(store: &Store, due: &Due, batch: &mut Batch) -> Result<(), Error> {
    match due.key.split_first() {
        Some((&MESSAGE, key)) => {
            let current = store
                .get::<WebhookMessage>(key)?
                .filter(|message| message.state != MessageState::Pending && message.finished_at == Some(due.at));
            if current.is_some() {
                batch.delete::<WebhookMessage>(key);
            }
        }
        Some((&ATTEMPT, key)) => batch.delete::<WebhookAttempt>(key),
        _ => {}
    }
    Ok(())
}

/// The webhook log in the node's RocksDB.
#[derive(Debug, Clone)]
pub struct RocksWebhookLog {
    store: Store,
}

impl RocksWebhookLog {
    /// The webhook log in `store`.
    pub fn new(store: Store) -> RocksWebhookLog {
        RocksWebhookLog { store }
    }
}

impl WebhookLog for RocksWebhookLog {
    fn stage_event(&self, change: &mut Change, event: &Event) -> Result<(), Error> {
        stage_event(change.batch(), event)
    }

    fn outbox(&self, after: Option<Id>, limit: usize) -> Result<Vec<Event>, Error> {
        outbox(&self.store, after, limit)
    }

    fn fan_out(&self, events: &[Event], messages: &[WebhookMessage]) -> Result<(), Error> {
        let mut batch = Batch::new();
        for message in messages {
            let key = key_of(message);
            DUE.arm(&mut batch, message.next_attempt, &key);
            batch.put(key, message)?;
        }
        take_events(&mut batch, events);
        Ok(self.store.commit(batch).wait()?)
    }

    fn due(&self, key: &[u8]) -> Result<Option<WebhookMessage>, Error> {
        Ok(self.store.get::<WebhookMessage>(key)?)
    }

    fn due_queue(&self) -> Arc<dyn DueQueue> {
        due::rocks(&self.store, DUE)
    }

    fn expiry(&self) -> Arc<dyn Sweep> {
        expiry::sweep(&self.store, Messages)
    }

    fn message(&self, team_id: Id, webhook_id: Id, event_id: Id) -> Result<Option<WebhookMessage>, Error> {
        Ok(self
            .store
            .get::<WebhookMessage>(message_key(team_id, webhook_id, event_id))?)
    }

    fn messages(&self, team_id: Id, webhook_id: Id, page: &PageRequest) -> Result<(Vec<WebhookMessage>, bool), Error> {
        let prefix = [team_id.as_bytes().as_slice(), webhook_id.as_bytes()].concat();
        Ok(page.load::<WebhookMessage>(&self.store, &prefix)?)
    }

    fn attempt(&self, team_id: Id, webhook_id: Id, id: Id) -> Result<Option<WebhookAttempt>, Error> {
        Ok(self.store.get::<WebhookAttempt>(attempt_key(team_id, webhook_id, id))?)
    }

    fn attempts(&self, team_id: Id, webhook_id: Id, page: &PageRequest) -> Result<(Vec<WebhookAttempt>, bool), Error> {
        let prefix = [team_id.as_bytes().as_slice(), webhook_id.as_bytes()].concat();
        Ok(page.load::<WebhookAttempt>(&self.store, &prefix)?)
    }

    fn stage_message(
        &self,
        change: &mut Change,
        message: &WebhookMessage,
        was_due: Option<Timestamp>,
        attempt: Option<&WebhookAttempt>,
    ) -> Result<(), Error> {
        let batch = change.batch();
        let key = key_of(message);
        if let Some(at) = was_due {
            DUE.disarm(batch, at, &key);
        }
        match (message.state, message.finished_at) {
            (MessageState::Pending, _) => DUE.arm(batch, message.next_attempt, &key),
            (_, Some(at)) => EXPIRY.arm(batch, at, &tagged(MESSAGE, &key)),
            (_, None) => {}
        }
        if let Some(attempt) = attempt {
            let attempt_key = attempt_key(message.team_id, message.webhook_id, attempt.id);
            EXPIRY.arm(batch, attempt.at, &tagged(ATTEMPT, &attempt_key));
            batch.put(attempt_key, attempt)?;
        }
        Ok(batch.put(key, message)?)
    }

    fn stage_removal(&self, change: &mut Change, message: &WebhookMessage, was_due: Timestamp) {
        let key = key_of(message);
        let batch = change.batch();
        DUE.disarm(batch, was_due, &key);
        batch.delete::<WebhookMessage>(&key);
    }

    fn commit(&self, change: Change) -> Result<(), Error> {
        Ok(self.store.commit(change.into_local()?).wait()?)
    }

    fn commit_async(&self, change: Change) -> Committing {
        // Statements for the database, if any, run before the node's write, here.
        let batch = match change.into_local() {
            Ok(batch) => batch,
            Err(error) => return Box::pin(async move { Err(error) }),
        };
        let commit = self.store.commit(batch);
        Box::pin(async move { Ok(commit.await?) })
    }

    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        // Keyed by team first: one range tombstone each, however many. A due entry left
        // behind finds no message and is dropped; an expiry entry deletes nothing.
        let mut batch = Batch::new();
        batch.delete_prefix(Table::WEBHOOK_MESSAGES, team_id.as_bytes());
        batch.delete_prefix(Table::WEBHOOK_ATTEMPTS, team_id.as_bytes());
        self.store.commit(batch).wait()?;
        Ok(false)
    }
}
