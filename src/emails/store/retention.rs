//! When an email's record and its content leave the store (`[retention] emails` and
//! `content`), counted from its final outcome: mail still queued, deferred or scheduled
//! is never expired, whatever its age. The retention engine ([`crate::retention`]) runs
//! the two expiries ([`super::EmailStore::expiries`]); emails final before the indexes
//! existed get their entries once, in the background at start ([`index_unindexed`]).

use std::sync::Arc;
use std::time::Duration;

use herald_queue::{Batch, Due, DueIndex, Id, Spool, Store, Table, Timestamp};

use crate::emails::record::EmailRecord;
use crate::emails::state::EmailState;
use crate::storage::expiry::{self, Expiry, Sweep};
use crate::storage::{Change, Error};

/// Records (with their status, events and attempt log) by final outcome.
pub(super) const RECORDS: DueIndex = DueIndex::new(Table::EMAIL_EXPIRY);

/// Contents by final outcome.
pub(super) const CONTENT: DueIndex = DueIndex::new(Table::CONTENT_EXPIRY);

/// The store-wide fact that every email final before this index existed has its entries.
const INDEXED: &[u8] = b"retention.emails.indexed";

/// Starts the retention of `team_id`'s email `id`, which reached its final outcome at
/// `at`: in the batch that writes that outcome.
pub fn arm_final(change: &mut Change, team_id: Id, id: Id, at: Timestamp) {
    let key = EmailRecord::key(team_id, id);
    RECORDS.arm(change.batch(), at, &key);
    CONTENT.arm(change.batch(), at, &key);
}

/// The email of an index entry's key: team, then email id.
pub(super) fn email_of(key: &[u8]) -> Option<Id> {
    key.get(16..).filter(|_| key.len() == 32).and_then(Id::from_slice)
}

/// Adds to `batch` the deletion of the email whose record is under `key` (team, then
/// email id): its record, its status and its timeline, and with `kept` the message kept
/// for its bodies (see [`super::content`]), unless it is still queued. Index entries left
/// behind find nothing when they fall due.
fn erase(store: &Store, key: &[u8], kept: bool, batch: &mut Batch) -> Result<(), Error> {
    let Some(id) = email_of(key) else {
        return Ok(());
    };
    if kept {
        Spool::forget(store, id, batch)?;
    }
    super::erase(store, key, batch)
}

/// `[retention] emails`: the record, its status and its timeline go; the content entry
/// with them.
#[derive(Debug, Clone, Copy, Default)]
struct Records {
    /// Whether content may outlive the record (`[retention] content` off or longer), so
    /// that a message kept for its bodies is still there: then it goes with the record.
    /// Otherwise [`Content`] took it, and no lookup is spent on every expired email.
    content_outlives: bool,
}

impl Expiry for Records {
    const KIND: &'static str = "emails";
    const INDEX: DueIndex = RECORDS;

    fn expire(&self, store: &Store, due: &Due, batch: &mut Batch) -> Result<(), Error> {
        erase(store, &due.key, self.content_outlives, batch)?;
        // Content shorter-lived than the record is gone already; longer-lived goes now.
        CONTENT.disarm(batch, due.at, &due.key);
        Ok(())
    }
}

/// `[retention] content`: `html` and `text` leave the record, which says so, and the
/// message kept for them leaves the store.
#[derive(Debug, Clone, Copy, Default)]
struct Content {
    /// `[retention] emails`: a record whose own time is up as well is left to
    /// [`Records`], which deletes it whole, instead of being rewritten first.
    emails: Option<Duration>,
}

impl Expiry for Content {
    const KIND: &'static str = "content";
    const INDEX: DueIndex = CONTENT;

    fn expire(&self, store: &Store, due: &Due, batch: &mut Batch) -> Result<(), Error> {
        if self
            .emails
            .is_some_and(|emails| due.at.saturating_add(emails) <= store.now())
        {
            // Late (a backlog): the record goes whole, and a message kept for its bodies
            // goes now, since [`Records`] counts on this having taken it.
            if let Some(id) = email_of(&due.key) {
                Spool::forget(store, id, batch)?;
            }
            return Ok(());
        }
        let mut record = match store.get::<EmailRecord>(&due.key) {
            Ok(Some(record)) => record,
            Ok(None) => return Ok(()),
            Err(error) => {
                // The content's time is up whatever the record says: a message kept for
                // its bodies goes (nothing happens to one still queued), and the record
                // that cannot be read is left as it is, for `[retention] emails`.
                tracing::error!(key = ?due.key, %error, "cannot read an email record to expire its content");
                if let Some(id) = email_of(&due.key) {
                    Spool::forget(store, id, batch)?;
                }
                return Ok(());
            }
        };
        if record.content_expired {
            return Ok(());
        }
        if record.content_in_message {
            Spool::forget(store, record.id, batch)?;
        }
        record.html = None;
        record.text = None;
        record.content_expired = true;
        record.content_in_message = false;
        record.text_derived = false;
        record.line_feeds = false;
        Ok(batch.put(&due.key, &record)?)
    }
}

/// The sweeps of `[retention] emails` (`emails`) and `content` over `store`: records
/// first, then contents.
pub(super) fn sweeps(store: &Store, emails: Option<Duration>, content: Option<Duration>) -> [Arc<dyn Sweep>; 2] {
    let records = Records {
        content_outlives: content.is_none_or(|content| emails.is_some_and(|emails| content > emails)),
    };
    [expiry::sweep(store, records), expiry::sweep(store, Content { emails })]
}

/// Arms the entries of every email that left the spool before this build armed them at
/// its final outcome, at its last attempt (or its acceptance), then marks the work done
/// so that later starts skip it; returns how many it armed. Reads the status table once,
/// a page at a time.
pub(crate) fn index_unindexed(store: &Store, spool: &Spool) -> Result<usize, Error> {
    super::once_over_statuses(store, INDEXED, |batch, status| {
        if status.last_event == EmailState::Scheduled || spool.envelope(status.id)?.is_some() {
            return Ok(false); // in flight: armed at its final outcome
        }
        let at = status
            .attempts
            .last()
            .map(|attempt| attempt.at)
            .or_else(|| status.id.timestamp())
            .unwrap_or_else(|| store.now());
        Change::within(batch, |change| arm_final(change, status.team_id, status.id, at))?;
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use herald_queue::NewMessage;

    use super::*;
    use crate::emails::record::EmailStatus;

    fn status(store: &Store, team: Id, last_event: EmailState) -> EmailStatus {
        EmailStatus {
            id: store.next_id(),
            team_id: team,
            from: "app@example.test".into(),
            to: vec!["user@example.net".into()],
            subject: "s".into(),
            message_id: "<m@example.test>".into(),
            tags: Vec::new(),
            last_event,
            attempts: Vec::new(),
            template_id: None,
            api_key_id: None,
            opened: false,
            clicked: false,
            broadcast_id: None,
        }
    }

    #[test]
    fn emails_final_before_retention_are_indexed_once_and_mail_in_flight_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _clock) = crate::testing::store(dir.path(), 1_700_000_000_000);
        let (spool, _) = Spool::open(store.clone()).expect("spool");
        let team = store.next_id();
        let delivered = status(&store, team, EmailState::Delivered);
        let scheduled = status(&store, team, EmailState::Scheduled);
        let deferred = status(&store, team, EmailState::DeliveryDelayed);
        let mut batch = Batch::new();
        for record in [&delivered, &scheduled, &deferred] {
            batch.put(EmailRecord::key(team, record.id), record).expect("encode");
        }
        let message = NewMessage {
            id: deferred.id,
            team: team.to_string(),
            sender: "app@example.test".into(),
            recipients: vec!["user@example.net".into()],
            metadata: BTreeMap::new(),
            not_before: None,
            raw: b"Subject: s\r\n\r\nhi\r\n".to_vec(),
            retain: false,
        };
        spool.enqueue(message, batch).wait().expect("enqueued");

        assert_eq!(
            index_unindexed(&store, &spool).expect("index"),
            1,
            "only the delivered one"
        );
        let armed = RECORDS
            .due(&store, Timestamp::from_millis(u64::MAX), None, 10)
            .expect("due");
        assert_eq!(armed.len(), 1);
        assert_eq!(armed[0].key, EmailRecord::key(team, delivered.id));
        assert_eq!(
            armed[0].at,
            delivered.id.timestamp().expect("time"),
            "at its acceptance"
        );
        assert_eq!(
            CONTENT
                .due(&store, Timestamp::from_millis(u64::MAX), None, 10)
                .expect("due")
                .len(),
            1
        );
        assert_eq!(index_unindexed(&store, &spool).expect("again"), 0, "done once");
    }

    #[test]
    fn content_expiry_removes_the_kept_message_of_a_record_it_cannot_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _clock) = crate::testing::store(dir.path(), 1_700_000_000_000);
        let (spool, _) = Spool::open(store.clone()).expect("spool");
        let (team, id) = (store.next_id(), store.next_id());
        let key = EmailRecord::key(team, id);
        let mut batch = Batch::new();
        // A delivered message kept for its bodies, and a record that does not decode.
        batch.put_raw(
            Table::MESSAGES,
            id.as_bytes().to_vec(),
            b"Subject: s\r\n\r\nhi\r\n".to_vec(),
        );
        batch.put_raw(Table::EMAILS, key.clone(), b"{not a record".to_vec());
        store.commit(batch).wait().expect("written");
        assert!(spool.retained(id).expect("read").is_some());

        let due = Due {
            at: Timestamp::from_millis(1),
            key: key.clone(),
        };
        expiry::expire_now(&store, &Content { emails: None }, &[&due]).expect("expired");
        assert_eq!(spool.retained(id).expect("read"), None, "the kept message is gone");
        assert_eq!(
            store.get_raw(Table::EMAILS, &key).expect("read").as_deref(),
            Some(&b"{not a record"[..]),
            "the record is left as it was"
        );
    }
}
