//! Where emails are kept: [`EmailStore`] speaks of what happens to an email (it is
//! created, an event is recorded on it and moves its status, its record or status is
//! rewritten) and of what is read back (the email, its status, its timeline, a page of
//! one status); [`RocksEmails`] keeps them in the node's RocksDB as three records (the
//! email, its status, its timeline events) and an index by status, in the tables below.
//! Merging those records later changes no caller. [`PostgresEmails`] keeps them in
//! PostgreSQL, one row per email.
//!
//! The keys and encodings of [`Table::EMAILS`], [`Table::EMAIL_STATUS`],
//! [`Table::EVENTS`] and [`Table::EMAILS_BY_STATUS`] are this module's alone.

mod copy;
mod postgres;
pub mod retention;

use std::sync::Arc;
use std::time::Duration;

use herald_queue::{Batch, Id, Record, Scan, Spool, Store, Table, Timestamp, decode_record};
use serde_json::Value;

pub use self::copy::copy;
pub use self::postgres::PostgresEmails;
use super::record::{EmailEvent, EmailRecord, EmailStatus};
use super::state::EmailState;
use crate::storage::expiry::Sweep;
use crate::storage::page::PageRequest;
use crate::storage::{Change, Error};

/// Emails by team: records, statuses, timelines and the index by status.
pub trait EmailStore: Send + Sync + std::fmt::Debug {
    /// The email `id` of `team_id` as stored, with its status's latest event and attempt
    /// log.
    fn get(&self, team_id: Id, id: Id) -> Result<Option<EmailRecord>, Error>;
    /// The status of the email `id` of `team_id`.
    fn status(&self, team_id: Id, id: Id) -> Result<Option<EmailStatus>, Error>;
    /// One page of `team_id`'s emails, newest first, each with its status, and whether
    /// more lie beyond it.
    fn list(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<EmailRecord>, bool), Error>;
    /// Up to `limit` statuses of `team_id`'s emails, newest first, before `before` when
    /// given (an id, or the first bytes of one: a time bound).
    fn statuses(&self, team_id: Id, before: Option<&[u8]>, limit: usize) -> Result<Vec<EmailStatus>, Error>;
    /// Up to `limit` ids of `team_id`'s emails whose status is `state`, newest first,
    /// before `before` when given (as for [`EmailStore::statuses`]). An id may be of an
    /// email that moved on since: read its status to be sure.
    fn ids_in_state(
        &self,
        team_id: Id,
        state: EmailState,
        before: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<Id>, Error>;
    /// The timeline of the email `id`, oldest first.
    fn timeline(&self, id: Id) -> Result<Vec<EmailEvent>, Error>;

    /// Stages a new email: its record, its status at `record.last_event` (counted in its
    /// broadcast's counts when it is one of a broadcast's) and the first event of its
    /// timeline, of that kind, at `at`.
    fn create(&self, change: &mut Change, record: &EmailRecord, at: Timestamp) -> Result<(), Error>;
    /// Stages an event of kind `kind` with `data` at `at` on the timeline of the email
    /// whose status is `status`, and moves `status.last_event` as the one rule says
    /// ([`EmailState::after`]), with its place in the index and its broadcast's counts.
    /// The one writer of an email's `last_event`; whether it moved. The status itself is
    /// written by [`EmailStore::put_status`], once the events of a change are recorded.
    fn record_event(
        &self,
        change: &mut Change,
        status: &mut EmailStatus,
        kind: EmailState,
        data: Value,
        at: Timestamp,
    ) -> Result<bool, Error>;
    /// Stages the rewrite of an email's status (its attempt log, its opens and clicks,
    /// the `last_event` [`EmailStore::record_event`] moved).
    fn put_status(&self, change: &mut Change, status: &EmailStatus) -> Result<(), Error>;
    /// Stages the rewrite of an email's record (a new schedule, its latest event on
    /// cancellation, its content expired).
    fn put_record(&self, change: &mut Change, record: &EmailRecord) -> Result<(), Error>;
    /// Stages the erasure of up to `limit` of `team_id`'s emails (record, status, index
    /// entry, timeline, and the message the spool keeps for its bodies unless it is still
    /// queued) and answers their ids: none when the team has no email left.
    fn erase_team(&self, change: &mut Change, team_id: Id, limit: usize) -> Result<Vec<Id>, Error>;
    /// The retention of records (`[retention] emails`, `emails`) and of their content
    /// (`content`), counted from each email's final outcome, for the retention engine:
    /// records first, then contents.
    fn expiries(&self, emails: Option<Duration>, content: Option<Duration>) -> [Arc<dyn Sweep>; 2];
    /// Whether an email's bodies may stay in the message its node's spool keeps instead of
    /// the record (`content_in_message`): only where the records are the node's own, since
    /// another node cannot read that message.
    fn content_in_spool(&self) -> bool;
    /// Stages the start of the retention of `team_id`'s email `id`, which reached its
    /// final outcome at `at`: in the change that writes that outcome.
    fn arm_final(&self, change: &mut Change, team_id: Id, id: Id, at: Timestamp);
    /// Commits `change` durably.
    fn commit(&self, change: Change) -> Result<(), Error>;
}

impl Record for EmailRecord {
    const TABLE: Table = Table::EMAILS;
}

impl Record for EmailStatus {
    const TABLE: Table = Table::EMAIL_STATUS;
}

impl Record for EmailEvent {
    const TABLE: Table = Table::EVENTS;
}

/// Emails in the node's RocksDB.
#[derive(Debug, Clone)]
pub struct RocksEmails {
    store: Store,
}

impl RocksEmails {
    /// Emails in `store`.
    pub fn new(store: Store) -> RocksEmails {
        RocksEmails { store }
    }
}

impl EmailStore for RocksEmails {
    fn get(&self, team_id: Id, id: Id) -> Result<Option<EmailRecord>, Error> {
        let key = EmailRecord::key(team_id, id);
        let Some(mut record) = self.store.get::<EmailRecord>(&key)? else {
            return Ok(None);
        };
        record.merge(self.store.get::<EmailStatus>(&key)?);
        Ok(Some(record))
    }

    fn status(&self, team_id: Id, id: Id) -> Result<Option<EmailStatus>, Error> {
        Ok(self.store.get::<EmailStatus>(EmailRecord::key(team_id, id))?)
    }

    fn list(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<EmailRecord>, bool), Error> {
        let (mut emails, has_more) = page.load::<EmailRecord>(&self.store, team_id.as_bytes())?;
        for email in &mut emails {
            email.merge(
                self.store
                    .get::<EmailStatus>(EmailRecord::key(email.team_id, email.id))?,
            );
        }
        Ok((emails, has_more))
    }

    fn statuses(&self, team_id: Id, before: Option<&[u8]>, limit: usize) -> Result<Vec<EmailStatus>, Error> {
        let after = before.map(|bound| [team_id.as_bytes().as_slice(), bound].concat());
        let found = self.store.scan_raw(
            Table::EMAIL_STATUS,
            Scan {
                prefix: team_id.as_bytes(),
                after: after.as_deref(),
                reverse: true,
                limit,
            },
        )?;
        // A status that cannot be read is skipped, as a page has always skipped it.
        Ok(found
            .iter()
            .filter_map(|(_, bytes)| decode_record::<EmailStatus>(bytes).ok())
            .collect())
    }

    fn ids_in_state(
        &self,
        team_id: Id,
        state: EmailState,
        before: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<Id>, Error> {
        index::page(&self.store, team_id, state, before, limit)
    }

    fn timeline(&self, id: Id) -> Result<Vec<EmailEvent>, Error> {
        let events = self.store.scan::<EmailEvent>(Scan::prefix(id.as_bytes()))?;
        Ok(events.into_iter().map(|(_, event)| event).collect())
    }

    fn create(&self, change: &mut Change, record: &EmailRecord, at: Timestamp) -> Result<(), Error> {
        let batch = change.batch();
        let key = EmailRecord::key(record.team_id, record.id);
        batch.put(&key, record)?;
        batch.put(&key, &record.status())?;
        index::put(batch, record.team_id, record.id, record.broadcast_id, record.last_event);
        self.append(batch, record.id, record.last_event, Value::Null, at)
    }

    fn record_event(
        &self,
        change: &mut Change,
        status: &mut EmailStatus,
        kind: EmailState,
        data: Value,
        at: Timestamp,
    ) -> Result<bool, Error> {
        let batch = change.batch();
        let moved = index::advance(batch, status, kind);
        self.append(batch, status.id, kind, data, at)?;
        Ok(moved)
    }

    fn put_status(&self, change: &mut Change, status: &EmailStatus) -> Result<(), Error> {
        Ok(change
            .batch()
            .put(EmailRecord::key(status.team_id, status.id), status)?)
    }

    fn put_record(&self, change: &mut Change, record: &EmailRecord) -> Result<(), Error> {
        Ok(change
            .batch()
            .put(EmailRecord::key(record.team_id, record.id), record)?)
    }

    fn erase_team(&self, change: &mut Change, team_id: Id, limit: usize) -> Result<Vec<Id>, Error> {
        let found = self.store.scan_raw(
            Table::EMAILS,
            Scan {
                limit,
                ..Scan::prefix(team_id.as_bytes())
            },
        )?;
        let mut erased = Vec::with_capacity(found.len());
        for (key, _) in &found {
            erase(&self.store, key, change.batch())?;
            if let Some(id) = key.get(16..).and_then(Id::from_slice) {
                Spool::forget(&self.store, id, change.batch())?;
                erased.push(id);
            }
        }
        if found.len() < limit {
            // Statuses and index entries of emails whose record is gone already.
            let batch = change.batch();
            batch.delete_prefix(Table::EMAIL_STATUS, team_id.as_bytes());
            index::erase_team(batch, team_id);
        }
        Ok(erased)
    }

    fn content_in_spool(&self) -> bool {
        true
    }

    fn arm_final(&self, change: &mut Change, team_id: Id, id: Id, at: Timestamp) {
        retention::arm_final(change, team_id, id, at);
    }

    fn commit(&self, change: Change) -> Result<(), Error> {
        Ok(self.store.commit(change.into_local()?).wait()?)
    }

    fn expiries(&self, emails: Option<Duration>, content: Option<Duration>) -> [Arc<dyn Sweep>; 2] {
        retention::sweeps(&self.store, emails, content)
    }
}

impl RocksEmails {
    /// Adds an event to the timeline of the email `email_id`, in `batch`.
    fn append(
        &self,
        batch: &mut Batch,
        email_id: Id,
        kind: EmailState,
        data: Value,
        at: Timestamp,
    ) -> Result<(), Error> {
        let event = EmailEvent {
            id: self.store.next_id(),
            email_id,
            kind,
            created_at: at,
            data,
        };
        Ok(batch.put(EmailEvent::key(email_id, event.id), &event)?)
    }
}

/// Deletes, in `batch`, the email whose record is at `key` (its record, status, index
/// entry and timeline): retention's end of an email.
pub(crate) fn erase(store: &Store, key: &[u8], batch: &mut Batch) -> Result<(), Error> {
    let (Some(team), Some(id)) = (Id::from_slice(key), key.get(16..).and_then(Id::from_slice)) else {
        return Ok(());
    };
    batch.delete::<EmailRecord>(key);
    batch.delete::<EmailStatus>(key);
    index::erase(batch, team, id);
    for (event, _) in store.scan_raw(Table::EVENTS, Scan::prefix(id.as_bytes()))? {
        batch.delete::<EmailEvent>(event);
    }
    Ok(())
}

/// Gives every email stored before the index by status its entry, once (the first
/// start of a build with the index, before anything is served); answers how many.
pub fn build_index(store: &Store) -> Result<usize, Error> {
    once_over_statuses(store, index::INDEXED, |batch, status| {
        index::put(batch, status.team_id, status.id, None, status.last_event);
        Ok(true)
    })
}

/// Statuses read per page by [`once_over_statuses`].
const STATUS_PAGE: usize = 1_000;

/// Runs `each` over every email's status once per store: a page at a time, each page's
/// writes in one commit, the last with `marker` in [`Table::META`], which later calls
/// find and skip. For work a build does once for the emails stored before it (indexes,
/// expiry entries). Answers how many statuses `each` said it used.
pub fn once_over_statuses(
    store: &Store,
    marker: &[u8],
    mut each: impl FnMut(&mut Batch, &EmailStatus) -> Result<bool, Error>,
) -> Result<usize, Error> {
    if store.get_raw(Table::META, marker)?.is_some() {
        return Ok(0);
    }
    let mut used = 0;
    let mut after: Option<Vec<u8>> = None;
    loop {
        let page = store.scan_raw(
            Table::EMAIL_STATUS,
            Scan {
                after: after.as_deref(),
                limit: STATUS_PAGE,
                ..Scan::prefix(b"")
            },
        )?;
        let mut batch = Batch::new();
        for (_, bytes) in &page {
            if let Ok(status) = decode_record::<EmailStatus>(bytes)
                && each(&mut batch, &status)?
            {
                used += 1;
            }
        }
        let last = page.len() < STATUS_PAGE;
        if last {
            batch.put_raw(Table::META, marker.to_vec(), b"1".to_vec());
        }
        store.commit(batch).wait()?;
        if last {
            return Ok(used);
        }
        after = page.last().map(|(key, _)| key.clone());
    }
}

mod index;

#[cfg(test)]
mod tests;
