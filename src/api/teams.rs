//! `/teams`: the operator creates teams (each with its first full-access key), lists and
//! updates them; any key may read its own team.

use herald_queue::Batch;
use serde_json::{Value, json};

use super::{Ctx, Reply, required_text};
use crate::accounts::{Permission, Team};
use crate::config::values;
use crate::http::{ApiError, format};

/// Longest team name.
const NAME_MAX: usize = 100;

fn team_json(team: &Team) -> Value {
    json!({
        "object": "team",
        "id": team.id,
        "name": team.name,
        "operator": team.operator,
        "rate_limit": team.rate_limit,
        "created_at": format::timestamp(team.created_at),
    })
}

fn require_operator(ctx: &Ctx<'_>) -> Result<(), ApiError> {
    if ctx.caller.operator {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "Only the operator's full-access API key can manage teams",
        ))
    }
}

/// Validates an optional `rate_limit` such as `"100/s"`.
fn rate_limit(text: Option<&str>) -> Result<Option<crate::config::Rate>, ApiError> {
    text.map(|t| values::rate(t).map_err(|e| ApiError::validation(format!("Invalid `rate_limit` field: {e}"))))
        .transpose()
}

#[derive(Debug, serde::Deserialize)]
struct CreateBody {
    name: Option<String>,
    rate_limit: Option<String>,
}

/// `POST /teams` (operator only): the new team and its first `full_access` key.
pub fn create(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    require_operator(ctx)?;
    let body: CreateBody = ctx.request.json()?;
    let name = required_text(body.name, "name", NAME_MAX)?;
    let rate = rate_limit(body.rate_limit.as_deref())?;
    let store = &ctx.state.store;
    let team = Team {
        id: store.next_id(),
        name,
        operator: false,
        created_at: store.now(),
        rate_limit: rate.map(|r| r.to_string()),
    };
    let mut batch = Batch::new();
    batch.put(team.id.as_bytes(), &team)?;
    store.commit(batch).wait()?;
    ctx.state.rate_limits.set_override(team.id, rate);
    let (key, token) = super::api_keys::issue(ctx.state, team.id, "Default".to_owned(), Permission::FullAccess, None)?;
    let mut body = team_json(&team);
    if let Value::Object(map) = &mut body {
        map.insert("api_key".into(), json!({ "id": key.id, "token": token.expose() }));
    }
    Ok(Reply::created(body))
}

/// `GET /teams` (operator only).
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    require_operator(ctx)?;
    let teams = Team::all(&ctx.state.store)?;
    let data = teams.iter().rev().map(team_json).collect();
    Ok(Reply::ok(crate::http::pagination::envelope(data, false)))
}

/// `GET /teams/{id}`: the operator reads any team, others their own.
pub fn get(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = format::id(id, "team")?;
    if id != ctx.caller.team_id && !ctx.caller.operator {
        return Err(ApiError::not_found("Team not found"));
    }
    let team = Team::find(&ctx.state.store, id)?.ok_or_else(|| ApiError::not_found("Team not found"))?;
    Ok(Reply::ok(team_json(&team)))
}

#[derive(Debug, serde::Deserialize)]
struct UpdateBody {
    name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    rate_limit: Option<Option<String>>,
}

/// Tells an absent field (`None`) from an explicit `null` (`Some(None)`).
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Option<String>>, D::Error> {
    serde::Deserialize::deserialize(deserializer).map(Some)
}

/// `PATCH /teams/{id}` (operator only): renames, or sets (`null` clears) the rate limit.
pub fn update(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    require_operator(ctx)?;
    let id = format::id(id, "team")?;
    let body: UpdateBody = ctx.request.json()?;
    let store = &ctx.state.store;
    let _guard = ctx.state.lock_record(crate::services::RecordName {
        table: herald_queue::Table::TEAMS.name(),
        key: id.as_bytes(),
    });
    let mut team = Team::find(store, id)?.ok_or_else(|| ApiError::not_found("Team not found"))?;
    if body.name.is_some() {
        team.name = required_text(body.name, "name", NAME_MAX)?;
    }
    let new_rate = match &body.rate_limit {
        Some(text) => Some(rate_limit(text.as_deref())?),
        None => None,
    };
    if let Some(rate) = new_rate {
        team.rate_limit = rate.map(|r| r.to_string());
    }
    let mut batch = Batch::new();
    batch.put(id.as_bytes(), &team)?;
    store.commit(batch).wait()?;
    if let Some(rate) = new_rate {
        ctx.state.rate_limits.set_override(id, rate);
    }
    Ok(Reply::ok(json!({ "object": "team", "id": id })))
}
