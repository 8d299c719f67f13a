//! The services' handle: what the operations themselves (accept an email, verify a
//! domain, walk the queue, authenticate a key, ...) need, and nothing of the adapters
//! around them: no rate limiters, no blocking-pool permits, no listeners, and only the
//! sending end of the delivery engine's wake-up channel. The REST API and SMTP reach it
//! through their own state; tests build one on a store in a temp dir, without sockets.

mod error;
pub mod outbox;

pub use crate::storage::Backends;
pub use crate::storage::locks::{self, Held, LocalLocks, Locks, RecordName};
pub use error::{Error, parse_id, required_text};

use std::sync::{Mutex, PoisonError};

use herald_queue::{Id, IdGenerator, SharedClock, Spool};

use crate::accounts::{AccountStore, Authenticator};
use crate::broadcasts::BroadcastStore;
use crate::config::Config;
use crate::contacts::{AudienceStore, ContactStore};
use crate::counters::CounterStore;
use crate::domains::DomainStore;
use crate::emails::EmailStore;
use crate::emails::idempotency::Idempotency;
use crate::images::ImageStore;
use crate::limits::{DestinationLimits, LocalDestinations};
use crate::logs::RequestLogStore;
use crate::outbound::Outbound;
use crate::storage::Node;
use crate::suppressions::SuppressionStore;
use crate::templates::TemplateStore;
use crate::users::store::UserStore;
use crate::wake::Wake;
use crate::webhooks::{WebhookLog, WebhookStore};

/// What every service operation may use.
#[derive(Debug)]
pub struct Services {
    /// The validated config.
    config: Config,
    /// The node's own storage (the spool's, and the records' on a node on its own).
    node: Node,
    /// The spool.
    spool: Spool,
    /// API key authentication.
    auth: Authenticator,
    /// Wakes the domain verifier.
    verifier_wake: Wake,
    /// Idempotency keys in flight.
    idempotency: Idempotency,
    /// The outbound HTTP client (attachment downloads, webhooks).
    outbound: Outbound,
    /// Sending domains.
    domains: Box<dyn DomainStore>,
    /// Webhook endpoints.
    webhooks: Box<dyn WebhookStore>,
    /// Suppressed addresses.
    suppressions: Box<dyn SuppressionStore>,
    /// Contacts.
    contacts: Box<dyn ContactStore>,
    audience: Box<dyn AudienceStore>,
    templates: Box<dyn TemplateStore>,
    /// Dashboard users, invitations and sessions.
    users: Box<dyn UserStore>,
    /// Emails: records, statuses, timelines.
    email_store: Box<dyn EmailStore>,
    /// API request logs.
    request_logs: Box<dyn RequestLogStore>,
    /// Images uploaded for designs.
    images: Box<dyn ImageStore>,
    /// Broadcasts, their contacts' markers and their emails' counts.
    broadcasts: Box<dyn BroadcastStore>,
    /// The event outbox, webhook messages and their attempts.
    webhook_log: Box<dyn WebhookLog>,
    /// Counters of metrics, quotas and source addresses' days.
    counters: Box<dyn CounterStore>,
    tracking: std::sync::OnceLock<crate::tracking::Signer>,
    /// When loading the tracking key last failed; held while it is being loaded.
    tracking_failed: Mutex<Option<herald_queue::Timestamp>>,
    /// The return-path hosts inbound bounces and complaints may be sent to.
    return_paths: crate::feedback::ReturnPaths,
    import_wake: Wake,
    /// Wakes the broadcast worker (a broadcast sent).
    broadcast_wake: Wake,
    /// Serialises changes of a broadcast's status (send, cancel) with the worker's pages.
    broadcast_lock: Mutex<()>,
    /// Per-destination pacing and connection leases.
    destinations: Box<dyn DestinationLimits>,
    /// Wakes the webhook dispatcher's due runner (a message armed to be sent now).
    webhook_wake: Wake,
    /// Teams and API keys.
    accounts: Box<dyn AccountStore>,
    /// Wakes the delivery scheduler (new mail, a message released by the operator).
    delivery_wake: Wake,
    /// Each team's emails this day and month, against its plan.
    quotas: crate::quotas::Quotas,
    /// The regions' source addresses: their turns, connections and warm-up counts.
    regions: crate::regions::Regions,
    /// Wakes the erasure of deleted teams.
    erasure_wake: Wake,
    /// Serialises read-modify-write of one record at a time (see
    /// [`Services::lock_record`]).
    locks: Box<dyn Locks>,
    /// The time.
    clock: SharedClock,
    /// New ids, in the order of `clock`.
    ids: IdGenerator,
}

/// How long after a failed load of the tracking key it is tried again: a disk error or a
/// wrong permission, once mended, needs no restart.
const TRACKING_KEY_RETRY: std::time::Duration = std::time::Duration::from_secs(60);

impl Services {
    /// Services over `node` and `spool`, whose operator team is `operator_team`, with
    /// every record in the node's store ([`Backends::rocksdb`]).
    pub fn new(config: Config, node: Node, spool: Spool, operator_team: Id, outbound: Outbound) -> Services {
        let backends = Backends::rocksdb(&node);
        Services::assemble(config, backends, node, spool, operator_team, outbound)
    }

    /// Services whose records are kept in `backends`, the spool in `node`.
    pub fn assemble(
        config: Config,
        backends: Backends,
        node: Node,
        spool: Spool,
        operator_team: Id,
        outbound: Outbound,
    ) -> Services {
        let destinations = LocalDestinations::new(backends.clock.clone());
        let regions = crate::regions::Regions::new(&config, &destinations);
        let Backends {
            accounts,
            domains,
            webhooks,
            suppressions,
            contacts,
            audience,
            templates,
            users,
            emails,
            request_logs,
            images,
            broadcasts,
            webhook_log,
            idempotency,
            counters,
            locks,
            clock,
        } = backends;
        Services {
            accounts,
            idempotency: Idempotency::with_store(idempotency),
            domains,
            webhooks,
            suppressions,
            contacts,
            audience,
            templates,
            users,
            email_store: emails,
            request_logs,
            images,
            broadcasts,
            webhook_log,
            counters,
            tracking: std::sync::OnceLock::new(),
            tracking_failed: Mutex::new(None),
            return_paths: crate::feedback::ReturnPaths::default(),
            import_wake: Wake::default(),
            broadcast_wake: Wake::default(),
            broadcast_lock: Mutex::new(()),
            destinations: Box::new(destinations),
            regions,
            webhook_wake: Wake::default(),
            config,
            node,
            spool,
            auth: Authenticator::new(operator_team),
            verifier_wake: Wake::default(),
            outbound,
            delivery_wake: Wake::default(),
            quotas: crate::quotas::Quotas::default(),
            erasure_wake: Wake::default(),
            locks,
            clock,
            ids: IdGenerator::default(),
        }
    }

    /// Whether `team` is the operator's, which sees what the host as a whole does.
    pub fn is_operator_team(&self, team: Id) -> bool {
        self.auth.operator_team() == team
    }

    /// The regions' source addresses.
    pub fn regions(&self) -> &crate::regions::Regions {
        &self.regions
    }

    /// Each team's emails this day and month.
    pub fn quotas(&self) -> &crate::quotas::Quotas {
        &self.quotas
    }

    /// The plan `team` is on, if it has one that `[[plans]]` still names.
    pub fn plan_of(&self, team: Id) -> Result<Option<&crate::config::Plan>, crate::storage::Error> {
        let Some(name) = self.accounts.team(team)?.and_then(|t| t.plan) else {
            return Ok(None);
        };
        Ok(self.config.plans.iter().find(|plan| plan.name == name))
    }

    /// The time now, on the services' clock.
    pub fn now(&self) -> herald_queue::Timestamp {
        self.clock.now()
    }

    /// A new id, time-ordered.
    pub fn next_id(&self) -> Id {
        self.ids.next(self.clock.now())
    }

    /// Dashboard users, invitations and sessions.
    pub fn users(&self) -> &dyn UserStore {
        &*self.users
    }

    /// Commits `change` durably: its writes, staged through the stores, land at once or
    /// not at all.
    pub fn commit(&self, change: crate::storage::Change) -> Result<(), crate::storage::Error> {
        self.node.commit(change)
    }

    /// API request logs.
    pub fn request_logs(&self) -> &dyn RequestLogStore {
        &*self.request_logs
    }

    /// Images uploaded for designs.
    pub fn images(&self) -> &dyn ImageStore {
        &*self.images
    }

    /// Broadcasts, their contacts' markers and their emails' counts.
    pub fn broadcasts(&self) -> &dyn BroadcastStore {
        &*self.broadcasts
    }

    /// The event outbox, webhook messages and their attempts.
    pub fn webhook_log(&self) -> &dyn WebhookLog {
        &*self.webhook_log
    }

    /// Counters of metrics, quotas and source addresses' days.
    pub fn counters(&self) -> &dyn CounterStore {
        &*self.counters
    }

    /// The source addresses' days as counted now.
    pub fn today(&self) -> crate::regions::Today<'_> {
        crate::regions::Today {
            counters: self.counters(),
            now: self.now(),
        }
    }

    /// Emails: records, statuses, timelines and the index by status.
    pub fn emails(&self) -> &dyn EmailStore {
        &*self.email_store
    }

    /// The validated config.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The node's own storage: the spool's due queue, the disk's health, table sizes.
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// The spool.
    pub fn spool(&self) -> &Spool {
        &self.spool
    }

    /// Wakes the domain verifier ([`crate::domains::verifier::run`]): a check is due now.
    pub fn verifier_wake(&self) -> &Wake {
        &self.verifier_wake
    }

    /// Idempotency keys in flight and remembered.
    pub fn idempotency(&self) -> &Idempotency {
        &self.idempotency
    }

    /// The outbound HTTP client (attachment downloads, webhooks).
    pub fn outbound(&self) -> &Outbound {
        &self.outbound
    }

    /// Sending domains.
    pub fn domains(&self) -> &dyn DomainStore {
        &*self.domains
    }

    /// Webhook endpoints.
    pub fn webhooks(&self) -> &dyn WebhookStore {
        &*self.webhooks
    }

    /// Suppressed addresses.
    pub fn suppressions(&self) -> &dyn SuppressionStore {
        &*self.suppressions
    }

    /// Contacts.
    pub fn contacts(&self) -> &dyn ContactStore {
        &*self.contacts
    }

    /// Templates.
    pub fn templates(&self) -> &dyn TemplateStore {
        &*self.templates
    }

    /// The return-path hosts of verified domains, for inbound mail.
    pub fn return_paths(&self) -> &crate::feedback::ReturnPaths {
        &self.return_paths
    }

    /// The signer of tracking URLs, with the key in the data directory (made on first
    /// use); `None`, logged once, when the key cannot be read or made: mail then goes
    /// untracked rather than not at all.
    pub fn tracking_signer(&self) -> Option<&crate::tracking::Signer> {
        if let Some(signer) = self.tracking.get() {
            return Some(signer);
        }
        // One loader at a time: two could otherwise both make a key, and one would fail.
        let mut failed = self.tracking_failed.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(signer) = self.tracking.get() {
            return Some(signer);
        }
        let now = self.now();
        if failed.is_some_and(|at| now.saturating_since(at) < TRACKING_KEY_RETRY) {
            return None;
        }
        match crate::tracking::Signer::load(&self.config.server.data_dir) {
            Ok(signer) => {
                if failed.take().is_some() {
                    tracing::info!("the tracking key is loaded: tracking and unsubscribe links are back");
                }
                Some(self.tracking.get_or_init(|| signer))
            }
            Err(error) => {
                tracing::error!(%error, retry = ?TRACKING_KEY_RETRY, "cannot load the tracking key; mail goes untracked and without unsubscribe links until it loads");
                *failed = Some(now);
                None
            }
        }
    }

    /// Segments, topics, contact property definitions and imports.
    pub fn audience(&self) -> &dyn AudienceStore {
        &*self.audience
    }

    /// Wakes the contact import worker ([`crate::contacts::imports::worker::run`]).
    pub fn import_wake(&self) -> &Wake {
        &self.import_wake
    }

    /// Wakes the broadcast worker.
    pub fn broadcast_wake(&self) -> &Wake {
        &self.broadcast_wake
    }

    /// Held while a broadcast's status changes or a page of it is written.
    pub fn broadcast_lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.broadcast_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Per-destination pacing and connection leases.
    pub fn destination_limits(&self) -> &dyn DestinationLimits {
        &*self.destinations
    }

    /// Wakes the erasure of deleted teams ([`crate::accounts::erasure`]).
    pub fn erasure_wake(&self) -> &Wake {
        &self.erasure_wake
    }

    /// Wakes the webhook dispatcher's due runner.
    pub fn webhook_wake(&self) -> &Wake {
        &self.webhook_wake
    }

    /// Teams and API keys.
    pub fn accounts(&self) -> &dyn AccountStore {
        &*self.accounts
    }

    /// The caller whose API key `token` is (see [`Authenticator::authenticate`]).
    pub fn authenticate(&self, token: &str) -> Result<crate::accounts::Caller, crate::accounts::AuthError> {
        self.auth.authenticate(&*self.accounts, token, self.now())
    }

    /// The caller the key `key_id` of team `team_id` makes, as it is now (`None` once the
    /// key is deleted), without a token: for clients herald trusts by their network.
    pub fn caller_for_key(
        &self,
        team_id: Id,
        key_id: Id,
    ) -> Result<Option<crate::accounts::Caller>, crate::storage::Error> {
        Ok(self.accounts.key(team_id, key_id)?.map(|key| self.auth.caller_of(&key)))
    }

    /// The team of the API key `key_id`, read across teams (a start-time lookup).
    pub fn team_of_key(&self, key_id: Id) -> Result<Option<Id>, crate::storage::Error> {
        for team in self.accounts.teams()? {
            if self.accounts.key(team.id, key_id)?.is_some() {
                return Ok(Some(team.id));
            }
        }
        Ok(None)
    }

    /// Tells the delivery scheduler that mail may be due now.
    pub fn wake_delivery(&self) {
        self.delivery_wake.wake();
    }

    /// The handle that wakes the delivery scheduler, for the engine's runner.
    pub fn delivery_wake(&self) -> &Wake {
        &self.delivery_wake
    }

    /// Locks `record` for a read-modify-write: another change of the same record waits
    /// until the answer drops; changes of other records do not. A change takes one
    /// record lock at a time, so they cannot deadlock.
    pub fn lock_record(&self, record: RecordName<'_>) -> Held<'_> {
        self.locks.lock(record)
    }

    /// Locks the email record under `key` (see [`crate::emails::lock`]).
    pub fn lock_email(&self, key: &[u8]) -> Held<'_> {
        self.locks.lock(RecordName {
            table: locks::EMAILS,
            key,
        })
    }

    /// Locks many email records at once, for a change that writes them all in one commit
    /// (delivery outcomes). Other changes hold one email lock at a time, and take it
    /// before any spool stripe as this caller does, so none of them can deadlock.
    pub fn lock_emails<'a>(&self, keys: impl IntoIterator<Item = &'a [u8]>) -> Held<'_> {
        self.locks.lock_many(locks::EMAILS, &mut keys.into_iter())
    }
}
