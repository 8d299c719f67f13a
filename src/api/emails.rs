//! `/emails`: send one, send a batch, read, list, reschedule and cancel.

use std::time::Duration;

use herald_queue::{Batch, RecipientState, Updated};
use hyper::StatusCode;
use serde_json::{Value, json};

use super::{Ctx, Reply};
use crate::emails::accept::accept;
use crate::emails::idempotency::{self, Answer, InFlight, Outcome};
use crate::emails::input::SendEmail;
use crate::emails::record::EmailStatus;
use crate::emails::submit::{self, SendError, Sender};
use crate::emails::{EmailRecord, EmailState, Invalid, Source, schedule, validate};
use crate::http::pagination::{PageRequest, envelope};
use crate::http::{ApiError, format};
use crate::outbound::Limits;

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
    }
}

/// Validates one email, downloading `path` attachments through the outbound client.
fn check(ctx: &Ctx<'_>, input: SendEmail) -> Result<crate::emails::Email, ApiError> {
    let outbound = &ctx.state.outbound;
    let runtime = tokio::runtime::Handle::current();
    let mut fetch = |url: &str| -> Result<(Vec<u8>, Option<String>), String> {
        // Handlers run on the blocking pool, where waiting on the runtime is allowed.
        let response = runtime
            .block_on(outbound.get(url, FETCH_LIMITS))
            .map_err(|e| e.to_string())?;
        Ok((response.body.to_vec(), response.content_type))
    };
    Ok(validate(input, ctx.state.store.now(), &mut fetch)?)
}

/// `POST /emails`.
pub fn send(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body = ctx.request.json_value()?;
    with_idempotency(ctx, &body, |in_flight| {
        let input: SendEmail = parse(&body)?;
        let email = check(ctx, input)?;
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
        for (index, input) in inputs.into_iter().enumerate() {
            match prepare_one(ctx, &sender, input) {
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

fn prepare_one(ctx: &Ctx<'_>, sender: &Sender, input: SendEmail) -> Result<submit::Prepared, ApiError> {
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
    let email = check(ctx, input)?;
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
    let store = &ctx.state.store;
    match ctx
        .state
        .idempotency
        .begin(store, ctx.caller.team_id, key, idempotency::body_hash(body))?
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

/// Locks the email `id` for a change of its record.
fn lock_email<'a>(ctx: &Ctx<'a>, id: &str) -> Result<std::sync::MutexGuard<'a, ()>, ApiError> {
    let key = EmailRecord::key(ctx.caller.team_id, format::id(id, "email")?);
    Ok(ctx.state.lock_record(crate::services::RecordName {
        table: herald_queue::Table::EMAILS.name(),
        key: &key,
    }))
}

fn load(ctx: &Ctx<'_>, id: &str) -> Result<EmailRecord, ApiError> {
    let id = format::id(id, "email")?;
    let store = &ctx.state.store;
    let key = EmailRecord::key(ctx.caller.team_id, id);
    let mut record = store
        .get::<EmailRecord>(&key)?
        .ok_or_else(|| ApiError::not_found("Email not found"))?;
    record.merge(store.get::<EmailStatus>(&key)?);
    Ok(record)
}

/// `GET /emails/{id}`.
pub fn get(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    Ok(Reply::ok(load(ctx, id)?.to_json()))
}

/// `GET /emails`.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, Some(DEFAULT_LIMIT))?;
    let store = &ctx.state.store;
    let (mut emails, has_more) = page.load::<EmailRecord>(store, ctx.caller.team_id.as_bytes())?;
    for email in &mut emails {
        email.merge(store.get::<EmailStatus>(EmailRecord::key(email.team_id, email.id))?);
    }
    Ok(Reply::ok(envelope(
        emails.iter().map(EmailRecord::summary_json).collect(),
        has_more,
    )))
}

/// Refuses changes to an email that is not scheduled or whose delivery has begun; else
/// claims its spool message, for the spool update that follows (which releases it).
fn still_scheduled(ctx: &Ctx<'_>, record: &EmailRecord, verb: &str) -> Result<(), ApiError> {
    let refused = |why: &str| Err(ApiError::validation(format!("The email cannot be {verb}: {why}")));
    if record.last_event != EmailState::Scheduled {
        return refused(&format!(
            "it is not scheduled (its last event is {})",
            record.last_event
        ));
    }
    let spool = &ctx.state.spool;
    let Some((envelope, _)) = spool.load(record.id)? else {
        return refused("it has left the queue");
    };
    let begun = spool.is_claimed(record.id)
        || envelope.due <= ctx.state.store.now()
        || envelope
            .recipients
            .iter()
            .any(|r| r.attempts > 0 || r.state != RecipientState::Pending);
    // Claimed as a delivery worker would claim it, so that no worker takes it between
    // this check and the change; the spool update that follows releases the claim.
    if begun || !spool.try_claim(record.id) {
        return refused("its delivery has already begun");
    }
    Ok(())
}

#[derive(Debug, serde::Deserialize)]
struct UpdateBody {
    scheduled_at: Option<String>,
}

/// `PATCH /emails/{id}`: moves a scheduled email.
pub fn update(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let body: UpdateBody = ctx.request.json()?;
    let text = body
        .scheduled_at
        .ok_or_else(|| ApiError::missing_field("scheduled_at"))?;
    let store = &ctx.state.store;
    let at = schedule::parse(&text, store.now()).map_err(ApiError::validation)?;
    let _guard = lock_email(ctx, id)?;
    let mut record = load(ctx, id)?;
    still_scheduled(ctx, &record, "rescheduled")?;
    match ctx.state.spool.reschedule(record.id, at)? {
        Updated::Kept { .. } => {}
        Updated::Missing | Updated::Removed => {
            return Err(ApiError::validation(
                "The email cannot be rescheduled: it has left the queue",
            ));
        }
    }
    record.scheduled_at = Some(at);
    let mut batch = Batch::new();
    batch.put(EmailRecord::key(record.team_id, record.id), &record)?;
    store.commit(batch).wait()?;
    Ok(Reply::ok(json!({ "object": "email", "id": record.id })))
}

/// `POST /emails/{id}/cancel`: cancels a scheduled email.
pub fn cancel(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let store = &ctx.state.store;
    let _guard = lock_email(ctx, id)?;
    let mut record = load(ctx, id)?;
    still_scheduled(ctx, &record, "canceled")?;
    let now = store.now();
    record.last_event = EmailState::Canceled;
    let outcome = ctx.state.spool.cancel(record.id, |_, batch| {
        batch.put(EmailRecord::key(record.team_id, record.id), &record)?;
        batch.put(EmailRecord::key(record.team_id, record.id), &record.status())?;
        submit::append_event(batch, store, &record, EmailState::Canceled, now)
    })?;
    if outcome == Updated::Missing {
        return Err(ApiError::validation(
            "The email cannot be canceled: it has left the queue",
        ));
    }
    Ok(Reply::ok(json!({ "object": "email", "id": record.id })))
}
