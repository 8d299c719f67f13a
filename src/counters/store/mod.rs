//! Where counters are kept. [`CounterStore`] is what counts a team's metrics, its plan
//! quotas and the source addresses' days, and reads them back; [`RocksCounters`] keeps
//! them in the node's RocksDB, in [`Table::COUNTERS`], added through the store's merge
//! operator (counting never reads) in the write that records what they count:
//!
//! - a team's metrics under the team id, `1`, the 15-minute bucket (big-endian), the
//!   sending domain, a zero byte and the metric's name;
//! - a team's quota counters under the team id, `2`, `d` or `m` and the day or month
//!   number (the broadcasts' counts use `4`, [`crate::broadcasts::store`]);
//! - a source address's day under [`SOURCES`], the day number and the address.
//!
//! Each day of them has an entry in [`Table::COUNTER_EXPIRY`] ([`EXPIRY`]) at the day's
//! start (the metrics) or its period's end (the others), and leaves with `[retention]
//! metrics` counted from then.
//!
//! The keys and encodings of both tables are this module's alone.
//!
//! [`PostgresCounters`] keeps the same counters in PostgreSQL, a row per counter shared
//! by every node. The backfill ([`backfill`]) stays with RocksDB: it counts, once, the
//! events that a data directory of a build before the counters recorded, into that
//! directory's own counters (a start-up migration of the node's store). A node on
//! PostgreSQL counts every event as it happens; bringing a directory's counters into the
//! database is the work of moving a node (`herald store copy`, [`copy`]).

use std::net::IpAddr;
use std::sync::Arc;

use herald_queue::{Batch, Due, DueIndex, Id, Scan, Store, Table, Timestamp, decode_counter};

use super::model::{BUCKETS_PER_DAY, Count, Metric, QuotaCounter, bucket_of, domain_of, start_of};
use crate::storage::expiry::{self, Expiry, Sweep};
use crate::storage::{Change, Error};

/// Counters of teams' metrics, quotas and source addresses' days.
pub trait CounterStore: Send + Sync + std::fmt::Debug {
    /// Stages one `metric` of `team_id` from `from`'s domain at `at`.
    fn count(&self, change: &mut Change, team_id: Id, from: &str, at: Timestamp, metric: Metric);
    /// `team_id`'s metrics of buckets `from..=to`, in bucket order.
    fn read(&self, team_id: Id, from: u32, to: u32) -> Result<Vec<Count>, Error>;
    /// Stages `n` more emails in `team_id`'s quota `counter`, a period that ends at
    /// `ends`.
    fn add_quota(&self, change: &mut Change, team_id: Id, counter: QuotaCounter, n: u64, ends: Timestamp);
    /// `team_id`'s emails in the quota `counter`.
    fn quota(&self, team_id: Id, counter: QuotaCounter) -> Result<u64, Error>;
    /// Stages `n` more messages sent from `ip` on UTC `day`, which ends at `ends`.
    fn add_source(&self, change: &mut Change, ip: IpAddr, day: u32, n: u64, ends: Timestamp);
    /// The messages sent from `ip` on UTC `day`.
    fn source(&self, ip: IpAddr, day: u32) -> Result<u64, Error>;
    /// Erases the deleted team `team_id`'s counters (metrics, quotas, its broadcasts'
    /// counts), durably: `true` while more is left (call again).
    fn erase_team(&self, team_id: Id) -> Result<bool, Error>;
    /// The counters' retention (`[retention] metrics`), for the retention engine.
    fn expiry(&self) -> Arc<dyn Sweep>;
}

/// The byte after the team id that marks the metrics' keys (the daily counters they
/// replaced had a day number there, whose first byte is 0).
pub(crate) const METRICS: u8 = 1;

/// The byte after the team id that marks quota counters.
pub(super) const QUOTAS: u8 = 2;

/// What the keys of source addresses' days begin with: sixteen zero bytes (no team has
/// the zero id) and a mark of their own.
pub(super) const SOURCES: [u8; 17] = {
    let mut prefix = [0u8; 17];
    prefix[16] = 3;
    prefix
};

/// Each day of counters, by when its retention counts from.
pub(crate) const EXPIRY: DueIndex = DueIndex::new(Table::COUNTER_EXPIRY);

/// Counters read in one scan.
const SCAN_PAGE: usize = 10_000;

fn metrics_prefix(team_id: Id, bucket: u32) -> Vec<u8> {
    let mut key = Vec::with_capacity(21 + 32);
    key.extend_from_slice(team_id.as_bytes());
    key.push(METRICS);
    key.extend_from_slice(&bucket.to_be_bytes());
    key
}

/// A quota counter's key: the team, [`QUOTAS`], `d` or `m`, the day or month number.
fn quota_key(team_id: Id, counter: QuotaCounter) -> Vec<u8> {
    let (kind, n) = match counter {
        QuotaCounter::Day(n) => (b'd', n),
        QuotaCounter::Month(n) => (b'm', n),
    };
    let mut key = Vec::with_capacity(16 + 2 + 4);
    key.extend_from_slice(team_id.as_bytes());
    key.push(QUOTAS);
    key.push(kind);
    key.extend_from_slice(&n.to_be_bytes());
    key
}

fn source_day(day: u32) -> Vec<u8> {
    let mut prefix = SOURCES.to_vec();
    prefix.extend_from_slice(&day.to_be_bytes());
    prefix
}

fn source_key(ip: IpAddr, day: u32) -> Vec<u8> {
    let mut key = source_day(day);
    key.extend_from_slice(ip.to_string().as_bytes());
    key
}

fn parse(key: &[u8], value: &[u8]) -> Option<Count> {
    let rest = key.get(17..)?;
    let bucket = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?);
    let rest = &rest[4..];
    let zero = rest.iter().position(|b| *b == 0)?;
    let domain = std::str::from_utf8(&rest[..zero]).ok()?.to_owned();
    let metric = Metric::parse(std::str::from_utf8(&rest[zero + 1..]).ok()?)?;
    Some(Count {
        bucket,
        domain,
        metric,
        n: decode_counter(value),
    })
}

/// `[retention] metrics`: a team's day of counters (or a quota's period, or a source
/// addresses' day).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Days;

impl Expiry for Days {
    const KIND: &'static str = "metrics";
    const INDEX: DueIndex = EXPIRY;

    fn expire(&self, _: &Store, due: &Due, batch: &mut Batch) -> Result<(), Error> {
        expire(due, batch);
        Ok(())
    }
}

/// Stages the expiry of the entry `due` of [`EXPIRY`]: a team's day of metrics goes
/// bucket by bucket; any other entry names the prefix of the counters it removes (a
/// quota period, a source addresses' day, or a day of the daily counters the metrics
/// replaced).
fn expire(due: &Due, batch: &mut Batch) {
    let parsed = due
        .key
        .get(..16)
        .and_then(|id| <[u8; 16]>::try_from(id).ok())
        .zip(due.key.get(17..21).and_then(|b| <[u8; 4]>::try_from(b).ok()));
    match parsed {
        Some((team, day)) if due.key.len() == 21 && due.key[16] == METRICS => {
            let team = Id::from_bytes(team);
            let day = u32::from_be_bytes(day);
            for bucket in day..day + BUCKETS_PER_DAY {
                batch.delete_prefix(Table::COUNTERS, &metrics_prefix(team, bucket));
            }
        }
        _ => batch.delete_prefix(Table::COUNTERS, &due.key),
    }
}

/// Counters in the node's RocksDB.
#[derive(Debug, Clone)]
pub struct RocksCounters {
    store: Store,
}

impl RocksCounters {
    /// Counters in `store`.
    pub fn new(store: Store) -> RocksCounters {
        RocksCounters { store }
    }

    fn counter(&self, key: &[u8]) -> Result<u64, Error> {
        Ok(self
            .store
            .get_raw(Table::COUNTERS, key)?
            .map_or(0, |bytes| decode_counter(&bytes)))
    }
}

impl CounterStore for RocksCounters {
    fn count(&self, change: &mut Change, team_id: Id, from: &str, at: Timestamp, metric: Metric) {
        let batch = change.batch();
        let bucket = bucket_of(at);
        // The same entry for every event of that day: written once, its repeats skipped.
        let day = bucket - bucket % BUCKETS_PER_DAY;
        EXPIRY.arm_shared(batch, start_of(day), &metrics_prefix(team_id, day));
        let mut key = metrics_prefix(team_id, bucket);
        key.extend_from_slice(domain_of(from).as_bytes());
        key.push(0);
        key.extend_from_slice(metric.name().as_bytes());
        batch.add(key, 1);
    }

    fn read(&self, team_id: Id, from: u32, to: u32) -> Result<Vec<Count>, Error> {
        let mut counts = Vec::new();
        let team_prefix = [team_id.as_bytes().as_slice(), &[METRICS]].concat();
        let mut after = metrics_prefix(team_id, from);
        loop {
            let scan = Scan {
                prefix: &team_prefix,
                after: Some(&after),
                reverse: false,
                limit: SCAN_PAGE,
            };
            let page = self.store.scan_raw(Table::COUNTERS, scan)?;
            let full = page.len() == SCAN_PAGE;
            for (key, value) in &page {
                let Some(parsed) = parse(key, value) else { continue };
                if parsed.bucket > to {
                    return Ok(counts);
                }
                counts.push(parsed);
            }
            match page.last() {
                Some((key, _)) if full => after.clone_from(key),
                _ => return Ok(counts),
            }
        }
    }

    fn add_quota(&self, change: &mut Change, team_id: Id, counter: QuotaCounter, n: u64, ends: Timestamp) {
        let key = quota_key(team_id, counter);
        let batch = change.batch();
        EXPIRY.arm_shared(batch, ends, &key);
        batch.add(key, n);
    }

    fn quota(&self, team_id: Id, counter: QuotaCounter) -> Result<u64, Error> {
        self.counter(&quota_key(team_id, counter))
    }

    fn add_source(&self, change: &mut Change, ip: IpAddr, day: u32, n: u64, ends: Timestamp) {
        let batch = change.batch();
        EXPIRY.arm_shared(batch, ends, &source_day(day));
        batch.add(source_key(ip, day), n);
    }

    fn source(&self, ip: IpAddr, day: u32) -> Result<u64, Error> {
        self.counter(&source_key(ip, day))
    }

    fn expiry(&self) -> Arc<dyn Sweep> {
        expiry::sweep(&self.store, Days)
    }

    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        // Every counter of a team is under its id: one range tombstone, however many.
        let mut batch = Batch::new();
        batch.delete_prefix(Table::COUNTERS, team_id.as_bytes());
        self.store.commit(batch).wait()?;
        Ok(false)
    }
}

pub(crate) mod backfill;
mod copy;
mod postgres;
mod postgres_retention;

pub use copy::copy;
pub use postgres::PostgresCounters;

#[cfg(test)]
mod tests;
