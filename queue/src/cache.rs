//! Decoded records kept beside the bytes they were decoded from.
//!
//! A read through [`RecordCache::get`] still goes to the store, so it always sees the
//! latest committed value and needs no invalidation; what it saves is decoding, when the
//! stored bytes are the ones it decoded last time. That pays for records read on every
//! message and rarely written, such as a sending domain with its DKIM key.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::table::{Record, decode};
use crate::{Error, Store};

/// A bounded cache of decoded records of type `R`, keyed by their store key.
pub struct RecordCache<R> {
    entries: Mutex<HashMap<Vec<u8>, Entry<R>>>,
    capacity: usize,
}

struct Entry<R> {
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

    /// The record under `key`, as [`Store::get`] reads it, decoded only when its bytes
    /// changed since the last read.
    ///
    /// # Errors
    ///
    /// What [`Store::get_raw`] and decoding return.
    pub fn get(&self, store: &Store, key: &[u8]) -> Result<Option<Arc<R>>, Error> {
        let Some(bytes) = store.get_raw(R::TABLE, key)? else {
            self.lock().remove(key);
            return Ok(None);
        };
        if let Some(entry) = self.lock().get(key)
            && entry.bytes == bytes
        {
            return Ok(Some(Arc::clone(&entry.record)));
        }
        let record = Arc::new(decode::<R>(R::TABLE, &bytes)?);
        let mut entries = self.lock();
        if entries.len() >= self.capacity && !entries.contains_key(key) {
            entries.clear();
        }
        entries.insert(
            key.to_vec(),
            Entry {
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
}
