//! The teams service: the operator creates teams (each with its first full-access key),
//! lists and updates them; any key may read its own team.

use herald_queue::Id;

use super::{ApiKey, Caller, Permission, Team, Token};
use crate::config::{Rate, values};
use crate::services::{Error, RecordName, Services, required_text};

/// Longest team name.
const NAME_MAX: usize = 100;

/// A team to create, as the operator asks for it.
#[derive(Debug, Clone, Default)]
pub struct NewTeam {
    /// The display name (required).
    pub name: Option<String>,
    /// Its own API rate limit (`"100/s"`), instead of its plan's or `[api] rate_limit`.
    pub rate_limit: Option<String>,
    /// Its plan (a `[[plans]]` name); unlimited without one.
    pub plan: Option<String>,
}

/// A change to a team: `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct TeamChange {
    /// A new name.
    pub name: Option<String>,
    /// A new rate limit; `Some(None)` clears it.
    pub rate_limit: Option<Option<String>>,
    /// A new plan; `Some(None)` takes the team off its plan (unlimited).
    pub plan: Option<Option<String>>,
}

/// Refuses a caller that is not the operator's full-access key: only it manages teams.
pub fn require_operator(caller: &Caller) -> Result<(), Error> {
    caller.require_full_access()?;
    if caller.operator {
        Ok(())
    } else {
        Err(Error::Forbidden(
            "Only the operator's full-access API key can manage teams".to_owned(),
        ))
    }
}

/// Validates an optional rate limit such as `"100/s"`.
fn rate_limit(text: Option<&str>) -> Result<Option<Rate>, Error> {
    text.map(|t| values::rate(t).map_err(|e| Error::invalid(format!("Invalid `rate_limit` field: {e}"))))
        .transpose()
}

/// Checks that `name` is a configured plan; the error lists those there are.
fn plan(services: &Services, name: Option<String>) -> Result<Option<String>, Error> {
    let Some(name) = name else { return Ok(None) };
    let plans = &services.config().plans;
    if plans.iter().any(|plan| plan.name == name) {
        return Ok(Some(name));
    }
    let names: Vec<&str> = plans.iter().map(|plan| plan.name.as_str()).collect();
    Err(Error::invalid(if names.is_empty() {
        format!("Invalid `plan` field: there is no plan `{name}`, and none is configured ([[plans]])")
    } else {
        format!(
            "Invalid `plan` field: there is no plan `{name}`; the plans are {}",
            names.join(", ")
        )
    }))
}

/// The rate limit `team` is held to instead of `[api] rate_limit`: its own, else its
/// plan's; `None` for the default.
pub fn rate_of(services: &Services, team: &Team) -> Option<Rate> {
    let own = team.rate_limit.as_deref().and_then(|r| values::rate(r).ok());
    own.or_else(|| {
        let name = team.plan.as_deref()?;
        services.config().plans.iter().find(|p| p.name == name)?.rate_limit
    })
}

/// Creates a team (operator only) with its first `full_access` key; returns both, the
/// key's token shown once, and the team's rate limit for the adapter's limiter.
pub fn create(
    services: &Services,
    caller: &Caller,
    new: NewTeam,
) -> Result<(Team, Option<Rate>, ApiKey, Token), Error> {
    require_operator(caller)?;
    let name = required_text(new.name, "name", NAME_MAX)?;
    let rate = rate_limit(new.rate_limit.as_deref())?;
    let plan = plan(services, new.plan)?;
    let team = Team {
        id: services.next_id(),
        name,
        operator: false,
        created_at: services.now(),
        rate_limit: rate.map(|r| r.to_string()),
        plan,
        deleted_at: None,
    };
    services.accounts().put_team(&team)?;
    let (key, token) = super::keys::issue(services, team.id, "Default".to_owned(), Permission::FullAccess, None)?;
    let rate = rate_of(services, &team);
    Ok((team, rate, key, token))
}

/// Every team, newest first (operator only).
pub fn list(services: &Services, caller: &Caller) -> Result<Vec<Team>, Error> {
    require_operator(caller)?;
    let mut teams = services.accounts().teams()?;
    teams.retain(|team| team.deleted_at.is_none());
    teams.reverse();
    Ok(teams)
}

/// The team `id`: the operator reads any team, others their own.
pub fn get(services: &Services, caller: &Caller, id: Id) -> Result<Team, Error> {
    caller.require_full_access()?;
    if id != caller.team_id && !caller.operator {
        return Err(Error::NotFound("Team not found"));
    }
    live(services, id)
}

/// The team `id` unless it is missing or deleted.
fn live(services: &Services, id: Id) -> Result<Team, Error> {
    services
        .accounts()
        .team(id)?
        .filter(|team| team.deleted_at.is_none())
        .ok_or(Error::NotFound("Team not found"))
}

/// Renames a team, sets its rate limit or its plan (operator only). Returns the rate
/// limit it is held to when either changed (`Some(None)`: the default), for the
/// adapter's limiter.
pub fn update(services: &Services, caller: &Caller, id: Id, change: TeamChange) -> Result<Option<Option<Rate>>, Error> {
    require_operator(caller)?;
    let _guard = services.lock_record(RecordName {
        table: "teams",
        key: id.as_bytes(),
    });
    let mut team = live(services, id)?;
    if change.name.is_some() {
        team.name = required_text(change.name, "name", NAME_MAX)?;
    }
    let new_rate = change.rate_limit.map(|text| rate_limit(text.as_deref())).transpose()?;
    let changed = new_rate.is_some() || change.plan.is_some();
    if let Some(rate) = new_rate {
        team.rate_limit = rate.map(|r| r.to_string());
    }
    if let Some(name) = change.plan {
        team.plan = plan(services, name)?;
    }
    services.accounts().put_team(&team)?;
    Ok(changed.then(|| rate_of(services, &team)))
}

/// Deletes the team `id` (operator only; never the operator's own): its API keys are
/// deleted at once, so its tokens stop working when this returns, and the team is marked
/// for [`super::erasure`], which removes every record it kept but its suppression list.
pub fn delete(services: &Services, caller: &Caller, id: Id) -> Result<(), Error> {
    require_operator(caller)?;
    let _guard = services.lock_record(RecordName {
        table: "teams",
        key: id.as_bytes(),
    });
    let mut team = live(services, id)?;
    if team.operator {
        return Err(Error::invalid("The operator's team cannot be deleted"));
    }
    let page = crate::storage::page::PageRequest {
        limit: crate::storage::page::LIMIT_MAX,
        cursor: crate::storage::page::Cursor::Start,
    };
    loop {
        let (keys, _) = services.accounts().keys(id, &page)?;
        if keys.is_empty() {
            break;
        }
        for key in &keys {
            services.accounts().delete_key(key)?;
        }
    }
    team.deleted_at = Some(services.now());
    services.accounts().put_team(&team)?;
    services.erasure_wake().wake();
    Ok(())
}
