//! Sending regions at work: which source address the next outbound connection of a
//! region binds to, and how many messages each address has sent this UTC day against its
//! warm-up limit.
//!
//! Addresses are taken in turn (round-robin), skipping one that holds its
//! `connections_per_address` or has used its day's warm-up limit. A message counts
//! against its address when it is about to be sent; the counts are also written, per
//! address and day, in the write that records each attempt, and read back after a
//! restart. Everything here is about one node's connections: in a cluster a region is a
//! set of nodes, and a node owns the addresses it can bind, so each address's counts
//! stay with the one node that sends from it.

pub mod stats;

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::NaiveDate;
use herald_queue::{Id, Timestamp};
use tokio::sync::Notify;

use crate::config::{Config, Region, Warmup};
use crate::counters::CounterStore;
use crate::limits::{DestinationLimits, Pacer};
use crate::storage::Change;

/// A UTC day's length in milliseconds.
const DAY_MS: u64 = 24 * 60 * 60 * 1000;

/// Where the source addresses' days are counted, and the time to count them at.
#[derive(Clone, Copy)]
pub struct Today<'a> {
    /// The counters.
    pub counters: &'a dyn CounterStore,
    /// The time now.
    pub now: Timestamp,
}

/// Every region's source addresses.
pub struct Regions {
    regions: Vec<Arc<RegionState>>,
}

impl std::fmt::Debug for Regions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.regions.iter().map(|r| &r.name)).finish()
    }
}

/// One region's addresses, and whose turn is next in each family (IPv4, IPv6).
pub struct RegionState {
    name: String,
    sources: Vec<Arc<Source>>,
    next: [AtomicUsize; 2],
    /// Notified when a connection from one of its addresses closes.
    freed: Notify,
}

/// One source address.
pub struct Source {
    ip: IpAddr,
    connections_max: usize,
    open: AtomicUsize,
    pacer: Option<Box<dyn Pacer>>,
    warmup: Option<Warmup>,
    /// The UTC day counted and its messages; `None` until read from the store.
    sent: Mutex<Option<(u32, u64)>>,
    /// When binding it last failed (milliseconds on the store's clock; 0: never): it is
    /// passed over for [`UNBINDABLE_FOR`] after.
    unbindable_since: AtomicU64,
}

/// How long an address this host could not bind is passed over.
const UNBINDABLE_FOR: Duration = Duration::from_secs(60);

/// What a connection of a region binds to.
pub enum Pick {
    /// The region has no source addresses of that family: the system chooses.
    System,
    /// This address, for as long as the lease is held.
    Bound(SourceLease),
    /// The region has addresses of that family, every one holding all its connections.
    Busy,
    /// Every address of that family has used its day's warm-up limit.
    Spent,
    /// The region has source addresses, none of that family.
    NoFamily,
    /// Every address of that family failed to bind on this host a moment ago.
    Unbindable,
}

/// A connection's hold on a source address; released when dropped.
pub struct SourceLease {
    source: Arc<Source>,
    region: Arc<RegionState>,
}

impl Regions {
    /// The regions of `config`, their addresses paced through `limits`.
    pub fn new(config: &Config, limits: &dyn DestinationLimits) -> Regions {
        let regions = config
            .regions
            .iter()
            .map(|region| Arc::new(RegionState::new(region, limits)))
            .collect();
        Regions { regions }
    }

    /// The region named `name`, or the default one (see [`Config::region`]).
    pub fn get(&self, config: &Config, name: &str) -> Arc<RegionState> {
        let wanted = &config.region(name).name;
        let found = self
            .regions
            .iter()
            .find(|r| r.name == *wanted)
            .unwrap_or(&self.regions[0]);
        Arc::clone(found)
    }

    /// Every region, in the file's order.
    pub fn all(&self) -> &[Arc<RegionState>] {
        &self.regions
    }
}

impl RegionState {
    fn new(region: &Region, limits: &dyn DestinationLimits) -> RegionState {
        let sources = region
            .source_addresses
            .iter()
            .map(|&ip| {
                Arc::new(Source {
                    ip,
                    connections_max: region.connections_per_address,
                    open: AtomicUsize::new(0),
                    pacer: region
                        .rate_per_address
                        .map(|rate| limits.pacer(&format!("source/{ip}"), rate)),
                    warmup: region.warmup_of(ip).cloned(),
                    sent: Mutex::new(None),
                    unbindable_since: AtomicU64::new(0),
                })
            })
            .collect();
        RegionState {
            name: region.name.clone(),
            sources,
            next: [AtomicUsize::new(0), AtomicUsize::new(0)],
            freed: Notify::new(),
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its source addresses.
    pub fn sources(&self) -> &[Arc<Source>] {
        &self.sources
    }

    /// The next address of `ipv4`'s family (or IPv6's) with a connection and a message
    /// of today's limit to spare, in turn.
    pub fn pick(self: &Arc<Self>, today: Today<'_>, ipv4: bool) -> Pick {
        let family: Vec<&Arc<Source>> = self.sources.iter().filter(|s| s.ip.is_ipv4() == ipv4).collect();
        if family.is_empty() {
            return if self.sources.is_empty() {
                Pick::System
            } else {
                Pick::NoFamily
            };
        }
        let start = self.next[usize::from(!ipv4)].fetch_add(1, Ordering::Relaxed);
        let (mut busy, mut spent) = (false, false);
        let now = today.now;
        for k in 0..family.len() {
            let source = family[(start + k) % family.len()];
            if source.is_unbindable(now) {
                continue;
            }
            if source.remaining(today) == Some(0) {
                spent = true;
                continue;
            }
            if source.open.fetch_add(1, Ordering::AcqRel) >= source.connections_max {
                source.open.fetch_sub(1, Ordering::AcqRel);
                busy = true;
                continue;
            }
            return Pick::Bound(SourceLease {
                source: Arc::clone(source),
                region: Arc::clone(self),
            });
        }
        if busy {
            Pick::Busy
        } else if spent {
            Pick::Spent
        } else {
            Pick::Unbindable
        }
    }

    /// Waits until a connection from one of its addresses closes (or a second passes,
    /// as a day can also turn), having taken `pick`'s answer: registered before it, a
    /// release in between is not missed.
    pub async fn pick_or_wait(self: &Arc<Self>, today: Today<'_>, ipv4: bool) -> Option<Pick> {
        let freed = self.freed.notified();
        tokio::pin!(freed);
        freed.as_mut().enable();
        match self.pick(today, ipv4) {
            Pick::Busy => {
                let _ = tokio::time::timeout(Duration::from_secs(1), freed).await;
                None
            }
            other => Some(other),
        }
    }

    /// Whether every address has used its day's limit (none is unlimited or has any
    /// left): its mail waits, without a lookup or a connection.
    pub fn all_spent(&self, today: Today<'_>) -> bool {
        !self.sources.is_empty() && self.sources.iter().all(|s| s.remaining(today) == Some(0))
    }
}

impl Source {
    /// Gives back a message of today's count that was not sent.
    fn give_back(&self, today: Today<'_>) {
        self.with_today(today, |sent| *sent = sent.saturating_sub(1));
    }

    /// The address.
    pub fn ip(&self) -> IpAddr {
        self.ip
    }

    /// Connections open from it now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// Its connection limit.
    pub fn connections_max(&self) -> usize {
        self.connections_max
    }

    /// Its warm-up schedule, if it has one.
    pub fn warmup(&self) -> Option<&Warmup> {
        self.warmup.as_ref()
    }

    /// Passes it over for a while: this host could not bind it.
    pub fn mark_unbindable(&self, now: Timestamp) {
        self.unbindable_since.store(now.as_millis().max(1), Ordering::Release);
    }

    fn is_unbindable(&self, now: Timestamp) -> bool {
        let since = self.unbindable_since.load(Ordering::Acquire);
        since != 0 && now.saturating_since(Timestamp::from_millis(since)) < UNBINDABLE_FOR
    }

    /// Messages sent from it today (UTC).
    pub fn sent_today(&self, today: Today<'_>) -> u64 {
        self.with_today(today, |sent| *sent)
    }

    /// Today's warm-up limit and the day of the schedule; `None` without one.
    pub fn today(&self, now: Timestamp) -> Option<(usize, u64)> {
        self.warmup.as_ref().and_then(|w| w.on(date_of(day_of(now))))
    }

    /// Messages it may still send today; `None` is unlimited.
    fn remaining(&self, today: Today<'_>) -> Option<u64> {
        let (_, limit) = self.today(today.now)?;
        Some(limit.saturating_sub(self.sent_today(today)))
    }

    /// Takes one message of today's limit; `false` when it is used up.
    fn take(&self, today: Today<'_>) -> bool {
        let limit = self.today(today.now).map(|(_, limit)| limit);
        self.with_today(today, |sent| {
            if limit.is_some_and(|limit| *sent >= limit) {
                return false;
            }
            *sent += 1;
            true
        })
    }

    /// Runs `f` on today's count, read from the counters when the day is not the one
    /// held.
    fn with_today<T>(&self, today: Today<'_>, f: impl FnOnce(&mut u64) -> T) -> T {
        let day = day_of(today.now);
        let mut held = self.sent.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = match &mut *held {
            Some((held_day, sent)) if *held_day == day => sent,
            other => match today.counters.source(self.ip, day) {
                Ok(found) => &mut other.insert((day, found)).1,
                Err(error) => {
                    // Not kept: the next look reads it again, so a passing error does not
                    // let the address pass its limit for the rest of the day.
                    tracing::warn!(source = %self.ip, %error, "cannot read a source address's count");
                    let mut unread = self.warmup.as_ref().map_or(0, |_| u64::MAX);
                    return f(&mut unread);
                }
            },
        };
        f(entry)
    }
}

impl SourceLease {
    /// The address bound to.
    pub fn ip(&self) -> IpAddr {
        self.source.ip
    }

    /// Passes its address over for a while: this host could not bind it.
    pub fn unbindable(&self, now: Timestamp) {
        self.source.mark_unbindable(now);
    }

    /// The region's name.
    pub fn region(&self) -> &str {
        &self.region.name
    }

    /// Takes one message of the address's day; `false` when its warm-up limit is used.
    pub fn take(&self, today: Today<'_>) -> bool {
        self.source.take(today)
    }

    /// Gives back a message [`SourceLease::take`] counted that was not sent.
    pub fn give_back(&self, today: Today<'_>) {
        self.source.give_back(today);
    }

    /// Takes one message of the address's rate if it allows one now, without waiting.
    pub fn try_pace(&self) -> bool {
        self.source.pacer.as_ref().is_none_or(|pacer| pacer.take().is_ok())
    }

    /// The address's day count, to give back a message [`SourceLease::take`] counted
    /// after the lease is gone.
    pub fn day(&self) -> SourceDay {
        SourceDay(Arc::clone(&self.source))
    }

    /// Waits for the address's rate to allow one more message.
    pub async fn pace(&self) {
        let Some(pacer) = &self.source.pacer else { return };
        while let Err(wait) = pacer.take() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// A source address's count of today's messages, apart from any connection of it.
pub struct SourceDay(Arc<Source>);

impl SourceDay {
    /// Gives back a message [`SourceLease::take`] counted that was not sent.
    pub fn give_back(&self, today: Today<'_>) {
        self.0.give_back(today);
    }
}

impl Drop for SourceLease {
    fn drop(&mut self) {
        self.source.open.fetch_sub(1, Ordering::AcqRel);
        self.region.freed.notify_waiters();
    }
}

/// Says, at start, which configured source addresses this host cannot bind (an address
/// not on any interface): delivery passes them over, and the operator should know.
pub fn check_binds(config: &Config) {
    for (i, region) in config.regions.iter().enumerate() {
        for (j, &ip) in region.source_addresses.iter().enumerate() {
            if let Err(error) = std::net::TcpListener::bind((ip, 0)) {
                tracing::error!(
                    key = %format!("regions[{i}].source_addresses[{j}]"),
                    address = %ip,
                    %error,
                    "this host cannot bind a source address; mail from region {} leaves from its others",
                    region.name
                );
            }
        }
    }
}

/// Counts, in `change`, `n` messages sent from `ip` on `at`'s UTC day (the day's counters
/// leave with `[retention] metrics`, as the teams' own do).
pub fn count(counters: &dyn CounterStore, change: &mut Change, ip: IpAddr, at: Timestamp, n: u64) {
    counters.add_source(change, ip, day_of(at), n, next_day(at));
}

/// When the UTC day after `now` starts: when spent warm-up limits grow again.
pub fn next_day(now: Timestamp) -> Timestamp {
    Timestamp::from_millis((u64::from(day_of(now)) + 1) * DAY_MS)
}

/// The span of the next day's start over which held mail resumes.
const RESUME_SPREAD_MS: u64 = 3_600_000;

/// When message `id`, held at `now` because its region's addresses spent the day's
/// warm-up, goes again: in the first hour of the next UTC day, at a point fixed by a
/// hash of its id, so that a day's held mail does not all come due at midnight and meet
/// the fresh limits in one burst.
pub fn resume_at(now: Timestamp, id: Id) -> Timestamp {
    let mut hasher = std::hash::DefaultHasher::new();
    std::hash::Hash::hash(id.as_bytes(), &mut hasher);
    let offset = std::hash::Hasher::finish(&hasher) % RESUME_SPREAD_MS;
    next_day(now).saturating_add(Duration::from_millis(offset))
}

/// Days since 1970-01-01, UTC.
fn day_of(at: Timestamp) -> u32 {
    u32::try_from(at.as_millis() / DAY_MS).unwrap_or(u32::MAX)
}

fn date_of(day: u32) -> NaiveDate {
    chrono::DateTime::UNIX_EPOCH.date_naive() + chrono::Days::new(u64::from(day))
}

#[cfg(test)]
mod tests;
