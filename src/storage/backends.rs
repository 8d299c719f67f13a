//! The stores the services keep their records in, one per kind of record: what a node
//! on its own and a cluster on shared engines differ in. [`Backends::rocksdb`] and
//! [`Backends::postgres`] are the one place that names each backend's implementations.

use herald_queue::SharedClock;

use super::locks::{LocalLocks, Locks};
use super::node::Node;
use super::postgres::Postgres;
use crate::accounts::{AccountStore, PostgresAccounts, RocksAccounts};
use crate::broadcasts::{BroadcastStore, PostgresBroadcasts, RocksBroadcasts};
use crate::contacts::{AudienceStore, ContactStore, PostgresContacts, RocksContacts};
use crate::counters::{CounterStore, PostgresCounters, RocksCounters};
use crate::domains::{DomainStore, PostgresDomains, RocksDomains};
use crate::emails::idempotency::{IdempotencyStore, LocalIdempotency, PostgresIdempotency};
use crate::emails::{EmailStore, PostgresEmails, RocksEmails};
use crate::images::{ImageStore, PostgresImages, RocksImages};
use crate::logs::{PostgresRequestLogs, RequestLogStore, RocksRequestLogs};
use crate::suppressions::{PostgresSuppressions, RocksSuppressions, SuppressionStore};
use crate::templates::{PostgresTemplates, RocksTemplates, TemplateStore};
use crate::users::store::{PostgresUsers, RocksUsers, UserStore};
use crate::webhooks::{PostgresWebhookLog, PostgresWebhooks, RocksWebhookLog, RocksWebhooks, WebhookLog, WebhookStore};

/// The stores the services keep their records in, one per kind of record: what a node
/// on its own and a cluster on shared engines differ in. [`Backends::rocksdb`] is the one
/// place that names the RocksDB implementations; a test may put any other in a field.
#[derive(Debug)]
pub struct Backends {
    /// Teams and API keys.
    pub accounts: Box<dyn AccountStore>,
    /// Sending domains.
    pub domains: Box<dyn DomainStore>,
    /// Webhook endpoints.
    pub webhooks: Box<dyn WebhookStore>,
    /// Suppressed addresses.
    pub suppressions: Box<dyn SuppressionStore>,
    /// Contacts.
    pub contacts: Box<dyn ContactStore>,
    /// Segments, topics, contact properties and imports.
    pub audience: Box<dyn AudienceStore>,
    /// Templates.
    pub templates: Box<dyn TemplateStore>,
    /// Dashboard users, invitations and sessions.
    pub users: Box<dyn UserStore>,
    /// Emails: records, statuses, timelines.
    pub emails: Box<dyn EmailStore>,
    /// API request logs.
    pub request_logs: Box<dyn RequestLogStore>,
    /// Images uploaded for designs.
    pub images: Box<dyn ImageStore>,
    /// Broadcasts, their contacts' markers and their emails' counts.
    pub broadcasts: Box<dyn BroadcastStore>,
    /// Idempotency keys in flight and the answers they remember.
    pub idempotency: Box<dyn IdempotencyStore>,
    /// Counters of metrics, quotas and source addresses' days.
    pub counters: Box<dyn CounterStore>,
    /// The event outbox, webhook messages and their attempts.
    pub webhook_log: Box<dyn WebhookLog>,
    /// Record locks.
    pub locks: Box<dyn Locks>,
    /// The time the services go by (and make ids in the order of).
    pub clock: SharedClock,
}

impl Backends {
    /// Every record in PostgreSQL (`db`, its schema migrated), the node's own store
    /// keeping the spool, the event outbox and what the stores stage beside it.
    pub fn postgres(node: &Node, db: &Postgres) -> Backends {
        let store = node.store();
        let clock = store.clock().clone();
        Backends {
            accounts: Box::new(PostgresAccounts::new(db.clone())),
            domains: Box::new(PostgresDomains::new(db.clone(), store.clone())),
            webhooks: Box::new(PostgresWebhooks::new(db.clone())),
            suppressions: Box::new(PostgresSuppressions::new(db.clone(), store.clone())),
            contacts: Box::new(PostgresContacts::new(db.clone(), store.clone())),
            audience: Box::new(PostgresContacts::new(db.clone(), store.clone())),
            templates: Box::new(PostgresTemplates::new(db.clone())),
            users: Box::new(PostgresUsers::new(db.clone())),
            emails: Box::new(PostgresEmails::new(db.clone(), store.clone())),
            request_logs: Box::new(PostgresRequestLogs::new(db.clone(), clock.clone())),
            images: Box::new(PostgresImages::new(db.clone())),
            broadcasts: Box::new(PostgresBroadcasts::new(db.clone(), store.clone())),
            webhook_log: Box::new(PostgresWebhookLog::new(db.clone(), store.clone())),
            idempotency: Box::new(PostgresIdempotency::new(db.clone(), clock.clone())),
            counters: Box::new(PostgresCounters::new(db.clone(), clock.clone())),
            locks: Box::new(LocalLocks::default()),
            clock,
        }
    }

    /// Every store in the node's RocksDB.
    pub fn rocksdb(node: &Node) -> Backends {
        let store = node.store();
        Backends {
            accounts: Box::new(RocksAccounts::new(store.clone())),
            domains: Box::new(RocksDomains::new(store.clone())),
            webhooks: Box::new(RocksWebhooks::new(store.clone())),
            suppressions: Box::new(RocksSuppressions::new(store.clone())),
            contacts: Box::new(RocksContacts::new(store.clone())),
            audience: Box::new(RocksContacts::new(store.clone())),
            templates: Box::new(RocksTemplates::new(store.clone())),
            users: Box::new(RocksUsers::new(store.clone())),
            emails: Box::new(RocksEmails::new(store.clone())),
            request_logs: Box::new(RocksRequestLogs::new(store.clone())),
            images: Box::new(RocksImages::new(store.clone())),
            broadcasts: Box::new(RocksBroadcasts::new(store.clone())),
            webhook_log: Box::new(RocksWebhookLog::new(store.clone())),
            idempotency: Box::new(LocalIdempotency::new(store.clone())),
            counters: Box::new(RocksCounters::new(store.clone())),
            locks: Box::new(LocalLocks::default()),
            clock: store.clock().clone(),
        }
    }
}
