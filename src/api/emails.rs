//! `/emails`: send one, send a batch, read, list, reschedule and cancel.

use std::time::Duration;

use hyper::StatusCode;
use serde_json::{Value, json};

use super::{Ctx, Reply};
use crate::emails::accept::accept;
use crate::emails::idempotency::{self, Answer, InFlight, Outcome};
use crate::emails::input::SendEmail;
use crate::emails::submit::{self, SendError, Sender};
use crate::emails::{EmailRecord, Invalid, Source, service, validate};
use crate::http::pagination::{PageRequest, envelope};
use crate::http::{ApiError, format};
use crate::outbound::Limits;
use crate::templates::send::Cache as Templates;

/// Emails per batch at most.
pub const BATCH_MAX: usize = 100;
/// Emails per page of `GET /emails` without `limit`.
const DEFAULT_LIMIT: usize = 20;
/// Limits of one attachment download.
const FETCH_LIMITS: Limits = Limits {
    timeout: Duration::from_secs(30),
    body_max: crate::emails::validate::CONTENT_MAX,
};

impl From<Invalid> for ApiError {
    fn from(invalid: Invalid) -> Self {
        match invalid {
            Invalid::Missing(field) => ApiError::missing_field(field),
            Invalid::Field(message) => ApiError::validation(message),
            Invalid::Attachment(message) => ApiError {
                status: StatusCode::UNPROCESSABLE_ENTITY,
                name: "invalid_attachment",
                message,
            },
        }
    }
}

impl From<SendError> for ApiError {
    fn from(error: SendError) -> Self {
        match error {
            SendError::DomainNotVerified(_) | SendError::DomainNotAllowed(_) => ApiError {
                status: StatusCode::FORBIDDEN,
                name: "validation_error",
                message: error.to_string(),
            },
            SendError::Unavailable(refusal) => ApiError::unavailable(refusal.to_string()),
            SendError::Quota(exceeded) => ApiError {
                status: StatusCode::TOO_MANY_REQUESTS,
                name: exceeded.period.error_name(),
                message: exceeded.message,
            },
            SendError::Internal(message) => ApiError::internal(&message),
        }
    }
}

fn sender(ctx: &Ctx<'_>) -> Sender {
    Sender {
        team_id: ctx.caller.team_id,
        api_key_id: Some(ctx.caller.key_id),
        permission: ctx.caller.permission,
        domain_id: ctx.caller.domain_id,
        request_log_id: ctx.request.log_id,
    }
}

/// Validates one email, rendering its template if it names one and downloading `path`
/// attachments through the outbound client.
fn check(ctx: &Ctx<'_>, mut input: SendEmail, templates: &mut Templates) -> Result<crate::emails::Email, ApiError> {
    let template = crate::templates::send::apply(ctx.state, ctx.caller.team_id, &mut input, templates)?;
    let outbound = ctx.state.outbound();
    let runtime = tokio::runtime::Handle::current();
    let mut fetch = |url: &str| -> Result<(Vec<u8>, Option<String>), String> {
        // Handlers run on the blocking pool, where waiting on the runtime is allowed.
        let response = runtime
            .block_on(outbound.get(url, FETCH_LIMITS))
            .map_err(|e| e.to_string())?;
        Ok((response.body.to_vec(), response.content_type))
    };
    let mut email = validate(input, ctx.state.now(), &mut fetch)?;
    email.template = template;
    crate::unsubscribe::filter_topic(ctx.state, ctx.caller.team_id, &mut email)?;
    crate::unsubscribe::check_recipients(&email)?;
    Ok(email)
}

/// `POST /emails`.
pub fn send(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body = ctx.request.json_value()?;
    with_idempotency(ctx, &body, |in_flight| {
        let input: SendEmail = parse(&body)?;
        let email = check(ctx, input, &mut Templates::default())?;
        let sender = sender(ctx);
        let domain = submit::authorize(ctx.state, &sender, &email)?;
        let prepared = submit::prepare(ctx.state, &sender, &email, &domain, Source::Api)?;
        let reply = Reply::ok(json!({ "id": prepared.id }));
        accept(ctx.state, vec![prepared], remember(in_flight, &reply), Source::Api)?.wait()?;
        Ok(reply)
    })
}

/// `POST /emails/batch`: up to 100 emails in one durable write. `x-batch-validation:
/// strict` (the default) refuses the whole batch for one invalid email; `permissive`
/// sends the valid ones and lists the errors by index.
pub fn batch(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body = ctx.request.json_value()?;
    let permissive = match ctx
        .request
        .header("x-batch-validation")
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("strict") => false,
        Some("permissive") => true,
        Some(other) => {
            return Err(ApiError::validation(format!(
                "x-batch-validation must be \"strict\" or \"permissive\", got {other:?}"
            )));
        }
    };
    with_idempotency(ctx, &body, |in_flight| {
        let inputs: Vec<SendEmail> = parse(&body)?;
        if inputs.is_empty() {
            return Err(ApiError::validation("The batch is empty"));
        }
        if inputs.len() > BATCH_MAX {
            return Err(ApiError::validation(format!(
                "A batch holds at most {BATCH_MAX} emails, got {}",
                inputs.len()
            )));
        }
        let sender = sender(ctx);
        let mut prepared = Vec::new();
        let mut errors = Vec::new();
        let mut templates = Templates::default();
        for (index, input) in inputs.into_iter().enumerate() {
            match prepare_one(ctx, &sender, input, &mut templates) {
                Ok(one) => prepared.push(one),
                Err(error) if permissive => errors.push(json!({ "index": index, "message": error.message })),
                Err(mut error) => {
                    error.message = format!("emails[{index}]: {}", error.message);
                    return Err(error);
                }
            }
        }
        let data: Vec<Value> = prepared.iter().map(|p| json!({ "id": p.id })).collect();
        let reply = if permissive {
            Reply::ok(json!({ "data": data, "errors": errors }))
        } else {
            Reply::ok(json!({ "data": data }))
        };
        if !prepared.is_empty() {
            accept(ctx.state, prepared, remember(in_flight, &reply), Source::Api)?.wait()?;
        }
        Ok(reply)
    })
}

fn prepare_one(
    ctx: &Ctx<'_>,
    sender: &Sender,
    input: SendEmail,
    templates: &mut Templates,
) -> Result<submit::Prepared, ApiError> {
    if input.attachments.as_ref().is_some_and(|a| !a.is_empty()) {
        return Err(ApiError::validation(
            "Attachments are not supported in batch emails; send them with POST /emails",
        ));
    }
    if input.scheduled_at.is_some() {
        return Err(ApiError::validation(
            "scheduled_at is not supported in batch emails; send them with POST /emails",
        ));
    }
    let email = check(ctx, input, templates)?;
    let domain = submit::authorize(ctx.state, sender, &email)?;
    Ok(submit::prepare(ctx.state, sender, &email, &domain, Source::Api)?)
}

fn parse<T: serde::de::DeserializeOwned>(body: &Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(body).map_err(|e| {
        let path = e.path().to_string();
        ApiError::validation(format!("Invalid `{path}` field: {}", e.into_inner()))
    })
}

/// What the idempotency key in flight remembers of `reply`, to write with the email.
fn remember<'a, 'k>(in_flight: Option<&'a InFlight<'k>>, reply: &Reply) -> Option<(&'a InFlight<'k>, Answer)> {
    in_flight.map(|in_flight| {
        let answer = Answer::Http {
            status: reply.status.as_u16(),
            response: reply.body.to_string(),
        };
        (in_flight, answer)
    })
}

/// Runs `handle` under the request's `Idempotency-Key`: `handle` gets the key in flight
/// (when the request has one), whose record of the answer is written with the email.
fn with_idempotency(
    ctx: &Ctx<'_>,
    body: &Value,
    handle: impl FnOnce(Option<&InFlight<'_>>) -> Result<Reply, ApiError>,
) -> Result<Reply, ApiError> {
    let Some(key) = ctx.request.header("idempotency-key") else {
        return handle(None);
    };
    if key.is_empty() || key.chars().count() > idempotency::KEY_MAX {
        return Err(ApiError {
            status: StatusCode::BAD_REQUEST,
            name: "invalid_idempotency_key",
            message: format!("The Idempotency-Key must be 1 to {} characters", idempotency::KEY_MAX),
        });
    }
    match ctx
        .state
        .idempotency()
        .begin(ctx.state.now(), ctx.caller.team_id, key, idempotency::body_hash(body))?
    {
        Outcome::Replay(Answer::Http { status, response }) => Ok(Reply {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
            body: serde_json::from_str(&response).unwrap_or(Value::Null),
        }),
        // A key first used for an SMTP submission: its bytes' hash cannot equal a JSON
        // body's, so this is only reached by a key shared across doors by chance.
        Outcome::Replay(Answer::Smtp { email_id }) => Ok(Reply::ok(json!({ "id": email_id }))),
        Outcome::Mismatch => Err(ApiError {
            status: StatusCode::CONFLICT,
            name: "invalid_idempotent_request",
            message: "This Idempotency-Key was already used with a different request body".to_owned(),
        }),
        Outcome::Concurrent => Err(ApiError {
            status: StatusCode::CONFLICT,
            name: "concurrent_idempotent_requests",
            message: "A request with this Idempotency-Key is still in progress; try again later".to_owned(),
        }),
        Outcome::Fresh(in_flight) => handle(Some(&in_flight)),
    }
}

/// `GET /emails/{id}`.
pub fn get(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let record = service::get(ctx.state, ctx.caller, format::id(id, "email")?)?;
    Ok(Reply::ok(record.to_json()))
}

/// `GET /emails`.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, Some(DEFAULT_LIMIT))?;
    let (emails, has_more) = service::list(ctx.state, ctx.caller, &page)?;
    Ok(Reply::ok(envelope(
        emails.iter().map(EmailRecord::summary_json).collect(),
        has_more,
    )))
}

/// `GET /emails/metrics`: the team's counts and rates over a range, by period, domain or
/// email ([`crate::counters::query`]).
pub fn metrics(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let now = ctx.state.now();
    let query = crate::counters::query::Query::parse(|name| ctx.request.query(name).map(str::to_owned), now)?;
    Ok(Reply::ok(crate::counters::query::run(ctx.state, ctx.caller, &query)?))
}

/// `GET /emails/{id}/insights`: the email's deliverability checks ([`crate::insights`]).
pub fn insights(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = format::id(id, "email")?;
    let report = crate::insights::for_email(ctx.state, &ctx.state.dns, ctx.caller, id)?;
    Ok(Reply::ok(report.to_json()))
}

#[derive(Debug, serde::Deserialize)]
struct UpdateBody {
    scheduled_at: Option<String>,
}

/// `PATCH /emails/{id}`: moves a scheduled email.
pub fn update(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let body: UpdateBody = ctx.request.json()?;
    let id = format::id(id, "email")?;
    service::reschedule(ctx.state, ctx.caller, id, body.scheduled_at)?;
    Ok(Reply::ok(json!({ "object": "email", "id": id })))
}

/// `POST /emails/{id}/cancel`: cancels a scheduled email.
pub fn cancel(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = format::id(id, "email")?;
    service::cancel(ctx.state, ctx.caller, id)?;
    Ok(Reply::ok(json!({ "object": "email", "id": id })))
}
