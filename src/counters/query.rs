//! `GET /emails/metrics` (and the dashboard's Metrics page): the counters of a date
//! range added up by period (hour, day, week or month in an IANA time zone), sending
//! domain and, for up to 100 named emails, email; with Resend's rates. Ranges are
//! rounded out to the counters' 15-minute buckets and answered as rounded.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Datelike, Duration as Days, NaiveDate, NaiveDateTime, TimeZone, Timelike};
use chrono_tz::Tz;
use herald_queue::{Id, Timestamp};
use serde_json::{Map, Value, json};

use super::{BUCKET_MS, Metric, bucket_of, domain_of, start_of};
use crate::accounts::Caller;
use crate::emails::EmailState;
use crate::emails::EmailStore;
use crate::services::{Error, Services};
use crate::storage::page::{Cursor, PageRequest};

/// Every name `metrics` may hold, in Resend's order.
pub const NAMES: [&str; 22] = [
    "received",
    "delivered",
    "complained",
    "suppressed",
    "bounced",
    "bounced_transient",
    "bounced_permanent",
    "bounced_undetermined",
    "opened",
    "clicked",
    "unsubscribed",
    "delivery_delayed",
    "failed",
    "sent",
    "unique_opened",
    "unique_clicked",
    "delivery_rate",
    "open_rate",
    "click_rate",
    "bounce_rate",
    "complaint_rate",
    "unsubscribe_rate",
];

/// Ids a filter may name at most.
const IDS_MAX: usize = 100;

/// Rows an answer may have at most.
const ROWS_MAX: usize = 10_000;

/// The longest range.
const RANGE_MAX_DAYS: i64 = 800;

/// How periods are cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Granularity {
    /// Hours.
    Hourly,
    /// Days.
    Daily,
    /// Weeks from Monday.
    Weekly,
    /// Calendar months.
    Monthly,
}

impl Granularity {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Granularity::Hourly => "hourly",
            Granularity::Daily => "daily",
            Granularity::Weekly => "weekly",
            Granularity::Monthly => "monthly",
        }
    }

    /// A step from a period's start that lands in the next period (whatever the length of
    /// a day or month), whose start [`Query::period_of`] then finds.
    fn past_next(self) -> Days {
        match self {
            Granularity::Hourly => Days::minutes(61),
            Granularity::Daily => Days::hours(26),
            Granularity::Weekly => Days::hours(7 * 24 + 2),
            Granularity::Monthly => Days::days(32),
        }
    }

    fn parse(name: &str) -> Option<Granularity> {
        [
            Granularity::Hourly,
            Granularity::Daily,
            Granularity::Weekly,
            Granularity::Monthly,
        ]
        .into_iter()
        .find(|g| g.name() == name)
    }
}

/// A question, parsed.
#[derive(Debug, Clone)]
pub struct Query {
    /// The first bucket's start.
    pub start: Timestamp,
    /// The end (exclusive), on a bucket edge.
    pub end: Timestamp,
    /// The zone periods are cut in.
    pub zone: Tz,
    /// How periods are cut.
    pub granularity: Granularity,
    /// The metrics asked for, in the order asked.
    pub metrics: Vec<&'static str>,
    /// Break down by period.
    pub by_period: bool,
    /// Break down by domain.
    pub by_domain: bool,
    /// Break down by email.
    pub by_email: bool,
    /// Only these domains.
    pub domain_ids: Vec<Id>,
    /// Only these emails.
    pub email_ids: Vec<Id>,
}

fn invalid(message: impl Into<String>) -> Error {
    Error::Invalid {
        name: "validation_error",
        message: message.into(),
    }
}

fn list(value: Option<&str>) -> Vec<&str> {
    value
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

fn ids(field: &str, value: Option<&str>) -> Result<Vec<Id>, Error> {
    let ids: Vec<Id> = list(value)
        .into_iter()
        .map(|id| {
            id.parse().map_err(|_| {
                invalid(format!(
                    "`{field}` must hold ids separated by commas; {id:?} is not one"
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    if ids.len() > IDS_MAX {
        return Err(invalid(format!("`{field}` may name at most {IDS_MAX} ids")));
    }
    Ok(ids)
}

/// A date (`2026-11-20`, the day's start in `zone`; with `end`, the next day's) or a
/// date and time (with an offset, or in `zone` without one).
fn instant(field: &str, text: &str, zone: Tz, end: bool) -> Result<DateTime<Tz>, Error> {
    let text = text.trim();
    if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        let date = if end { date + Days::days(1) } else { date };
        return local(zone, date.and_hms_opt(0, 0, 0).unwrap_or_default());
    }
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.with_timezone(&zone));
    }
    for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S"] {
        if let Ok(at) = NaiveDateTime::parse_from_str(text, format) {
            return local(zone, at);
        }
    }
    Err(invalid(format!(
        "`{field}` must be an ISO 8601 date (2026-11-20) or date and time (2026-11-20T08:00:00Z); got {text:?}"
    )))
}

/// A local time in `zone`; in a gap (a clock moved forward) the first valid time after.
fn local(zone: Tz, at: NaiveDateTime) -> Result<DateTime<Tz>, Error> {
    zone.from_local_datetime(&at)
        .earliest()
        .or_else(|| zone.from_local_datetime(&(at + Days::hours(1))).earliest())
        .ok_or_else(|| invalid("a time that does not exist in the time zone"))
}

fn to_timestamp(at: DateTime<Tz>) -> Timestamp {
    Timestamp::from_millis(u64::try_from(at.timestamp_millis()).unwrap_or(0))
}

fn to_zone(at: Timestamp, zone: Tz) -> DateTime<Tz> {
    let millis = i64::try_from(at.as_millis()).unwrap_or(i64::MAX);
    zone.timestamp_millis_opt(millis)
        .single()
        .unwrap_or_else(|| zone.timestamp_millis_opt(0).unwrap())
}

impl Query {
    /// Reads the query parameters (`start_date`, `end_date`, `timezone`, `granularity`,
    /// `metrics`, `dimensions`, `domain_id`, `email_id`, `broadcast_id`), with `now` as
    /// the default end.
    pub fn parse(param: impl Fn(&str) -> Option<String>, now: Timestamp) -> Result<Query, Error> {
        let zone_name = param("timezone").unwrap_or_else(|| "UTC".to_owned());
        let zone: Tz = zone_name.trim().parse().map_err(|_| {
            invalid(format!(
                "`timezone` must be an IANA time zone such as Europe/Paris; got {zone_name:?}"
            ))
        })?;
        let granularity = match param("granularity") {
            None => Granularity::Daily,
            Some(name) => Granularity::parse(name.trim()).ok_or_else(|| {
                invalid(format!(
                    "`granularity` must be hourly, daily, weekly or monthly; got {name:?}"
                ))
            })?,
        };
        let metrics_param = param("metrics");
        let mut metrics = Vec::new();
        for name in list(metrics_param.as_deref()) {
            let known = NAMES.iter().find(|n| **n == name).ok_or_else(|| {
                invalid(format!(
                    "`metrics` names an unknown metric {name:?}; known: {}",
                    NAMES.join(", ")
                ))
            })?;
            if !metrics.contains(known) {
                metrics.push(*known);
            }
        }
        if metrics.is_empty() {
            metrics = NAMES.to_vec();
        }
        let dimensions_param = param("dimensions");
        let dimensions = list(dimensions_param.as_deref());
        for dimension in &dimensions {
            match *dimension {
                "period" | "domain" | "email" => {}
                "broadcast" => {
                    return Err(invalid(
                        "the `broadcast` dimension is not available in herald yet; a broadcast's counts are in GET /broadcasts/{id}",
                    ));
                }
                other => {
                    return Err(invalid(format!(
                        "`dimensions` must be among period, domain, email and broadcast; got {other:?}"
                    )));
                }
            }
        }
        if param("broadcast_id").is_some_and(|b| !b.trim().is_empty()) {
            return Err(invalid(
                "`broadcast_id` is not available in herald yet; a broadcast's counts are in GET /broadcasts/{id}",
            ));
        }
        let domain_ids = ids("domain_id", param("domain_id").as_deref())?;
        let email_ids = ids("email_id", param("email_id").as_deref())?;
        let by_email = dimensions.contains(&"email");
        if by_email && email_ids.is_empty() {
            return Err(invalid("the `email` dimension needs `email_id` (at most 100 ids)"));
        }
        let end = match param("end_date") {
            Some(text) => instant("end_date", &text, zone, true)?,
            None => to_zone(now, zone),
        };
        let start = match param("start_date") {
            Some(text) => instant("start_date", &text, zone, false)?,
            None => {
                // Six calendar days before, whatever their length.
                let day = end.date_naive() - Days::days(6);
                local(zone, day.and_hms_opt(0, 0, 0).unwrap_or_default())?
            }
        };
        if start >= end {
            return Err(invalid("`start_date` must be before `end_date`"));
        }
        if end - start > Days::days(RANGE_MAX_DAYS) {
            return Err(invalid(format!("the range may span at most {RANGE_MAX_DAYS} days")));
        }
        // Out to the buckets' edges.
        let start = start_of(bucket_of(to_timestamp(start)));
        let end_ms = to_timestamp(end).as_millis();
        let end = Timestamp::from_millis(end_ms.div_ceil(BUCKET_MS) * BUCKET_MS);
        Ok(Query {
            start,
            end,
            zone,
            granularity,
            metrics,
            by_period: dimensions.contains(&"period"),
            by_domain: dimensions.contains(&"domain"),
            by_email,
            domain_ids,
            email_ids,
        })
    }

    /// The start of the period `at` falls in, in the query's zone.
    pub fn period_of(&self, at: Timestamp) -> DateTime<Tz> {
        let zoned = to_zone(at, self.zone);
        let local = zoned.naive_local();
        let date = local.date();
        if self.granularity == Granularity::Hourly {
            // From the instant, not the wall clock: an hour repeated when clocks go back
            // is two periods.
            let into = i64::from(local.minute()) * 60_000 + i64::from(local.second()) * 1000;
            return zoned - Days::milliseconds(into + i64::from(zoned.timestamp_subsec_millis()));
        }
        let start = match self.granularity {
            Granularity::Hourly => date.and_hms_opt(local.hour(), 0, 0),
            Granularity::Daily => date.and_hms_opt(0, 0, 0),
            Granularity::Weekly => {
                (date - Days::days(i64::from(date.weekday().num_days_from_monday()))).and_hms_opt(0, 0, 0)
            }
            Granularity::Monthly => date.with_day(1).and_then(|d| d.and_hms_opt(0, 0, 0)),
        }
        .unwrap_or(local);
        self::local(self.zone, start).unwrap_or_else(|_| to_zone(at, self.zone))
    }

    /// A time as answered: RFC 3339 in the query's zone.
    pub fn format(&self, at: Timestamp) -> String {
        to_zone(at, self.zone).to_rfc3339()
    }
}

/// Counts by metric.
pub type Tally = BTreeMap<Metric, u64>;

/// One row's key: period start, domain name, email id.
type RowKey = (Option<i64>, Option<String>, Option<Id>);

/// The answer's rows and totals, before rendering.
#[derive(Debug, Default)]
pub struct Answer {
    /// The totals.
    pub totals: Tally,
    /// Rows by key, in key order.
    pub rows: BTreeMap<RowKey, Tally>,
}

/// The team's domains by name, for ids and the domain of subdomains.
fn team_domains(services: &Services, caller: &Caller) -> Result<Vec<(String, Id)>, Error> {
    let mut domains = Vec::new();
    let mut cursor = Cursor::Start;
    loop {
        let (page, more) = crate::domains::service::list(services, caller, &PageRequest { limit: 100, cursor })?;
        let last = page.last().map(|d| d.id);
        domains.extend(page.into_iter().map(|d| (d.name, d.id)));
        match last {
            Some(last) if more && domains.len() < 10_000 => cursor = Cursor::After(last),
            _ => return Ok(domains),
        }
    }
}

/// The team's domain that covers `name` (itself or its closest parent).
fn covering(domains: &[(String, Id)], name: &str) -> Option<(String, Id)> {
    domains
        .iter()
        .filter(|(d, _)| name == d || name.ends_with(&format!(".{d}")))
        .max_by_key(|(d, _)| d.len())
        .cloned()
}

/// Runs `query` for `caller`'s team.
pub fn run(services: &Services, caller: &Caller, query: &Query) -> Result<Value, Error> {
    caller.require_full_access()?;
    let domains = team_domains(services, caller)?;
    let mut answer = Answer::default();
    let from = bucket_of(query.start);
    let to = bucket_of(query.end).saturating_sub(1);
    let mut add = |at: Timestamp, domain: &str, email: Option<Id>, metric: Metric, n: u64| -> Result<(), Error> {
        let covered = covering(&domains, domain);
        if !query.domain_ids.is_empty() && !covered.as_ref().is_some_and(|(_, id)| query.domain_ids.contains(id)) {
            return Ok(());
        }
        *answer.totals.entry(metric).or_default() += n;
        if query.by_period || query.by_domain || query.by_email {
            let key = (
                query.by_period.then(|| query.period_of(at).timestamp_millis()),
                query
                    .by_domain
                    .then(|| covered.map_or_else(|| domain.to_owned(), |(name, _)| name)),
                email.filter(|_| query.by_email),
            );
            if !answer.rows.contains_key(&key) && answer.rows.len() >= ROWS_MAX {
                return Err(invalid(format!(
                    "the answer would have more than {ROWS_MAX} rows; ask for a shorter range or a coarser granularity"
                )));
            }
            *answer.rows.entry(key).or_default().entry(metric).or_default() += n;
        }
        Ok(())
    };
    if query.email_ids.is_empty() {
        for count in services.counters().read(caller.team_id, from, to)? {
            add(start_of(count.bucket), &count.domain, None, count.metric, count.n)?;
        }
    } else {
        for id in &query.email_ids {
            let Some(status) = services.emails().status(caller.team_id, *id)? else {
                return Err(Error::NotFound("Email not found"));
            };
            let domain = domain_of(&status.from);
            for (at, metric) in email_metrics(services.emails(), *id)? {
                if at >= query.start && at < query.end {
                    add(at, &domain, Some(*id), metric, 1)?;
                }
            }
        }
    }
    if query.by_period && !query.by_domain && !query.by_email {
        // Every period of the range has its row, zero or not (what a chart draws).
        let mut period = query.period_of(query.start);
        while to_timestamp(period) < query.end && answer.rows.len() < ROWS_MAX {
            answer
                .rows
                .entry((Some(period.timestamp_millis()), None, None))
                .or_default();
            let next = query.period_of(to_timestamp(period + query.granularity.past_next()));
            if next <= period {
                break;
            }
            period = next;
        }
    }
    Ok(render(query, &answer, &domains))
}

/// An email's events as counted: machine opens left out, its first open and click
/// counted as unique too.
fn email_metrics(emails: &dyn EmailStore, id: Id) -> Result<Vec<(Timestamp, Metric)>, Error> {
    let (mut opened, mut clicked) = (false, false);
    let mut metrics = Vec::new();
    for event in emails.timeline(id)? {
        let human = event.data["machine"] != Value::Bool(true);
        let at = event.created_at;
        match event.kind {
            EmailState::Opened | EmailState::Clicked if !human => {}
            EmailState::Opened => {
                metrics.push((at, Metric::Opened));
                if !std::mem::replace(&mut opened, true) {
                    metrics.push((at, Metric::UniqueOpened));
                }
            }
            EmailState::Clicked => {
                metrics.push((at, Metric::Clicked));
                if !std::mem::replace(&mut clicked, true) {
                    metrics.push((at, Metric::UniqueClicked));
                }
            }
            kind => metrics.push((at, Metric::of(kind, &event.data))),
        }
    }
    Ok(metrics)
}

fn get(tally: &Tally, metric: Metric) -> u64 {
    tally.get(&metric).copied().unwrap_or(0)
}

/// A rate in percent, two decimals; 0 when nothing was counted under it.
fn rate(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    #[allow(clippy::cast_precision_loss)]
    let percent = part as f64 * 100.0 / whole as f64;
    (percent * 100.0).round() / 100.0
}

/// The value of the metric `name` in `tally`.
pub fn value(tally: &Tally, name: &str) -> Value {
    let n = |m| get(tally, m);
    let bounced = n(Metric::BouncedPermanent) + n(Metric::BouncedTransient) + n(Metric::BouncedUndetermined);
    let (sent, delivered) = (n(Metric::Sent), n(Metric::Delivered));
    match name {
        "received" => json!(0),
        "bounced" => json!(bounced),
        "delivery_rate" => json!(rate(delivered, sent)),
        "bounce_rate" => json!(rate(bounced, sent)),
        "complaint_rate" => json!(rate(n(Metric::Complained), delivered)),
        "open_rate" => json!(rate(n(Metric::UniqueOpened), delivered)),
        "click_rate" => json!(rate(n(Metric::UniqueClicked), delivered)),
        "unsubscribe_rate" => json!(rate(n(Metric::Unsubscribed), delivered)),
        other => json!(Metric::parse(other).map_or(0, n)),
    }
}

fn metrics_object(query: &Query, tally: &Tally) -> Map<String, Value> {
    query
        .metrics
        .iter()
        .map(|name| ((*name).to_owned(), value(tally, name)))
        .collect()
}

fn render(query: &Query, answer: &Answer, domains: &[(String, Id)]) -> Value {
    let ids: HashMap<&str, Id> = domains.iter().map(|(name, id)| (name.as_str(), *id)).collect();
    let mut dimensions = Vec::new();
    if query.by_period {
        dimensions.push("period");
    }
    if query.by_domain {
        dimensions.push("domain");
    }
    if query.by_email {
        dimensions.push("email");
    }
    let mut body = json!({
        "object": "metrics",
        "start_date": query.format(query.start),
        "end_date": query.format(query.end),
        "metrics": query.metrics,
        "dimensions": dimensions,
        "granularity": query.granularity.name(),
        "timezone": query.zone.name(),
        "totals": metrics_object(query, &answer.totals),
    });
    if !dimensions.is_empty() {
        let rows: Vec<Value> = answer
            .rows
            .iter()
            .map(|((period, domain, email), tally)| {
                let mut row = Map::new();
                if let Some(period) = period {
                    row.insert(
                        "period".into(),
                        json!(query.format(Timestamp::from_millis(u64::try_from(*period).unwrap_or(0)))),
                    );
                }
                if let Some(domain) = domain {
                    row.insert(
                        "domain_id".into(),
                        ids.get(domain.as_str()).map_or(Value::Null, |id| json!(id.to_string())),
                    );
                    row.insert("domain_name".into(), json!(domain));
                }
                if let Some(email) = email {
                    row.insert("email_id".into(), json!(email.to_string()));
                }
                row.extend(metrics_object(query, tally));
                Value::Object(row)
            })
            .collect();
        body["data"] = Value::Array(rows);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&str, &str)], now: &str) -> Result<Query, Error> {
        let now = DateTime::parse_from_rfc3339(now).expect("now");
        let now = Timestamp::from_millis(u64::try_from(now.timestamp_millis()).expect("after 1970"));
        Query::parse(
            |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned()),
            now,
        )
    }

    #[test]
    fn the_default_range_is_the_last_seven_days_in_the_zone_rounded_to_buckets() {
        let query = parse(&[("timezone", "America/New_York")], "2026-11-26T13:07:00Z").expect("query");
        assert_eq!(query.format(query.start), "2026-11-20T00:00:00-05:00");
        assert_eq!(query.format(query.end), "2026-11-26T08:15:00-05:00");
        assert_eq!(query.metrics.len(), 22);
        assert_eq!(query.granularity, Granularity::Daily);
    }

    #[test]
    fn periods_follow_the_zone_across_a_clock_change() {
        // New York leaves daylight time on 2026-11-01 at 02:00 (06:00 UTC).
        let query = parse(
            &[
                ("timezone", "America/New_York"),
                ("start_date", "2026-10-31"),
                ("end_date", "2026-11-01"),
                ("granularity", "hourly"),
            ],
            "2026-11-26T00:00:00Z",
        )
        .expect("query");
        let at = |s: &str| {
            Timestamp::from_millis(
                u64::try_from(DateTime::parse_from_rfc3339(s).expect("time").timestamp_millis()).expect("ms"),
            )
        };
        // The repeated hour 01:00-02:00 is two periods, an hour apart.
        let first = query.period_of(at("2026-11-01T05:20:00Z"));
        let second = query.period_of(at("2026-11-01T06:20:00Z"));
        assert_eq!(first.to_rfc3339(), "2026-11-01T01:00:00-04:00");
        assert_eq!(second.to_rfc3339(), "2026-11-01T01:00:00-05:00");
        let daily = Query {
            granularity: Granularity::Daily,
            ..query.clone()
        };
        assert_eq!(
            daily.period_of(at("2026-11-02T04:59:00Z")).to_rfc3339(),
            "2026-11-01T00:00:00-04:00",
            "a 25-hour day"
        );
        let weekly = Query {
            granularity: Granularity::Weekly,
            ..query.clone()
        };
        assert_eq!(
            weekly.period_of(at("2026-11-01T12:00:00Z")).to_rfc3339(),
            "2026-10-26T00:00:00-04:00",
            "weeks start on Monday"
        );
        let monthly = Query {
            granularity: Granularity::Monthly,
            ..query
        };
        assert_eq!(
            monthly.period_of(at("2026-11-30T12:00:00Z")).to_rfc3339(),
            "2026-11-01T00:00:00-04:00"
        );
    }

    #[test]
    fn half_hour_zones_fall_on_bucket_edges() {
        let query = parse(
            &[("timezone", "Asia/Kolkata"), ("granularity", "hourly")],
            "2026-11-26T13:07:00Z",
        )
        .expect("query");
        let bucket = start_of(bucket_of(Timestamp::from_millis(1_795_710_600_000)));
        let period = query.period_of(bucket);
        assert_eq!(period.minute(), 0);
        assert_eq!(to_timestamp(period).as_millis() % BUCKET_MS, 0, "on a bucket edge");
    }

    #[test]
    fn bad_parameters_are_refused_with_their_name() {
        let now = "2026-11-26T13:07:00Z";
        for (pairs, named) in [
            (vec![("timezone", "Mars/Olympus")], "timezone"),
            (vec![("granularity", "yearly")], "granularity"),
            (vec![("metrics", "sent,views")], "metrics"),
            (vec![("dimensions", "country")], "dimensions"),
            (vec![("dimensions", "email")], "email_id"),
            (vec![("broadcast_id", "x")], "broadcast_id"),
            (vec![("start_date", "yesterday")], "start_date"),
            (
                vec![("start_date", "2026-11-20"), ("end_date", "2026-11-10")],
                "start_date",
            ),
            (vec![("email_id", "not-an-id")], "email_id"),
        ] {
            let error = parse(&pairs, now).expect_err("refused");
            assert!(error.to_string().contains(named), "{pairs:?}: {error}");
        }
    }

    #[test]
    fn rates_are_percentages_of_their_base() {
        let tally: Tally = [
            (Metric::Sent, 8),
            (Metric::Delivered, 6),
            (Metric::BouncedPermanent, 1),
            (Metric::BouncedTransient, 1),
            (Metric::Complained, 0),
            (Metric::UniqueOpened, 3),
            (Metric::Opened, 5),
        ]
        .into_iter()
        .collect();
        assert_eq!(value(&tally, "bounced"), json!(2));
        assert_eq!(value(&tally, "delivery_rate"), json!(75.0));
        assert_eq!(value(&tally, "bounce_rate"), json!(25.0));
        assert_eq!(value(&tally, "open_rate"), json!(50.0));
        assert_eq!(value(&tally, "complaint_rate"), json!(0.0));
        assert_eq!(value(&Tally::new(), "click_rate"), json!(0.0));
    }
}
