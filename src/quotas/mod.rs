//! Plan quotas: how many emails each team has sent this UTC day and month, counted when
//! they are accepted (scheduled ones included; each recipient counts, as Resend counts),
//! and the refusal of what would go over its plan's allowance.
//!
//! The counters are in the store, added in the batch that spools the emails, so they are
//! exactly what was accepted. Each team's current day and month are also kept in memory,
//! where a send takes its share under one lock before its write starts and gives it back
//! if the write fails: concurrent sends can never pass the limit together.

pub mod usage;

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, Datelike, TimeZone, Utc};
use herald_queue::{Id, Timestamp};

use crate::config::Plan;
use crate::counters::{CounterStore, QuotaCounter};
use crate::storage::{Change, Error};

/// A UTC day's length.
const DAY_MS: u64 = 24 * 60 * 60 * 1000;

/// The two periods a plan limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    /// The UTC calendar day.
    Daily,
    /// The UTC calendar month.
    Monthly,
}

impl Period {
    /// The API error name of going over it.
    pub fn error_name(self) -> &'static str {
        match self {
            Period::Daily => "daily_quota_exceeded",
            Period::Monthly => "monthly_quota_exceeded",
        }
    }

    /// The reason recorded for a broadcast recipient refused by it.
    pub fn failure_reason(self) -> &'static str {
        match self {
            Period::Daily => "reached_daily_quota",
            Period::Monthly => "reached_monthly_quota",
        }
    }
}

/// Why a send was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Exceeded {
    /// The period whose allowance it would pass.
    pub period: Period,
    /// What to tell the client.
    pub message: String,
}

/// A team's allowances: `None` is unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Allowance {
    /// Per UTC day.
    pub daily: Option<u64>,
    /// Per UTC month.
    pub monthly: Option<u64>,
}

impl Allowance {
    /// The allowance of `plan`; unlimited without one.
    pub fn of(plan: Option<&Plan>) -> Allowance {
        plan.map_or_else(Allowance::default, |plan| Allowance {
            daily: plan.daily_emails,
            monthly: Some(plan.monthly_emails),
        })
    }
}

/// Emails a team has used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Used {
    /// Today (UTC).
    pub daily: u64,
    /// This month (UTC).
    pub monthly: u64,
}

/// One team's day and month, in memory.
#[derive(Debug, Clone, Copy)]
struct Tally {
    day: u32,
    month: u32,
    used: Used,
}

/// Every team's tally.
#[derive(Debug, Default)]
pub struct Quotas {
    tallies: Mutex<HashMap<Id, Tally>>,
}

/// A share taken by [`Quotas::take`]: its counters are in the caller's batch; give it
/// back with [`Quotas::give_back`] if that batch is not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a share whose write failed must be given back"]
pub struct Share {
    team: Id,
    day: u32,
    month: u32,
    count: u64,
}

impl Quotas {
    /// Takes `count` emails of `team`'s allowance at `now`, staging their counters in
    /// `change`; refuses what would go over a limit, taking nothing.
    pub fn take(
        &self,
        counters: &dyn CounterStore,
        team: Id,
        allowance: Allowance,
        count: u64,
        now: Timestamp,
        change: &mut Change,
    ) -> Result<Result<Share, Exceeded>, Error> {
        let (day, month) = (day_of(now), month_of(now));
        let mut tallies = self.lock();
        let tally = current(&mut tallies, counters, team, day, month)?;
        if let Some(limit) = allowance.daily
            && tally.used.daily + count > limit
        {
            return Ok(Err(Exceeded {
                period: Period::Daily,
                message: format!(
                    "You have reached your daily email sending quota of {limit}: {} sent today (UTC), {count} more asked for. It resets at {}.",
                    tally.used.daily,
                    resets_at(Period::Daily, now)
                ),
            }));
        }
        if let Some(limit) = allowance.monthly
            && tally.used.monthly + count > limit
        {
            return Ok(Err(Exceeded {
                period: Period::Monthly,
                message: format!(
                    "You have reached your monthly email sending quota of {limit}: {} sent this month (UTC), {count} more asked for. It resets at {}.",
                    tally.used.monthly,
                    resets_at(Period::Monthly, now)
                ),
            }));
        }
        tally.used.daily += count;
        tally.used.monthly += count;
        // Each counter leaves with `[retention] metrics`, counted from its period's end.
        let daily = (QuotaCounter::Day(day), period_end(Period::Daily, now));
        let monthly = (QuotaCounter::Month(month), period_end(Period::Monthly, now));
        for (counter, ends) in [daily, monthly] {
            counters.add_quota(change, team, counter, count, ends);
        }
        Ok(Ok(Share {
            team,
            day,
            month,
            count,
        }))
    }

    /// Gives back a share whose write failed.
    pub fn give_back(&self, share: Share) {
        let mut tallies = self.lock();
        if let Some(tally) = tallies.get_mut(&share.team) {
            if tally.day == share.day {
                tally.used.daily = tally.used.daily.saturating_sub(share.count);
            }
            if tally.month == share.month {
                tally.used.monthly = tally.used.monthly.saturating_sub(share.count);
            }
        }
    }

    /// What `team` has used at `now`.
    pub fn used(&self, counters: &dyn CounterStore, team: Id, now: Timestamp) -> Result<Used, Error> {
        let mut tallies = self.lock();
        Ok(current(&mut tallies, counters, team, day_of(now), month_of(now))?.used)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Id, Tally>> {
        // Every change is a plain addition to a tally: whole after a panic elsewhere.
        self.tallies.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `team`'s tally for `day` and `month`, read from the store when the team has none in
/// memory yet or its day or month has turned.
fn current<'a>(
    tallies: &'a mut HashMap<Id, Tally>,
    counters: &dyn CounterStore,
    team: Id,
    day: u32,
    month: u32,
) -> Result<&'a mut Tally, Error> {
    let stale = tallies
        .get(&team)
        .is_none_or(|tally| tally.day != day || tally.month != month);
    if stale {
        let used = Used {
            daily: counters.quota(team, QuotaCounter::Day(day))?,
            monthly: counters.quota(team, QuotaCounter::Month(month))?,
        };
        tallies.insert(team, Tally { day, month, used });
    }
    Ok(tallies.get_mut(&team).expect("inserted above"))
}

/// Days since 1970-01-01, UTC.
fn day_of(at: Timestamp) -> u32 {
    u32::try_from(at.as_millis() / DAY_MS).unwrap_or(u32::MAX)
}

/// Months since year 0, UTC.
fn month_of(at: Timestamp) -> u32 {
    let date = utc(at);
    u32::try_from(date.year()).unwrap_or(0) * 12 + date.month0()
}

fn utc(at: Timestamp) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(i64::try_from(at.as_millis()).unwrap_or(i64::MAX)).unwrap_or_default()
}

/// When `period`'s count that holds `now` starts again, as Resend writes it
/// (`2026-08-01T00:00:00.000Z`).
pub fn resets_at(period: Period, now: Timestamp) -> String {
    utc(period_end(period, now))
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// When `period`'s count that holds `now` ends (UTC).
fn period_end(period: Period, now: Timestamp) -> Timestamp {
    let date = utc(now).date_naive();
    let next = match period {
        Period::Daily => date.succ_opt(),
        Period::Monthly => {
            let (year, month) = if date.month() == 12 {
                (date.year() + 1, 1)
            } else {
                (date.year(), date.month() + 1)
            };
            chrono::NaiveDate::from_ymd_opt(year, month, 1)
        }
    }
    .unwrap_or(date);
    let millis = Utc
        .from_utc_datetime(&next.and_time(chrono::NaiveTime::MIN))
        .timestamp_millis();
    Timestamp::from_millis(u64::try_from(millis).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: u64 = DAY_MS;

    #[test]
    fn days_and_months_turn_at_utc_midnight() {
        // 2026-01-31T23:59:59.999Z, then the next millisecond.
        let last = Timestamp::from_millis(1_769_903_999_999);
        let first = Timestamp::from_millis(1_769_904_000_000);
        assert_eq!(day_of(first), day_of(last) + 1);
        assert_eq!(month_of(first), month_of(last) + 1);
        assert_eq!(resets_at(Period::Daily, last), "2026-02-01T00:00:00.000Z");
        assert_eq!(resets_at(Period::Monthly, last), "2026-02-01T00:00:00.000Z");
        assert_eq!(resets_at(Period::Monthly, first), "2026-03-01T00:00:00.000Z");
        let december = Timestamp::from_millis(1_796_083_200_000 + DAY); // 2026-12-02
        assert_eq!(resets_at(Period::Monthly, december), "2027-01-01T00:00:00.000Z");
    }

    #[test]
    fn a_share_is_refused_whole_taken_from_both_periods_and_given_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, clock) = crate::testing::store(dir.path(), 1_769_904_000_000);
        let quotas = Quotas::default();
        let counters = crate::counters::RocksCounters::new(store.clone());
        let team = store.next_id();
        let allowance = Allowance {
            daily: Some(3),
            monthly: Some(4),
        };
        let mut batch = crate::storage::Change::new();
        let share = quotas
            .take(&counters, team, allowance, 2, store.now(), &mut batch)
            .expect("store")
            .expect("2 of 3");
        store
            .commit(batch.into_local().expect("shared writes"))
            .wait()
            .expect("commit");
        let mut batch = crate::storage::Change::new();
        let refused = quotas
            .take(&counters, team, allowance, 2, store.now(), &mut batch)
            .expect("store");
        assert_eq!(refused.map_err(|e| e.period), Err(Period::Daily));
        assert!(batch.is_empty(), "a refusal adds nothing");
        let lost = quotas
            .take(&counters, team, allowance, 1, store.now(), &mut batch)
            .expect("store")
            .expect("1 more");
        quotas.give_back(lost);
        assert_eq!(quotas.used(&counters, team, store.now()).expect("used").daily, 2);
        let _ = share;
        // The next day: the day is new, the month is not; read back from the store by a
        // fresh instance, as after a restart.
        clock.advance(std::time::Duration::from_millis(DAY));
        let restarted = Quotas::default();
        assert_eq!(
            restarted.used(&counters, team, store.now()).expect("used"),
            Used { daily: 0, monthly: 2 }
        );
        let mut batch = crate::storage::Change::new();
        let over = restarted
            .take(&counters, team, allowance, 3, store.now(), &mut batch)
            .expect("store");
        assert_eq!(
            over.map_err(|e| e.period),
            Err(Period::Monthly),
            "3 fit the day, not the month"
        );
    }
}
