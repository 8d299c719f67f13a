//! Helpers shared by the spool's integration tests.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use herald_queue::{
    Batch, Clock, Id, NewMessage, RecipientState, Record, SharedClock, Spool, Store, StoreOptions, SystemClock, Table,
    Timestamp, Updated,
};

/// An extra record written with each message, as the email record will be.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EmailRecord {
    pub subject: String,
}

impl Record for EmailRecord {
    const TABLE: Table = Table::EMAILS;
}

pub fn open(path: &Path) -> (Store, Spool, herald_queue::Recovery) {
    open_with_clock(path, Arc::new(SystemClock))
}

pub fn open_with_clock(path: &Path, clock: SharedClock) -> (Store, Spool, herald_queue::Recovery) {
    let mut options = StoreOptions::new(path);
    options.clock = clock;
    options.min_free_space = 0;
    let store = Store::open(options).expect("store opens");
    let (spool, recovery) = Spool::open(store.clone()).expect("spool opens");
    (store, spool, recovery)
}

pub fn message(store: &Store, size: usize) -> NewMessage {
    let mut raw = b"From: a@example.com\r\nTo: b@example.net\r\nSubject: hi\r\n\r\n".to_vec();
    raw.resize(size.max(raw.len()), b'x');
    NewMessage {
        id: store.next_id(),
        team: "team-1".into(),
        sender: "a@example.com".into(),
        recipients: vec!["b@example.net".into(), "c@example.org".into()],
        metadata: BTreeMap::from([("source".into(), "test".into())]),
        not_before: None,
        raw,
        retain: false,
    }
}

pub fn email_batch(id: Id) -> Batch {
    let mut batch = Batch::new();
    batch
        .put(
            id.as_bytes(),
            &EmailRecord {
                subject: format!("email {id}"),
            },
        )
        .expect("encodes");
    batch
}

pub fn now(clock: &dyn Clock) -> herald_queue::Timestamp {
    clock.now()
}

/// Marks every recipient of message `id` delivered (at 1 ms), as a delivery worker would.
pub fn deliver_all(spool: &Spool, id: Id) -> Updated {
    spool
        .update(id, |envelope, _| {
            for recipient in &mut envelope.recipients {
                recipient.state = RecipientState::Delivered {
                    at: Timestamp::from_millis(1),
                };
            }
            Ok(())
        })
        .expect("update")
}
