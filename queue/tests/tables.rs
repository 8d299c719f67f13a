//! Typed record tables: put, get, scans and atomic batches.

mod util;

use herald_queue::{Batch, Record, Scan, Store, StoreOptions, Table};
use proptest::prelude::*;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Team {
    name: String,
}

impl Record for Team {
    const TABLE: Table = Table::TEAMS;
}

fn store(dir: &std::path::Path) -> Store {
    let mut options = StoreOptions::new(dir);
    options.min_free_space = 0;
    Store::open(options).expect("open")
}

fn put_all(store: &Store, keys: &[Vec<u8>]) {
    let mut batch = Batch::new();
    for key in keys {
        batch.put(key, &Team { name: hex(key) }).expect("encode");
    }
    store.commit(batch).wait().expect("commit");
}

fn hex(key: &[u8]) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn prefix_scans_forward_backward_and_after_a_cursor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store(dir.path());
    let keys: Vec<Vec<u8>> = [&b"a1"[..], b"b1", b"b2", b"b3", b"b\xff", b"c1"]
        .iter()
        .map(|k| k.to_vec())
        .collect();
    put_all(&store, &keys);
    let names = |scan| -> Vec<Vec<u8>> {
        store
            .scan::<Team>(scan)
            .expect("scan")
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    };
    assert_eq!(
        names(Scan::prefix(b"b")),
        vec![b"b1".to_vec(), b"b2".to_vec(), b"b3".to_vec(), b"b\xff".to_vec()]
    );
    let reverse = Scan {
        reverse: true,
        limit: 2,
        ..Scan::prefix(b"b")
    };
    assert_eq!(names(reverse), vec![b"b\xff".to_vec(), b"b3".to_vec()]);
    let older = Scan {
        reverse: true,
        after: Some(b"b3"),
        ..Scan::prefix(b"b")
    };
    assert_eq!(names(older), vec![b"b2".to_vec(), b"b1".to_vec()]);
    let newer = Scan {
        after: Some(b"b1"),
        ..Scan::prefix(b"b")
    };
    assert_eq!(names(newer), vec![b"b2".to_vec(), b"b3".to_vec(), b"b\xff".to_vec()]);
    assert_eq!(
        names(Scan {
            reverse: true,
            ..Scan::prefix(b"")
        })
        .len(),
        6
    );
    assert!(names(Scan::prefix(b"z")).is_empty());
    let before_range = Scan {
        after: Some(b"a"),
        ..Scan::prefix(b"b")
    };
    assert_eq!(
        names(before_range).len(),
        4,
        "a cursor before the prefix starts at the prefix"
    );
    let beyond_range = Scan {
        reverse: true,
        after: Some(b"z"),
        ..Scan::prefix(b"b")
    };
    assert_eq!(
        names(beyond_range).len(),
        4,
        "a cursor after the prefix starts at its end"
    );
}

#[test]
fn a_batch_is_all_or_nothing_with_deletes_and_puts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store(dir.path());
    put_all(&store, &[b"k1".to_vec(), b"k2".to_vec()]);
    let mut batch = Batch::new();
    batch.delete::<Team>(b"k1");
    batch.put(b"k3", &Team { name: "three".into() }).expect("encode");
    assert_eq!(batch.len(), 2);
    store.commit(batch).wait().expect("commit");
    assert!(store.get::<Team>(b"k1").expect("get").is_none());
    assert_eq!(
        store.get::<Team>(b"k3").expect("get"),
        Some(Team { name: "three".into() })
    );
    drop(store);
    let reopened = self::store(dir.path());
    assert_eq!(
        reopened.get::<Team>(b"k2").expect("get").map(|t| t.name),
        Some(hex(b"k2"))
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]
    #[test]
    fn scans_return_keys_in_byte_order(keys in proptest::collection::btree_set(proptest::collection::vec(any::<u8>(), 1..6), 1..40)) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store(dir.path());
        let keys: Vec<Vec<u8>> = keys.into_iter().collect();
        put_all(&store, &keys);
        let forward: Vec<Vec<u8>> = store.scan::<Team>(Scan::prefix(b"")).expect("scan").into_iter().map(|(k, _)| k).collect();
        prop_assert_eq!(&forward, &keys);
        let mut backward: Vec<Vec<u8>> = store.scan::<Team>(Scan { reverse: true, ..Scan::prefix(b"") }).expect("scan").into_iter().map(|(k, _)| k).collect();
        backward.reverse();
        prop_assert_eq!(&backward, &keys);
    }
}

/// Entries in the active memtable of `table`, overwrites included: each put that reached
/// RocksDB counts once.
fn entries(store: &Store, table: Table) -> u64 {
    store
        .table_sizes()
        .into_iter()
        .find(|size| size.table == table)
        .expect("the table")
        .keys
}

#[test]
fn a_mark_repeated_by_many_batches_is_written_once_until_its_table_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = Table::COUNTER_EXPIRY;
    {
        let store = store(dir.path());
        for _ in 0..10 {
            let mut batch = Batch::new();
            batch.mark(table, b"day 1".to_vec());
            batch.mark(table, b"day 1".to_vec());
            store.commit(batch).wait().expect("commit");
        }
        assert_eq!(entries(&store, table), 1, "ten batches marking one entry write it once");
        assert_eq!(store.get_raw(table, b"day 1").expect("get"), Some(Vec::new()));

        // A delete in the table forgets what was marked: the next mark is written again.
        let mut batch = Batch::new();
        batch.delete_raw(table, b"day 1".to_vec());
        store.commit(batch).wait().expect("commit");
        assert_eq!(store.get_raw(table, b"day 1").expect("get"), None);
        let mut batch = Batch::new();
        batch.mark(table, b"day 1".to_vec());
        store.commit(batch).wait().expect("commit");
        assert_eq!(store.get_raw(table, b"day 1").expect("get"), Some(Vec::new()));

        // A delete and a mark in one batch, in either order, end as the last one says.
        let mut batch = Batch::new();
        batch.delete_raw(table, b"day 1".to_vec());
        batch.mark(table, b"day 1".to_vec());
        batch.mark(table, b"day 2".to_vec());
        batch.delete_raw(table, b"day 2".to_vec());
        store.commit(batch).wait().expect("commit");
        assert_eq!(store.get_raw(table, b"day 1").expect("get"), Some(Vec::new()));
        assert_eq!(store.get_raw(table, b"day 2").expect("get"), None);
        let mut batch = Batch::new();
        batch.mark(table, b"day 2".to_vec());
        store.commit(batch).wait().expect("commit");
        assert_eq!(store.get_raw(table, b"day 2").expect("get"), Some(Vec::new()));
    }
    // After a restart nothing is remembered: the first mark is written, and is there.
    let store = store(dir.path());
    let mut batch = Batch::new();
    batch.mark(table, b"day 3".to_vec());
    store.commit(batch).wait().expect("commit");
    for key in [&b"day 1"[..], b"day 2", b"day 3"] {
        assert_eq!(store.get_raw(table, key).expect("get"), Some(Vec::new()));
    }
}
