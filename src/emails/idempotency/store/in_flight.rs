//! The keys in flight in this process: a set in memory, which both stores keep. It is
//! per process on either backend; what a cluster shares is the record (see
//! [`super::PostgresIdempotency`]).

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::super::record::IdempotencyKey;

/// The keys held by requests being answered in this process.
#[derive(Debug, Default)]
pub(super) struct KeysInFlight {
    keys: Mutex<HashSet<IdempotencyKey>>,
}

impl KeysInFlight {
    /// Holds `key`; `false` when it is held already.
    pub(super) fn hold(&self, key: &IdempotencyKey) -> bool {
        self.lock().insert(*key)
    }

    /// Releases `key`.
    pub(super) fn release(&self, key: &IdempotencyKey) {
        self.lock().remove(key);
    }

    /// A guard for the keys an expiry holds from its read until its delete is
    /// committed.
    pub(super) fn holding(&self) -> Held<'_> {
        Held {
            keys: self,
            held: Vec::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashSet<IdempotencyKey>> {
        // Every change is one insert or remove: the set is whole after a panic elsewhere.
        self.keys.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Keys held while their records are expired: released when dropped, after the write.
pub(super) struct Held<'a> {
    keys: &'a KeysInFlight,
    held: Vec<IdempotencyKey>,
}

impl Held<'_> {
    /// Holds `key` until the guard is dropped: `false` when a request holds it.
    pub(super) fn hold(&mut self, key: IdempotencyKey) -> bool {
        if !self.keys.hold(&key) {
            return false;
        }
        self.held.push(key);
        true
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        for key in &self.held {
            self.keys.release(key);
        }
    }
}
