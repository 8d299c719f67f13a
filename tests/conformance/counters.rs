//! What every [`CounterStore`] does, run on the RocksDB one: what a change stages counts
//! once the change is committed and not before; a team's metrics come back in bucket
//! order, each per bucket, sending domain (the `From` address's, lower-cased) and metric,
//! adding up across changes, within the buckets asked for alone; quota counters and
//! source addresses' days add up apart from one another; and erasing a team takes its
//! counters and leaves other teams' and the source addresses'.

use std::net::IpAddr;
use std::time::Duration;

use herald::counters::{Count, CounterStore, Metric, QuotaCounter, RocksCounters, bucket_of};
use herald::storage::{Change, Node};
use herald_queue::{Id, Store};

use crate::conformance::rocksdb;

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
}

#[test]
fn rocksdb_counters_keep_the_contract() {
    let (_dir, store) = rocksdb();
    counter_store_conformance(&RocksCounters::new(store.clone()), &Node::new(store.clone()), &store);
}
