//! `/contacts`: a team's contacts through the API, named by id or address (raw or
//! percent-encoded, as the SDKs send it). The rules are [`crate::contacts::service`]'s.

use serde_json::{Map, Value, json};

use super::{Ctx, Reply};
use crate::contacts::Contact;
use crate::contacts::service::{self, ContactChange, NewContact};
use crate::http::pagination::{PageRequest, envelope};
use crate::http::{ApiError, format};

/// Items per page when the request names no `limit`.
const DEFAULT_LIMIT: usize = 20;

#[derive(Debug, serde::Deserialize)]
struct CreateBody {
    email: Option<String>,
    first_name: Option<String>,
    last_name: Option<String>,
    unsubscribed: Option<bool>,
    properties: Option<Map<String, Value>>,
    segments: Option<Vec<Value>>,
    topics: Option<Vec<Value>>,
}

/// `POST /contacts`.
pub fn create(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: CreateBody = ctx.request.json()?;
    for (field, given) in [("segments", &body.segments), ("topics", &body.topics)] {
        if given.as_ref().is_some_and(|list| !list.is_empty()) {
            return Err(ApiError::validation(format!(
                "Invalid `{field}` field: segments and topics are not available yet on this server"
            )));
        }
    }
    let new = NewContact {
        email: body.email,
        first_name: body.first_name,
        last_name: body.last_name,
        unsubscribed: body.unsubscribed,
        properties: body.properties,
    };
    let id = service::create(ctx.state, ctx.caller, new)?;
    Ok(Reply::created(json!({ "object": "contact", "id": id })))
}

/// `GET /contacts`, newest first.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, Some(DEFAULT_LIMIT))?;
    let (contacts, has_more) = service::list(ctx.state, ctx.caller, &page)?;
    Ok(Reply::ok(envelope(
        contacts.iter().map(Contact::summary_json).collect(),
        has_more,
    )))
}

/// `GET /contacts/{id-or-email}`.
pub fn get(ctx: &Ctx<'_>, target: &str) -> Result<Reply, ApiError> {
    Ok(Reply::ok(
        service::get(ctx.state, ctx.caller, &decoded(target)?)?.to_json(),
    ))
}

#[derive(Debug, serde::Deserialize)]
struct UpdateBody {
    email: Option<String>,
    #[serde(default, deserialize_with = "super::present")]
    first_name: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::present")]
    last_name: Option<Option<String>>,
    unsubscribed: Option<bool>,
    properties: Option<Map<String, Value>>,
}

/// `PATCH /contacts/{id-or-email}`: a `null` name clears it.
pub fn update(ctx: &Ctx<'_>, target: &str) -> Result<Reply, ApiError> {
    let target = decoded(target)?;
    let body: UpdateBody = ctx.request.json()?;
    let change = ContactChange {
        email: body.email,
        first_name: body.first_name,
        last_name: body.last_name,
        unsubscribed: body.unsubscribed,
        properties: body.properties,
    };
    let id = service::update(ctx.state, ctx.caller, &target, change)?;
    Ok(Reply::ok(json!({ "object": "contact", "id": id })))
}

/// `DELETE /contacts/{id-or-email}`: `contact` echoes the name as given (what Resend
/// answers), `id` is the contact's id when it existed. A contact that does not exist is
/// deleted already, as Resend answers.
pub fn delete(ctx: &Ctx<'_>, target: &str) -> Result<Reply, ApiError> {
    let target = decoded(target)?;
    let id = service::delete(ctx.state, ctx.caller, &target)?;
    Ok(Reply::ok(json!({
        "object": "contact",
        "contact": target,
        "id": id.map_or_else(|| target.clone(), |id| id.to_string()),
        "deleted": true,
    })))
}

/// A path segment naming a contact, percent-decoded.
fn decoded(target: &str) -> Result<String, ApiError> {
    format::path_segment(target).ok_or_else(|| {
        ApiError::invalid_parameter(format!(
            "The contact id or address {target:?} is not validly percent-encoded"
        ))
    })
}
