//! `/segments`, and `/audiences`, Resend's older name for them that the Java and .NET
//! SDKs still call: the same segments, answered with `object: "audience"`.

use serde_json::json;

use super::{Ctx, Reply, contacts};
use crate::contacts::segments;
use crate::http::ApiError;
use crate::http::pagination::{PageRequest, envelope};

/// Which name the caller used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    /// `/segments`.
    Segment,
    /// `/audiences`.
    Audience,
}

impl Named {
    fn object(self) -> &'static str {
        match self {
            Named::Segment => "segment",
            Named::Audience => "audience",
        }
    }
}

#[derive(Debug, serde::Deserialize)]
struct NameBody {
    name: Option<String>,
}

/// `POST /segments`, `POST /audiences`.
pub fn create(ctx: &Ctx<'_>, named: Named) -> Result<Reply, ApiError> {
    let body: NameBody = ctx.request.json()?;
    let segment = segments::create(ctx.state, ctx.caller, body.name)?;
    Ok(Reply::created(json!({
        "object": named.object(),
        "id": segment.id,
        "name": segment.name,
    })))
}

/// `GET /segments`, `GET /audiences`, newest first.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, None)?;
    let (found, has_more) = segments::list(ctx.state, ctx.caller, &page)?;
    Ok(Reply::ok(envelope(
        found.iter().map(|segment| segment.to_json(None)).collect(),
        has_more,
    )))
}

/// `GET /segments/{id}`, `GET /audiences/{id}`.
pub fn get(ctx: &Ctx<'_>, id: &str, named: Named) -> Result<Reply, ApiError> {
    let segment = segments::get(ctx.state, ctx.caller, id)?;
    Ok(Reply::ok(segment.to_json(Some(named.object()))))
}

/// `PATCH /segments/{id}`: a new name.
pub fn update(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let body: NameBody = ctx.request.json()?;
    let id = segments::rename(ctx.state, ctx.caller, id, body.name)?;
    Ok(Reply::ok(json!({ "object": "segment", "id": id })))
}

/// `DELETE /segments/{id}`, `DELETE /audiences/{id}`: the segment goes, its contacts stay.
pub fn delete(ctx: &Ctx<'_>, id: &str, named: Named) -> Result<Reply, ApiError> {
    let id = segments::delete(ctx.state, ctx.caller, id)?;
    Ok(Reply::ok(
        json!({ "object": named.object(), "id": id, "deleted": true }),
    ))
}

/// `GET /segments/{id}/contacts`, `GET /audiences/{id}/contacts`.
pub fn contacts(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    contacts::list_in(ctx, Some(id))
}
