//! Destinations: one queue per recipient domain, region it is reached from (each with its
//! own source addresses, so its own limits) and TLS requirement, drained by up to
//! `connections` connection tasks, each carrying up to `messages_per_connection`
//! messages, paced by the destination's rate (GCRA). A destination that refuses
//! connections or answers `421` is backed off as a whole: its queued and arriving pieces
//! are deferred without connecting until the back-off ends.
//!
//! A slow destination only fills its own queue and holds its own connections; every other
//! destination has its own.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use herald_queue::Timestamp;
use tokio::sync::Notify;

use super::Shared;
use super::client::{Connection, ConnectionError, Group, TlsChoice};
use super::job::{Piece, Via};
use super::reply::Reply;
use super::route::{self, NoRoute};
use crate::config::DestinationLimits;
use crate::limits::{Lease, Pacer};
use crate::regions::{Pick, RegionState, SourceLease};

/// Destinations kept before idle ones (no queue, no connection, no back-off) are dropped.
const PRUNE_AT: usize = 4_096;

/// Every destination with queued work or open connections.
#[derive(Default)]
pub struct Destinations {
    map: Mutex<HashMap<Key, Arc<Destination>>>,
}

/// A destination: the region mail leaves from, the recipient domain, and whether TLS is
/// required.
type Key = (String, String, bool);

/// One destination: one recipient domain, reached from one region.
pub struct Destination {
    region: Arc<RegionState>,
    domain: String,
    tls_required: bool,
    limits: DestinationLimits,
    /// The destination's name for shared limits: region, domain, and whether TLS is
    /// required.
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
    /// Queues `piece` for `domain` from `region`, starting a connection when the limits
    /// allow.
    pub fn push(&self, shared: &Arc<Shared>, region: &str, domain: &str, tls_required: bool, piece: Piece) {
        let destination = {
            let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
            if map.len() >= PRUNE_AT {
                let now = shared.state.now();
                map.retain(|_, d| !d.is_idle(now));
            }
            let config = shared.state.config();
            let region = shared.state.regions().get(config, region);
            let entry = (region.name().to_owned(), domain.to_owned(), tls_required);
            Arc::clone(map.entry(entry).or_insert_with(|| {
                let limits = config.delivery.limits_for(domain);
                let key = format!(
                    "{}/{domain}/{}",
                    region.name(),
                    if tls_required { "tls" } else { "any" }
                );
                let pacer = limits
                    .rate
                    .map(|rate| shared.state.destination_limits().pacer(&key, rate));
                Arc::new(Destination {
                    region,
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
            if *until > shared.state.now() {
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

/// An open connection, the source address it holds, and the messages it has carried.
struct Open {
    connection: Connection,
    source: Option<SourceLease>,
    sent: u32,
}

impl Open {
    fn new(connection: Connection, source: Option<SourceLease>) -> Open {
        Open {
            connection,
            source,
            sent: 0,
        }
    }

    /// Where the next transaction over it goes.
    fn via(&self) -> Via {
        /// Transactions started in this process.
        static TRANSACTIONS: AtomicU64 = AtomicU64::new(0);
        Via {
            transaction: TRANSACTIONS.fetch_add(1, Ordering::Relaxed),
            host: self.connection.host.clone(),
            ip: Some(self.connection.ip),
            source: self.source.as_ref().map(SourceLease::ip),
            tls: self.connection.tls.clone(),
        }
    }
}

/// Why no connection is ready for a piece.
enum Unready {
    /// No route now (temporary: the destination is backed off) or ever.
    Route(NoRoute),
    /// Every source address of the region has used its day's warm-up limit.
    Spent,
    /// Delivery is stopping.
    Stopping,
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
    /// timeout, reconnecting after `messages_per_connection` messages. A piece queued
    /// when a message's data goes out follows it on the connection, its commands in the
    /// same write ([`Destination::follow`]).
    async fn run(self: Arc<Self>, shared: &Arc<Shared>) {
        let mut open: Option<Open> = None;
        // A piece whose commands went out behind the last message, on `open`.
        let mut carried: Option<Piece> = None;
        loop {
            let (piece, following) = match carried.take() {
                Some(piece) => (piece, true),
                None => match self.next(shared, open.is_some()).await {
                    Some(piece) => (piece, false),
                    None => break,
                },
            };
            let piece = if following {
                piece
            } else {
                match self.admit(shared, &mut open, piece).await {
                    Some(piece) => piece,
                    None => continue,
                }
            };
            let Some(current) = open.as_mut() else { continue };
            let mut via = current.via();
            let addresses = piece.addresses();
            let job = piece.job();
            let sender = job.sender.clone();
            let message = Arc::clone(&job.message);
            let mut next: Option<Piece> = None;
            let may_follow = current.sent.saturating_add(2) <= self.limits.messages_per_connection;
            let Open { connection, source, .. } = current;
            let day = source.as_ref().map(SourceLease::day);
            let mut result = connection
                .send(&sender, &addresses, &message, |connection| {
                    may_follow
                        .then(|| self.follow(shared, connection, source.as_ref(), &mut next))
                        .flatten()
                })
                .await;
            if result.is_err() && current.sent > 0 && !current.connection.data_sent {
                // A reused connection the server had closed in the meantime: nothing of
                // this message went out, so one fresh connection gets it (and its
                // address's day gets back the message it counted).
                if let Some(source) = &current.source {
                    source.give_back(shared.state.today());
                }
                open = None;
                if self.ready(shared, &mut open).await.is_ok()
                    && let Some(fresh) = open.as_mut()
                {
                    via = fresh.via();
                    result = fresh.connection.send(&sender, &addresses, &message, |_| None).await;
                }
            }
            let broken = open.as_ref().is_none_or(|o| o.connection.broken);
            if let Some(next) = next {
                // It follows on this connection if its commands went out and the
                // connection carries on; otherwise it goes back to the front of the
                // queue, its address's day given back.
                let closing = result
                    .as_ref()
                    .map_or(true, |replies| replies.iter().any(|r| r.code == 421));
                if !broken && !closing && open.as_ref().is_some_and(|o| o.connection.grouped) {
                    carried = Some(next);
                } else {
                    if let Some(day) = &day {
                        day.give_back(shared.state.today());
                    }
                    self.lock().queue.push_front(next);
                }
            }
            match result {
                Ok(replies) => {
                    let closing = replies.iter().find(|r| r.code == 421).cloned();
                    piece.complete(replies, Some(&via));
                    if let Some(current) = open.as_mut() {
                        current.sent += 1;
                    }
                    if broken {
                        open = None;
                    }
                    if let Some(reply) = closing {
                        open = None;
                        self.back_off(shared, &reply);
                    }
                }
                Err(error) => {
                    tracing::debug!(domain = %self.domain, %error, "transaction failed");
                    let reply = error.to_reply();
                    piece.complete_all(&reply, Some(&via));
                    open = None;
                    if let ConnectionError::Refused(refusal) = error
                        && refusal.code == 421
                    {
                        self.back_off(shared, &refusal);
                    }
                }
            }
            if open
                .as_ref()
                .is_some_and(|o| o.sent >= self.limits.messages_per_connection)
                && let Some(done) = open.take()
            {
                done.connection.quit().await;
            }
        }
        if let Some(done) = open {
            done.connection.quit().await;
        }
    }

    /// Takes `piece` through what comes before its transaction: the region's day, the
    /// destination's rate, a connection whose address may send it, and the address's
    /// rate. `None` when it went another way (held, completed, or dropped at a stop).
    async fn admit(&self, shared: &Shared, open: &mut Option<Open>, piece: Piece) -> Option<Piece> {
        if shared.is_stopping() {
            return None;
        }
        if self.region.all_spent(shared.state.today()) {
            // Every address has sent its day: the piece waits for the next UTC day
            // without taking a turn of the destination's rate or a lookup.
            self.hold(shared, piece);
            return None;
        }
        self.pace().await;
        if shared.is_stopping() {
            return None;
        }
        match self.ready(shared, open).await {
            Ok(()) => {}
            Err(Unready::Stopping) => return None,
            Err(Unready::Route(NoRoute::Permanent(reply))) => {
                piece.complete_all(&reply, None);
                return None;
            }
            Err(Unready::Spent) => {
                self.hold(shared, piece);
                return None;
            }
            Err(Unready::Route(NoRoute::Temporary(reply))) => {
                piece.complete_all(&reply, None);
                self.back_off(shared, &reply);
                return None;
            }
        }
        if shared.is_stopping() {
            return None;
        }
        if let Some(source) = open.as_ref().and_then(|o| o.source.as_ref()) {
            source.pace().await;
        }
        Some(piece)
    }

    /// The piece to follow the message whose data goes out on `connection` now, taken
    /// into `next`, and its commands to go out with that data: only a piece already
    /// queued that passes everything [`Destination::admit`] asks without waiting (the
    /// destination's and the address's rates allow it now, the address has a message of
    /// its day left), and whose commands the server takes pipelined. Anything else stays
    /// queued for the next turn.
    fn follow(
        &self,
        shared: &Shared,
        connection: &Connection,
        source: Option<&SourceLease>,
        next: &mut Option<Piece>,
    ) -> Option<Group> {
        if shared.is_stopping() || self.region.all_spent(shared.state.today()) {
            return None;
        }
        let piece = self.lock().queue.pop_front()?;
        let Ok(Some(group)) = connection.group(&piece.job().sender, &piece.addresses(), &piece.job().message) else {
            // No pipelining, or refused before anything is sent: its own turn says why.
            self.lock().queue.push_front(piece);
            return None;
        };
        let rate = self.pacer.as_ref().is_none_or(|pacer| pacer.take().is_ok());
        let admitted = rate && source.is_none_or(|source| source.try_pace() && source.take(shared.state.today()));
        if !admitted {
            self.lock().queue.push_front(piece);
            return None;
        }
        metrics::counter!("herald_delivery_pipelined_transactions_total").increment(1);
        *next = Some(piece);
        Some(group)
    }

    /// Makes `open` a connection whose source address may send one more message today:
    /// a bound address that has used its warm-up limit closes its connection, and the
    /// message goes from another of the region's addresses, or waits for tomorrow's.
    async fn ready(&self, shared: &Shared, open: &mut Option<Open>) -> Result<(), Unready> {
        for _ in 0..=self.region.sources().len() {
            if open.is_none() {
                *open = Some(self.connect(shared).await?);
            }
            match open.as_ref().and_then(|o| o.source.as_ref()) {
                Some(source) if !source.take(shared.state.today()) => {
                    if let Some(done) = open.take() {
                        done.connection.quit().await;
                    }
                }
                _ => return Ok(()),
            }
        }
        Err(Unready::Spent)
    }

    /// Holds `piece` until the next UTC day: its region has no address left for today.
    fn hold(&self, shared: &Shared, piece: Piece) {
        let reply = Reply::local(
            451,
            "4.4.5",
            &format!(
                "every source address of region {} has sent its warm-up limit for today (UTC)",
                self.region.name()
            ),
        );
        let until = crate::regions::resume_at(shared.state.now(), piece.job().id);
        piece.hold_all(&reply, until);
    }

    /// A source address of the region for a connection to an address of `ipv4`'s family
    /// (or IPv6's), waiting while every one holds all its connections.
    async fn bind(&self, shared: &Shared, ipv4: bool) -> Pick {
        loop {
            if shared.is_stopping() {
                return Pick::Busy;
            }
            if let Some(pick) = self.region.pick_or_wait(shared.state.today(), ipv4).await {
                return pick;
            }
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

    /// Connects to the first MX address that answers, in preference order, from the
    /// region's next source address of the same family.
    async fn connect(&self, shared: &Shared) -> Result<Open, Unready> {
        let config = shared.state.config();
        let region = config.region(self.region.name());
        let relay = config.relay_of(region);
        let ehlo = config.ehlo_of(region);
        let route = route::resolve(&shared.dns, relay, config.delivery.mx_port, &self.domain)
            .await
            .map_err(Unready::Route)?;
        let tls = TlsChoice {
            required: self.tls_required,
            ..shared.tls.clone()
        };
        let login = relay
            .and_then(|relay| relay.credentials.as_ref())
            .map(|(user, password)| (user.as_str(), password.expose()));
        let timeouts = (config.delivery.connect_timeout, config.delivery.command_timeout);
        let mut last = None;
        let mut any_address = false;
        let mut any_temporary = false;
        // Whether an address of the region had used its day, and whether any connection
        // was tried: a day's limit alone defers without backing the destination off.
        let (mut spent, mut tried) = (false, false);
        let mut source: Option<SourceLease> = None;
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
                let ipv4 = address.is_ipv4();
                // Another source address after one this host could not bind, at most one
                // try per address of the region.
                let mut binds = self.region.sources().len() + 1;
                'bind: loop {
                    binds -= 1;
                    if source.as_ref().is_none_or(|s| s.ip().is_ipv4() != ipv4) {
                        source = None;
                        match self.bind(shared, ipv4).await {
                            Pick::System => {}
                            Pick::Bound(lease) => source = Some(lease),
                            Pick::Spent => {
                                spent = true;
                                break 'bind;
                            }
                            Pick::Busy => return Err(Unready::Stopping),
                            Pick::Unbindable => {
                                last = Some(Reply::local(
                                    451,
                                    "4.3.0",
                                    &format!(
                                        "no source address of region {} can be bound on this host",
                                        self.region.name()
                                    ),
                                ));
                                break 'bind;
                            }
                            Pick::NoFamily => {
                                last = Some(Reply::local(
                                    451,
                                    "4.4.4",
                                    &format!(
                                        "region {} has no IPv{} source address to reach {host} [{}] from",
                                        self.region.name(),
                                        if ipv4 { 4 } else { 6 },
                                        address.ip()
                                    ),
                                ));
                                break 'bind;
                            }
                        }
                    }
                    let from = source.as_ref().map(SourceLease::ip);
                    tried = true;
                    match Connection::open(host, address, ehlo, &tls, login, timeouts, from).await {
                        Ok(connection) => return Ok(Open::new(connection, source)),
                        Err(ConnectionError::Bind(why)) => {
                            // This host's fault: pass the address over and take the next.
                            if let Some(lease) = source.take() {
                                lease.unbindable(shared.state.now());
                            }
                            last = Some(Reply::local(451, "4.3.0", &why));
                            if binds == 0 {
                                break 'bind;
                            }
                            continue 'bind;
                        }
                        Err(ConnectionError::Tls(why)) if !self.tls_required => {
                            // Opportunistic TLS: a receiver whose TLS is broken still gets its
                            // mail, in plaintext, as it would without STARTTLS at all.
                            tracing::info!(domain = %self.domain, %host, %address, %why, "STARTTLS failed; retrying in plaintext");
                            let plain = TlsChoice {
                                plaintext: true,
                                ..tls.clone()
                            };
                            match Connection::open(host, address, ehlo, &plain, login, timeouts, from).await {
                                Ok(connection) => return Ok(Open::new(connection, source)),
                                Err(error) => last = Some(error.to_reply()),
                            }
                        }
                        Err(error) => {
                            tracing::debug!(domain = %self.domain, %host, %address, %error, "MX attempt failed");
                            last = Some(error.to_reply());
                        }
                    }
                    break 'bind;
                }
            }
        }
        if spent && !tried {
            return Err(Unready::Spent);
        }
        let reply = last.unwrap_or_else(|| Reply::local(451, "4.4.0", "no MX host could be tried"));
        if any_address || any_temporary || reply.is_transient() {
            // Unreachable hosts are a temporary failure whatever they answered.
            let reply = if reply.is_transient() {
                reply
            } else {
                Reply::local(451, "4.4.1", &format!("no MX host accepted a connection: {reply}"))
            };
            Err(Unready::Route(NoRoute::Temporary(reply)))
        } else {
            Err(Unready::Route(NoRoute::Permanent(reply)))
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
            state.backoff = Some((shared.state.now().saturating_add(wait), reply.clone()));
            std::mem::take(&mut state.queue)
        };
        for piece in queued {
            piece.complete_all(&reply, None);
        }
    }
}
