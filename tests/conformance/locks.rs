//! What every [`Locks`] does, run on the local ones: a record held is held against every
//! other holder of the same record, on any thread, until the [`Held`] answer drops, and
//! then the next one gets it; other records are not held by it (two may share a lock,
//! which only makes one wait, so of several other records some are free); `lock_many`
//! holds every record it names at once, and two callers of it over the same records in
//! any order both get them in turn.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use herald::services::{Held, LocalLocks, Locks, RecordName};
use herald::storage::locks::EMAILS;

/// How long a holder waits to see whether another gets its record meanwhile: long enough
/// for a broken lock to be caught most of the time, and never what a test passes by.
const MEANWHILE: Duration = Duration::from_millis(200);

/// How long a waiter may take to get a record once it is free: far more than it needs,
/// only so that a broken implementation fails rather than hangs.
const GRANTED_WITHIN: Duration = Duration::from_secs(10);

/// Records of other tables and keys, of which not all may share a lock with one record.
const OTHERS: usize = 16;

/// The record `key` of `table`.
fn record(table: &'static str, key: &'static [u8]) -> RecordName<'static> {
    RecordName { table, key }
}

/// What every [`Locks`] does.
fn locks_conformance(locks: &dyn Locks) {
    a_held_record_waits_until_released(locks, record("domains", b"one"));
    a_held_record_waits_until_released(locks, record(EMAILS, b"an email"));
    a_dropped_hold_is_free_again(locks);
    other_records_are_not_held(locks, "domains");
    other_records_are_not_held(locks, EMAILS);
    many_records_are_held_at_once(locks, "contacts");
    many_records_are_held_at_once(locks, EMAILS);
    two_callers_of_many_get_them_in_turn(locks);
}

/// Whether `name` is taken by another thread while `held` is held; then drops `held` and
/// asserts that the other thread gets it after, never before, the release.
fn taken_while_held(locks: &dyn Locks, held: Held<'_>, name: RecordName<'_>) -> bool {
    let released = AtomicBool::new(false);
    let (got, taken) = mpsc::channel();
    thread::scope(|scope| {
        scope.spawn(|| {
            let _held = locks.lock(name);
            got.send(released.load(Ordering::SeqCst)).expect("the holder listens");
        });
        let meanwhile = taken.recv_timeout(MEANWHILE);
        released.store(true, Ordering::SeqCst);
        drop(held);
        match meanwhile {
            // Taken before `released` was set: while it was held.
            Ok(_) => true,
            Err(RecvTimeoutError::Timeout) => {
                let after_release = taken
                    .recv_timeout(GRANTED_WITHIN)
                    .expect("the record is taken once released");
                assert!(after_release, "taken only after the release");
                false
            }
            Err(RecvTimeoutError::Disconnected) => panic!("the waiter failed"),
        }
    })
}

/// A second holder of `name`, on another thread, waits while the first holds it and
/// gets it once the first drops its hold.
fn a_held_record_waits_until_released(locks: &dyn Locks, name: RecordName<'_>) {
    let held = locks.lock(name);
    assert!(
        !taken_while_held(locks, held, name),
        "{}: another holder got the record while it was held",
        name.table
    );
}

/// A hold dropped leaves the record free: the same thread takes it again, and again, and
/// another thread takes it while none is held.
fn a_dropped_hold_is_free_again(locks: &dyn Locks) {
    let name = record("webhooks", b"again");
    for _ in 0..3 {
        let held = locks.lock(name);
        drop(held);
    }
    let many = locks.lock_many("webhooks", &mut [b"again".as_slice(), b"more"].into_iter());
    drop(many);
    let (got, taken) = mpsc::channel();
    thread::scope(|scope| {
        scope.spawn(|| {
            let _held = locks.lock(name);
            got.send(()).expect("the test listens");
        });
        taken
            .recv_timeout(GRANTED_WITHIN)
            .expect("a record none holds is taken");
    });
}

/// While one record of `table` is held, others (of `table` and of another table) are
/// not all held with it: some other thread gets one of them while it is held. Once it is
/// released, every one of them is taken.
fn other_records_are_not_held(locks: &dyn Locks, table: &'static str) {
    let held = locks.lock(record(table, b"held"));
    let keys: Vec<Vec<u8>> = (0..OTHERS).map(|n| format!("other {n}").into_bytes()).collect();
    let (got, taken) = mpsc::channel();
    thread::scope(|scope| {
        for (n, key) in keys.iter().enumerate() {
            let got = got.clone();
            let table = if n % 2 == 0 { table } else { "teams" };
            scope.spawn(move || {
                let _held = locks.lock(RecordName {
                    table,
                    key: key.as_slice(),
                });
                got.send(n).expect("the test listens");
            });
        }
        let first = taken.recv_timeout(GRANTED_WITHIN);
        drop(held);
        assert!(
            first.is_ok(),
            "{table}: {OTHERS} other records all waited for one held record"
        );
        for _ in 1..OTHERS {
            taken
                .recv_timeout(GRANTED_WITHIN)
                .expect("every other record is taken once the one is released");
        }
    });
}

/// `lock_many` holds every record it names: while it is held, a holder of any one of
/// them waits, and gets it once the hold drops.
fn many_records_are_held_at_once(locks: &dyn Locks, table: &'static str) {
    let keys: [&'static [u8]; 4] = [b"d", b"a", b"c", b"b"];
    for key in keys {
        let held = locks.lock_many(table, &mut keys.into_iter());
        assert!(
            !taken_while_held(locks, held, record(table, key)),
            "{table}: {key:?} was taken while held with the others"
        );
    }
}

/// Two threads taking the same records with `lock_many`, each naming them in its own
/// order, many times over: both get them every time (neither waits on the other
/// forever), and never at once.
fn two_callers_of_many_get_them_in_turn(locks: &dyn Locks) {
    const ROUNDS: usize = 200;
    let keys: [&'static [u8]; 5] = [b"one", b"two", b"three", b"four", b"five"];
    let inside = AtomicBool::new(false);
    let (done, finished) = mpsc::channel();
    thread::scope(|scope| {
        for reversed in [false, true] {
            let (done, inside) = (done.clone(), &inside);
            scope.spawn(move || {
                for _ in 0..ROUNDS {
                    let mut order = keys.to_vec();
                    if reversed {
                        order.reverse();
                    }
                    let _held = locks.lock_many("contacts", &mut order.into_iter());
                    assert!(!inside.swap(true, Ordering::SeqCst), "both hold the records at once");
                    thread::yield_now();
                    inside.store(false, Ordering::SeqCst);
                }
                done.send(()).expect("the test listens");
            });
        }
        for _ in 0..2 {
            finished
                .recv_timeout(GRANTED_WITHIN)
                .expect("both callers get their records, round after round");
        }
    });
}

#[test]
fn local_locks_keep_the_contract() {
    locks_conformance(&LocalLocks::default());
}
