//! `/suppressions/batch/add` and `/suppressions/batch/remove`: many entries in one
//! request and one commit. Every item is checked before anything is written, so a bad
//! item refuses the whole request and changes nothing.

use serde_json::json;

use super::suppressions::removed_json;
use super::{Ctx, Reply};
use crate::http::ApiError;
use crate::suppressions::service::{self, RemoveTargets};

#[derive(Debug, serde::Deserialize)]
struct AddBody {
    emails: Option<Vec<String>>,
}

/// `POST /suppressions/batch/add` `{"emails": [...]}`: `{"data": [{object, id}]}`, one
/// entry per distinct address in the order first given; addresses already suppressed
/// answer with their existing id.
pub fn add(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: AddBody = ctx.request.json()?;
    let ids = service::add_many(ctx.state, ctx.caller, body.emails)?;
    let data: Vec<_> = ids
        .iter()
        .map(|id| json!({ "object": "suppression", "id": id }))
        .collect();
    Ok(Reply::created(json!({ "data": data })))
}

#[derive(Debug, serde::Deserialize)]
struct RemoveBody {
    emails: Option<Vec<String>>,
    ids: Option<Vec<String>>,
}

/// `POST /suppressions/batch/remove` `{"emails": [...]}` or `{"ids": [...]}`:
/// `{"data": [{object, id, deleted}]}` for the entries that existed; the others are
/// left out, as Resend does.
pub fn remove(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: RemoveBody = ctx.request.json()?;
    let targets = RemoveTargets {
        emails: body.emails,
        ids: body.ids,
    };
    let removed = service::remove_many(ctx.state, ctx.caller, targets)?;
    let data: Vec<_> = removed.iter().map(removed_json).collect();
    Ok(Reply::ok(json!({ "data": data })))
}
