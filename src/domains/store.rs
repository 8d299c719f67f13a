//! Where sending domains are kept. [`DomainStore`] is the narrow interface the domains
//! service, submission and delivery use; [`RocksDomains`] keeps them in the node's
//! RocksDB. A cluster keeps them in a shared database behind the same trait, so a domain
//! verified through one node sends from every node.
//!
//! The keys and encodings of [`herald_queue::Table::DOMAINS`] and
//! [`herald_queue::Table::DOMAIN_NAMES`] are this module's alone.

use std::sync::Arc;

use herald_queue::{Batch, Error, Id, Record, RecordCache, Scan, Store, Table};

use super::model::Domain;
use crate::events::{self, Event};
use crate::services::page::PageRequest;

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
}

/// Domains in the node's RocksDB.
#[derive(Debug)]
pub struct RocksDomains {
    store: Store,
    cache: RecordCache<Domain>,
}

impl RocksDomains {
    /// Domains in `store`.
    pub fn new(store: Store) -> RocksDomains {
        RocksDomains {
            store,
            cache: RecordCache::new(DOMAIN_CACHE_MAX),
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

impl RocksDomains {
    fn commit(&self, mut batch: Batch, event: Option<&Event>) -> Result<(), Error> {
        if let Some(event) = event {
            events::stage(&mut batch, event)?;
        }
        self.store.commit(batch).wait()
    }
}

impl DomainStore for RocksDomains {
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Domain>, Error> {
        self.store.get::<Domain>(domain_key(team_id, id))
    }

    fn cached(&self, team_id: Id, id: Id) -> Result<Option<Arc<Domain>>, Error> {
        self.cache.get(&self.store, &domain_key(team_id, id))
    }

    fn by_name(&self, team_id: Id, name: &str) -> Result<Option<Arc<Domain>>, Error> {
        match self.store.get::<DomainName>(name_key(team_id, name))? {
            Some(found) => self.cached(team_id, found.domain_id),
            None => Ok(None),
        }
    }

    fn list(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Domain>, bool), Error> {
        page.load::<Domain>(&self.store, team_id.as_bytes())
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
        let mut batch = Batch::new();
        batch.put(domain_key(domain.team_id, domain.id), domain)?;
        batch.put(
            name_key(domain.team_id, &domain.name),
            &DomainName { domain_id: domain.id },
        )?;
        self.commit(batch, event)
    }

    fn put(&self, domain: &Domain, event: Option<&Event>) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.put(domain_key(domain.team_id, domain.id), domain)?;
        self.commit(batch, event)
    }

    fn delete(&self, domain: &Domain, event: Option<&Event>) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.delete::<Domain>(domain_key(domain.team_id, domain.id));
        batch.delete::<DomainName>(name_key(domain.team_id, &domain.name));
        self.commit(batch, event)
    }
}
