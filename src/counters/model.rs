//! What the counters count and how they are read back: the metrics, the 15-minute UTC
//! buckets, the sending domain of a `From` address, and the quota periods.

use herald_queue::Timestamp;
use serde_json::Value;

use crate::emails::state::EmailState;

/// A bucket's length.
pub const BUCKET_MS: u64 = 15 * 60 * 1000;

/// Buckets in a UTC day.
pub const BUCKETS_PER_DAY: u32 = 96;

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

/// A plan quota's counter: a UTC day or month, by its number (days since 1970-01-01,
/// months since year 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaCounter {
    /// A UTC day.
    Day(u32),
    /// A UTC month.
    Month(u32),
}
