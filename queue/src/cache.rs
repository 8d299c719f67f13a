//! What is derived from the store's records, kept until their table changes.
//!
//! [`RecordCache`] keeps decoded records by key, [`Memo`] any answer computed from one
//! table. Both load the table's write generation ([`Store::generation`]) before reading
//! and trust what they kept only while it is unchanged, so a read through them always
//! sees every write committed before it began, and needs no invalidation. That pays for
//! records read on every message and rarely written, such as a sending domain with its
//! DKIM key: the message costs a map lookup instead of a store read and a decode.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

use crate::table::{Record, Table, decode};
use crate::{Error, Store};

/// A bounded cache of decoded records of type `R`, keyed by their store key.
pub struct RecordCache<R> {
    entries: Mutex<HashMap<Vec<u8>, Entry<R>>>,
    capacity: usize,
}

struct Entry<R> {
    /// The table's generation loaded before `bytes` were read.
    generation: u64,
    bytes: Vec<u8>,
    record: Arc<R>,
}

impl<R> std::fmt::Debug for RecordCache<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordCache")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl<R: Record> RecordCache<R> {
    /// An empty cache holding at most `capacity` records; when full, it starts over.
    pub fn new(capacity: usize) -> Self {
        RecordCache {
            entries: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// The record under `key`, as [`Store::get`] reads it: the one kept while its table
    /// has not changed, else read again (and decoded again only when its bytes changed).
    ///
    /// # Errors
    ///
    /// What [`Store::get_raw`] and decoding return.
    pub fn get(&self, store: &Store, key: &[u8]) -> Result<Option<Arc<R>>, Error> {
        let generation = store.generation(R::TABLE);
        if let Some(entry) = self.lock().get(key)
            && entry.generation == generation
        {
            return Ok(Some(Arc::clone(&entry.record)));
        }
        let Some(bytes) = store.get_raw(R::TABLE, key)? else {
            self.lock().remove(key);
            return Ok(None);
        };
        let mut entries = self.lock();
        if let Some(entry) = entries.get_mut(key)
            && entry.bytes == bytes
        {
            entry.generation = entry.generation.max(generation);
            return Ok(Some(Arc::clone(&entry.record)));
        }
        drop(entries);
        let record = Arc::new(decode::<R>(R::TABLE, &bytes)?);
        let mut entries = self.lock();
        if entries.len() >= self.capacity && !entries.contains_key(key) {
            entries.clear();
        }
        entries.insert(
            key.to_vec(),
            Entry {
                generation,
                bytes,
                record: Arc::clone(&record),
            },
        );
        Ok(Some(record))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, Entry<R>>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Answers computed from one table's records, kept by key until the table changes.
pub struct Memo<K, V> {
    entries: Mutex<HashMap<K, (u64, V)>>,
    capacity: usize,
}

impl<K, V> std::fmt::Debug for Memo<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memo")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl<K: Hash + Eq, V: Clone> Memo<K, V> {
    /// An empty memo holding at most `capacity` answers; when full, it starts over.
    pub fn new(capacity: usize) -> Self {
        Memo {
            entries: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// The answer under `key`: the one kept while `table` has not changed, else what
    /// `compute` (which reads only `table`) returns now, then kept.
    ///
    /// # Errors
    ///
    /// What `compute` returns; an error is not kept.
    pub fn get_or_try(
        &self,
        store: &Store,
        table: Table,
        key: K,
        compute: impl FnOnce() -> Result<V, Error>,
    ) -> Result<V, Error> {
        let generation = store.generation(table);
        if let Some((kept, value)) = self.lock().get(&key)
            && *kept == generation
        {
            return Ok(value.clone());
        }
        let value = compute()?;
        let mut entries = self.lock();
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            entries.clear();
        }
        entries.insert(key, (generation, value.clone()));
        Ok(value)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, (u64, V)>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Batch, StoreOptions, Table};

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Thing {
        name: String,
    }

    impl Record for Thing {
        const TABLE: Table = Table::DOMAINS;
    }

    fn put(store: &Store, key: &[u8], name: &str) {
        let mut batch = Batch::new();
        batch.put(key, &Thing { name: name.into() }).expect("encode");
        store.commit(batch).wait().expect("commit");
    }

    #[test]
    fn reads_see_every_write_and_reuse_the_decoded_record_while_unchanged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(StoreOptions::new(dir.path())).expect("store");
        let cache = RecordCache::<Thing>::new(2);
        assert_eq!(cache.get(&store, b"a").expect("get"), None);
        put(&store, b"a", "one");
        let first = cache.get(&store, b"a").expect("get").expect("found");
        assert_eq!(first.name, "one");
        let again = cache.get(&store, b"a").expect("get").expect("found");
        assert!(Arc::ptr_eq(&first, &again), "unchanged bytes are not decoded again");
        put(&store, b"a", "two");
        assert_eq!(cache.get(&store, b"a").expect("get").expect("found").name, "two");
        let mut batch = Batch::new();
        batch.delete::<Thing>(b"a".as_slice());
        store.commit(batch).wait().expect("commit");
        assert_eq!(cache.get(&store, b"a").expect("get"), None);
        for key in [b"b", b"c", b"d"] {
            put(&store, key, "x");
            assert!(cache.get(&store, key).expect("get").is_some());
        }
        assert!(cache.lock().len() <= 2, "bounded");
    }

    #[test]
    fn a_kept_record_is_served_until_its_table_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(StoreOptions::new(dir.path())).expect("store");
        let cache = RecordCache::<Thing>::new(8);
        put(&store, b"a", "one");
        let first = cache.get(&store, b"a").expect("get").expect("found");
        // A write elsewhere leaves the kept record trusted.
        let mut other = Batch::new();
        other.put_raw(Table::WEBHOOKS, b"w".to_vec(), b"{}".to_vec());
        store.commit(other).wait().expect("commit");
        let kept = cache.get(&store, b"a").expect("get").expect("found");
        assert!(Arc::ptr_eq(&first, &kept));
        // A write to the table is seen by the next read, through the same cache.
        put(&store, b"b", "unrelated");
        put(&store, b"a", "two");
        assert_eq!(cache.get(&store, b"a").expect("get").expect("found").name, "two");
    }

    #[test]
    fn a_memo_computes_again_only_after_its_table_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(StoreOptions::new(dir.path())).expect("store");
        let memo = Memo::<u8, usize>::new(8);
        let computed = std::cell::Cell::new(0);
        let count = || {
            computed.set(computed.get() + 1);
            Ok(store.scan_raw(Table::DOMAINS, crate::Scan::prefix(b""))?.len())
        };
        assert_eq!(memo.get_or_try(&store, Table::DOMAINS, 1, count).expect("memo"), 0);
        assert_eq!(memo.get_or_try(&store, Table::DOMAINS, 1, count).expect("memo"), 0);
        assert_eq!(computed.get(), 1, "the kept answer is served");
        put(&store, b"a", "one");
        assert_eq!(memo.get_or_try(&store, Table::DOMAINS, 1, count).expect("memo"), 1);
        assert_eq!(computed.get(), 2);
        let mut batch = Batch::new();
        batch.delete::<Thing>(b"a".as_slice());
        store.commit(batch).wait().expect("commit");
        assert!(!store.has_prefix(Table::DOMAINS, b"a").expect("has_prefix"));
        put(&store, b"ab", "two");
        assert!(store.has_prefix(Table::DOMAINS, b"a").expect("has_prefix"));
        assert!(!store.has_prefix(Table::DOMAINS, b"b").expect("has_prefix"));
        assert!(!store.has_prefix(Table::WEBHOOKS, b"a").expect("has_prefix"));
    }
}
