//! `GET /dashboard/metrics`: the team's sending drawn from `GET /emails/metrics` (the
//! same query code): totals with Resend's rates, charts by period in the viewer's time
//! zone with the 4 % bounce and 0.08 % complaint thresholds, and a table by domain.

use askama::Template;
use bytes::Bytes;
use chrono::DateTime;
use http_body_util::Full;
use hyper::{Response, StatusCode};
use serde_json::Value;

use super::charts::{Series, Threshold, line_chart};
use super::{Ctx, Signed, html, text};
use crate::counters::query::{self, Query};

/// The ranges offered: (parameter, label, days, default granularity).
const RANGES: &[(&str, &str, i64, &str)] = &[
    ("1d", "Today", 1, "hourly"),
    ("7d", "Last 7 days", 7, "daily"),
    ("30d", "Last 30 days", 30, "daily"),
    ("90d", "Last 90 days", 90, "weekly"),
    ("365d", "Last 12 months", 365, "monthly"),
];

/// A headline figure.
pub struct Card {
    /// What it counts.
    pub label: &'static str,
    /// The count.
    pub value: String,
    /// A rate under it, if any.
    pub rate: Option<String>,
    /// Whether the rate is past its threshold.
    pub alarm: bool,
}

/// A chart: its title, its SVG and its legend (each line's name and class).
pub type Chart = (&'static str, String, Vec<(&'static str, &'static str)>);

/// One row of the table by domain.
pub struct DomainRow {
    /// The domain.
    pub name: String,
    /// Counts and rates, in the table's column order.
    pub cells: Vec<String>,
}

/// The page.
#[derive(Template)]
#[template(path = "dashboard/metrics.html")]
pub struct MetricsPage<'a> {
    /// The page's frame.
    pub chrome: super::pages::Chrome<'a>,
    /// The range chosen.
    pub range: &'a str,
    /// The ranges offered.
    pub ranges: &'a [(&'a str, &'a str, i64, &'a str)],
    /// The granularity chosen.
    pub granularity: &'a str,
    /// The time zone.
    pub tz: String,
    /// The domain filter (an id, or empty).
    pub domain: String,
    /// The team's domains: (id, name).
    pub domains: Vec<(String, String)>,
    /// The headline figures.
    pub cards: Vec<Card>,
    /// The charts: title, SVG and legend (name, class).
    pub charts: Vec<Chart>,
    /// Bounces by kind.
    pub bounces: Vec<(&'static str, String)>,
    /// The table by domain.
    pub by_domain: Vec<DomainRow>,
    /// The range shown, for people.
    pub shown: String,
}

fn n(totals: &Value, name: &str) -> f64 {
    totals[name].as_f64().unwrap_or(0.0)
}

fn count(totals: &Value, name: &str) -> String {
    totals[name].as_u64().unwrap_or(0).to_string()
}

fn percent(value: f64) -> String {
    format!("{value:.2} %")
}

fn label(period: &str, granularity: &str) -> String {
    let Ok(at) = DateTime::parse_from_rfc3339(period) else {
        return period.to_owned();
    };
    match granularity {
        "hourly" => at.format("%d %b %H:%M").to_string(),
        "monthly" => at.format("%b %Y").to_string(),
        _ => at.format("%d %b").to_string(),
    }
}

fn series(rows: &[Value], name: &'static str, metric: &str, class: &'static str) -> Series {
    Series {
        name,
        class,
        values: rows.iter().map(|row| n(row, metric)).collect(),
    }
}

/// `GET /dashboard/metrics`.
pub fn page(ctx: &Ctx<'_>, signed: &Signed) -> Response<Full<Bytes>> {
    let request = ctx.request;
    let range = RANGES
        .iter()
        .find(|r| Some(r.0) == request.query("range"))
        .unwrap_or(&RANGES[1]);
    let granularity = ["hourly", "daily", "weekly", "monthly"]
        .into_iter()
        .find(|g| Some(*g) == request.query("granularity"))
        .unwrap_or(range.3);
    let tz = request
        .query("tz")
        .filter(|tz| tz.parse::<chrono_tz::Tz>().is_ok())
        .unwrap_or("UTC")
        .to_owned();
    let domain = request.query("domain").unwrap_or_default().to_owned();
    let now = ctx.state.now();
    let zone: chrono_tz::Tz = tz.parse().unwrap_or(chrono_tz::UTC);
    let today = DateTime::from_timestamp_millis(i64::try_from(now.as_millis()).unwrap_or(0))
        .unwrap_or_default()
        .with_timezone(&zone)
        .date_naive();
    let start = (today - chrono::Duration::days(range.2 - 1)).to_string();
    let ask = |dimensions: &str| {
        let params = [
            ("start_date", start.clone()),
            ("timezone", tz.clone()),
            ("granularity", granularity.to_owned()),
            ("dimensions", dimensions.to_owned()),
            ("domain_id", domain.clone()),
        ];
        let query = Query::parse(
            |name| params.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone()),
            now,
        )?;
        query::run(ctx.state, &signed.caller(), &query)
    };
    let (by_period, by_domain) = match (ask("period"), ask("domain")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(error), _) | (_, Err(error)) => return text(StatusCode::UNPROCESSABLE_ENTITY, &error.to_string()),
    };
    let totals = &by_period["totals"];
    let rows = by_period["data"].as_array().cloned().unwrap_or_default();
    let labels: Vec<String> = rows
        .iter()
        .map(|r| label(r["period"].as_str().unwrap_or_default(), granularity))
        .collect();
    let card = |label, name: &str, rate: Option<(&str, f64)>| Card {
        label,
        value: count(totals, name),
        rate: rate.map(|(r, _)| percent(n(totals, r))),
        alarm: rate.is_some_and(|(r, limit)| n(totals, r) > limit),
    };
    let cards = vec![
        card("Sent", "sent", None),
        card("Delivered", "delivered", Some(("delivery_rate", f64::INFINITY))),
        card("Bounced", "bounced", Some(("bounce_rate", 4.0))),
        card("Complained", "complained", Some(("complaint_rate", 0.08))),
        card("Opened (unique)", "unique_opened", Some(("open_rate", f64::INFINITY))),
        card(
            "Clicked (unique)",
            "unique_clicked",
            Some(("click_rate", f64::INFINITY)),
        ),
        card("Delivery delayed", "delivery_delayed", None),
        card("Suppressed", "suppressed", None),
    ];
    let chart = |title: &'static str, lines: Vec<Series>, threshold: Option<Threshold>, percent: bool| {
        let legend = lines.iter().map(|l| (l.name, l.class)).collect();
        (title, line_chart(title, &labels, &lines, threshold, percent), legend)
    };
    let charts = vec![
        chart(
            "Emails",
            vec![
                series(&rows, "Sent", "sent", "s-sent"),
                series(&rows, "Delivered", "delivered", "s-delivered"),
                series(&rows, "Bounced", "bounced", "s-bounced"),
            ],
            None,
            false,
        ),
        chart(
            "Bounce rate",
            vec![series(&rows, "Bounce rate", "bounce_rate", "s-bounced")],
            Some(Threshold {
                value: 4.0,
                label: "4 % threshold",
            }),
            true,
        ),
        chart(
            "Complaint rate",
            vec![series(&rows, "Complaint rate", "complaint_rate", "s-complained")],
            Some(Threshold {
                value: 0.08,
                label: "0.08 % threshold",
            }),
            true,
        ),
        chart(
            "Opens and clicks",
            vec![
                series(&rows, "Unique opens", "unique_opened", "s-opened"),
                series(&rows, "Unique clicks", "unique_clicked", "s-clicked"),
            ],
            None,
            false,
        ),
    ];
    let bounces = vec![
        ("Permanent", count(totals, "bounced_permanent")),
        ("Transient", count(totals, "bounced_transient")),
        ("Undetermined", count(totals, "bounced_undetermined")),
    ];
    let by_domain = by_domain["data"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|row| DomainRow {
                    name: row["domain_name"].as_str().unwrap_or("(none)").to_owned(),
                    cells: vec![
                        count(row, "sent"),
                        count(row, "delivered"),
                        count(row, "bounced"),
                        count(row, "complained"),
                        percent(n(row, "delivery_rate")),
                        percent(n(row, "bounce_rate")),
                        percent(n(row, "complaint_rate")),
                        percent(n(row, "open_rate")),
                    ],
                })
                .collect()
        })
        .unwrap_or_default();
    let domains = crate::domains::service::list(ctx.state, &signed.caller(), &super::first_page())
        .map(|(list, _)| list.into_iter().map(|d| (d.id.to_string(), d.name)).collect())
        .unwrap_or_default();
    let shown = format!(
        "{} to {}",
        label(by_period["start_date"].as_str().unwrap_or_default(), "hourly"),
        label(by_period["end_date"].as_str().unwrap_or_default(), "hourly")
    );
    let page = MetricsPage {
        chrome: signed.chrome("metrics"),
        range: range.0,
        ranges: RANGES,
        granularity,
        tz,
        domain,
        domains,
        cards,
        charts,
        bounces,
        by_domain,
        shown,
    };
    html(StatusCode::OK, page.render())
}
