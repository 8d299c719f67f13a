//! A due-time index: which item is due when, in one table of its own.
//!
//! Keys are the due time as big-endian milliseconds followed by the item's own key, and
//! values are empty, so RocksDB's byte order is time order and the earliest work is the
//! table's first key. Every part of herald that waits for a time (the spool's scheduled
//! sends and retries, webhook retries, domain re-checks, expiry of idempotency records)
//! keeps such an index beside its records and changes both in one [`Batch`]: an item's
//! state and its entry are durable together or not at all.
//!
//! An item has at most one entry, at the time its record says it is due; moving it is a
//! [`DueIndex::rearm`] (delete the old key, put the new one). Readers that find an entry
//! whose item says otherwise (deleted, or due at another time) treat it as stale.

use crate::batch::Batch;
use crate::clock::Timestamp;
use crate::error::Error;
use crate::store::Store;
use crate::table::Table;

/// Bytes of due time at the start of every key.
const TIME_LEN: usize = 8;

/// One entry: an item's key and when it is due. Ordered as the index orders it: by time,
/// then by item key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Due {
    /// When the item is due.
    pub at: Timestamp,
    /// The item's key in its own table.
    pub key: Vec<u8>,
}

impl Due {
    /// The entry of the item under `key`, due at `at`.
    pub fn new(at: Timestamp, key: impl Into<Vec<u8>>) -> Self {
        Due { at, key: key.into() }
    }

    /// The index key: big-endian milliseconds, then the item key.
    pub fn encode(&self) -> Vec<u8> {
        encode(self.at, &self.key)
    }

    /// Reads back what [`Due::encode`] wrote; `None` for a key too short to hold a time.
    pub fn decode(bytes: &[u8]) -> Option<Due> {
        let (at, key) = bytes.split_first_chunk::<TIME_LEN>()?;
        Some(Due {
            at: Timestamp::from_millis(u64::from_be_bytes(*at)),
            key: key.to_vec(),
        })
    }
}

fn encode(at: Timestamp, key: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(TIME_LEN + key.len());
    bytes.extend_from_slice(&at.as_millis().to_be_bytes());
    bytes.extend_from_slice(key);
    // The pair of this check is `Due::decode`: every key holds a time.
    debug_assert!(bytes.len() >= TIME_LEN);
    bytes
}

/// A due-time index kept in `table`. Copy it freely: it is only the table's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DueIndex {
    table: Table,
}

impl DueIndex {
    /// The index kept in `table`, whose keys must all be written through it.
    pub const fn new(table: Table) -> Self {
        DueIndex { table }
    }

    /// The table it lives in.
    pub const fn table(&self) -> Table {
        self.table
    }

    /// Adds to `batch` the entry that makes `key` due at `due`.
    pub fn arm(&self, batch: &mut Batch, due: Timestamp, key: &[u8]) {
        batch.put_raw(self.table, encode(due, key), Vec::new());
    }

    /// Adds to `batch` the entry that makes `key` due at `due`, for an entry that many
    /// batches arm alike (a day's counters, armed by every event counted that day): see
    /// [`Batch::mark`]. The entry is the same as [`DueIndex::arm`]'s.
    pub fn arm_shared(&self, batch: &mut Batch, due: Timestamp, key: &[u8]) {
        batch.mark(self.table, encode(due, key));
    }

    /// Adds to `batch` the removal of the entry that made `key` due at `due`.
    pub fn disarm(&self, batch: &mut Batch, due: Timestamp, key: &[u8]) {
        batch.delete_raw(self.table, encode(due, key));
    }

    /// Adds to `batch` the move of `key` from `old_due` to `new_due`; nothing when they
    /// are the same time.
    pub fn rearm(&self, batch: &mut Batch, old_due: Timestamp, new_due: Timestamp, key: &[u8]) {
        if old_due != new_due {
            self.disarm(batch, old_due, key);
            self.arm(batch, new_due, key);
        }
    }

    /// Whether the entry of `key` at `due` is in the index.
    pub fn contains(&self, store: &Store, due: Timestamp, key: &[u8]) -> Result<bool, Error> {
        Ok(store.get_raw(self.table, &encode(due, key))?.is_some())
    }

    /// Up to `limit` entries due at or before `now`, earliest first, starting after the
    /// entry `after` (the last one of the previous page) or at the earliest entry. Reads
    /// no further than the first entry not yet due.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] for a key too short to hold a time, which only a writer that
    /// bypassed this type can have stored.
    pub fn due(&self, store: &Store, now: Timestamp, after: Option<&Due>, limit: usize) -> Result<Vec<Due>, Error> {
        let cursor = after.map(Due::encode);
        let mut page = Vec::new();
        if limit == 0 {
            return Ok(page);
        }
        store.for_each_raw_from(self.table, cursor.as_deref(), |key, _| {
            if cursor.as_deref() == Some(key) {
                return Ok(true);
            }
            let entry = self.decode(key)?;
            if entry.at > now {
                return Ok(false);
            }
            page.push(entry);
            Ok(page.len() < limit)
        })?;
        Ok(page)
    }

    /// The earliest due time in the index.
    pub fn next_due(&self, store: &Store) -> Result<Option<Timestamp>, Error> {
        self.first_from(store, None)
    }

    /// The earliest due time strictly after `at`: what a runner that has taken everything
    /// due by `at` waits for next.
    pub fn next_due_after(&self, store: &Store, at: Timestamp) -> Result<Option<Timestamp>, Error> {
        let Some(later) = at.as_millis().checked_add(1) else {
            return Ok(None);
        };
        // Every key of a time `>= later` sorts at or after the bare time.
        self.first_from(store, Some(&later.to_be_bytes()))
    }

    fn first_from(&self, store: &Store, from: Option<&[u8]>) -> Result<Option<Timestamp>, Error> {
        let mut first = None;
        store.for_each_raw_from(self.table, from, |key, _| {
            first = Some(self.decode(key)?.at);
            Ok(false)
        })?;
        Ok(first)
    }

    fn decode(&self, key: &[u8]) -> Result<Due, Error> {
        Due::decode(key).ok_or_else(|| Error::Corrupt {
            table: self.table.name(),
            reason: format!("due-index key of {} bytes", key.len()),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;

    use super::*;
    use crate::clock::ManualClock;
    use crate::store::StoreOptions;

    /// Any table serves: the index only needs raw keys.
    const INDEX: DueIndex = DueIndex::new(Table::WEBHOOK_DUE);

    fn store(dir: &std::path::Path) -> Store {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000)));
        Store::open(StoreOptions {
            min_free_space: 0,
            clock,
            ..StoreOptions::new(dir)
        })
        .expect("open")
    }

    fn at(millis: u64) -> Timestamp {
        Timestamp::from_millis(millis)
    }

    fn commit(store: &Store, write: impl FnOnce(&mut Batch)) {
        let mut batch = Batch::new();
        write(&mut batch);
        store.commit(batch).wait().expect("commit");
    }

    fn keys(entries: &[Due]) -> Vec<&[u8]> {
        entries.iter().map(|entry| entry.key.as_slice()).collect()
    }

    proptest! {
        #[test]
        fn keys_round_trip_and_sort_by_time_then_item(
            a in any::<u64>(),
            b in any::<u64>(),
            ka in proptest::collection::vec(any::<u8>(), 0..40),
            kb in proptest::collection::vec(any::<u8>(), 0..40),
        ) {
            let (da, db) = (Due::new(at(a), ka.clone()), Due::new(at(b), kb.clone()));
            prop_assert_eq!(Due::decode(&da.encode()), Some(da.clone()));
            prop_assert_eq!(da.encode().cmp(&db.encode()), (a, &ka).cmp(&(b, &kb)));
            prop_assert_eq!(da.encode().cmp(&db.encode()), da.cmp(&db));
        }
    }

    #[test]
    fn a_key_too_short_for_a_time_is_refused() {
        assert_eq!(Due::decode(&[0; 7]), None);
        assert_eq!(Due::decode(&[0; 8]), Some(Due::new(at(0), Vec::new())));
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store(dir.path());
        commit(&store, |batch| batch.put_raw(INDEX.table(), vec![1, 2], Vec::new()));
        let error = INDEX.due(&store, at(5), None, 10).expect_err("corrupt");
        assert!(
            matches!(
                error,
                Error::Corrupt {
                    table: "webhook_due",
                    ..
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn armed_entries_come_due_in_time_order_and_not_before() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store(dir.path());
        commit(&store, |batch| {
            INDEX.arm(batch, at(30), b"c");
            INDEX.arm(batch, at(10), b"b");
            INDEX.arm(batch, at(10), b"a");
            INDEX.arm(batch, at(20), b"d");
        });
        assert_eq!(INDEX.next_due(&store).expect("next"), Some(at(10)));
        assert!(INDEX.due(&store, at(9), None, 10).expect("due").is_empty());
        let due = INDEX.due(&store, at(20), None, 10).expect("due");
        assert_eq!(keys(&due), [b"a".as_slice(), b"b", b"d"]);
        assert_eq!(due[0], Due::new(at(10), b"a".to_vec()));
        assert_eq!(INDEX.next_due_after(&store, at(20)).expect("next"), Some(at(30)));
        assert_eq!(INDEX.next_due_after(&store, at(9)).expect("next"), Some(at(10)));
        assert_eq!(INDEX.next_due_after(&store, at(30)).expect("next"), None);
        assert_eq!(INDEX.next_due_after(&store, at(u64::MAX)).expect("next"), None);
        assert!(INDEX.contains(&store, at(30), b"c").expect("contains"));
        assert!(!INDEX.contains(&store, at(31), b"c").expect("contains"));
    }

    #[test]
    fn disarm_and_rearm_move_an_item_in_one_batch() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store(dir.path());
        commit(&store, |batch| {
            INDEX.arm(batch, at(10), b"moved");
            INDEX.arm(batch, at(10), b"gone");
            INDEX.arm(batch, at(10), b"kept");
        });
        commit(&store, |batch| {
            INDEX.rearm(batch, at(10), at(50), b"moved");
            INDEX.disarm(batch, at(10), b"gone");
            INDEX.rearm(batch, at(10), at(10), b"kept");
        });
        assert_eq!(keys(&INDEX.due(&store, at(49), None, 10).expect("due")), [b"kept"]);
        let all = INDEX.due(&store, at(50), None, 10).expect("due");
        assert_eq!(
            all,
            [Due::new(at(10), b"kept".to_vec()), Due::new(at(50), b"moved".to_vec())]
        );
        // An unchanged time writes nothing.
        let mut batch = Batch::new();
        INDEX.rearm(&mut batch, at(7), at(7), b"x");
        assert!(batch.is_empty());
    }

    #[test]
    fn a_backlog_is_walked_in_pages_from_a_cursor() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store(dir.path());
        commit(&store, |batch| {
            for n in 0..25_u8 {
                INDEX.arm(batch, at(u64::from(n / 2)), &[n]);
            }
            INDEX.arm(batch, at(100), b"later");
        });
        let mut seen = Vec::new();
        let mut cursor: Option<Due> = None;
        loop {
            let page = INDEX.due(&store, at(99), cursor.as_ref(), 10).expect("due");
            assert!(page.len() <= 10);
            let Some(last) = page.last() else { break };
            cursor = Some(last.clone());
            seen.extend(page.into_iter().map(|entry| entry.key[0]));
        }
        assert_eq!(seen, (0..25).collect::<Vec<u8>>(), "each entry once, in order");
        assert!(INDEX.due(&store, at(99), None, 0).expect("due").is_empty());
    }
}
