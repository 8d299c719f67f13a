//! The node's counters, copied into PostgreSQL by `herald store copy`
//! ([`crate::storage::copy`]), row for row as [`super::PostgresCounters`] writes them:
//! each team's metrics, quota counts and source addresses' days, with the time its
//! `[retention] metrics` counts from.
//!
//! A metric counts from its day's start, as on RocksDB. A quota period or a source
//! address's day counts from its end, which the node kept only in its expiry index
//! ([`super::EXPIRY`]): that index's entries are read first, and a counter that has none
//! (which the node would never have expired) counts from the copy.
//!
//! Not copied here: the broadcasts' counts, which share the node's table and are copied
//! with their broadcasts ([`crate::broadcasts::store::copy`]), and the daily counters the
//! metrics replaced, which no store reads.

use std::collections::HashMap;
use std::net::IpAddr;

use herald_queue::{Due, Id, Table, Timestamp, decode_counter};

use super::postgres::{ADD_QUOTA, ADD_SOURCE, COUNT, metric_values, quota_values, source_values};
use super::{EXPIRY, METRICS, QUOTAS, SOURCES, parse};
use crate::counters::model::QuotaCounter;
use crate::storage::Error;
use crate::storage::copy::Copy;
use crate::storage::postgres::Statement;

/// Copies every metric, quota and source address counter.
pub fn copy(copy: &mut Copy<'_>) -> Result<(), Error> {
    copy.expect("metric counters");
    copy.expect("quota counters");
    copy.expect("source address counters");
    let ends = period_ends(copy)?;
    let now = copy.from().now();
    copy.each_raw(Table::COUNTERS, |copy, key, value| {
        let Some(counter) = Counter::of(key) else {
            return Ok(());
        };
        let n = decode_counter(value);
        let (kind, sql, values) = match counter {
            Counter::Metric(team_id) => {
                // A key that does not read as a metric is skipped, as reading one skips it.
                let Some(count) = parse(key, value) else {
                    return Ok(());
                };
                let values = metric_values(team_id, count.bucket, count.domain, count.metric, count.n);
                ("metric counters", COUNT, values)
            }
            Counter::Quota(team_id, quota, period) => {
                let ends = ends.get(period).copied().unwrap_or(now);
                ("quota counters", ADD_QUOTA, quota_values(team_id, quota, n, ends))
            }
            Counter::Source(ip, day, period) => {
                let ends = ends.get(period).copied().unwrap_or(now);
                ("source address counters", ADD_SOURCE, source_values(ip, day, n, ends))
            }
        };
        copy.write(kind, Statement::new(copy.to(), sql, values))
    })
}

/// One counter of the node's table, as its key names it.
enum Counter<'k> {
    /// A team's metric.
    Metric(Id),
    /// A team's quota period, with the key of that period's expiry entry.
    Quota(Id, QuotaCounter, &'k [u8]),
    /// A source address's day, with the key of that day's expiry entry.
    Source(IpAddr, u32, &'k [u8]),
}

impl<'k> Counter<'k> {
    /// The counter under `key`; `None` for another's key (a broadcast's count, a daily
    /// counter of an older build) or one that does not read.
    fn of(key: &'k [u8]) -> Option<Counter<'k>> {
        if let Some(rest) = key.strip_prefix(&SOURCES) {
            let day = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?);
            let ip = std::str::from_utf8(rest.get(4..)?).ok()?.parse().ok()?;
            return Some(Counter::Source(ip, day, &key[..SOURCES.len() + 4]));
        }
        let team_id = Id::from_slice(key.get(..16)?)?;
        match *key.get(16)? {
            METRICS => Some(Counter::Metric(team_id)),
            QUOTAS if key.len() == 22 => {
                let n = u32::from_be_bytes(key[18..22].try_into().ok()?);
                let quota = match key[17] {
                    b'd' => QuotaCounter::Day(n),
                    b'm' => QuotaCounter::Month(n),
                    _ => return None,
                };
                Some(Counter::Quota(team_id, quota, key))
            }
            _ => None,
        }
    }
}

/// When each quota period and source address's day the node's expiry index holds ends
/// (their entries' times), by the entry's key. A team's day of metrics is left out: it
/// counts from its day's start, which its counters' keys tell.
fn period_ends(copy: &mut Copy<'_>) -> Result<HashMap<Vec<u8>, Timestamp>, Error> {
    let mut ends = HashMap::new();
    copy.each_raw(EXPIRY.table(), |_, key, _| {
        if let Some(due) = Due::decode(key)
            && due.key.get(16) != Some(&METRICS)
        {
            ends.insert(due.key, due.at);
        }
        Ok(())
    })?;
    Ok(ends)
}
