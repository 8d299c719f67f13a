//! `/api-keys`: create (the token is shown once), list, rename, delete. The rules are
//! [`crate::accounts::keys`]'.

use serde_json::json;

use super::{Ctx, Reply};
use crate::accounts::keys::{self, NewKey};
use crate::http::pagination::{PageRequest, envelope};
use crate::http::{ApiError, format};

#[derive(Debug, serde::Deserialize)]
struct CreateBody {
    name: Option<String>,
    permission: Option<String>,
    domain_id: Option<String>,
}

/// `POST /api-keys`.
pub fn create(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: CreateBody = ctx.request.json()?;
    let new = NewKey {
        name: body.name,
        permission: body.permission,
        domain_id: body
            .domain_id
            .as_deref()
            .map(|text| format::id(text, "domain"))
            .transpose()?,
    };
    let (key, token) = keys::create(ctx.state, ctx.caller, new)?;
    Ok(Reply::created(json!({ "id": key.id, "token": token.expose() })))
}

/// `GET /api-keys`.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, None)?;
    let (listed, has_more) = keys::list(ctx.state, ctx.caller, &page)?;
    let data = listed
        .iter()
        .map(|listed| {
            let key = &listed.key;
            json!({
                "id": key.id,
                "name": key.name,
                "permission": key.permission,
                "domain_id": key.domain_id,
                "created_at": format::timestamp(key.created_at),
                "last_used_at": listed.last_used_at.map(format::timestamp),
            })
        })
        .collect();
    Ok(Reply::ok(envelope(data, has_more)))
}

#[derive(Debug, serde::Deserialize)]
struct UpdateBody {
    name: Option<String>,
}

/// `PATCH /api-keys/{id}`: renames a key.
pub fn update(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = format::id(id, "API key")?;
    let body: UpdateBody = ctx.request.json()?;
    keys::rename(ctx.state, ctx.caller, id, body.name)?;
    Ok(Reply::ok(json!({ "object": "api_key", "id": id })))
}

/// `DELETE /api-keys/{id}`: the key stops working at once.
pub fn delete(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = format::id(id, "API key")?;
    keys::delete(ctx.state, ctx.caller, id)?;
    Ok(Reply::ok(json!({ "object": "api_key", "id": id, "deleted": true })))
}
