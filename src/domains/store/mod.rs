//! Where sending domains are kept. [`DomainStore`] is the narrow interface the domains
//! service, submission and delivery use; [`RocksDomains`] keeps them in the node's
//! RocksDB. A cluster keeps them in a shared database behind the same trait
//! ([`PostgresDomains`]), so a domain verified through one node sends from every node.
//!
//! The keys and encodings of [`herald_queue::Table::DOMAINS`],
//! [`herald_queue::Table::DOMAIN_NAMES`] and the verifier's due index
//! [`herald_queue::Table::DOMAIN_CHECKS`] are this module's alone. Every write of a
//! domain moves its entry in that index to its `next_check_at` in the same batch.

mod copy;
mod postgres;

use std::sync::Arc;

use crate::storage::Error;
use herald_queue::{Batch, DueIndex, Id, RawEntry, Record, RecordCache, Scan, Store, Table, Timestamp};

use super::model::Domain;
use crate::events::Event;
use crate::storage::due::{self, DueQueue};
use crate::storage::page::PageRequest;
pub use copy::copy;
pub use postgres::PostgresDomains;

/// Domains by the time of their next check (`next_check_at`), keyed as the domains are:
/// what the background verifier runs from.
const CHECKS: DueIndex = DueIndex::new(Table::DOMAIN_CHECKS);

/// Domains read per page while indexing those stored before the index existed.
const INDEX_PAGE: usize = 1_000;

/// The key in [`Table::META`] that says every domain's next check is in the index: set
/// once the domains stored by builds without it have been given their entries.
const INDEXED: &[u8] = b"domain_checks_indexed";

/// Decoded sending domains kept in memory: more than a host usually sends from, and the
/// cache starts over when full.
const DOMAIN_CACHE_MAX: usize = 4096;

/// Sending domains, by team and id and by team and name.
pub trait DomainStore: Send + Sync + std::fmt::Debug {
    /// The domain `id` of `team_id`, as stored now.
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Domain>, Error>;
    /// The domain `id` of `team_id`, decoded once and shared: what each message reads.
    fn cached(&self, team_id: Id, id: Id) -> Result<Option<Arc<Domain>>, Error>;
    /// The domain of `team_id` named `name` (lower case).
    fn by_name(&self, team_id: Id, name: &str) -> Result<Option<Arc<Domain>>, Error>;
    /// One page of `team_id`'s domains, newest first, and whether more lie beyond it.
    fn list(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Domain>, bool), Error>;
    /// Every domain of every team (the verifier's walk).
    fn all(&self) -> Result<Vec<Domain>, Error>;
    /// Writes a new domain, its name and `event` at once, durably.
    fn insert(&self, domain: &Domain, event: Option<&Event>) -> Result<(), Error>;
    /// Rewrites a domain (its name never changes) with `event`, durably.
    fn put(&self, domain: &Domain, event: Option<&Event>) -> Result<(), Error>;
    /// Deletes a domain and its name with `event`, durably.
    fn delete(&self, domain: &Domain, event: Option<&Event>) -> Result<(), Error>;
    /// The domains by their next check, for the verifier's due runner; an entry whose
    /// domain is gone or was rescheduled since is disarmed through it.
    fn check_queue(&self) -> Arc<dyn DueQueue>;
    /// The domain a due entry of [`DomainStore::check_queue`] names, as stored now.
    fn at_check(&self, key: &[u8]) -> Result<Option<Domain>, Error>;
}

/// Domains in the node's RocksDB.
#[derive(Debug)]
pub struct RocksDomains {
    store: Store,
    cache: RecordCache<Domain>,
    names: RecordCache<DomainName>,
}

impl RocksDomains {
    /// Domains in `store`.
    pub fn new(store: Store) -> RocksDomains {
        RocksDomains {
            store,
            cache: RecordCache::new(DOMAIN_CACHE_MAX),
            names: RecordCache::new(DOMAIN_CACHE_MAX),
        }
    }
}

impl Record for Domain {
    const TABLE: Table = Table::DOMAINS;
}

/// The name index: team id and name to the domain id.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
struct DomainName {
    domain_id: Id,
}

impl Record for DomainName {
    const TABLE: Table = Table::DOMAIN_NAMES;
}

/// A domain's key: team id then domain id, so a team's domains list with one prefix scan.
fn domain_key(team_id: Id, id: Id) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), id.as_bytes()].concat()
}

/// A name's key: team id then the name.
fn name_key(team_id: Id, name: &str) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), name.as_bytes()].concat()
}

/// Moves `domain`'s entry in [`CHECKS`] from the stored version's next check to its own,
/// in `batch`. The caller holds the domain's record lock (or the domain is new), so the
/// stored version read here is the one whose entry is armed.
fn move_check(store: &Store, batch: &mut Batch, key: &[u8], next: Option<Timestamp>) -> Result<(), Error> {
    let armed = match store.get::<Domain>(key).map_err(Error::from) {
        Ok(stored) => stored.and_then(|stored| stored.next_check_at),
        // Its entry, if any, cannot be known: the verifier drops it when it comes due.
        Err(Error::Corrupt { .. }) => None,
        Err(error) => return Err(error),
    };
    match (armed, next) {
        (Some(old), Some(new)) => CHECKS.rearm(batch, old, new, key),
        (Some(old), None) => CHECKS.disarm(batch, old, key),
        (None, Some(new)) => CHECKS.arm(batch, new, key),
        (None, None) => {}
    }
    Ok(())
}

/// Gives every domain with a next check its entry in [`CHECKS`], once: domains stored by
/// builds without the index have none. Returns how many it indexed. Takes no record
/// locks: a domain saved meanwhile arms its own entry, and an entry armed here for a
/// version just replaced is stale, which the verifier drops when it comes due.
pub(crate) fn index_unindexed(store: &Store) -> Result<usize, Error> {
    if store.get_raw(Table::META, INDEXED)?.is_some() {
        return Ok(0);
    }
    let mut indexed = 0;
    let mut after: Option<Vec<u8>> = None;
    loop {
        let page: Vec<RawEntry> = store.scan_raw(
            Table::DOMAINS,
            Scan {
                after: after.as_deref(),
                limit: INDEX_PAGE,
                ..Scan::prefix(b"")
            },
        )?;
        let mut batch = Batch::new();
        for (key, bytes) in &page {
            // A domain that cannot be read cannot be checked either.
            let Ok(domain) = herald_queue::decode_record::<Domain>(bytes) else {
                continue;
            };
            if let Some(at) = domain.next_check_at
                && !CHECKS.contains(store, at, key)?
            {
                CHECKS.arm(&mut batch, at, key);
                indexed += 1;
            }
        }
        let last = page.len() < INDEX_PAGE;
        if last {
            batch.put_raw(Table::META, INDEXED.to_vec(), b"1".to_vec());
        }
        store.commit(batch).wait()?;
        if last {
            return Ok(indexed);
        }
        after = page.last().map(|(key, _)| key.clone());
    }
}

impl RocksDomains {
    fn commit(&self, mut batch: Batch, event: Option<&Event>) -> Result<(), Error> {
        if let Some(event) = event {
            crate::webhooks::log::stage_event(&mut batch, event)?;
        }
        Ok(self.store.commit(batch).wait()?)
    }
}

impl DomainStore for RocksDomains {
    fn check_queue(&self) -> Arc<dyn DueQueue> {
        due::rocks(&self.store, CHECKS)
    }

    fn at_check(&self, key: &[u8]) -> Result<Option<Domain>, Error> {
        Ok(self.store.get::<Domain>(key)?)
    }

    fn get(&self, team_id: Id, id: Id) -> Result<Option<Domain>, Error> {
        Ok(self.store.get::<Domain>(domain_key(team_id, id))?)
    }

    fn cached(&self, team_id: Id, id: Id) -> Result<Option<Arc<Domain>>, Error> {
        Ok(self.cache.get(&self.store, &domain_key(team_id, id))?)
    }

    fn by_name(&self, team_id: Id, name: &str) -> Result<Option<Arc<Domain>>, Error> {
        match self.names.get(&self.store, &name_key(team_id, name))? {
            Some(found) => self.cached(team_id, found.domain_id),
            None => Ok(None),
        }
    }

    fn list(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Domain>, bool), Error> {
        Ok(page.load::<Domain>(&self.store, team_id.as_bytes())?)
    }

    fn all(&self) -> Result<Vec<Domain>, Error> {
        Ok(self
            .store
            .scan::<Domain>(Scan::prefix(b""))?
            .into_iter()
            .map(|(_, domain)| domain)
            .collect())
    }

    fn insert(&self, domain: &Domain, event: Option<&Event>) -> Result<(), Error> {
        let key = domain_key(domain.team_id, domain.id);
        let mut batch = Batch::new();
        move_check(&self.store, &mut batch, &key, domain.next_check_at)?;
        batch.put(&key, domain)?;
        batch.put(
            name_key(domain.team_id, &domain.name),
            &DomainName { domain_id: domain.id },
        )?;
        self.commit(batch, event)
    }

    fn put(&self, domain: &Domain, event: Option<&Event>) -> Result<(), Error> {
        let key = domain_key(domain.team_id, domain.id);
        let mut batch = Batch::new();
        move_check(&self.store, &mut batch, &key, domain.next_check_at)?;
        batch.put(&key, domain)?;
        self.commit(batch, event)
    }

    fn delete(&self, domain: &Domain, event: Option<&Event>) -> Result<(), Error> {
        let key = domain_key(domain.team_id, domain.id);
        let mut batch = Batch::new();
        move_check(&self.store, &mut batch, &key, None)?;
        batch.delete::<Domain>(&key);
        batch.delete::<DomainName>(name_key(domain.team_id, &domain.name));
        self.commit(batch, event)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::DkimAlgorithm;
    use crate::domains::{DomainStatus, RecordChecks, RecordStatus, TlsPolicy};

    const HOUR: Duration = Duration::from_secs(3600);

    fn domain(store: &Store, next_check_at: Option<Timestamp>) -> Domain {
        Domain {
            id: store.next_id(),
            team_id: Id::from_bytes([3; 16]),
            name: format!("d{}.example.test", store.next_id().as_bytes()[15]),
            region: "us-east-1".into(),
            custom_return_path: "send".into(),
            open_tracking: false,
            click_tracking: false,
            tls: TlsPolicy::Opportunistic,
            tracking_subdomain: None,
            dkim: super::super::generate_dkim_key(DkimAlgorithm::Ed25519).expect("key"),
            checks: RecordChecks::all(RecordStatus::Pending),
            status: DomainStatus::Pending,
            dns_verification_skipped: false,
            created_at: store.now(),
            verification_started_at: Some(store.now()),
            last_checked_at: None,
            next_check_at,
            failed_checks: 0,
        }
    }

    /// Every entry of the index, as (time, domain id).
    fn armed(store: &Store) -> Vec<(Timestamp, Id)> {
        CHECKS
            .due(store, Timestamp::from_millis(u64::MAX), None, usize::MAX)
            .expect("scan")
            .into_iter()
            .map(|due| (due.at, Id::from_slice(&due.key[16..]).expect("domain id")))
            .collect()
    }

    #[test]
    fn writing_a_domain_moves_its_entry_with_its_next_check() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _clock) = crate::testing::store(dir.path(), 1_700_000_000_000);
        let domains = RocksDomains::new(store.clone());
        let now = store.now();
        let mut domain = domain(&store, None);
        domains.insert(&domain, None).expect("insert");
        assert!(armed(&store).is_empty(), "nothing to check");
        domain.next_check_at = Some(now);
        domains.put(&domain, None).expect("put");
        assert_eq!(armed(&store), [(now, domain.id)]);
        let later = now.saturating_add(HOUR);
        domain.next_check_at = Some(later);
        domains.put(&domain, None).expect("put");
        assert_eq!(armed(&store), [(later, domain.id)], "moved, not copied");
        domains.delete(&domain, None).expect("delete");
        assert!(armed(&store).is_empty(), "a deleted domain leaves no entry");
        assert!(domains.by_name(domain.team_id, &domain.name).expect("read").is_none());
    }

    #[test]
    fn domains_from_before_the_index_are_indexed_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _clock) = crate::testing::store(dir.path(), 1_700_000_000_000);
        let due = store.now().saturating_add(HOUR);
        // Written as builds without the index wrote them: the record alone.
        let legacy = |next_check_at| {
            let domain = domain(&store, next_check_at);
            let mut batch = Batch::new();
            batch
                .put(domain_key(domain.team_id, domain.id), &domain)
                .expect("encode");
            store.commit(batch).wait().expect("commit");
            domain.id
        };
        let pending = legacy(Some(due));
        legacy(None);
        let mut batch = Batch::new();
        batch.put_raw(Table::DOMAINS, vec![9; 32], b"not a domain".to_vec());
        store.commit(batch).wait().expect("commit");
        assert_eq!(index_unindexed(&store).expect("index"), 1);
        assert_eq!(armed(&store), [(due, pending)]);
        legacy(Some(due));
        assert_eq!(index_unindexed(&store).expect("index"), 0, "done once");
        assert_eq!(armed(&store).len(), 1);
    }
}
