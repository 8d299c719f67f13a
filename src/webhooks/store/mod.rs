//! Where webhook endpoints are kept. [`WebhookStore`] is the narrow interface the
//! webhooks service and the event writers use; [`RocksWebhooks`] keeps them in the node's
//! RocksDB. A cluster keeps them in a shared database behind the same trait
//! ([`PostgresWebhooks`]). (The
//! messages and attempts of each endpoint are the node's own delivery work and log, and
//! stay with the dispatcher.)
//!
//! The keys and encodings of [`Table::WEBHOOKS`] are this module's alone.

mod copy;
mod postgres;

pub use copy::copy;
pub use postgres::PostgresWebhooks;

use crate::storage::Error;
use herald_queue::{Batch, Id, Record, Scan, Store, Table};

use super::model::Webhook;
use crate::storage::page::PageRequest;

/// Webhook endpoints by team.
pub trait WebhookStore: Send + Sync + std::fmt::Debug {
    /// The webhook `id` of `team_id`.
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Webhook>, Error>;
    /// Every webhook of `team_id` (at most [`super::WEBHOOKS_PER_TEAM_MAX`]).
    fn for_team(&self, team_id: Id) -> Result<Vec<Webhook>, Error>;
    /// Whether `team_id` has any webhook: events are only written for teams that do.
    fn any(&self, team_id: Id) -> Result<bool, Error>;
    /// One page of `team_id`'s webhooks, newest first, and whether more lie beyond it.
    fn list(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Webhook>, bool), Error>;
    /// Writes `webhook`, new or changed, durably.
    fn put(&self, webhook: &Webhook) -> Result<(), Error>;
    /// Deletes `webhook` durably.
    fn delete(&self, webhook: &Webhook) -> Result<(), Error>;
}

/// Webhooks in the node's RocksDB.
#[derive(Debug, Clone)]
pub struct RocksWebhooks {
    store: Store,
}

impl RocksWebhooks {
    /// Webhooks in `store`.
    pub fn new(store: Store) -> RocksWebhooks {
        RocksWebhooks { store }
    }
}

impl Record for Webhook {
    const TABLE: Table = Table::WEBHOOKS;
}

/// A webhook's key: team id then webhook id, so a team's webhooks list with one prefix
/// scan.
fn key(team_id: Id, id: Id) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), id.as_bytes()].concat()
}

impl WebhookStore for RocksWebhooks {
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Webhook>, Error> {
        Ok(self.store.get::<Webhook>(key(team_id, id))?)
    }

    fn for_team(&self, team_id: Id) -> Result<Vec<Webhook>, Error> {
        let found = self.store.scan::<Webhook>(Scan::prefix(team_id.as_bytes()))?;
        Ok(found.into_iter().map(|(_, webhook)| webhook).collect())
    }

    fn any(&self, team_id: Id) -> Result<bool, Error> {
        // Asked by each event written: a prefix check the store answers from memory
        // until the webhooks change.
        Ok(self.store.has_prefix(Table::WEBHOOKS, team_id.as_bytes())?)
    }

    fn list(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Webhook>, bool), Error> {
        Ok(page.load::<Webhook>(&self.store, team_id.as_bytes())?)
    }

    fn put(&self, webhook: &Webhook) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.put(key(webhook.team_id, webhook.id), webhook)?;
        Ok(self.store.commit(batch).wait()?)
    }

    fn delete(&self, webhook: &Webhook) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.delete::<Webhook>(key(webhook.team_id, webhook.id));
        Ok(self.store.commit(batch).wait()?)
    }
}
