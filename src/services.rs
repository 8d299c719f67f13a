//! The services' handle: what the operations themselves (accept an email, verify a
//! domain, walk the queue, authenticate a key, ...) need, and nothing of the adapters
//! around them: no rate limiters, no blocking-pool permits, no listeners, and only the
//! sending end of the delivery engine's wake-up channel. The REST API and SMTP reach it
//! through their own state; tests build one on a store in a temp dir, without sockets.

use std::sync::{Mutex, MutexGuard, PoisonError};

use herald_queue::{Id, RecordCache, Spool, Store};

use crate::accounts::Authenticator;
use crate::config::Config;
use crate::domains::{Domain, Verifier};
use crate::emails::idempotency::Idempotency;
use crate::outbound::Outbound;

/// Decoded sending domains kept in memory: more than a host usually sends from, and the
/// cache starts over when full.
const DOMAIN_CACHE_MAX: usize = 4096;

/// What every service operation may use.
#[derive(Debug)]
pub struct Services {
    /// The validated config.
    pub config: Config,
    /// The store (records and spool share it).
    pub store: Store,
    /// The spool.
    pub spool: Spool,
    /// API key authentication.
    pub auth: Authenticator,
    /// Wakes the domain verifier.
    pub verifier: Verifier,
    /// Idempotency keys in flight.
    pub idempotency: Idempotency,
    /// The outbound HTTP client (attachment downloads, webhooks).
    pub outbound: Outbound,
    /// Sending domains as decoded for each message (submission and delivery).
    pub domains: RecordCache<Domain>,
    /// Wakes the delivery scheduler (new mail, room in flight); the engine holds the
    /// receiving end.
    delivery_wake: crossbeam_channel::Sender<()>,
    /// Serialises read-modify-write of resource records (keys, teams, domains). These
    /// writes are rare and small; one lock keeps every such change simple to reason about.
    writes: Mutex<()>,
}

impl Services {
    /// Services over `store` and `spool`, whose operator team is `operator_team`;
    /// `delivery_wake` tells the delivery engine that mail may be due.
    pub fn new(
        config: Config,
        store: Store,
        spool: Spool,
        operator_team: Id,
        outbound: Outbound,
        delivery_wake: crossbeam_channel::Sender<()>,
    ) -> Services {
        Services {
            config,
            store,
            spool,
            auth: Authenticator::new(operator_team),
            verifier: Verifier::default(),
            idempotency: Idempotency::default(),
            outbound,
            domains: RecordCache::new(DOMAIN_CACHE_MAX),
            delivery_wake,
            writes: Mutex::new(()),
        }
    }

    /// Tells the delivery scheduler that mail may be due now.
    pub fn wake_delivery(&self) {
        let _ = self.delivery_wake.try_send(());
    }

    /// Takes the lock for a read-modify-write of a resource record.
    pub fn lock_writes(&self) -> MutexGuard<'_, ()> {
        self.writes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
