//! Locks on records for read-modify-write changes, keyed by table and key: the services
//! take them through [`Locks`], so that a node on its own keeps them in memory
//! ([`LocalLocks`]) and a cluster can hold them where every node sees them (a row lock,
//! an advisory lock) without any caller changing.

use std::sync::{Mutex, PoisonError};

/// What a change locks: the record it reads and rewrites, named by its table and key.
/// A shared store would keep the same names with a per-key lock or a compare-and-set.
#[derive(Debug, Clone, Copy)]
pub struct RecordName<'a> {
    /// The table (or, for a check across a team's records, the kind of check).
    pub table: &'static str,
    /// The record's key (or the team's id).
    pub key: &'a [u8],
}

/// The table name email locks are taken under ([`crate::emails::lock`]).
pub const EMAILS: &str = "emails";

/// Record locks.
pub trait Locks: Send + Sync + std::fmt::Debug {
    /// Holds `record` until the answer drops: another change of the same record waits;
    /// changes of other records do not (a local implementation may make two records
    /// share a lock, which only makes one wait).
    fn lock(&self, record: RecordName<'_>) -> Held<'_>;
    /// Holds every record of `table` under `keys` at once, for a change that writes them
    /// all in one commit, in an order that cannot deadlock with another caller of this.
    /// A change holding one of these must take no other lock of `table`.
    fn lock_many(&self, table: &'static str, keys: &mut dyn Iterator<Item = &[u8]>) -> Held<'_>;
}

/// Locks held until this drops.
pub struct Held<'a> {
    _release: Box<dyn Release + 'a>,
}

impl<'a> Held<'a> {
    /// Holds what `release` releases when it drops (a mutex guard, a lease).
    pub fn new<T: 'a>(release: T) -> Held<'a> {
        Held {
            _release: Box::new(release),
        }
    }
}

impl std::fmt::Debug for Held<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Held")
    }
}

/// Whatever releases a lock when it drops.
trait Release {}

impl<T> Release for T {}

/// Stripes of record locks other than emails': changes to records that hash to
/// different stripes run at once; two records sharing a stripe only wait for each other.
const RECORD_STRIPES: usize = 64;

/// Stripes of email locks: more, as a group of delivery outcomes holds one for each of
/// its emails, and apart, so other records' changes never wait for them.
const EMAIL_STRIPES: usize = 1024;

/// Record locks in this process's memory, in stripes: what one node needs.
#[derive(Debug)]
pub struct LocalLocks {
    records: Vec<Mutex<()>>,
    emails: Vec<Mutex<()>>,
}

impl Default for LocalLocks {
    fn default() -> LocalLocks {
        LocalLocks {
            records: (0..RECORD_STRIPES).map(|_| Mutex::new(())).collect(),
            emails: (0..EMAIL_STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }
}

impl LocalLocks {
    /// The stripes of `table`, and the stripe `key` of it takes.
    fn stripe(&self, table: &'static str, key: &[u8]) -> (&[Mutex<()>], usize) {
        if table == EMAILS {
            (&self.emails, stripe_of(self.emails.len(), &key))
        } else {
            (&self.records, stripe_of(self.records.len(), &(table, key)))
        }
    }
}

impl Locks for LocalLocks {
    fn lock(&self, record: RecordName<'_>) -> Held<'_> {
        let (stripes, stripe) = self.stripe(record.table, record.key);
        Held::new(stripes[stripe].lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn lock_many(&self, table: &'static str, keys: &mut dyn Iterator<Item = &[u8]>) -> Held<'_> {
        // Every stripe once, in ascending order: two callers cannot wait on each other.
        let mut taken: Vec<(&[Mutex<()>], usize)> = keys.map(|key| self.stripe(table, key)).collect();
        taken.sort_unstable_by_key(|(_, stripe)| *stripe);
        taken.dedup_by_key(|(_, stripe)| *stripe);
        let guards: Vec<_> = taken
            .into_iter()
            .map(|(stripes, stripe)| stripes[stripe].lock().unwrap_or_else(PoisonError::into_inner))
            .collect();
        Held::new(guards)
    }
}

/// The stripe, of `stripes`, that `name` hashes to.
fn stripe_of(stripes: usize, name: &impl std::hash::Hash) -> usize {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut hasher);
    std::hash::Hasher::finish(&hasher) as usize % stripes
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    /// Whether a second `lock` of `name` waits while `first` is held.
    fn waits(locks: &Arc<LocalLocks>, first: Held<'_>, table: &'static str, key: &'static [u8]) -> bool {
        let taken = Arc::new(AtomicBool::new(false));
        let thread = {
            let (locks, taken) = (Arc::clone(locks), Arc::clone(&taken));
            std::thread::spawn(move || {
                let _held = locks.lock(RecordName { table, key });
                taken.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        let waited = !taken.load(Ordering::SeqCst);
        drop(first);
        thread.join().expect("the second locker");
        assert!(taken.load(Ordering::SeqCst), "the lock is taken once released");
        waited
    }

    #[test]
    fn a_record_is_held_until_its_guard_drops() {
        let locks = Arc::new(LocalLocks::default());
        let first = locks.lock(RecordName {
            table: "domains",
            key: b"one",
        });
        assert!(waits(&locks, first, "domains", b"one"));
        let many = locks.lock_many(EMAILS, &mut [b"a".as_slice(), b"b", b"a"].into_iter());
        assert!(waits(&locks, many, EMAILS, b"b"));
    }
}
