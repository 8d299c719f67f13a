//! The counters behind `GET /emails/metrics` and the dashboard's Metrics page: per team,
//! 15-minute UTC bucket, sending domain (the `From` address's) and metric, how many
//! events happened. Buckets of 15 minutes put every IANA zone's hour and day boundaries
//! on a bucket edge, so any zone's hours, days, weeks and months add up from them
//! exactly. Counting never reads (each event adds through the store's merge operator,
//! in the batch that records the event), and a day's buckets leave together after
//! `[retention] metrics`. [`backfill`] builds them once for events recorded before they
//! existed.

pub mod backfill;
pub mod query;

use crate::storage::{Change, Error};
use herald_queue::{Batch, Due, DueIndex, Id, Scan, Store, Table, Timestamp, decode_counter};
use serde_json::Value;

use crate::emails::EmailState;
use crate::retention::Expiry;

/// A bucket's length.
pub const BUCKET_MS: u64 = 15 * 60 * 1000;

/// Buckets in a UTC day.
const BUCKETS_PER_DAY: u32 = 96;

/// The byte after the team id that marks these keys (the daily counters they replace
/// had a day number there, whose first byte is 0).
const MARK: u8 = 1;

/// Each team's days with counters, by the day's start.
const EXPIRY: DueIndex = DueIndex::new(Table::COUNTER_EXPIRY);

/// What is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    /// Accepted to be sent now (scheduled ones when they go).
    Sent,
    /// Accepted to be sent later.
    Scheduled,
    /// A receiver accepted it (per recipient).
    Delivered,
    /// A receiver deferred it, reported once per recipient.
    DeliveryDelayed,
    /// Refused for good.
    BouncedPermanent,
    /// Given up after temporary failures.
    BouncedTransient,
    /// Bounced, kind unknown.
    BouncedUndetermined,
    /// Marked as spam.
    Complained,
    /// Opened (machine opens are not counted).
    Opened,
    /// An email's first open.
    UniqueOpened,
    /// A link clicked.
    Clicked,
    /// An email's first click.
    UniqueClicked,
    /// herald could not send it.
    Failed,
    /// Not sent to a suppressed address.
    Suppressed,
    /// Canceled before delivery.
    Canceled,
    /// A recipient unsubscribed through the email's link.
    Unsubscribed,
}

impl Metric {
    /// Every metric.
    pub const ALL: [Metric; 16] = [
        Metric::Sent,
        Metric::Scheduled,
        Metric::Delivered,
        Metric::DeliveryDelayed,
        Metric::BouncedPermanent,
        Metric::BouncedTransient,
        Metric::BouncedUndetermined,
        Metric::Complained,
        Metric::Opened,
        Metric::UniqueOpened,
        Metric::Clicked,
        Metric::UniqueClicked,
        Metric::Failed,
        Metric::Suppressed,
        Metric::Canceled,
        Metric::Unsubscribed,
    ];

    /// The stored name, also the name in `GET /emails/metrics`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Sent => "sent",
            Metric::Scheduled => "scheduled",
            Metric::Delivered => "delivered",
            Metric::DeliveryDelayed => "delivery_delayed",
            Metric::BouncedPermanent => "bounced_permanent",
            Metric::BouncedTransient => "bounced_transient",
            Metric::BouncedUndetermined => "bounced_undetermined",
            Metric::Complained => "complained",
            Metric::Opened => "opened",
            Metric::UniqueOpened => "unique_opened",
            Metric::Clicked => "clicked",
            Metric::UniqueClicked => "unique_clicked",
            Metric::Failed => "failed",
            Metric::Suppressed => "suppressed",
            Metric::Canceled => "canceled",
            Metric::Unsubscribed => "unsubscribed",
        }
    }

    /// The metric named `name`.
    pub fn parse(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The metric of an email event of `state` with its `data` (a bounce's `type`).
    pub fn of(state: EmailState, data: &Value) -> Metric {
        match state {
            EmailState::Sent => Metric::Sent,
            EmailState::Scheduled => Metric::Scheduled,
            EmailState::Delivered => Metric::Delivered,
            EmailState::DeliveryDelayed => Metric::DeliveryDelayed,
            EmailState::Bounced => match data["bounce"]["type"].as_str() {
                Some("Permanent") => Metric::BouncedPermanent,
                Some("Transient") => Metric::BouncedTransient,
                _ => Metric::BouncedUndetermined,
            },
            EmailState::Complained => Metric::Complained,
            EmailState::Opened => Metric::Opened,
            EmailState::Clicked => Metric::Clicked,
            EmailState::Failed => Metric::Failed,
            EmailState::Suppressed => Metric::Suppressed,
            EmailState::Canceled => Metric::Canceled,
        }
    }
}

/// The sending domain counted for a `From` address: its domain, lower-cased.
pub fn domain_of(from: &str) -> String {
    let address = from
        .rsplit_once('<')
        .map_or(from, |(_, rest)| rest.trim_end().trim_end_matches('>'));
    address
        .rsplit_once('@')
        .map_or("", |(_, domain)| domain)
        .trim()
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// The bucket of `at`.
pub fn bucket_of(at: Timestamp) -> u32 {
    u32::try_from(at.as_millis() / BUCKET_MS).unwrap_or(u32::MAX)
}

/// The start of `bucket`.
pub fn start_of(bucket: u32) -> Timestamp {
    Timestamp::from_millis(u64::from(bucket) * BUCKET_MS)
}

fn prefix(team_id: Id, bucket: u32) -> Vec<u8> {
    let mut key = Vec::with_capacity(21 + 32);
    key.extend_from_slice(team_id.as_bytes());
    key.push(MARK);
    key.extend_from_slice(&bucket.to_be_bytes());
    key
}

/// Counts, in `change`, one `metric` of `team_id` from `from`'s domain at `at`.
pub fn count(change: &mut Change, team_id: Id, from: &str, at: Timestamp, metric: Metric) {
    let batch = change.batch();
    let bucket = bucket_of(at);
    // The same entry for every event of that day: written once, its repeats skipped.
    let day = bucket - bucket % BUCKETS_PER_DAY;
    EXPIRY.arm_shared(batch, start_of(day), &prefix(team_id, day));
    let mut key = prefix(team_id, bucket);
    key.extend_from_slice(domain_of(from).as_bytes());
    key.push(0);
    key.extend_from_slice(metric.name().as_bytes());
    batch.add(key, 1);
}

/// Arms, in `change`, the removal of the counters under `prefix` once `[retention]
/// metrics` has passed since `at`: for counters of other kinds than the metrics' own
/// (plan quotas, source addresses), each under a prefix of its own.
pub fn arm_expiry(change: &mut Change, at: Timestamp, prefix: &[u8]) {
    EXPIRY.arm_shared(change.batch(), at, prefix);
}

/// Counts an email event of `state` with its `data`.
pub fn count_event(change: &mut Change, team_id: Id, from: &str, at: Timestamp, state: EmailState, data: &Value) {
    count(change, team_id, from, at, Metric::of(state, data));
}

/// One counter read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Count {
    /// Its bucket.
    pub bucket: u32,
    /// The sending domain.
    pub domain: String,
    /// The metric.
    pub metric: Metric,
    /// How many.
    pub n: u64,
}

/// Counters read in one scan.
const SCAN_PAGE: usize = 10_000;

/// `team_id`'s counters of buckets `from..=to`, in bucket order.
pub fn read(store: &Store, team_id: Id, from: u32, to: u32) -> Result<Vec<Count>, Error> {
    let mut counts = Vec::new();
    let team_prefix = [team_id.as_bytes().as_slice(), &[MARK]].concat();
    let mut after = prefix(team_id, from);
    loop {
        let scan = Scan {
            prefix: &team_prefix,
            after: Some(&after),
            reverse: false,
            limit: SCAN_PAGE,
        };
        let page = store.scan_raw(Table::COUNTERS, scan)?;
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

/// Adds to `change` the deletion of every counter of `team_id`.
pub fn erase_team(change: &mut Change, team_id: Id) {
    change.batch().delete_prefix(Table::COUNTERS, team_id.as_bytes());
}

/// `[retention] metrics`: a team's day of counters.
#[derive(Debug, Clone, Copy, Default)]
pub struct Days;

impl Expiry for Days {
    const KIND: &'static str = "metrics";
    const INDEX: DueIndex = EXPIRY;

    fn expire(&self, _: &Store, due: &Due, batch: &mut Batch) -> Result<(), Error> {
        let parsed = due
            .key
            .get(..16)
            .and_then(|id| <[u8; 16]>::try_from(id).ok())
            .zip(due.key.get(17..21).and_then(|b| <[u8; 4]>::try_from(b).ok()));
        match parsed {
            Some((team, day)) if due.key.len() == 21 && due.key[16] == MARK => {
                let team = Id::from_bytes(team);
                let day = u32::from_be_bytes(day);
                for bucket in day..day + BUCKETS_PER_DAY {
                    batch.delete_prefix(Table::COUNTERS, &prefix(team, bucket));
                }
            }
            // A day of the daily counters these replaced.
            _ => batch.delete_prefix(Table::COUNTERS, &due.key),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn counts_add_up_per_bucket_domain_and_metric_and_a_day_expires_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        // 08:00 UTC.
        let (store, clock) = crate::testing::store(dir.path(), 1_795_334_400_000);
        let (team, other) = (store.next_id(), store.next_id());
        let mut batch = crate::storage::Change::new();
        count(&mut batch, team, "Shop <a@Shop.test>", store.now(), Metric::Sent);
        count(&mut batch, team, "b@shop.test", store.now(), Metric::Sent);
        count(&mut batch, team, "c@news.test", store.now(), Metric::Sent);
        count(&mut batch, other, "a@shop.test", store.now(), Metric::Sent);
        store.commit(batch.into_batch()).wait().expect("commit");
        let first = bucket_of(store.now());
        clock.advance(Duration::from_secs(20 * 3600));
        let mut batch = crate::storage::Change::new();
        let bounce = serde_json::json!({ "bounce": { "type": "Permanent" } });
        count_event(
            &mut batch,
            team,
            "a@shop.test",
            store.now(),
            EmailState::Bounced,
            &bounce,
        );
        store.commit(batch.into_batch()).wait().expect("commit");
        let last = bucket_of(store.now());

        let counts = read(&store, team, first, last).expect("read");
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
        assert_eq!(read(&store, team, first + 1, last - 1).expect("read"), Vec::new());

        // A day's counters are due a retention after the day's start: yesterday's now.
        let horizon = Timestamp::from_millis(store.now().as_millis() - 24 * 3600 * 1000);
        let due = EXPIRY.due(&store, horizon, None, 10).expect("due");
        assert_eq!(due.len(), 2, "yesterday, for both teams");
        let entries: Vec<&Due> = due.iter().collect();
        crate::retention::expire_now(&store, &Days, &entries).expect("expire");
        let counts = read(&store, team, first, last).expect("read");
        assert_eq!(counts.len(), 1);
        assert_eq!(counts[0].metric, Metric::BouncedPermanent);
        assert!(read(&store, other, first, last).expect("read").is_empty());
    }

    #[test]
    fn counters_of_other_kinds_expire_under_their_own_prefix() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, clock) = crate::testing::store(dir.path(), 1_795_334_400_000);
        let team = store.next_id();
        let mut batch = crate::storage::Change::new();
        // A plan quota's day and a source address's day, each armed at its period's end.
        let quota = crate::quotas::Quotas::default();
        let taken = quota
            .take(
                &store,
                team,
                crate::quotas::Allowance::default(),
                3,
                store.now(),
                &mut batch,
            )
            .expect("read");
        assert!(taken.is_ok());
        crate::regions::count(&mut batch, "127.0.0.2".parse().expect("ip"), store.now(), 4);
        store.commit(batch.into_batch()).wait().expect("commit");
        let keys = |store: &Store| {
            store
                .scan_raw(
                    Table::COUNTERS,
                    Scan {
                        prefix: &[],
                        after: None,
                        reverse: false,
                        limit: 100,
                    },
                )
                .expect("scan")
                .len()
        };
        assert_eq!(keys(&store), 3, "the quota's day and month, the address's day");
        // Nothing is due before its period has ended.
        assert!(EXPIRY.due(&store, store.now(), None, 10).expect("due").is_empty());
        // Two days on, with no retention: the days are due, the month not yet.
        clock.advance(std::time::Duration::from_secs(2 * 24 * 3600));
        let due = EXPIRY.due(&store, store.now(), None, 10).expect("due");
        assert_eq!(due.len(), 2, "{due:?}");
        let entries: Vec<&Due> = due.iter().collect();
        crate::retention::expire_now(&store, &Days, &entries).expect("expire");
        assert_eq!(keys(&store), 1, "the month's count stays");
    }
}
