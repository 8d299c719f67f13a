use std::sync::Arc;
use std::time::Duration;

use herald_queue::{ManualClock, StoreOptions};

use super::*;
use crate::emails::idempotency::{Answer, Idempotency, Outcome};

const HOUR: Duration = Duration::from_secs(3600);

/// The team every key here is answered for.
fn team() -> Id {
    Id::from_bytes([7; 16])
}

/// The expiry entry of the record under `record_key` written at `at`.
fn expiry_key(at: Timestamp, record_key: &[u8]) -> Vec<u8> {
    Due::new(at, record_key).encode()
}

fn store(dir: &std::path::Path, clock: &Arc<ManualClock>) -> Store {
    Store::open(StoreOptions {
        min_free_space: 0,
        clock: Arc::clone(clock) as herald_queue::SharedClock,
        ..StoreOptions::new(dir)
    })
    .expect("store")
}

/// Idempotency over `store`, and its store to expire through.
fn keys(store: &Store) -> Idempotency {
    Idempotency::with_store(Box::new(LocalIdempotency::new(store.clone())))
}

/// Answers a request with `key` as the API does: the record goes in with the email.
fn answer(store: &Store, keys: &Idempotency, key: &str) {
    let Outcome::Fresh(in_flight) = keys
        .begin(store.now(), team(), key, format!("hash of {key}"))
        .expect("begin")
    else {
        panic!("{key} is not fresh");
    };
    let mut change = Change::new();
    in_flight
        .record(
            &mut change,
            Answer::Http {
                status: 200,
                response: r#"{"id":"x"}"#.into(),
            },
            store.now(),
        )
        .expect("record");
    store
        .commit(change.into_local().expect("shared writes"))
        .wait()
        .expect("commit");
}

fn held(store: &Store, key: &str) -> Option<Timestamp> {
    store
        .get::<IdempotencyRecord>(record_key(&IdempotencyKey::of(team(), key)))
        .expect("get")
        .map(|r| r.created_at)
}

/// A record as builds without the expiry index wrote it (alone, no entry).
fn legacy_record(created_at: Timestamp) -> IdempotencyRecord {
    IdempotencyRecord {
        body_sha256: String::new(),
        answer: Answer::Http {
            status: 200,
            response: "{}".into(),
        },
        created_at,
    }
}

fn entries(store: &Store) -> usize {
    store
        .scan_raw(Table::IDEMPOTENCY_EXPIRY, Scan::prefix(b""))
        .expect("scan")
        .len()
}

#[test]
fn expiry_removes_what_is_past_retention_and_keeps_a_key_answered_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
    let store = store(dir.path(), &clock);
    let keys = keys(&store);
    answer(&store, &keys, "old");
    answer(&store, &keys, "again");
    clock.advance(12 * HOUR);
    answer(&store, &keys, "young");
    clock.advance(13 * HOUR);
    // "again" expired but was not swept yet: it is answered afresh, a new record
    // under the same key, which its first entry must not remove.
    answer(&store, &keys, "again");
    let again = held(&store, "again").expect("again");
    assert_eq!(keys.keys().sweep(store.now()).expect("sweep"), 1);
    assert_eq!(held(&store, "old"), None);
    assert!(held(&store, "young").is_some());
    assert_eq!(held(&store, "again"), Some(again));
    assert_eq!(entries(&store), 2, "the due entries are gone, the others stay");
    clock.advance(25 * HOUR);
    assert_eq!(keys.keys().sweep(store.now()).expect("sweep"), 2);
    assert_eq!((held(&store, "young"), held(&store, "again")), (None, None));
    assert_eq!(entries(&store), 0);
}

#[test]
fn records_from_before_the_index_are_indexed_once_and_then_expire() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
    let store = store(dir.path(), &clock);
    let keys = keys(&store);
    // Written as builds without the index wrote them: the record alone.
    let unindexed = |key: &str| {
        let mut batch = Batch::new();
        let record = legacy_record(store.now());
        batch
            .put(record_key(&IdempotencyKey::of(team(), key)), &record)
            .expect("encode");
        store.commit(batch).wait().expect("commit");
    };
    unindexed("old");
    clock.advance(20 * HOUR);
    unindexed("recent");
    clock.advance(5 * HOUR);
    let local = keys.keys();
    assert_eq!(local.sweep(store.now()).expect("sweep"), 0, "the index knows neither");
    assert_eq!(local.backfill(store.now()).expect("index"), 1);
    assert_eq!(held(&store, "old"), None);
    assert_eq!(entries(&store), 1);
    unindexed("later");
    assert_eq!(local.backfill(store.now()).expect("index"), 0, "done once");
    assert_eq!(entries(&store), 1);
    clock.advance(20 * HOUR);
    assert_eq!(local.sweep(store.now()).expect("sweep"), 1);
    assert_eq!(held(&store, "recent"), None);
}

#[test]
fn expiry_and_indexing_go_page_by_page_through_more_than_a_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
    let store = store(dir.path(), &clock);
    let keys = keys(&store);
    let count = 2 * SWEEP_BATCH + 100;
    let mut indexed = Change::new();
    for n in 0..count {
        let Outcome::Fresh(in_flight) = keys
            .begin(store.now(), team(), &format!("indexed {n}"), String::new())
            .expect("begin")
        else {
            panic!("fresh");
        };
        let answer = Answer::Http {
            status: 200,
            response: "{}".into(),
        };
        in_flight.record(&mut indexed, answer, store.now()).expect("record");
        let record = legacy_record(store.now());
        let key = record_key(&IdempotencyKey::of(Id::from_bytes([8; 16]), &format!("unindexed {n}")));
        indexed.batch().put(key, &record).expect("encode");
    }
    store
        .commit(indexed.into_local().expect("shared writes"))
        .wait()
        .expect("commit");
    clock.advance(25 * HOUR);
    assert_eq!(keys.keys().sweep(store.now()).expect("sweep"), count);
    assert_eq!(entries(&store), 0);
    assert_eq!(keys.keys().backfill(store.now()).expect("index"), count);
    assert!(store.get_raw(Table::META, INDEXED).expect("get").is_some());
    assert!(
        store
            .scan_raw(Table::IDEMPOTENCY, Scan::prefix(b""))
            .expect("scan")
            .is_empty()
    );
}

#[test]
fn a_key_being_answered_is_left_to_the_next_sweep_and_garbage_is_removed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
    let store = store(dir.path(), &clock);
    let keys = keys(&store);
    answer(&store, &keys, "busy");
    let garbage = record_key(&IdempotencyKey::of(team(), "garbage"));
    let mut batch = Batch::new();
    batch.put_raw(Table::IDEMPOTENCY, garbage.clone(), b"not a record".to_vec());
    batch.put_raw(Table::IDEMPOTENCY_EXPIRY, expiry_key(store.now(), &garbage), Vec::new());
    store.commit(batch).wait().expect("commit");
    clock.advance(25 * HOUR);
    // A request reusing the expired key holds it while the sweep runs.
    let Outcome::Fresh(in_flight) = keys.begin(store.now(), team(), "busy", "other".into()).expect("begin") else {
        panic!("an expired key is fresh");
    };
    assert_eq!(keys.keys().sweep(store.now()).expect("sweep"), 1, "only the garbage");
    assert_eq!(store.get_raw(Table::IDEMPOTENCY, &garbage).expect("get"), None);
    assert!(held(&store, "busy").is_some());
    assert_eq!(entries(&store), 1);
    drop(in_flight);
    assert_eq!(keys.keys().sweep(store.now()).expect("sweep"), 1);
    assert_eq!((held(&store, "busy"), entries(&store)), (None, 0));
    // The sweep's own claims are released: the key can be answered again.
    answer(&store, &keys, "busy");
}

#[test]
fn erasing_a_team_takes_its_records_and_no_other_team_s() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
    let store = store(dir.path(), &clock);
    let keys = keys(&store);
    answer(&store, &keys, "mine");
    let other = Id::from_bytes([9; 16]);
    let mut change = Change::new();
    let theirs = IdempotencyKey::of(other, "mine");
    keys.keys()
        .stage(&mut change, &theirs, &legacy_record(store.now()))
        .expect("stage");
    store
        .commit(change.into_local().expect("shared writes"))
        .wait()
        .expect("commit");
    while keys.keys().erase_team(team()).expect("erase") {}
    assert_eq!(held(&store, "mine"), None);
    assert!(keys.keys().get(&theirs).expect("read").is_some());
    // Their entries fall due and delete nothing that is not there.
    clock.advance(25 * HOUR);
    assert_eq!(keys.keys().sweep(store.now()).expect("sweep"), 1, "the other team's");
    assert_eq!(entries(&store), 0);
}
