//! What each source address is doing, for `herald queue stats` (`GET /queue/stats`) and
//! the dashboard's domain page.

use serde_json::{Value, json};

use super::{RegionState, Regions, Today};

/// One source address's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceStats {
    /// Its region.
    pub region: String,
    /// The address.
    pub address: String,
    /// Connections open from it.
    pub connections: usize,
    /// Its connection limit.
    pub connections_max: usize,
    /// Messages sent from it today (UTC).
    pub sent_today: u64,
    /// While it warms up: the day of the schedule (1 for the first), the schedule's
    /// length in days, and today's limit.
    pub warmup: Option<WarmupDay>,
}

/// Where an address stands in its warm-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarmupDay {
    /// The day of the schedule, from 1.
    pub day: usize,
    /// Days in the schedule.
    pub days: usize,
    /// Today's limit.
    pub daily_limit: u64,
}

impl SourceStats {
    /// As `GET /queue/stats` lists it.
    pub fn to_json(&self) -> Value {
        json!({
            "region": self.region,
            "address": self.address,
            "connections": self.connections,
            "connections_max": self.connections_max,
            "sent_today": self.sent_today,
            "daily_limit": self.warmup.map(|w| w.daily_limit),
            "warmup": self.warmup.map(|w| json!({ "day": w.day, "days": w.days })),
        })
    }
}

/// Every source address of every region, in the file's order.
pub fn all(regions: &Regions, today: Today<'_>) -> Vec<SourceStats> {
    regions.all().iter().flat_map(|region| of(region, today)).collect()
}

/// The source addresses of `region`.
pub fn of(region: &RegionState, today: Today<'_>) -> Vec<SourceStats> {
    let now = today.now;
    region
        .sources()
        .iter()
        .map(|source| SourceStats {
            region: region.name().to_owned(),
            address: source.ip().to_string(),
            connections: source.open(),
            connections_max: source.connections_max(),
            sent_today: source.sent_today(today),
            warmup: source.today(now).map(|(index, daily_limit)| WarmupDay {
                day: index + 1,
                days: source.warmup().map_or(0, |w| w.daily_limits.len()),
                daily_limit,
            }),
        })
        .collect()
}
