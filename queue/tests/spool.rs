//! The spool against a real RocksDB in a temp dir.

mod util;

use std::sync::Arc;
use std::time::Duration;

use herald_queue::{
    Admission, Batch, ManualClock, RecipientState, Refusal, Scan, Spool, Store, StoreOptions, Table, Timestamp, Updated,
};
use util::{EmailRecord, deliver_all, email_batch, message, open, open_with_clock};

fn accept(spool: &Spool, store: &Store, size: usize) -> herald_queue::Id {
    let msg = message(store, size);
    let id = msg.id;
    let admission = spool.enqueue(msg, email_batch(id)).wait().expect("enqueue");
    assert_eq!(admission, Admission::Accepted(id));
    id
}

#[test]
fn enqueue_writes_message_envelope_due_entry_and_extra_records_together() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, spool, _) = open(dir.path());
    let id = accept(&spool, &store, 2048);
    let (envelope, raw) = spool.load(id).expect("load").expect("present");
    assert_eq!(raw.len(), 2048);
    assert_eq!(envelope.recipients.len(), 2);
    assert!(envelope.recipients.iter().all(|r| r.state == RecipientState::Pending));
    assert_eq!(envelope.team, "team-1");
    let record: EmailRecord = store.get(id.as_bytes()).expect("get").expect("extra record written");
    assert_eq!(record.subject, format!("email {id}"));
    assert_eq!(spool.depth(), 1);
    let claims = spool.claim_due(10).expect("claim");
    assert_eq!(claims.iter().map(|c| c.id).collect::<Vec<_>>(), vec![id]);
}

#[tokio::test]
async fn enqueue_can_be_awaited_from_async_tasks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, spool, _) = open(dir.path());
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let (store, spool) = (store.clone(), spool.clone());
        tasks.push(tokio::spawn(async move {
            let msg = message(&store, 512);
            let id = msg.id;
            (id, spool.enqueue(msg, Batch::new()).await.expect("enqueue"))
        }));
    }
    for task in tasks {
        let (id, admission) = task.await.expect("task");
        assert_eq!(admission, Admission::Accepted(id));
    }
    assert_eq!(spool.depth(), 32);
}

#[test]
fn a_message_leaves_the_spool_only_when_every_recipient_is_final() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
    let (store, spool, _) = open_with_clock(dir.path(), clock.clone());
    let id = accept(&spool, &store, 300);
    assert_eq!(spool.claim_due(10).expect("claim").len(), 1);

    let retry_at = clock.now_plus(Duration::from_secs(60));
    let updated = spool
        .update(id, |envelope, _| {
            envelope.recipients[0].state = RecipientState::Delivered {
                at: Timestamp::from_millis(1_000_000),
            };
            envelope.recipients[1].state = RecipientState::Deferred { next_attempt: retry_at };
            envelope.recipients[1].attempts += 1;
            Ok(())
        })
        .expect("update");
    assert_eq!(updated, Updated::Kept { due: retry_at });
    assert!(
        spool.claim_due(10).expect("claim").is_empty(),
        "not due before the retry time"
    );
    assert_eq!(spool.next_due().expect("next due"), Some(retry_at));

    clock.advance(Duration::from_secs(60));
    assert_eq!(spool.claim_due(10).expect("claim").len(), 1);
    let updated = spool
        .update(id, |envelope, batch| {
            envelope.recipients[1].state = RecipientState::Bounced { at: retry_at };
            batch.put(
                b"event-1",
                &EmailRecord {
                    subject: "bounced".into(),
                },
            )?;
            Ok(())
        })
        .expect("update");
    assert_eq!(updated, Updated::Removed);
    assert!(spool.load(id).expect("load").is_none());
    assert!(store.get_raw(Table::MESSAGES, id.as_bytes()).expect("get").is_none());
    assert!(store.scan_raw(Table::DUE, Scan::prefix(b"")).expect("scan").is_empty());
    assert!(
        store.get::<EmailRecord>(b"event-1").expect("get").is_some(),
        "event written with the change"
    );
    assert_eq!(spool.depth(), 0);
    assert_eq!(spool.update(id, |_, _| Ok(())).expect("update"), Updated::Missing);
}

#[test]
fn a_retained_message_outlives_its_envelope_until_forgotten() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, spool, _) = open(dir.path());
    let mut msg = message(&store, 600);
    msg.retain = true;
    let id = msg.id;
    assert_eq!(
        spool.enqueue(msg, Batch::new()).wait().expect("enqueue"),
        Admission::Accepted(id)
    );

    // Still spooled: forgetting it does nothing, delivery needs the bytes.
    let mut batch = Batch::new();
    Spool::forget(&store, id, &mut batch).expect("forget");
    assert!(batch.is_empty(), "a spooled message is not forgotten");

    assert_eq!(deliver_all(&spool, id), Updated::Removed);
    assert!(spool.load(id).expect("load").is_none(), "it left the spool");
    assert_eq!(spool.depth(), 0);
    assert_eq!(spool.retained(id).expect("read").map(|raw| raw.len()), Some(600));

    let mut batch = Batch::new();
    Spool::forget(&store, id, &mut batch).expect("forget");
    store.commit(batch).wait().expect("commit");
    assert!(spool.retained(id).expect("read").is_none());

    // Reopened, the spool finds nothing to deliver.
    drop(spool);
    drop(store);
    let (_, _, recovery) = open(dir.path());
    assert_eq!(recovery.messages, 0);
}

trait NowPlus {
    fn now_plus(&self, by: Duration) -> Timestamp;
}

impl NowPlus for ManualClock {
    fn now_plus(&self, by: Duration) -> Timestamp {
        herald_queue::Clock::now(self).saturating_add(by)
    }
}

#[test]
fn scheduled_messages_wait_for_the_injected_clock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(5_000_000)));
    let (store, spool, _) = open_with_clock(dir.path(), clock.clone());
    let mut later = message(&store, 100);
    later.not_before = Some(clock.now_plus(Duration::from_secs(3600)));
    let later_id = later.id;
    spool.enqueue(later, Batch::new()).wait().expect("enqueue");
    let now_id = accept(&spool, &store, 100);
    let due: Vec<_> = spool.claim_due(10).expect("claim").into_iter().map(|c| c.id).collect();
    assert_eq!(due, vec![now_id]);
    clock.advance(Duration::from_secs(3600));
    let due: Vec<_> = spool.claim_due(10).expect("claim").into_iter().map(|c| c.id).collect();
    assert_eq!(due, vec![later_id]);
}

#[test]
fn claims_are_exclusive_until_released() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, spool, _) = open(dir.path());
    let ids: Vec<_> = (0..5).map(|_| accept(&spool, &store, 100)).collect();
    let first = spool.claim_due(3).expect("claim");
    assert_eq!(first.len(), 3);
    let second = spool.claim_due(10).expect("claim");
    assert_eq!(second.len(), 2);
    assert!(first.iter().all(|c| !second.contains(c)));
    let mut all: Vec<_> = first.iter().chain(&second).map(|c| c.id).collect();
    all.sort();
    assert_eq!(all, ids);
    assert!(spool.claim_due(10).expect("claim").is_empty());
    spool.release(first[0].id);
    assert_eq!(spool.claim_due(10).expect("claim"), vec![first[0]]);
}

#[test]
fn reschedule_and_cancel() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(9_000_000)));
    let (store, spool, _) = open_with_clock(dir.path(), clock.clone());
    let id = accept(&spool, &store, 100);
    let later = clock.now_plus(Duration::from_secs(600));
    assert_eq!(
        spool.reschedule(id, later).expect("reschedule"),
        Updated::Kept { due: later }
    );
    assert!(spool.claim_due(10).expect("claim").is_empty());
    let outcome = spool
        .cancel(id, |envelope, batch| {
            assert_eq!(envelope.recipients.len(), 2);
            batch.put(
                b"cancel-event",
                &EmailRecord {
                    subject: "canceled".into(),
                },
            )
        })
        .expect("cancel");
    assert_eq!(outcome, Updated::Removed);
    assert!(spool.load(id).expect("load").is_none());
    assert!(store.get::<EmailRecord>(b"cancel-event").expect("get").is_some());
}

#[test]
fn recovery_after_reopen_finds_every_pending_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ids: Vec<_> = {
        let (store, spool, recovery) = open(dir.path());
        assert_eq!(recovery.messages, 0);
        (0..20).map(|_| accept(&spool, &store, 1000)).collect()
    };
    let (_, spool, recovery) = open(dir.path());
    assert_eq!(recovery.messages, 20);
    assert_eq!(recovery.recipients, 40);
    assert_eq!(recovery.repaired_due, 0);
    assert_eq!(spool.depth(), 20);
    let mut claimed: Vec<_> = spool.claim_due(100).expect("claim").into_iter().map(|c| c.id).collect();
    claimed.sort();
    assert_eq!(claimed, ids);
}

#[test]
fn concurrent_enqueues_share_commits_and_all_survive_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let (store, spool, _) = open(dir.path());
        std::thread::scope(|scope| {
            for _ in 0..32 {
                scope.spawn(|| {
                    for _ in 0..25 {
                        accept(&spool, &store, 2048);
                    }
                });
            }
        });
        assert_eq!(spool.depth(), 800);
    }
    let (store, _, recovery) = open(dir.path());
    assert_eq!(recovery.messages, 800);
    assert_eq!(store.scan::<EmailRecord>(Scan::prefix(b"")).expect("scan").len(), 800);
}

#[test]
fn low_disk_refuses_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = StoreOptions::new(dir.path());
    options.min_free_space = u64::MAX;
    let store = Store::open(options).expect("open");
    let (spool, _) = Spool::open(store.clone()).expect("spool");
    let msg = message(&store, 100);
    let id = msg.id;
    match spool.enqueue(msg, email_batch(id)).wait().expect("enqueue") {
        Admission::Refused(Refusal::DiskLow { minimum, .. }) => assert_eq!(minimum, u64::MAX),
        other => panic!("expected a disk refusal, got {other:?}"),
    }
    assert!(spool.load(id).expect("load").is_none());
    assert!(store.get::<EmailRecord>(id.as_bytes()).expect("get").is_none());
    assert_eq!(spool.depth(), 0);
}

#[test]
fn enqueue_many_writes_all_messages_and_records_in_one_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, spool, _) = open(dir.path());
    let messages: Vec<_> = (0..10).map(|_| message(&store, 500)).collect();
    let ids: Vec<_> = messages.iter().map(|m| m.id).collect();
    let mut extra = Batch::new();
    for id in &ids {
        extra.extend(email_batch(*id));
    }
    assert_eq!(
        spool.enqueue_many(messages, extra).wait().expect("enqueue"),
        Admission::Accepted(ids[0])
    );
    assert_eq!(spool.depth(), 10);
    for id in &ids {
        assert!(spool.load(*id).expect("load").is_some());
        assert!(store.get::<EmailRecord>(id.as_bytes()).expect("get").is_some());
    }
    assert!(spool.enqueue_many(Vec::new(), Batch::new()).wait().is_err());
}

#[test]
fn invalid_messages_are_errors_not_refusals() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, spool, _) = open(dir.path());
    let mut msg = message(&store, 100);
    msg.recipients.clear();
    assert!(spool.enqueue(msg, Batch::new()).wait().is_err());
    let mut msg = message(&store, 100);
    msg.raw.clear();
    assert!(spool.enqueue(msg, Batch::new()).wait().is_err());
}

#[test]
fn update_many_writes_a_group_in_one_commit_and_a_failed_change_leaves_its_message_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, spool, _) = open(dir.path());
    // More messages than the spool has locks: some share one, and the group takes each
    // once.
    let ids: Vec<_> = (0..200).map(|_| accept(&spool, &store, 100)).collect();
    let gone = accept(&spool, &store, 100);
    deliver_all(&spool, gone);
    assert_eq!(spool.claim_due(1_000).expect("claim").len(), 200);
    let mut items = ids.clone();
    items.push(gone);
    let results = spool.update_many(
        &items,
        |id| *id,
        |id, envelope, batch| {
            if *id == ids[7] {
                batch.put(b"never", &EmailRecord { subject: "x".into() })?;
                return Err(herald_queue::Error::InvalidMessage("refused by the test"));
            }
            for recipient in &mut envelope.recipients {
                recipient.state = RecipientState::Delivered {
                    at: Timestamp::from_millis(2),
                };
            }
            Ok(())
        },
    );
    assert_eq!(results.len(), 201);
    for (id, result) in items.iter().zip(&results) {
        match result {
            Ok(updated) if *id == gone => assert_eq!(*updated, Updated::Missing),
            Ok(updated) => assert_eq!(*updated, Updated::Removed, "{id}"),
            Err(error) => assert_eq!(*id, ids[7], "{error}"),
        }
    }
    assert!(results[7].is_err());
    assert_eq!(spool.depth(), 1, "only the failed one stays");
    assert!(spool.load(ids[7]).expect("load").is_some());
    assert!(spool.load(ids[8]).expect("load").is_none());
    assert!(
        store.get::<EmailRecord>(b"never").expect("get").is_none(),
        "a failed change's records are not written"
    );
    let again: Vec<_> = spool.claim_due(1_000).expect("claim").iter().map(|c| c.id).collect();
    assert_eq!(again, vec![ids[7]], "every claim released; the failed one is still due");
}
