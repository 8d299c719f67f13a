//! Counters in PostgreSQL (`metric_counts`, `quota_counts`, `source_counts`; see the
//! schema's fifth migration), one row per counter, shared by every node: the metrics of
//! a team add up whichever node recorded its events, and a team's quota counts and a
//! source address's day are the cluster's. (The quotas service keeps a tally of its own
//! in memory between reads, per node; sharing that is the several-nodes issue's, with
//! Redis, in the design's storage map.)
//!
//! Counting never reads: each count is a statement staged into the change that records
//! what it counts, an upsert that adds (`n = n + EXCLUDED.n`), run in that change's
//! transaction. That makes it the one staged statement of the stores that is not
//! idempotent: a change whose statements committed but whose node write did not (the
//! node failed between the two) and that is then redone counts its events twice. That is
//! accepted: the counters are statistics and limits, not records (each email's events
//! are its truth), a count is too high by that one change at most, and a quota that
//! counted too many refuses early by as much until its period turns. Making each count
//! exactly-once would need an id per counted event, which the trait is not given, and a
//! row per event where there is now a row per counter and bucket.
//!
//! Rows that every change of a team touches (its day's and month's quota, its bucket's
//! `sent`) are locked by each transaction that adds to them until it commits, so one
//! team's acceptances commit one after another; two changes that add to two rows in
//! opposite orders (batches naming two domains in opposite orders) may deadlock, which
//! the database breaks by failing one of them as unavailable, to be tried again.
//!
//! Retention: [`super::postgres_retention`].

use std::net::IpAddr;
use std::sync::Arc;

use herald_queue::{Id, SharedClock, Timestamp};

use super::CounterStore;
use super::postgres_retention::CounterDays;
use crate::counters::model::{BUCKETS_PER_DAY, Count, Metric, QuotaCounter, bucket_of, domain_of, start_of};
use crate::storage::expiry::Sweep;
use crate::storage::postgres::{Postgres, Statement, Value, from_driver, time};
use crate::storage::{Change, Error};

/// Counters deleted per pass of `erase_team`: rows of a few dozen bytes, so a pass is a
/// transaction of a megabyte or so.
const ERASE_BATCH: i64 = 10_000;

/// Adds events to a team's metric ([`metric_values`]); a new row counts from its day's
/// start.
pub(super) const COUNT: &str = "INSERT INTO metric_counts (team_id, bucket, domain, metric, n, retention_from)
    VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (team_id, bucket, domain, metric) DO UPDATE SET n = metric_counts.n + EXCLUDED.n";

/// Adds emails to a team's quota period ([`quota_values`]); a new row counts from the
/// period's end.
pub(super) const ADD_QUOTA: &str = "INSERT INTO quota_counts (team_id, period, number, n, retention_from)
    VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (team_id, period, number) DO UPDATE SET n = quota_counts.n + EXCLUDED.n";

/// Adds messages to a source address's day ([`source_values`]); a new row counts from the
/// day's end.
pub(super) const ADD_SOURCE: &str = "INSERT INTO source_counts (address, day, n, retention_from)
    VALUES ($1, $2, $3, $4)
    ON CONFLICT (address, day) DO UPDATE SET n = source_counts.n + EXCLUDED.n";

/// Counters in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresCounters {
    db: Postgres,
    clock: SharedClock,
}

impl PostgresCounters {
    /// Counters in `db`, whose schema is migrated; retention goes by `clock`.
    pub fn new(db: Postgres, clock: SharedClock) -> PostgresCounters {
        PostgresCounters { db, clock }
    }

    /// The count in the row `sql` selects with `params`, 0 when there is none.
    fn counter(&self, sql: &str, params: &[&(dyn tokio_postgres::types::ToSql + Sync)]) -> Result<u64, Error> {
        self.db.run(async |client| {
            let row = client.query_opt(sql, params).await.map_err(from_driver)?;
            Ok(row.map_or(0, |row| u64::try_from(row.get::<_, i64>(0)).unwrap_or(0)))
        })
    }
}

/// A quota counter's period and number, as `quota_counts` keeps them.
fn period(counter: QuotaCounter) -> (&'static str, i64) {
    match counter {
        QuotaCounter::Day(n) => ("day", i64::from(n)),
        QuotaCounter::Month(n) => ("month", i64::from(n)),
    }
}

/// `n` as a `bigint`; no count comes near its end.
fn bigint(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The values of [`COUNT`]: `n` more `metric` events of `team_id` from `domain` in
/// `bucket`.
pub(super) fn metric_values(team_id: Id, bucket: u32, domain: String, metric: Metric, n: u64) -> Vec<Value> {
    let day = bucket - bucket % BUCKETS_PER_DAY;
    vec![
        Box::new(team_id.uuid()),
        Box::new(i64::from(bucket)),
        Box::new(domain),
        Box::new(metric.name()),
        Box::new(bigint(n)),
        Box::new(time(start_of(day))),
    ]
}

/// The values of [`ADD_QUOTA`]: `n` more emails in `team_id`'s quota `counter`, a period
/// that ends at `ends`.
pub(super) fn quota_values(team_id: Id, counter: QuotaCounter, n: u64, ends: Timestamp) -> Vec<Value> {
    let (period, number) = period(counter);
    vec![
        Box::new(team_id.uuid()),
        Box::new(period),
        Box::new(number),
        Box::new(bigint(n)),
        Box::new(time(ends)),
    ]
}

/// The values of [`ADD_SOURCE`]: `n` more messages sent from `ip` on UTC `day`, which
/// ends at `ends`.
pub(super) fn source_values(ip: IpAddr, day: u32, n: u64, ends: Timestamp) -> Vec<Value> {
    vec![
        Box::new(ip),
        Box::new(i64::from(day)),
        Box::new(bigint(n)),
        Box::new(time(ends)),
    ]
}

impl CounterStore for PostgresCounters {
    fn count(&self, change: &mut Change, team_id: Id, from: &str, at: Timestamp, metric: Metric) {
        let values = metric_values(team_id, bucket_of(at), domain_of(from), metric, 1);
        change.stage_shared(Statement::new(&self.db, COUNT, values));
    }

    fn read(&self, team_id: Id, from: u32, to: u32) -> Result<Vec<Count>, Error> {
        self.db.run(async |client| {
            let rows = client
                .query(
                    "SELECT bucket, domain, metric, n FROM metric_counts
                     WHERE team_id = $1 AND bucket BETWEEN $2 AND $3
                     ORDER BY bucket, domain, metric",
                    &[&team_id.uuid(), &i64::from(from), &i64::from(to)],
                )
                .await
                .map_err(from_driver)?;
            rows.iter()
                .map(|row| {
                    let name: &str = row.get(2);
                    let metric = Metric::parse(name).ok_or_else(|| Error::Corrupt {
                        table: "metric_counts",
                        reason: format!("unknown metric {name:?}"),
                    })?;
                    Ok(Count {
                        // Within `from..=to`, so a `u32`.
                        bucket: u32::try_from(row.get::<_, i64>(0)).unwrap_or(to),
                        domain: row.get(1),
                        metric,
                        n: u64::try_from(row.get::<_, i64>(3)).unwrap_or(0),
                    })
                })
                .collect()
        })
    }

    fn add_quota(&self, change: &mut Change, team_id: Id, counter: QuotaCounter, n: u64, ends: Timestamp) {
        let values = quota_values(team_id, counter, n, ends);
        change.stage_shared(Statement::new(&self.db, ADD_QUOTA, values));
    }

    fn quota(&self, team_id: Id, counter: QuotaCounter) -> Result<u64, Error> {
        let (period, number) = period(counter);
        self.counter(
            "SELECT n FROM quota_counts WHERE team_id = $1 AND period = $2 AND number = $3",
            &[&team_id.uuid(), &period, &number],
        )
    }

    fn add_source(&self, change: &mut Change, ip: IpAddr, day: u32, n: u64, ends: Timestamp) {
        let values = source_values(ip, day, n, ends);
        change.stage_shared(Statement::new(&self.db, ADD_SOURCE, values));
    }

    fn source(&self, ip: IpAddr, day: u32) -> Result<u64, Error> {
        self.counter(
            "SELECT n FROM source_counts WHERE address = $1 AND day = $2",
            &[&ip, &i64::from(day)],
        )
    }

    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        // The broadcasts' counts, kept in the counters' table on RocksDB, are the
        // broadcast store's to keep and erase on PostgreSQL.
        self.db.run(async |client| {
            // A team's metrics may be many (a row per bucket, domain and metric for the
            // whole retention): a batch per pass, one more picked than deleted to tell
            // whether any is left. Its quota counts are a few hundred at most. A
            // statement's data-modifying WITH runs whether or not the rest reads it.
            let row = client
                .query_one(
                    "WITH picked AS (
                        SELECT bucket, domain, metric FROM metric_counts WHERE team_id = $1
                        ORDER BY bucket, domain, metric LIMIT $2::bigint + 1
                     ), deleted AS (
                        DELETE FROM metric_counts WHERE team_id = $1 AND (bucket, domain, metric) IN (
                            SELECT bucket, domain, metric FROM picked ORDER BY bucket, domain, metric LIMIT $2)
                     ), quotas AS (
                        DELETE FROM quota_counts WHERE team_id = $1
                     )
                     SELECT count(*) > $2 FROM picked",
                    &[&team_id.uuid(), &ERASE_BATCH],
                )
                .await
                .map_err(from_driver)?;
            Ok(row.get(0))
        })
    }

    fn expiry(&self) -> Arc<dyn Sweep> {
        Arc::new(CounterDays::new(&self.db, self.clock.clone()))
    }
}
