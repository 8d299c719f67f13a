//! `/contacts`: a team's contacts through the API, named by id or address (raw or
//! percent-encoded, as the SDKs send it), with their segments and topics, and the legacy
//! `/audiences/{id}/contacts` routes. The rules are [`crate::contacts::service`]'s.

use herald_queue::Id;
use serde_json::{Map, Value, json};

use super::{Ctx, Reply};
use crate::contacts::imports::segment_id;
use crate::contacts::service::{self, ContactChange, NewContact};
use crate::contacts::{Contact, TopicChoice, segments};
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
    /// `[{"id": ...}]` (the SDKs) or `["..."]` (Resend's OpenAPI file).
    segments: Option<Vec<Value>>,
    topics: Option<Vec<TopicChoice>>,
    /// The older way to name one segment: the Rust SDK always sends it, `null` when unset.
    audience_id: Option<String>,
    segment_id: Option<String>,
}

impl CreateBody {
    fn into_new(self) -> Result<NewContact, ApiError> {
        let mut segments = self
            .segments
            .unwrap_or_default()
            .iter()
            .map(segment_id)
            .collect::<Result<Vec<Id>, _>>()?;
        for id in [self.audience_id, self.segment_id].into_iter().flatten() {
            segments.push(segments::parse_id(&id)?);
        }
        Ok(NewContact {
            email: self.email,
            first_name: self.first_name,
            last_name: self.last_name,
            unsubscribed: self.unsubscribed,
            properties: self.properties,
            segments,
            topics: self.topics.unwrap_or_default(),
        })
    }
}

/// `POST /contacts`.
pub fn create(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: CreateBody = ctx.request.json()?;
    let id = service::create(ctx.state, ctx.caller, body.into_new()?)?;
    Ok(Reply::created(json!({ "object": "contact", "id": id })))
}

/// `POST /audiences/{id}/contacts`: creates the contact in that segment (an address the
/// team has already joins it).
pub fn create_in(ctx: &Ctx<'_>, segment: &str) -> Result<Reply, ApiError> {
    let mut body: CreateBody = ctx.request.json()?;
    // The path names the segment; Python repeats it in the body.
    body.audience_id = None;
    let id = service::create_in_segment(ctx.state, ctx.caller, segment, body.into_new()?)?;
    Ok(Reply::created(json!({ "object": "contact", "id": id })))
}

/// `GET /contacts` (`?segment_id=` for one segment's), newest first.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let segment = ctx
        .request
        .query("segment_id")
        .or_else(|| ctx.request.query("audience_id"))
        .map(str::to_owned);
    list_in(ctx, segment.as_deref())
}

/// One page of the team's contacts, or of those in `segment`.
pub fn list_in(ctx: &Ctx<'_>, segment: Option<&str>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, Some(DEFAULT_LIMIT))?;
    let (contacts, has_more) = service::list(ctx.state, ctx.caller, &page, segment)?;
    Ok(Reply::ok(envelope(
        contacts.iter().map(Contact::summary_json).collect(),
        has_more,
    )))
}

/// `GET /contacts/{id-or-email}`.
pub fn get(ctx: &Ctx<'_>, target: &str) -> Result<Reply, ApiError> {
    Ok(Reply::ok(service::describe(ctx.state, ctx.caller, &decoded(target)?)?))
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

/// `PATCH /contacts/{id-or-email}`: a `null` name clears it, a `null` property removes it.
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

/// The legacy `/audiences/{id}/contacts/{id-or-email}` routes: the audience must exist
/// and hold the contact (when it exists); then they are the contact's own routes.
pub fn in_audience(ctx: &Ctx<'_>, audience: &str, target: &str) -> Result<(), ApiError> {
    Ok(service::check_member(
        ctx.state,
        ctx.caller,
        audience,
        &decoded(target)?,
    )?)
}

/// `GET /contacts/{id-or-email}/segments`.
pub fn segments(ctx: &Ctx<'_>, target: &str) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, None)?;
    let (found, has_more) = service::segments_of(ctx.state, ctx.caller, &decoded(target)?, &page)?;
    Ok(Reply::ok(envelope(
        found.iter().map(|segment| segment.to_json(None)).collect(),
        has_more,
    )))
}

/// `POST /contacts/{id-or-email}/segments/{segment_id}`: `id` is the segment's, as the
/// SDKs read it.
pub fn add_segment(ctx: &Ctx<'_>, target: &str, segment: &str) -> Result<Reply, ApiError> {
    let (contact, segment) = service::add_to_segment(ctx.state, ctx.caller, &decoded(target)?, segment)?;
    Ok(Reply::created(json!({
        "object": "contact_segment",
        "id": segment,
        "contact_id": contact,
        "segment_id": segment,
    })))
}

/// `DELETE /contacts/{id-or-email}/segments/{segment_id}`.
pub fn remove_segment(ctx: &Ctx<'_>, target: &str, segment: &str) -> Result<Reply, ApiError> {
    let (contact, segment) = service::remove_from_segment(ctx.state, ctx.caller, &decoded(target)?, segment)?;
    Ok(Reply::ok(json!({
        "object": "contact_segment",
        "id": segment,
        "contact_id": contact,
        "segment_id": segment,
        "deleted": true,
    })))
}

/// `GET /contacts/{id-or-email}/topics`: every topic, with the contact's subscription.
pub fn topics(ctx: &Ctx<'_>, target: &str) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, None)?;
    let (found, has_more) = service::topics_of(ctx.state, ctx.caller, &decoded(target)?, &page)?;
    let data = found
        .iter()
        .map(|(topic, subscription)| {
            json!({
                "id": topic.id,
                "name": topic.name,
                "description": topic.description,
                "subscription": subscription.name(),
                "created_at": crate::wire::timestamp(topic.created_at),
            })
        })
        .collect();
    Ok(Reply::ok(envelope(data, has_more)))
}

/// `PATCH /contacts/{id-or-email}/topics`: the body is a bare array of choices, as every
/// SDK sends it (`{"topics": [...]}`, as Resend's OpenAPI file has it, works too).
pub fn update_topics(ctx: &Ctx<'_>, target: &str) -> Result<Reply, ApiError> {
    let body = match ctx.request.json_value()? {
        Value::Object(mut map) => map.remove("topics").unwrap_or(Value::Array(Vec::new())),
        other => other,
    };
    let choices: Vec<TopicChoice> = serde_path_to_error::deserialize(body).map_err(|e| {
        ApiError::validation(format!(
            "Invalid `topics{}` field: {}; send an array of {{\"id\", \"subscription\": \"opt_in\" or \"opt_out\"}}",
            match e.path().to_string().as_str() {
                "." => String::new(),
                path => path.to_owned(),
            },
            e.into_inner()
        ))
    })?;
    let (contact, now) = service::set_topics(ctx.state, ctx.caller, &decoded(target)?, &choices)?;
    Ok(Reply::ok(json!({
        "object": "contact_topics",
        "id": contact,
        "contact_id": contact,
        "topics": service::choices_json(&now),
    })))
}

/// A path segment naming a contact by id or address, percent-decoded (SDKs percent-encode an address).
fn decoded(target: &str) -> Result<String, ApiError> {
    format::named(target, "contact id or address")
}
