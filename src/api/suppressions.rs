//! `/suppressions`: the team's suppression list through the API. Add an address by hand,
//! list the list (all of it, or one origin), read and remove an entry by its id or its
//! address. The batch forms are in [`super::suppressions_batch`]; the rules are
//! [`crate::suppressions::service`]'s.

use serde_json::json;

use super::{Ctx, Reply};
use crate::http::pagination::{PageRequest, envelope};
use crate::http::{ApiError, format};
use crate::suppressions::Suppression;
use crate::suppressions::service;

/// Items per page when the request names no `limit`, as Resend's newer lists do.
const DEFAULT_LIMIT: usize = 20;

#[derive(Debug, serde::Deserialize)]
struct AddBody {
    email: Option<String>,
}

/// `POST /suppressions`: suppresses an address by hand. An address already suppressed
/// keeps its entry (and origin), and its id is the answer.
pub fn add(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: AddBody = ctx.request.json()?;
    let id = service::add(ctx.state, ctx.caller, body.email)?;
    // 201 as Resend answers, also when the address was already on the list and keeps
    // its entry: the caller asked for it to be suppressed, and it is.
    Ok(Reply::created(json!({ "object": "suppression", "id": id })))
}

/// `GET /suppressions`, newest first, optionally `?origin=bounce|complaint|manual`.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, Some(DEFAULT_LIMIT))?;
    let origin = ctx.request.query("origin").map(service::origin).transpose()?;
    let (entries, has_more) = service::list(ctx.state, ctx.caller, &page, origin)?;
    Ok(Reply::ok(envelope(
        entries.iter().map(Suppression::summary_json).collect(),
        has_more,
    )))
}

/// `GET /suppressions/{id-or-email}`.
pub fn get(ctx: &Ctx<'_>, target: &str) -> Result<Reply, ApiError> {
    Ok(Reply::ok(
        service::get(ctx.state, ctx.caller, &decoded(target)?)?.to_json(),
    ))
}

/// `DELETE /suppressions/{id-or-email}`: mail to the address is sent again.
pub fn delete(ctx: &Ctx<'_>, target: &str) -> Result<Reply, ApiError> {
    let suppression = service::remove(ctx.state, ctx.caller, &decoded(target)?)?;
    Ok(Reply::ok(removed_json(&suppression)))
}

/// The answer to a removal.
pub(super) fn removed_json(suppression: &Suppression) -> serde_json::Value {
    json!({ "object": "suppression", "id": suppression.id, "deleted": true })
}

/// A path segment naming a suppression by id or address, percent-decoded (SDKs percent-encode an address).
fn decoded(target: &str) -> Result<String, ApiError> {
    format::named(target, "suppression id or address")
}
