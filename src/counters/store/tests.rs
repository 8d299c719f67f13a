use std::time::Duration;

use super::*;
use crate::emails::state::EmailState;

/// Every key in the counters table.
fn keys(store: &Store) -> usize {
    store.scan_raw(Table::COUNTERS, Scan::prefix(&[])).expect("scan").len()
}

/// Expires what is due at `horizon`, as the retention engine does.
fn expire_due(store: &Store, horizon: Timestamp) -> usize {
    let due = EXPIRY.due(store, horizon, None, 10).expect("due");
    let entries: Vec<&Due> = due.iter().collect();
    crate::storage::expiry::expire_now(store, &Days, &entries).expect("expire");
    due.len()
}

#[test]
fn counts_add_up_per_bucket_domain_and_metric_and_a_day_expires_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 08:00 UTC.
    let (store, clock) = crate::testing::store(dir.path(), 1_795_334_400_000);
    let counters = RocksCounters::new(store.clone());
    let (team, other) = (store.next_id(), store.next_id());
    let mut change = Change::new();
    counters.count(&mut change, team, "Shop <a@Shop.test>", store.now(), Metric::Sent);
    counters.count(&mut change, team, "b@shop.test", store.now(), Metric::Sent);
    counters.count(&mut change, team, "c@news.test", store.now(), Metric::Sent);
    counters.count(&mut change, other, "a@shop.test", store.now(), Metric::Sent);
    store
        .commit(change.into_local().expect("shared writes"))
        .wait()
        .expect("commit");
    let first = bucket_of(store.now());
    clock.advance(Duration::from_secs(20 * 3600));
    let mut change = Change::new();
    let bounce = serde_json::json!({ "bounce": { "type": "Permanent" } });
    let metric = Metric::of(EmailState::Bounced, &bounce);
    counters.count(&mut change, team, "a@shop.test", store.now(), metric);
    store
        .commit(change.into_local().expect("shared writes"))
        .wait()
        .expect("commit");
    let last = bucket_of(store.now());

    let counts = counters.read(team, first, last).expect("read");
    let seen: Vec<_> = counts
        .iter()
        .map(|c| (c.bucket, c.domain.as_str(), c.metric, c.n))
        .collect();
    assert_eq!(
        seen,
        vec![
            (first, "news.test", Metric::Sent, 1),
            (first, "shop.test", Metric::Sent, 2),
            (last, "shop.test", Metric::BouncedPermanent, 1),
        ]
    );
    assert_eq!(counters.read(team, first + 1, last - 1).expect("read"), Vec::new());

    // A day's counters are due a retention after the day's start: yesterday's now.
    let horizon = Timestamp::from_millis(store.now().as_millis() - 24 * 3600 * 1000);
    assert_eq!(expire_due(&store, horizon), 2, "yesterday, for both teams");
    let counts = counters.read(team, first, last).expect("read");
    assert_eq!(counts.len(), 1);
    assert_eq!(counts[0].metric, Metric::BouncedPermanent);
    assert!(counters.read(other, first, last).expect("read").is_empty());
}

#[test]
fn quotas_and_source_days_are_kept_apart_and_expire_at_their_period_s_end() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, clock) = crate::testing::store(dir.path(), 1_795_334_400_000);
    let counters = RocksCounters::new(store.clone());
    let (team, other) = (store.next_id(), store.next_id());
    let ip: IpAddr = "127.0.0.2".parse().expect("ip");
    let (day, month) = (QuotaCounter::Day(20_000), QuotaCounter::Month(24_300));
    let day_ends = store.now().saturating_add(Duration::from_secs(3600));
    let month_ends = store.now().saturating_add(Duration::from_secs(30 * 24 * 3600));
    let mut change = Change::new();
    counters.add_quota(&mut change, team, day, 3, day_ends);
    counters.add_quota(&mut change, team, day, 2, day_ends);
    counters.add_quota(&mut change, team, month, 5, month_ends);
    counters.add_quota(&mut change, other, day, 7, day_ends);
    counters.add_source(&mut change, ip, 20_000, 4, day_ends);
    store
        .commit(change.into_local().expect("shared writes"))
        .wait()
        .expect("commit");
    assert_eq!(counters.quota(team, day).expect("read"), 5);
    assert_eq!(counters.quota(team, month).expect("read"), 5);
    assert_eq!(counters.quota(other, day).expect("read"), 7);
    assert_eq!(counters.quota(other, month).expect("read"), 0);
    assert_eq!(counters.source(ip, 20_000).expect("read"), 4);
    assert_eq!(counters.source(ip, 20_001).expect("read"), 0);
    assert_eq!(keys(&store), 4, "two teams' days, one's month, the address's day");
    // Nothing is due before its period has ended.
    assert_eq!(expire_due(&store, store.now()), 0);
    // Two days on, with no retention: the days are due, the month not yet.
    clock.advance(Duration::from_secs(2 * 24 * 3600));
    assert_eq!(expire_due(&store, store.now()), 3, "two teams' day and the address's");
    assert_eq!(keys(&store), 1, "the month's count stays");
    assert_eq!(counters.quota(team, month).expect("read"), 5);

    // Erasing a team takes its counters and leaves another's.
    let mut change = Change::new();
    counters.add_quota(&mut change, other, month, 1, month_ends);
    counters.count(&mut change, team, "a@shop.test", store.now(), Metric::Sent);
    store
        .commit(change.into_local().expect("shared writes"))
        .wait()
        .expect("commit");
    while counters.erase_team(team).expect("erase") {}
    assert_eq!(counters.quota(team, month).expect("read"), 0);
    let now = bucket_of(store.now());
    assert!(counters.read(team, now, now).expect("read").is_empty());
    assert_eq!(counters.quota(other, month).expect("read"), 1);
}
