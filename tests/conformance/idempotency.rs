//! What every [`IdempotencyStore`] does, run on both backends (the local one: keys in
//! flight in memory, records in RocksDB; PostgreSQL's: keys in flight in memory, records
//! in a table every node shares): a key is held by one request at a time until released,
//! and is its team's own; a record staged into a change is read back once the change is committed
//! and not before, and staged again replaces it; a sweep deletes each record once it is
//! past [`RETENTION`] (one written again later stays for its new time, one whose key is
//! in flight is left until released) and holds no key after it; the backfill runs once
//! and keeps what is within retention; and erasing a team leaves others' records, its own
//! expiring nothing more when they fall due. On PostgreSQL, besides, a key is answered
//! once across nodes: of two nodes writing its record, the first to commit wins.

use std::sync::Barrier;
use std::time::Duration;

use herald::emails::idempotency::{
    Answer, IdempotencyKey, IdempotencyRecord, IdempotencyStore, LocalIdempotency, PostgresIdempotency, RETENTION,
};
use herald::storage::{Change, Error, Node};
use herald_queue::{Id, Store, Timestamp};

use crate::conformance::{self, rocksdb};

/// An hour: how far from the edge of retention the records here are written.
const HOUR: Duration = Duration::from_secs(3600);

/// The record of a request whose body hashed to `body`, answered `answer` at `at`.
fn record(body: &str, answer: Answer, at: Timestamp) -> IdempotencyRecord {
    IdempotencyRecord {
        body_sha256: body.repeat(64 / body.len().max(1)),
        answer,
        created_at: at,
    }
}

/// An SMTP submission's answer: a new email.
fn smtp(ids: &Store) -> Answer {
    Answer::Smtp {
        email_id: ids.next_id(),
    }
}

/// `by` before `now`.
fn ago(now: Timestamp, by: Duration) -> Timestamp {
    Timestamp::from_millis(now.as_millis().saturating_sub(by.as_millis() as u64))
}

/// Stages `records` under their keys and commits them through `node`, as the emails they
/// answer are.
fn written(keys: &dyn IdempotencyStore, node: &Node, records: &[(IdempotencyKey, &IdempotencyRecord)]) {
    let mut change = Change::new();
    for (key, record) in records {
        keys.stage(&mut change, key, record).expect("stage");
    }
    node.commit(change).expect("commit");
}

/// What every [`IdempotencyStore`] does: `node` commits what it stages, `ids` is where
/// ids and times come from.
fn idempotency_store_conformance(keys: &dyn IdempotencyStore, node: &Node, ids: &Store) {
    let (team, other) = (ids.next_id(), ids.next_id());
    let of = |team_id: Id, name: &str| IdempotencyKey::of(team_id, name);
    let (key, theirs, second) = (of(team, "order-1"), of(other, "order-1"), of(team, "order-2"));

    // One request at a time holds a key, until it releases it.
    assert!(keys.hold(&key));
    assert!(!keys.hold(&key), "held already");
    assert!(keys.hold(&theirs), "another team's key of that name is another key");
    assert!(keys.hold(&second), "another key");
    keys.release(&key);
    assert!(keys.hold(&key), "released, it is held again");
    assert!(!keys.hold(&theirs), "releasing one key releases no other");
    for one in [&key, &theirs, &second] {
        keys.release(one);
    }
    assert!(keys.hold(&second), "released");
    keys.release(&second);

    // A record is staged into the change that writes the email, and read back once that
    // is committed; staged again, it is replaced.
    let now = ids.now();
    assert_eq!(keys.get(&key).expect("get"), None);
    let answered = record("a", smtp(ids), now);
    let their_answer = Answer::Http {
        status: 200,
        response: format!(r#"{{"id":"{}"}}"#, ids.next_id()),
    };
    let their_record = record("b", their_answer, now);
    let mut change = Change::new();
    keys.stage(&mut change, &key, &answered).expect("stage");
    keys.stage(&mut change, &theirs, &their_record).expect("stage");
    assert_eq!(keys.get(&key).expect("get"), None, "staged is not written");
    assert_eq!(keys.get(&theirs).expect("get"), None);
    node.commit(change).expect("commit");
    assert_eq!(keys.get(&key).expect("get").as_ref(), Some(&answered));
    assert_eq!(keys.get(&theirs).expect("get").as_ref(), Some(&their_record));
    assert_eq!(keys.get(&second).expect("get"), None, "a key's own record");
    let replaced = record(
        "c",
        Answer::Http {
            status: 422,
            response: r#"{"name":"validation_error"}"#.into(),
        },
        now,
    );
    written(keys, node, &[(key, &replaced)]);
    assert_eq!(keys.get(&key).expect("get").as_ref(), Some(&replaced));
    assert_eq!(keys.expire(&[]).expect("expire"), 0, "nothing due, nothing deleted");
    assert_eq!(keys.get(&key).expect("get").as_ref(), Some(&replaced));

    // A sweep deletes what is past retention, once: not a record written again since,
    // and not one whose key is in flight until it is released.
    let (long_ago, lately) = (ago(now, RETENTION + HOUR), ago(now, HOUR));
    let (old, held, fresh, rewritten) = (of(team, "old"), of(team, "held"), of(team, "fresh"), of(team, "again"));
    let old_record = record("d", smtp(ids), long_ago);
    let held_record = record("e", smtp(ids), long_ago);
    let fresh_record = record("f", smtp(ids), lately);
    let first_time = record("g", smtp(ids), long_ago);
    let second_time = record("h", smtp(ids), lately);
    written(
        keys,
        node,
        &[
            (old, &old_record),
            (held, &held_record),
            (fresh, &fresh_record),
            (rewritten, &first_time),
        ],
    );
    written(keys, node, &[(rewritten, &second_time)]);
    assert!(keys.hold(&held));
    assert_eq!(
        keys.sweep(now).expect("sweep"),
        1,
        "the one past retention, not in flight"
    );
    assert_eq!(keys.get(&old).expect("get"), None);
    assert_eq!(keys.get(&held).expect("get").as_ref(), Some(&held_record), "in flight");
    assert_eq!(keys.get(&fresh).expect("get").as_ref(), Some(&fresh_record));
    assert_eq!(
        keys.get(&rewritten).expect("get").as_ref(),
        Some(&second_time),
        "written again, it stays for its new time"
    );
    assert_eq!(keys.get(&key).expect("get").as_ref(), Some(&replaced));
    assert!(!keys.hold(&held), "the sweep leaves a key held by another as it was");
    assert!(keys.hold(&old), "and holds none of its own after it");
    keys.release(&old);
    keys.release(&held);
    assert_eq!(keys.sweep(now).expect("sweep"), 1, "released, it goes");
    assert_eq!(keys.get(&held).expect("get"), None);
    assert_eq!(keys.sweep(now).expect("sweep"), 0, "nothing more is due");
    let later = now.saturating_add(RETENTION + HOUR);
    assert_eq!(
        keys.sweep(later).expect("sweep"),
        4,
        "a retention on, every record left goes, each once"
    );
    for one in [&key, &theirs, &fresh, &rewritten] {
        assert_eq!(keys.get(one).expect("get"), None);
    }

    // The backfill keeps what is within retention and runs once; whatever it leaves past
    // retention the sweep takes, so that each expired record goes exactly once.
    let (expired, kept) = (of(team, "expired"), of(team, "kept"));
    let expired_record = record("i", smtp(ids), long_ago);
    let kept_record = record("j", smtp(ids), lately);
    written(keys, node, &[(expired, &expired_record), (kept, &kept_record)]);
    let backfilled = keys.backfill(now).expect("backfill");
    assert!(backfilled <= 1, "the expired record at most: {backfilled}");
    assert_eq!(keys.get(&kept).expect("get").as_ref(), Some(&kept_record));
    assert_eq!(keys.backfill(now).expect("backfill"), 0, "done once");
    assert_eq!(backfilled + keys.sweep(now).expect("sweep"), 1, "the expired one, once");
    assert_eq!(keys.get(&expired).expect("get"), None);
    assert_eq!(keys.get(&kept).expect("get").as_ref(), Some(&kept_record));

    // Erasing the team takes its records and none of another's; its records' expiry
    // deletes nothing more when it falls due.
    let (mine, stays) = (of(team, "erased"), of(other, "erased"));
    let mine_record = record("k", smtp(ids), now);
    let stays_record = record("l", smtp(ids), now);
    written(keys, node, &[(mine, &mine_record), (stays, &stays_record)]);
    while keys.erase_team(team).expect("erase") {}
    assert_eq!(keys.get(&mine).expect("get"), None);
    assert_eq!(keys.get(&kept).expect("get"), None);
    assert_eq!(keys.get(&stays).expect("get").as_ref(), Some(&stays_record));
    assert_eq!(
        keys.sweep(later).expect("sweep"),
        1,
        "the other team's alone: the erased team's were deleted already"
    );
    assert_eq!(keys.get(&stays).expect("get"), None);
}

#[test]
fn rocksdb_idempotency_keys_keep_the_contract() {
    let (_dir, store) = rocksdb();
    idempotency_store_conformance(&LocalIdempotency::new(store.clone()), &Node::new(store.clone()), &store);
}

#[test]
fn postgres_idempotency_keys_keep_the_contract() {
    let (_dir, store) = rocksdb();
    let keys = PostgresIdempotency::new(conformance::postgres(), store.clock().clone());
    idempotency_store_conformance(&keys, &Node::new(store.clone()), &store);
}

/// Two nodes (two stores on one database, each with its own keys in flight) answering
/// one key: the first to commit its record wins, and the other's change fails as
/// unavailable, to be tried again and answered from the winner's record; a record past
/// retention is any node's to replace; and of two nodes committing at the same moment,
/// exactly one does.
#[test]
fn postgres_idempotency_keys_are_answered_once_across_nodes() {
    let (_dir, store) = rocksdb();
    let db = conformance::postgres();
    let node = Node::new(store.clone());
    let first = PostgresIdempotency::new(db.clone(), store.clock().clone());
    let second = PostgresIdempotency::new(db, store.clock().clone());
    let team = store.next_id();
    let of = |name: &str| IdempotencyKey::of(team, name);
    let now = store.now();

    let key = of("order-1");
    assert!(
        first.hold(&key) && second.hold(&key),
        "each node holds its own keys in flight"
    );
    let won = record("a", smtp(&store), now);
    written(&first, &node, &[(key, &won)]);
    let mut change = Change::new();
    second
        .stage(&mut change, &key, &record("b", smtp(&store), now))
        .expect("stage");
    let lost = node.commit(change);
    assert!(
        matches!(lost, Err(Error::Unavailable(_))),
        "to be tried again: {lost:?}"
    );
    assert_eq!(
        second.get(&key).expect("get").as_ref(),
        Some(&won),
        "the winner's answer"
    );
    let again = record("c", smtp(&store), now);
    written(&first, &node, &[(key, &again)]);
    assert_eq!(
        first.get(&key).expect("get").as_ref(),
        Some(&again),
        "the winner's own record is its to write again"
    );

    let old = of("old");
    written(
        &first,
        &node,
        &[(old, &record("d", smtp(&store), ago(now, RETENTION + HOUR)))],
    );
    let renewed = record("e", smtp(&store), now);
    written(&second, &node, &[(old, &renewed)]);
    assert_eq!(
        first.get(&old).expect("get").as_ref(),
        Some(&renewed),
        "past retention, replaced"
    );

    let raced = of("raced");
    let start = Barrier::new(2);
    let outcomes: Vec<(Result<(), Error>, IdempotencyRecord)> = std::thread::scope(|scope| {
        let racers: Vec<_> = [(&first, "f"), (&second, "g")]
            .into_iter()
            .map(|(keys, body)| {
                let (node, start, store) = (&node, &start, &store);
                scope.spawn(move || {
                    let mine = record(body, smtp(store), now);
                    let mut change = Change::new();
                    keys.stage(&mut change, &raced, &mine).expect("stage");
                    start.wait();
                    (node.commit(change), mine)
                })
            })
            .collect();
        racers.into_iter().map(|racer| racer.join().expect("a racer")).collect()
    });
    let winners: Vec<&IdempotencyRecord> = outcomes
        .iter()
        .filter(|(outcome, _)| outcome.is_ok())
        .map(|(_, mine)| mine)
        .collect();
    assert_eq!(winners.len(), 1, "one winner: {outcomes:?}");
    assert!(
        outcomes
            .iter()
            .any(|(outcome, _)| matches!(outcome, Err(Error::Unavailable(_)))),
        "and one to try again: {outcomes:?}"
    );
    assert_eq!(first.get(&raced).expect("get").as_ref(), Some(winners[0]));
}
