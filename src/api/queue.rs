//! `/queue`: the spool as operators see it (`herald queue`). A team's full-access key
//! sees and acts on its own team's mail; the operator's key on every team's.

use super::{Ctx, Reply};
use crate::http::pagination::envelope;
use crate::http::{ApiError, format};
use crate::mailqueue::{self, QueueError, QueueState, RetryTarget, Scope};

/// Messages per page without `limit`.
const DEFAULT_LIMIT: usize = 100;
/// The largest page: a queue line is small, and an operator scanning a backlog wants
/// many at once.
const LIMIT_MAX: usize = 1000;

/// A place among the [`AppState::QUEUE_SCANS_MAX`](crate::server::AppState) walks of the
/// spool, or `429` while they are all taken.
fn scan_permit<'a>(ctx: &Ctx<'a>) -> Result<tokio::sync::SemaphorePermit<'a>, ApiError> {
    ctx.state.queue_scans.try_acquire().map_err(|_| ApiError {
        status: hyper::StatusCode::TOO_MANY_REQUESTS,
        name: "rate_limit_exceeded",
        message: "Other walks of the queue are running; try again when they end".to_owned(),
    })
}

fn scope(ctx: &Ctx<'_>) -> Scope {
    if ctx.caller.operator {
        Scope::All
    } else {
        Scope::Team(ctx.caller.team_id)
    }
}

/// `GET /queue?status=&domain=&limit=&after=`.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let request = ctx.request;
    let wanted = match request.query("status") {
        None => None,
        Some(name) => Some(QueueState::parse(name).ok_or_else(|| {
            ApiError::validation(format!(
                "The `status` parameter must be one of due, scheduled, deferred, in_flight, got {name:?}"
            ))
        })?),
    };
    let limit = match request.query("limit") {
        None => DEFAULT_LIMIT,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=LIMIT_MAX).contains(n))
            .ok_or_else(|| {
                ApiError::validation(format!(
                    "The `limit` parameter must be a number between 1 and {LIMIT_MAX}, got {text:?}"
                ))
            })?,
    };
    let after = request.query("after").map(|id| format::id(id, "email")).transpose()?;
    let domain = request.query("domain").filter(|d| !d.is_empty());
    let _permit = scan_permit(ctx)?;
    let (messages, has_more) = mailqueue::list(ctx.state, scope(ctx), (wanted, domain), after, limit)?;
    Ok(Reply::ok(envelope(
        messages.iter().map(mailqueue::QueuedMessage::summary_json).collect(),
        has_more,
    )))
}

/// `GET /queue/stats`.
pub fn stats(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let _permit = scan_permit(ctx)?;
    Ok(Reply::ok(mailqueue::stats(ctx.state, scope(ctx))?.to_json()))
}

/// `GET /queue/{id}`.
pub fn show(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = format::id(id, "email")?;
    Ok(Reply::ok(mailqueue::show(ctx.state, scope(ctx), id)?))
}

/// `POST /queue/{id}/retry`.
pub fn retry_one(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = format::id(id, "email")?;
    let retried = mailqueue::retry(ctx.state, scope(ctx), &RetryTarget::Message(id))?;
    Ok(Reply::ok(retried.to_json()))
}

#[derive(Debug, serde::Deserialize)]
struct RetryBody {
    domain: Option<String>,
    #[serde(default)]
    all: bool,
}

/// `POST /queue/retry` with `{"domain": "example.org"}` or `{"all": true}`.
pub fn retry(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: RetryBody = ctx.request.json()?;
    let target = match (body.domain.filter(|d| !d.trim().is_empty()), body.all) {
        (Some(domain), false) => RetryTarget::Domain(domain),
        (None, true) => RetryTarget::All,
        (Some(_), true) => {
            return Err(ApiError::validation("Give either `domain` or `all`, not both"));
        }
        (None, false) => {
            return Err(ApiError::validation(
                "Say what to retry: `{\"domain\": \"example.org\"}` or `{\"all\": true}` (one email: POST /queue/{id}/retry)",
            ));
        }
    };
    let _permit = scan_permit(ctx)?;
    let retried = mailqueue::retry(ctx.state, scope(ctx), &target)?;
    Ok(Reply::ok(retried.to_json()))
}

/// `DELETE /queue/{id}`.
pub fn delete(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = format::id(id, "email")?;
    let deleted = mailqueue::delete(ctx.state, scope(ctx), id)?;
    Ok(Reply::ok(deleted.to_json()))
}

impl From<QueueError> for ApiError {
    fn from(error: QueueError) -> Self {
        match error {
            QueueError::NotFound(_) => ApiError::not_found(error.to_string()),
            QueueError::InFlight(_) => ApiError::conflict(error.to_string()),
            QueueError::NothingToRetry(why) => ApiError::validation(why),
            QueueError::Storage(error) => error.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_errors_map_to_api_errors() {
        let id = herald_queue::Id::from_bytes([1; 16]);
        assert_eq!(ApiError::from(QueueError::NotFound(id)).name, "not_found");
        let busy = ApiError::from(QueueError::InFlight(id));
        assert_eq!(busy.status, hyper::StatusCode::CONFLICT);
        assert!(busy.message.contains("being delivered"), "{}", busy.message);
    }
}
