//! `GET /usage` in Resend's shape: the team's emails this UTC day and month against its
//! plan, and what it keeps. herald receives no mail for teams, has no AI credits or
//! automations, and limits none of contacts, segments, broadcasts or domains; those
//! fields are there all the same (the Rust SDK requires every one), as what is true here:
//! `received` 0, limits `null` where the SDK allows it, and where it wants a number, the
//! largest it can hold for "no limit" (contacts) or 0 for what herald does not have.

use crate::storage::Error;
use herald_queue::Id;
use serde_json::{Value, json};

use super::{Allowance, Period, resets_at};
use crate::services::Services;
use crate::storage::page::{Cursor, LIMIT_MAX, PageRequest};

/// The usage of `team`.
pub fn usage(services: &Services, team: Id) -> Result<Value, Error> {
    let now = services.now();
    let allowance = Allowance::of(services.plan_of(team)?);
    let used = services.quotas().used(services.counters(), team, now)?;
    let period = |used: u64, limit: Option<u64>, period: Period| {
        json!({
            "used": used,
            "limit": limit,
            "sent": used,
            "received": 0,
            "resets_at": resets_at(period, now),
        })
    };
    let rate = services
        .accounts()
        .team(team)?
        .and_then(|t| crate::accounts::teams::rate_of(services, &t))
        .unwrap_or(services.config().api.rate_limit);
    let per_ms = u64::try_from(rate.per.as_millis()).unwrap_or(u64::MAX);
    Ok(json!({
        "object": "usage",
        "emails": {
            "daily": period(used.daily, allowance.daily, Period::Daily),
            "monthly": period(used.monthly, allowance.monthly, Period::Monthly),
        },
        "contacts": { "used": services.contacts().count(team)?, "limit": u32::MAX },
        "segments": { "used": services.audience().segments(team)?.len(), "limit": null },
        "broadcasts": { "used": sent_broadcasts(services, team)?, "limit": null },
        "ai_credits": { "used": 0, "limit": null, "next_increase_at": null },
        "automation_runs": { "used": 0, "limit": 0, "resets_at": resets_at(Period::Monthly, now) },
        "domains": { "used": domains(services, team)?, "limit": null },
        "rate_limit": { "limit": rate.count, "duration": format!("{per_ms}ms") },
    }))
}

/// Every page of a list, counted by `count`.
fn count_pages<T>(
    mut load: impl FnMut(&PageRequest) -> Result<(Vec<T>, bool), Error>,
    id_of: impl Fn(&T) -> Id,
    count: impl Fn(&T) -> bool,
) -> Result<u64, Error> {
    let mut request = PageRequest {
        limit: LIMIT_MAX,
        cursor: Cursor::Start,
    };
    let mut total = 0;
    loop {
        let (items, more) = load(&request)?;
        total += items.iter().filter(|item| count(item)).count() as u64;
        match items.last() {
            Some(last) if more => request.cursor = Cursor::After(id_of(last)),
            _ => return Ok(total),
        }
    }
}

fn domains(services: &Services, team: Id) -> Result<u64, Error> {
    count_pages(|page| services.domains().list(team, page), |d| d.id, |_| true)
}

fn sent_broadcasts(services: &Services, team: Id) -> Result<u64, Error> {
    count_pages(
        |page| services.broadcasts().page(team, page),
        |b| b.id,
        |b| b.sent_at.is_some(),
    )
}
