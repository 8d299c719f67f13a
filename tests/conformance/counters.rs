//! What every [`CounterStore`] does, run on both backends (RocksDB and PostgreSQL): what
//! a change stages counts once the change is committed and not before; a team's metrics
//! come back in bucket order, each per bucket, sending domain (the `From` address's,
//! lower-cased) and metric, every metric alike, adding up across changes, within the
//! buckets asked for alone; quota counters and source addresses' days add up apart from
//! one another; erasing a team takes its counters and leaves other teams' and the source
//! addresses'; and the retention takes a day of metrics once its start is due, a quota
//! period or a source address's day once its end is, and nothing else.

use std::net::IpAddr;
use std::time::Duration;

use herald::counters::{Count, CounterStore, Metric, PostgresCounters, QuotaCounter, RocksCounters, bucket_of};
use herald::storage::{Change, Node};
use herald_queue::{Due, Id, Store, Timestamp};

use crate::conformance::{self, rocksdb};

/// A UTC day's length.
const DAY_MS: u64 = 24 * 3600 * 1000;

/// A count read back, in a form that orders: bucket, domain, metric, how many.
type Row = (u32, String, Metric, u64);

/// `team_id`'s metrics of buckets `from..=to`: checked to come in bucket order, then
/// ordered within each bucket (an order the trait leaves open).
fn metrics(counters: &dyn CounterStore, team_id: Id, from: u32, to: u32) -> Vec<Row> {
    let counts: Vec<Count> = counters.read(team_id, from, to).expect("read");
    let buckets: Vec<u32> = counts.iter().map(|c| c.bucket).collect();
    assert!(buckets.is_sorted(), "in bucket order: {buckets:?}");
    assert!(
        buckets.iter().all(|b| (from..=to).contains(b)),
        "within the buckets asked for: {buckets:?}"
    );
    let mut rows: Vec<Row> = counts
        .into_iter()
        .map(|c| (c.bucket, c.domain, c.metric, c.n))
        .collect();
    rows.sort();
    rows
}

/// A row of the metrics.
fn row(bucket: u32, domain: &str, metric: Metric, n: u64) -> Row {
    (bucket, domain.into(), metric, n)
}

/// Expires what the counters' retention finds due at `horizon`, as the retention engine
/// does, until nothing is.
fn expire_due(counters: &dyn CounterStore, horizon: Timestamp) {
    let sweep = counters.expiry();
    let queue = sweep.queue();
    for _ in 0..100 {
        let due = queue.due(horizon, None, 10).expect("due");
        if due.is_empty() {
            return;
        }
        let entries: Vec<&Due> = due.iter().collect();
        sweep.expire(&entries).expect("expire");
    }
    panic!("entries stay due however often they are expired");
}

/// What every [`CounterStore`] does: `node` commits what it stages, `ids` is where ids
/// and times come from.
fn counter_store_conformance(counters: &dyn CounterStore, node: &Node, ids: &Store) {
    let (team, other) = (ids.next_id(), ids.next_id());
    let (day, month) = (QuotaCounter::Day(20_000), QuotaCounter::Month(657));
    let ip: IpAddr = "192.0.2.7".parse().expect("an address");
    let another_ip: IpAddr = "2001:db8::7".parse().expect("an address");
    assert!(counters.read(team, 0, u32::MAX).expect("read").is_empty());
    assert_eq!(counters.quota(team, day).expect("quota"), 0);
    assert_eq!(counters.source(ip, 20_000).expect("source"), 0);

    // Metrics: each counted under its bucket, its sending domain and its metric; none
    // before the change is committed.
    let at = ids.now();
    let later = at.saturating_add(Duration::from_secs(2 * 3600));
    let (first, last) = (bucket_of(at), bucket_of(later));
    let mut change = Change::new();
    counters.count(&mut change, team, "Shop <a@Shop.example.com>", at, Metric::Sent);
    counters.count(&mut change, team, "b@shop.example.com", at, Metric::Sent);
    counters.count(&mut change, team, "c@news.example.com", at, Metric::Sent);
    counters.count(&mut change, team, "b@shop.example.com", at, Metric::Delivered);
    counters.count(&mut change, team, "a@shop.example.com", later, Metric::BouncedPermanent);
    counters.count(&mut change, other, "a@shop.example.com", at, Metric::Sent);
    assert!(metrics(counters, team, first, last).is_empty(), "staged is not written");
    node.commit(change).expect("commit");
    let all = vec![
        row(first, "news.example.com", Metric::Sent, 1),
        row(first, "shop.example.com", Metric::Sent, 2),
        row(first, "shop.example.com", Metric::Delivered, 1),
        row(last, "shop.example.com", Metric::BouncedPermanent, 1),
    ];
    assert_eq!(metrics(counters, team, first, last), all);
    assert_eq!(metrics(counters, team, 0, u32::MAX), all, "no others");
    assert_eq!(metrics(counters, team, first, first), all[..3].to_vec());
    assert_eq!(metrics(counters, team, last, last), all[3..].to_vec());
    assert!(metrics(counters, team, first + 1, last - 1).is_empty(), "none between");
    assert_eq!(
        metrics(counters, other, first, last),
        vec![row(first, "shop.example.com", Metric::Sent, 1)],
        "another team's own"
    );

    // Counts add up across changes.
    let mut change = Change::new();
    counters.count(&mut change, team, "d@SHOP.example.com", at, Metric::Sent);
    counters.count(&mut change, team, "d@shop.example.com", later, Metric::BouncedPermanent);
    node.commit(change).expect("commit");
    assert_eq!(
        metrics(counters, team, first, last),
        vec![
            row(first, "news.example.com", Metric::Sent, 1),
            row(first, "shop.example.com", Metric::Sent, 3),
            row(first, "shop.example.com", Metric::Delivered, 1),
            row(last, "shop.example.com", Metric::BouncedPermanent, 2),
        ]
    );

    // Every metric is counted under its own name.
    let every = ids.next_id();
    let mut change = Change::new();
    for metric in Metric::ALL {
        counters.count(&mut change, every, "a@shop.example.com", at, metric);
    }
    node.commit(change).expect("commit");
    let mut each: Vec<Row> = Metric::ALL
        .into_iter()
        .map(|metric| row(first, "shop.example.com", metric, 1))
        .collect();
    each.sort();
    assert_eq!(metrics(counters, every, first, first), each);

    // Quotas: each team's day and month apart, adding up within a change and across.
    let (day_ends, month_ends) = (
        at.saturating_add(Duration::from_secs(3600)),
        at.saturating_add(Duration::from_secs(30 * 24 * 3600)),
    );
    let mut change = Change::new();
    counters.add_quota(&mut change, team, day, 3, day_ends);
    counters.add_quota(&mut change, team, day, 2, day_ends);
    counters.add_quota(&mut change, team, month, 5, month_ends);
    counters.add_quota(&mut change, other, day, 7, day_ends);
    assert_eq!(counters.quota(team, day).expect("quota"), 0, "staged is not written");
    node.commit(change).expect("commit");
    assert_eq!(counters.quota(team, day).expect("quota"), 5);
    assert_eq!(counters.quota(team, month).expect("quota"), 5);
    assert_eq!(counters.quota(team, QuotaCounter::Day(20_001)).expect("quota"), 0);
    assert_eq!(
        counters.quota(team, QuotaCounter::Month(20_000)).expect("quota"),
        0,
        "a month is not a day"
    );
    assert_eq!(counters.quota(other, day).expect("quota"), 7);
    assert_eq!(counters.quota(other, month).expect("quota"), 0);
    let mut change = Change::new();
    counters.add_quota(&mut change, team, day, 1, day_ends);
    node.commit(change).expect("commit");
    assert_eq!(counters.quota(team, day).expect("quota"), 6);

    // Source addresses' days: each address's day apart, adding up.
    let mut change = Change::new();
    counters.add_source(&mut change, ip, 20_000, 4, day_ends);
    counters.add_source(&mut change, another_ip, 20_000, 9, day_ends);
    assert_eq!(counters.source(ip, 20_000).expect("source"), 0, "staged is not written");
    node.commit(change).expect("commit");
    let mut change = Change::new();
    counters.add_source(&mut change, ip, 20_000, 2, day_ends);
    counters.add_source(&mut change, ip, 20_001, 1, day_ends);
    node.commit(change).expect("commit");
    assert_eq!(counters.source(ip, 20_000).expect("source"), 6);
    assert_eq!(counters.source(ip, 20_001).expect("source"), 1);
    assert_eq!(counters.source(another_ip, 20_000).expect("source"), 9);
    assert_eq!(counters.source(another_ip, 20_001).expect("source"), 0);
    assert_eq!(counters.quota(team, day).expect("quota"), 6, "no quota of a source's");

    // Erasing the team takes its metrics and quotas, and leaves another team's and the
    // source addresses' days (no team's).
    while counters.erase_team(team).expect("erase") {}
    assert!(metrics(counters, team, 0, u32::MAX).is_empty());
    assert_eq!(counters.quota(team, day).expect("quota"), 0);
    assert_eq!(counters.quota(team, month).expect("quota"), 0);
    assert_eq!(
        metrics(counters, other, first, last),
        vec![row(first, "shop.example.com", Metric::Sent, 1)]
    );
    assert_eq!(counters.quota(other, day).expect("quota"), 7);
    assert_eq!(counters.source(ip, 20_000).expect("source"), 6);
    assert_eq!(counters.source(another_ip, 20_000).expect("source"), 9);

    // Retention, on counters of UTC day 19,000 and the day after: a day of metrics is
    // due at the day's start, a quota period and a source address's day at their end.
    let aged = ids.next_id();
    let aged_ip: IpAddr = "192.0.2.9".parse().expect("an address");
    let aged_start = Timestamp::from_millis(19_000 * DAY_MS);
    let aged_ends = Timestamp::from_millis(19_001 * DAY_MS);
    let aged_month_ends = Timestamp::from_millis(19_024 * DAY_MS);
    let (morning, next_morning) = (
        aged_start.saturating_add(Duration::from_secs(8 * 3600)),
        aged_ends.saturating_add(Duration::from_secs(8 * 3600)),
    );
    let (that_day, next_day) = (bucket_of(morning), bucket_of(next_morning));
    let (aged_day, aged_month) = (QuotaCounter::Day(19_000), QuotaCounter::Month(24_264));
    let mut change = Change::new();
    counters.count(&mut change, aged, "a@old.example.com", morning, Metric::Sent);
    counters.count(&mut change, aged, "a@old.example.com", next_morning, Metric::Sent);
    counters.add_quota(&mut change, aged, aged_day, 2, aged_ends);
    counters.add_quota(&mut change, aged, aged_month, 3, aged_month_ends);
    counters.add_source(&mut change, aged_ip, 19_000, 5, aged_ends);
    node.commit(change).expect("commit");
    expire_due(counters, Timestamp::from_millis(aged_start.as_millis() - 1));
    assert_eq!(
        metrics(counters, aged, 0, u32::MAX).len(),
        2,
        "nothing is due before its time"
    );
    expire_due(counters, aged_start);
    assert_eq!(
        metrics(counters, aged, 0, u32::MAX),
        vec![row(next_day, "old.example.com", Metric::Sent, 1)],
        "the day went, the next stays"
    );
    assert_eq!(
        counters.quota(aged, aged_day).expect("quota"),
        2,
        "its day has not ended"
    );
    assert_eq!(counters.source(aged_ip, 19_000).expect("source"), 5);
    expire_due(counters, aged_ends);
    assert!(metrics(counters, aged, 0, u32::MAX).is_empty(), "the next day's start");
    assert_eq!(counters.quota(aged, aged_day).expect("quota"), 0, "ended");
    assert_eq!(counters.source(aged_ip, 19_000).expect("source"), 0, "ended");
    assert_eq!(counters.quota(aged, aged_month).expect("quota"), 3, "not yet");
    expire_due(counters, aged_month_ends);
    assert_eq!(counters.quota(aged, aged_month).expect("quota"), 0);
    assert!(that_day < first, "the suite's other counters are of today");
    assert_eq!(
        metrics(counters, other, first, last),
        vec![row(first, "shop.example.com", Metric::Sent, 1)],
        "and stay"
    );
    assert_eq!(counters.quota(other, day).expect("quota"), 7);
    assert_eq!(counters.source(ip, 20_000).expect("source"), 6);
}

#[test]
fn rocksdb_counters_keep_the_contract() {
    let (_dir, store) = rocksdb();
    counter_store_conformance(&RocksCounters::new(store.clone()), &Node::new(store.clone()), &store);
}

#[test]
fn postgres_counters_keep_the_contract() {
    let (_dir, store) = rocksdb();
    let counters = PostgresCounters::new(conformance::postgres(), store.clock().clone());
    counter_store_conformance(&counters, &Node::new(store.clone()), &store);
}
