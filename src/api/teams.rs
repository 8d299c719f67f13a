//! `/teams`: the operator creates teams (each with its first full-access key), lists and
//! updates them; any key may read its own team. The rules are
//! [`crate::accounts::teams`]'.

use serde_json::{Value, json};

use super::{Ctx, Reply};
use crate::accounts::Team;
use crate::accounts::teams::{self, NewTeam, TeamChange};
use crate::http::{ApiError, format};

fn team_json(team: &Team) -> Value {
    json!({
        "object": "team",
        "id": team.id,
        "name": team.name,
        "operator": team.operator,
        "rate_limit": team.rate_limit,
        "plan": team.plan,
        "created_at": format::timestamp(team.created_at),
    })
}

#[derive(Debug, serde::Deserialize)]
struct CreateBody {
    name: Option<String>,
    rate_limit: Option<String>,
    plan: Option<String>,
}

/// `POST /teams` (operator only): the new team and its first `full_access` key.
pub fn create(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    // A caller who may not manage teams is told so before anything about its request.
    teams::require_operator(ctx.caller)?;
    let body: CreateBody = ctx.request.json()?;
    let new = NewTeam {
        name: body.name,
        rate_limit: body.rate_limit,
        plan: body.plan,
    };
    let (team, rate, key, token) = teams::create(ctx.state, ctx.caller, new)?;
    ctx.state.rate_limits.set_override(team.id, rate);
    let mut body = team_json(&team);
    if let Value::Object(map) = &mut body {
        map.insert("api_key".into(), json!({ "id": key.id, "token": token.expose() }));
    }
    Ok(Reply::created(body))
}

/// `GET /usage`: the caller's team's emails this UTC day and month against its plan,
/// in Resend's shape (full-access keys).
pub fn usage(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    ctx.caller.require_full_access()?;
    Ok(Reply::ok(crate::quotas::usage::usage(ctx.state, ctx.caller.team_id)?))
}

/// `GET /teams` (operator only).
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let teams = teams::list(ctx.state, ctx.caller)?;
    let data = teams.iter().map(team_json).collect();
    Ok(Reply::ok(crate::http::pagination::envelope(data, false)))
}

/// `GET /teams/{id}`: the operator reads any team, others their own.
pub fn get(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = format::id(id, "team")?;
    let team = teams::get(ctx.state, ctx.caller, id)?;
    Ok(Reply::ok(team_json(&team)))
}

#[derive(Debug, serde::Deserialize)]
struct UpdateBody {
    name: Option<String>,
    #[serde(default, deserialize_with = "super::present")]
    rate_limit: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::present")]
    plan: Option<Option<String>>,
}

/// `PATCH /teams/{id}` (operator only): renames, or sets (`null` clears) the rate limit
/// or the plan.
pub fn update(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    teams::require_operator(ctx.caller)?;
    let id = format::id(id, "team")?;
    let body: UpdateBody = ctx.request.json()?;
    let change = TeamChange {
        name: body.name,
        rate_limit: body.rate_limit,
        plan: body.plan,
    };
    if let Some(rate) = teams::update(ctx.state, ctx.caller, id, change)? {
        ctx.state.rate_limits.set_override(id, rate);
    }
    Ok(Reply::ok(json!({ "object": "team", "id": id })))
}

/// `DELETE /teams/{id}` (operator only): the team's keys stop working at once, and its
/// records are erased in the background (its suppression list stays).
pub fn delete(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    teams::require_operator(ctx.caller)?;
    let id = format::id(id, "team")?;
    teams::delete(ctx.state, ctx.caller, id)?;
    Ok(Reply::ok(json!({ "object": "team", "id": id, "deleted": true })))
}
