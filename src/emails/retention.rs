//! When an email's record and its content leave the store (`[retention] emails` and
//! `content`), counted from its final outcome: mail still queued, deferred or scheduled
//! is never expired, whatever its age.

use herald_queue::{Batch, Due, DueIndex, Error, Id, Scan, Store, Table, Timestamp};

use super::record::{EmailEvent, EmailRecord, EmailStatus};
use crate::retention::Expiry;

/// Records (with their status, events and attempt log) by final outcome.
const RECORDS: DueIndex = DueIndex::new(Table::EMAIL_EXPIRY);

/// Contents by final outcome.
const CONTENT: DueIndex = DueIndex::new(Table::CONTENT_EXPIRY);

/// Starts the retention of `team_id`'s email `id`, which reached its final outcome at
/// `at`: in the batch that writes that outcome.
pub fn arm_final(batch: &mut Batch, team_id: Id, id: Id, at: Timestamp) {
    let key = EmailRecord::key(team_id, id);
    RECORDS.arm(batch, at, &key);
    CONTENT.arm(batch, at, &key);
}

/// The email of an index entry's key: team, then email id.
fn email_of(key: &[u8]) -> Option<Id> {
    key.get(16..).filter(|_| key.len() == 32).and_then(Id::from_slice)
}

/// `[retention] emails`: the record, its status and its timeline go; the content entry
/// with them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Records;

impl Expiry for Records {
    const KIND: &'static str = "emails";
    const INDEX: DueIndex = RECORDS;

    fn expire(&self, store: &Store, due: &Due, batch: &mut Batch) -> Result<(), Error> {
        let Some(id) = email_of(&due.key) else {
            return Ok(());
        };
        batch.delete::<EmailRecord>(&due.key);
        batch.delete::<EmailStatus>(&due.key);
        for (event, _) in store.scan_raw(Table::EVENTS, Scan::prefix(id.as_bytes()))? {
            batch.delete::<EmailEvent>(event);
        }
        // Content shorter-lived than the record is gone already; longer-lived goes now.
        CONTENT.disarm(batch, due.at, &due.key);
        Ok(())
    }
}

/// `[retention] content`: `html` and `text` leave the record, which says so.
#[derive(Debug, Clone, Copy, Default)]
pub struct Content;

impl Expiry for Content {
    const KIND: &'static str = "content";
    const INDEX: DueIndex = CONTENT;

    fn expire(&self, store: &Store, due: &Due, batch: &mut Batch) -> Result<(), Error> {
        let Some(mut record) = store.get::<EmailRecord>(&due.key)? else {
            return Ok(());
        };
        if record.content_expired {
            return Ok(());
        }
        record.html = None;
        record.text = None;
        record.content_expired = true;
        batch.put(&due.key, &record)
    }
}
