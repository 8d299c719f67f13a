//! `/logs`: the caller's team's API request logs, newest first.

use super::{Ctx, Reply};
use crate::http::pagination::{PageRequest, envelope};
use crate::http::{ApiError, format};
use crate::logs::RequestLog;

/// Logs per page without `limit`.
const DEFAULT_LIMIT: usize = 20;

/// `GET /logs`.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, Some(DEFAULT_LIMIT))?;
    let (logs, has_more) = ctx.state.request_logs().page(ctx.caller.team_id, &page)?;
    Ok(Reply::ok(envelope(
        logs.iter().map(RequestLog::summary_json).collect(),
        has_more,
    )))
}

/// `GET /logs/{id}`.
pub fn get(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = format::id(id, "log")?;
    let log = ctx
        .state
        .request_logs()
        .get(ctx.caller.team_id, id)?
        .ok_or_else(|| ApiError::not_found("Log not found"))?;
    Ok(Reply::ok(log.to_json()))
}
