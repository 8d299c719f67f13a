//! Where teams and API keys are kept. [`AccountStore`] is the narrow interface the
//! accounts service uses; [`RocksAccounts`] keeps them in the node's RocksDB. A cluster
//! keeps them in a shared database behind the same trait (DESIGN.md, "Scale beyond one
//! machine"), so a key created on one node authenticates on every other.
//!
//! [`PostgresAccounts`] keeps them in PostgreSQL.
//!
//! The keys and encodings of [`Table::TEAMS`], [`Table::API_KEYS`],
//! [`Table::API_KEY_DIGESTS`] and [`Table::API_KEY_USAGE`] are this module's alone.

mod copy;
mod postgres;

use std::sync::Arc;

use crate::storage::Error;
use herald_queue::{Batch, Id, Record, RecordCache, Scan, Store, Table, Timestamp};

use super::api_key::{ApiKey, ApiKeyDigest, ApiKeyUsage};
use super::team::Team;
use crate::storage::page::PageRequest;
pub use copy::{copy, initialised_locally};
pub use postgres::PostgresAccounts;

impl Record for Team {
    const TABLE: Table = Table::TEAMS;
}

impl Record for ApiKey {
    const TABLE: Table = Table::API_KEYS;
}

impl Record for ApiKeyDigest {
    const TABLE: Table = Table::API_KEY_DIGESTS;
}

impl Record for ApiKeyUsage {
    const TABLE: Table = Table::API_KEY_USAGE;
}

/// Decoded key records kept at most (a key is a few hundred bytes).
const KEY_CACHE_MAX: usize = 4096;

/// Teams, their API keys, and the lookup of a key by its token's digest.
pub trait AccountStore: Send + Sync + std::fmt::Debug {
    /// Every team, oldest first. Teams are few (one per tenant).
    fn teams(&self) -> Result<Vec<Team>, Error>;
    /// The team `id`.
    fn team(&self, id: Id) -> Result<Option<Team>, Error>;
    /// Writes `team`, new or changed, durably.
    fn put_team(&self, team: &Team) -> Result<(), Error>;
    /// Deletes the team record `id`, durably (the last step of erasing a team).
    fn delete_team(&self, id: Id) -> Result<(), Error>;
    /// The key whose token's SHA-256 is `digest`.
    fn key_by_digest(&self, digest: &[u8; 32]) -> Result<Option<Arc<ApiKey>>, Error>;
    /// The key `id` of `team_id`.
    fn key(&self, team_id: Id, id: Id) -> Result<Option<ApiKey>, Error>;
    /// One page of `team_id`'s keys, newest first, and whether more lie beyond it.
    fn keys(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<ApiKey>, bool), Error>;
    /// Writes a new key and its lookup under `digest` at once, durably.
    fn insert_key(&self, key: &ApiKey, digest: [u8; 32]) -> Result<(), Error>;
    /// Rewrites a key's record (its lookup is unchanged), durably.
    fn put_key(&self, key: &ApiKey) -> Result<(), Error>;
    /// Deletes a key with its lookup and its usage at once, durably: its token stops
    /// working when this returns.
    fn delete_key(&self, key: &ApiKey) -> Result<(), Error>;
    /// Records that `key_id` authenticated a request at `at`. Informational: nobody
    /// waits for it to be durable, and a failure to write it is ignored.
    fn record_use(&self, key_id: Id, at: Timestamp);
    /// When `key_id` last authenticated a request, as recorded.
    fn last_used(&self, key_id: Id) -> Result<Option<Timestamp>, Error>;
    /// The operator's team, once the data directory is initialised
    /// ([`AccountStore::initialise`]).
    fn initialised(&self) -> Result<Option<Id>, Error>;
    /// Writes the operator's `team`, its first `key` with the lookup under `digest`, and
    /// the fact that the data directory was initialised at `at`, at once, durably.
    fn initialise(&self, team: &Team, key: &ApiKey, digest: [u8; 32], at: Timestamp) -> Result<(), Error>;
}

/// The key of the initialisation record in [`Table::META`].
const INITIALISED: &[u8] = b"initialised";

/// The record saying the data directory was initialised, and with which team.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Initialised {
    team_id: Id,
    at: Timestamp,
}

impl Record for Initialised {
    const TABLE: Table = Table::META;
}

/// Teams and keys in the node's RocksDB.
#[derive(Debug)]
pub struct RocksAccounts {
    store: Store,
    /// Decoded key records beside the bytes they came from: authentication reads a key
    /// on every request, and only the decoding is worth keeping.
    keys: RecordCache<ApiKey>,
    /// Token digests to their keys, read on every authentication too.
    digests: RecordCache<ApiKeyDigest>,
    /// Teams, read on every message (its plan).
    teams: RecordCache<Team>,
}

impl RocksAccounts {
    /// Teams and keys in `store`.
    pub fn new(store: Store) -> RocksAccounts {
        RocksAccounts {
            store,
            keys: RecordCache::new(KEY_CACHE_MAX),
            digests: RecordCache::new(KEY_CACHE_MAX),
            teams: RecordCache::new(KEY_CACHE_MAX),
        }
    }
}

/// A key's location in [`herald_queue::Table::API_KEYS`]: team id then key id, so a
/// team's keys list with one prefix scan.
fn key_location(team_id: Id, id: Id) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), id.as_bytes()].concat()
}

/// Adds `team` to `batch`.
fn stage_team(batch: &mut Batch, team: &Team) -> Result<(), Error> {
    Ok(batch.put(team.id.as_bytes(), team)?)
}

/// Adds `key` and its lookup under `digest` to `batch`.
fn stage_key(batch: &mut Batch, key: &ApiKey, digest: [u8; 32]) -> Result<(), Error> {
    batch.put(key_location(key.team_id, key.id), key)?;
    Ok(batch.put(
        digest,
        &ApiKeyDigest {
            team_id: key.team_id,
            key_id: key.id,
        },
    )?)
}

impl AccountStore for RocksAccounts {
    fn teams(&self) -> Result<Vec<Team>, Error> {
        Ok(self
            .store
            .scan::<Team>(Scan::prefix(b""))?
            .into_iter()
            .map(|(_, team)| team)
            .collect())
    }

    fn team(&self, id: Id) -> Result<Option<Team>, Error> {
        Ok(self
            .teams
            .get(&self.store, id.as_bytes())?
            .map(|team| Team::clone(&team)))
    }

    fn put_team(&self, team: &Team) -> Result<(), Error> {
        let mut batch = Batch::new();
        stage_team(&mut batch, team)?;
        Ok(self.store.commit(batch).wait()?)
    }

    fn delete_team(&self, id: Id) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.delete::<Team>(id.as_bytes());
        Ok(self.store.commit(batch).wait()?)
    }

    fn key_by_digest(&self, digest: &[u8; 32]) -> Result<Option<Arc<ApiKey>>, Error> {
        let Some(found) = self.digests.get(&self.store, digest)? else {
            return Ok(None);
        };
        Ok(self.keys.get(&self.store, &key_location(found.team_id, found.key_id))?)
    }

    fn key(&self, team_id: Id, id: Id) -> Result<Option<ApiKey>, Error> {
        Ok(self.store.get::<ApiKey>(key_location(team_id, id))?)
    }

    fn keys(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<ApiKey>, bool), Error> {
        Ok(page.load::<ApiKey>(&self.store, team_id.as_bytes())?)
    }

    fn insert_key(&self, key: &ApiKey, digest: [u8; 32]) -> Result<(), Error> {
        let mut batch = Batch::new();
        stage_key(&mut batch, key, digest)?;
        Ok(self.store.commit(batch).wait()?)
    }

    fn put_key(&self, key: &ApiKey) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.put(key_location(key.team_id, key.id), key)?;
        Ok(self.store.commit(batch).wait()?)
    }

    fn delete_key(&self, key: &ApiKey) -> Result<(), Error> {
        let digest = hex_decode(&key.digest).ok_or_else(|| Error::Corrupt {
            table: herald_queue::Table::API_KEYS.name(),
            reason: format!("key {} has a digest that is not hex", key.id),
        })?;
        let mut batch = Batch::new();
        batch.delete::<ApiKey>(key_location(key.team_id, key.id));
        batch.delete::<ApiKeyDigest>(digest);
        batch.delete::<ApiKeyUsage>(key.id.as_bytes());
        Ok(self.store.commit(batch).wait()?)
    }

    fn record_use(&self, key_id: Id, at: Timestamp) {
        let mut batch = Batch::new();
        if batch.put(key_id.as_bytes(), &ApiKeyUsage { last_used_at: at }).is_ok() {
            // Committed with the next group; nobody waits for it.
            drop(self.store.commit(batch));
        }
    }

    fn last_used(&self, key_id: Id) -> Result<Option<Timestamp>, Error> {
        Ok(self
            .store
            .get::<ApiKeyUsage>(key_id.as_bytes())?
            .map(|usage| usage.last_used_at))
    }

    fn initialised(&self) -> Result<Option<Id>, Error> {
        Ok(self.store.get::<Initialised>(INITIALISED)?.map(|done| done.team_id))
    }

    fn initialise(&self, team: &Team, key: &ApiKey, digest: [u8; 32], at: Timestamp) -> Result<(), Error> {
        let mut batch = Batch::new();
        stage_team(&mut batch, team)?;
        stage_key(&mut batch, key, digest)?;
        batch.put(INITIALISED, &Initialised { team_id: team.id, at })?;
        Ok(self.store.commit(batch).wait()?)
    }
}

fn hex_decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}
