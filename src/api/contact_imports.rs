//! `/contacts/imports`: CSV imports of contacts. The upload was streamed to disk before
//! the handler runs ([`crate::http::upload`]); the import itself runs in the background
//! ([`crate::contacts::imports`]).

use serde_json::json;

use super::{Ctx, Reply};
use crate::contacts::imports::{self, ContactImport, NewImport};
use crate::http::ApiError;
use crate::http::pagination::{PageRequest, envelope};

/// `POST /contacts/imports`: 201 once the file is on disk and the import recorded.
pub fn create(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let Some(upload) = &ctx.request.upload else {
        return Err(ApiError::missing_field("file"));
    };
    let field = |name: &str| upload.field(name).map(str::to_owned);
    let new = NewImport {
        column_map: field("column_map"),
        on_conflict: field("on_conflict"),
        segments: field("segments"),
        topics: field("topics"),
    };
    let id = imports::create(ctx.state, ctx.caller, &upload.path, &new)?;
    Ok(Reply::created(json!({ "object": "contact_import", "id": id })))
}

/// `GET /contacts/imports` (`?status=` for those in one state), newest first.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, Some(20))?;
    let (found, has_more) = imports::list(ctx.state, ctx.caller, &page, ctx.request.query("status"))?;
    Ok(Reply::ok(envelope(
        found.iter().map(ContactImport::summary_json).collect(),
        has_more,
    )))
}

/// `GET /contacts/imports/{id}`: its state, counts and first refused rows; herald's
/// `?errors_after=<row>` pages through the rest.
pub fn get(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let after = match ctx.request.query("errors_after") {
        None => 0,
        Some(text) => text.parse().map_err(|_| {
            ApiError::validation(format!(
                "The `errors_after` parameter must be a row number, got {text:?}"
            ))
        })?,
    };
    let (import, errors, more) = imports::get(ctx.state, ctx.caller, id, after)?;
    Ok(Reply::ok(import.to_json(&errors, more)))
}
