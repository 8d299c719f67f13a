//! Destinations: one queue per recipient domain (and TLS requirement), drained by up to
//! `connections` connection tasks, each carrying up to `messages_per_connection`
//! messages, paced by the destination's rate (GCRA). A destination that refuses
//! connections or answers `421` is backed off as a whole: its queued and arriving pieces
//! are deferred without connecting until the back-off ends.
//!
//! A slow destination only fills its own queue and holds its own connections; every other
//! destination has its own.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use herald_queue::Timestamp;
use tokio::sync::Notify;

use super::Shared;
use super::client::{Connection, ConnectionError, TlsChoice};
use super::job::{Piece, Via};
use super::reply::Reply;
use super::route::{self, NoRoute};
use crate::config::DestinationLimits;
use crate::limits::{Lease, Pacer};

/// Destinations kept before idle ones (no queue, no connection, no back-off) are dropped.
const PRUNE_AT: usize = 4_096;

/// Every destination with queued work or open connections.
#[derive(Default)]
pub struct Destinations {
    map: Mutex<HashMap<(String, bool), Arc<Destination>>>,
}

/// One destination.
pub struct Destination {
    domain: String,
    tls_required: bool,
    limits: DestinationLimits,
    /// The destination's name for shared limits: domain, and whether TLS is required.
    key: String,
    pacer: Option<Box<dyn Pacer>>,
    state: Mutex<State>,
    wake: Notify,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Piece>,
    active: usize,
    /// One lease per connection task (`active`), from the shared destination limits.
    leases: Vec<Lease>,
    idle: usize,
    backoff: Option<(Timestamp, Reply)>,
}

impl Destinations {
    /// Queues `piece` for `domain`, starting a connection when the limits allow.
    pub fn push(&self, shared: &Arc<Shared>, domain: &str, tls_required: bool, piece: Piece) {
        let destination = {
            let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
            if map.len() >= PRUNE_AT {
                let now = shared.state.store().now();
                map.retain(|_, d| !d.is_idle(now));
            }
            Arc::clone(map.entry((domain.to_owned(), tls_required)).or_insert_with(|| {
                let limits = shared.state.config().delivery.limits_for(domain);
                let key = format!("{domain}/{}", if tls_required { "tls" } else { "any" });
                let pacer = limits
                    .rate
                    .map(|rate| shared.state.destination_limits().pacer(&key, rate));
                Arc::new(Destination {
                    domain: domain.to_owned(),
                    tls_required,
                    limits,
                    key,
                    pacer,
                    state: Mutex::new(State::default()),
                    wake: Notify::new(),
                })
            }))
        };
        let mut state = destination.lock();
        if let Some((until, reply)) = &state.backoff {
            if *until > shared.state.store().now() {
                let reply = reply.clone();
                drop(state);
                piece.complete_all(&reply, None);
                return;
            }
            state.backoff = None;
        }
        state.queue.push_back(piece);
        if state.idle > 0 {
            destination.wake.notify_one();
        }
        let lease = (state.queue.len() > state.idle && state.active < destination.limits.connections)
            .then(|| {
                shared
                    .state
                    .destination_limits()
                    .lease(&destination.key, destination.limits.connections)
            })
            .flatten();
        if let Some(lease) = lease {
            state.active += 1;
            state.leases.push(lease);
            drop(state);
            let shared_task = Arc::clone(shared);
            let destination = Arc::clone(&destination);
            shared.sessions.fetch_add(1, Ordering::AcqRel);
            shared.runtime.spawn(async move {
                let _session = SessionGuard(Arc::clone(&shared_task));
                destination.run(&shared_task).await;
            });
        }
    }

    /// Drops every queued piece (shutdown): their recipients stay as the spool has them.
    pub fn clear(&self) {
        let map = std::mem::take(&mut *self.map.lock().unwrap_or_else(PoisonError::into_inner));
        for destination in map.into_values() {
            let queue = std::mem::take(&mut destination.lock().queue);
            drop(queue);
        }
    }
}

/// Counts a connection task out when it ends, however it ends.
struct SessionGuard(Arc<Shared>);

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.0.sessions.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Destination {
    fn is_idle(&self, now: Timestamp) -> bool {
        let state = self.lock();
        state.queue.is_empty() && state.active == 0 && state.backoff.as_ref().is_none_or(|(until, _)| *until <= now)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One connection's life: take pieces until the queue stays empty for the idle
    /// timeout, reconnecting after `messages_per_connection` messages.
    async fn run(self: Arc<Self>, shared: &Arc<Shared>) {
        let mut connection: Option<Connection> = None;
        let mut sent = 0u32;
        while let Some(piece) = self.next(shared, connection.is_some()).await {
            if shared.is_stopping() {
                drop(piece);
                continue;
            }
            self.pace().await;
            if shared.is_stopping() {
                drop(piece);
                continue;
            }
            if connection.is_none() {
                match self.connect(shared).await {
                    Ok(opened) => {
                        connection = Some(opened);
                        sent = 0;
                    }
                    Err(NoRoute::Permanent(reply)) => {
                        piece.complete_all(&reply, None);
                        continue;
                    }
                    Err(NoRoute::Temporary(reply)) => {
                        piece.complete_all(&reply, None);
                        self.back_off(shared, &reply);
                        continue;
                    }
                }
            }
            if shared.is_stopping() {
                drop(piece);
                continue;
            }
            let Some(open) = connection.as_mut() else { continue };
            let via = Via {
                host: open.host.clone(),
                ip: Some(open.ip),
                tls: open.tls.clone(),
            };
            let addresses = piece.addresses();
            let job = piece.job();
            let sender = job.sender.clone();
            let message = Arc::clone(&job.message);
            let mut result = open.send(&sender, &addresses, &message).await;
            if result.is_err() && sent > 0 && !open.data_sent {
                // A reused connection the server had closed in the meantime: nothing of
                // this message went out, so one fresh connection gets it.
                connection = None;
                if let Ok(fresh) = self.connect(shared).await {
                    sent = 0;
                    result = connection.insert(fresh).send(&sender, &addresses, &message).await;
                }
            }
            let broken = connection.as_ref().is_none_or(|c| c.broken);
            match result {
                Ok(replies) => {
                    let closing = replies.iter().find(|r| r.code == 421).cloned();
                    piece.complete(replies, Some(&via));
                    sent += 1;
                    if broken {
                        connection = None;
                    }
                    if let Some(reply) = closing {
                        connection = None;
                        self.back_off(shared, &reply);
                    }
                }
                Err(error) => {
                    tracing::debug!(domain = %self.domain, %error, "transaction failed");
                    let reply = error.to_reply();
                    piece.complete_all(&reply, Some(&via));
                    connection = None;
                    if let ConnectionError::Refused(refusal) = error
                        && refusal.code == 421
                    {
                        self.back_off(shared, &refusal);
                    }
                }
            }
            if sent >= self.limits.messages_per_connection
                && let Some(done) = connection.take()
            {
                done.quit().await;
            }
        }
        if let Some(done) = connection {
            done.quit().await;
        }
    }

    /// The next piece, waiting up to the idle timeout while a connection is open. `None`
    /// ends the task (and counts it out under the same lock, so a piece queued at that
    /// moment starts a new task instead of waiting for this one).
    async fn next(&self, shared: &Shared, open: bool) -> Option<Piece> {
        let idle_timeout = shared.state.config().delivery.idle_timeout;
        let deadline = tokio::time::Instant::now() + idle_timeout;
        loop {
            // Registered before the stop flag is read, so a stop in between still wakes it.
            let stopped = shared.stop.notified();
            tokio::pin!(stopped);
            stopped.as_mut().enable();
            {
                let mut state = self.lock();
                if let Some(piece) = state.queue.pop_front() {
                    return Some(piece);
                }
                if !open || shared.is_stopping() || tokio::time::Instant::now() >= deadline {
                    state.active -= 1;
                    state.leases.pop();
                    return None;
                }
                state.idle += 1;
            }
            tokio::select! {
                () = self.wake.notified() => {}
                () = stopped => {}
                () = tokio::time::sleep_until(deadline) => {}
            }
            self.lock().idle -= 1;
        }
    }

    /// Waits for the destination's rate to allow one more message.
    async fn pace(&self) {
        let Some(pacer) = &self.pacer else { return };
        // Messages are spread evenly at the destination's rate, on the injected clock.
        while let Err(wait) = pacer.take() {
            tokio::time::sleep(wait).await;
        }
    }

    /// Connects to the first MX address that answers, in preference order.
    async fn connect(&self, shared: &Shared) -> Result<Connection, NoRoute> {
        let config = shared.state.config();
        let route = route::resolve(&shared.dns, &config.delivery, &self.domain).await?;
        let tls = TlsChoice {
            required: self.tls_required,
            ..shared.tls.clone()
        };
        let login = config
            .delivery
            .relay
            .as_ref()
            .and_then(|relay| relay.credentials.as_ref())
            .map(|(user, password)| (user.as_str(), password.expose()));
        let mut last = None;
        let mut any_address = false;
        let mut any_temporary = false;
        for host in &route.hosts {
            let addresses = match route::addresses(&shared.dns, host, route.port).await {
                Ok(addresses) => addresses,
                Err(NoRoute::Permanent(reply)) => {
                    last = Some(reply);
                    continue;
                }
                Err(NoRoute::Temporary(reply)) => {
                    any_temporary = true;
                    last = Some(reply);
                    continue;
                }
            };
            any_address = true;
            for address in addresses {
                match Connection::open(
                    host,
                    address,
                    &config.server.hostname,
                    &tls,
                    login,
                    (config.delivery.connect_timeout, config.delivery.command_timeout),
                )
                .await
                {
                    Ok(connection) => return Ok(connection),
                    Err(ConnectionError::Tls(why)) if !self.tls_required => {
                        // Opportunistic TLS: a receiver whose TLS is broken still gets its
                        // mail, in plaintext, as it would without STARTTLS at all.
                        tracing::info!(domain = %self.domain, %host, %address, %why, "STARTTLS failed; retrying in plaintext");
                        let plain = TlsChoice {
                            plaintext: true,
                            ..tls.clone()
                        };
                        match Connection::open(
                            host,
                            address,
                            &config.server.hostname,
                            &plain,
                            login,
                            (config.delivery.connect_timeout, config.delivery.command_timeout),
                        )
                        .await
                        {
                            Ok(connection) => return Ok(connection),
                            Err(error) => last = Some(error.to_reply()),
                        }
                    }
                    Err(error) => {
                        tracing::debug!(domain = %self.domain, %host, %address, %error, "MX attempt failed");
                        last = Some(error.to_reply());
                    }
                }
            }
        }
        let reply = last.unwrap_or_else(|| Reply::local(451, "4.4.0", "no MX host could be tried"));
        if any_address || any_temporary || reply.is_transient() {
            // Unreachable hosts are a temporary failure whatever they answered.
            let reply = if reply.is_transient() {
                reply
            } else {
                Reply::local(451, "4.4.1", &format!("no MX host accepted a connection: {reply}"))
            };
            Err(NoRoute::Temporary(reply))
        } else {
            Err(NoRoute::Permanent(reply))
        }
    }

    /// Defers everything queued and everything arriving for a while.
    fn back_off(&self, shared: &Shared, reply: &Reply) {
        let wait = shared
            .state
            .config()
            .delivery
            .retry_intervals
            .first()
            .copied()
            .unwrap_or(Duration::from_secs(60));
        let reply = Reply::local(451, "4.4.5", &format!("{} is backed off after: {reply}", self.domain));
        tracing::info!(domain = %self.domain, ?wait, %reply, "destination backed off");
        metrics::counter!("herald_delivery_backoffs_total").increment(1);
        let queued = {
            let mut state = self.lock();
            state.backoff = Some((shared.state.store().now().saturating_add(wait), reply.clone()));
            std::mem::take(&mut state.queue)
        };
        for piece in queued {
            piece.complete_all(&reply, None);
        }
    }
}
