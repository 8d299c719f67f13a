//! `/broadcasts`: marketing emails to a segment. The rules are
//! [`crate::broadcasts::service`]'s.

use serde_json::{Value, json};

use super::{Ctx, Reply};
use crate::broadcasts::service::{self, Fields, Kind};
use crate::emails::input::OneOrMany;
use crate::http::ApiError;
use crate::http::pagination::{PageRequest, envelope};
use crate::storage::page::{Cursor, LIMIT_MAX};

#[derive(Debug, Default, serde::Deserialize)]
struct Body {
    name: Option<String>,
    segment_id: Option<String>,
    audience_id: Option<String>,
    from: Option<String>,
    subject: Option<String>,
    reply_to: Option<OneOrMany>,
    html: Option<String>,
    text: Option<String>,
    preview_text: Option<String>,
    #[serde(default, deserialize_with = "super::present")]
    topic_id: Option<Option<String>>,
    send: Option<bool>,
    scheduled_at: Option<String>,
}

impl Body {
    fn fields(self) -> (Fields, bool, Option<String>) {
        let fields = Fields {
            name: self.name,
            segment_id: self.segment_id.or(self.audience_id),
            from: self.from,
            subject: self.subject,
            reply_to: self.reply_to.map(OneOrMany::into_vec),
            html: self.html,
            text: self.text,
            preview_text: self.preview_text,
            topic_id: self.topic_id,
            design: None,
        };
        (fields, self.send.unwrap_or(false), self.scheduled_at)
    }
}

/// `POST /broadcasts`.
pub fn create(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: Body = ctx.request.json()?;
    let (fields, send, scheduled_at) = body.fields();
    let id = service::create(ctx.state, ctx.caller, fields, send, scheduled_at)?;
    Ok(Reply::created(json!({ "object": "broadcast", "id": id })))
}

/// `GET /broadcasts`, newest first.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, None)?;
    let (found, has_more) = service::list(ctx.state, ctx.caller, &page)?;
    Ok(Reply::ok(envelope(
        found.iter().map(|b| b.summary_json()).collect(),
        has_more,
    )))
}

/// `GET /broadcasts/{id}`.
pub fn get(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    Ok(Reply::ok(service::get(ctx.state, ctx.caller, id)?.to_json()))
}

/// `PATCH /broadcasts/{id}`.
pub fn update(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let body: Body = ctx.request.json()?;
    let (fields, _, _) = body.fields();
    let id = service::update(ctx.state, ctx.caller, id, fields)?;
    Ok(Reply::ok(json!({ "object": "broadcast", "id": id })))
}

/// `DELETE /broadcasts/{id}`.
pub fn delete(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = service::delete(ctx.state, ctx.caller, id)?;
    Ok(Reply::ok(json!({ "object": "broadcast", "id": id, "deleted": true })))
}

#[derive(Debug, Default, serde::Deserialize)]
struct SendBody {
    scheduled_at: Option<String>,
}

/// `POST /broadcasts/{id}/send`.
pub fn send(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let body: SendBody = if ctx.request.body.is_empty() {
        SendBody::default()
    } else {
        ctx.request.json()?
    };
    let id = service::send(ctx.state, ctx.caller, id, body.scheduled_at)?;
    Ok(Reply::ok(json!({ "object": "broadcast", "id": id })))
}

/// `POST /broadcasts/{id}/cancel`: answers herald's own `canceled`, the emails taken
/// back from the queue.
pub fn cancel(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let (id, canceled) = service::cancel(ctx.state, ctx.caller, id)?;
    Ok(Reply::ok(
        json!({ "object": "broadcast", "id": id, "canceled": canceled }),
    ))
}

/// `POST /broadcasts/{id}/duplicate`.
pub fn duplicate(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = service::duplicate(ctx.state, ctx.caller, id)?;
    Ok(Reply::ok(json!({ "object": "broadcast", "id": id })))
}

/// `GET /broadcasts/{id}/recipients?type=...&email=...&bounce_type=...`, in contact
/// order, `after` a contact id.
pub fn recipients(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let kind = match ctx.request.query("type") {
        None => Kind::Sent,
        Some(name) => Kind::parse(name).ok_or_else(|| {
            ApiError::validation(format!(
                "Invalid `type` parameter {name:?}: one of sent, delivered, opened, clicked, bounced, complained, unsubscribed, suppressed"
            ))
        })?,
    };
    let page = PageRequest::parse(ctx.request, None)?;
    let after = match page.cursor {
        Cursor::After(after) => Some(after),
        _ => None,
    };
    let (found, has_more) = service::recipients(
        ctx.state,
        ctx.caller,
        id,
        kind,
        ctx.request.query("email"),
        after,
        page.limit.min(LIMIT_MAX),
    )?;
    let data: Vec<Value> = found
        .iter()
        .map(|(recipient, state)| {
            json!({
                "id": recipient.contact_id,
                "contact_id": recipient.contact_id,
                "email": recipient.email,
                "email_id": recipient.email_id,
                "last_event": state.map(|s| s.to_string()),
            })
        })
        .collect();
    Ok(Reply::ok(envelope(data, has_more)))
}

/// `GET /broadcasts/{id}/clicked-links`: most clicked first; each item's `id` is its
/// place, the cursor of `after`.
pub fn clicked_links(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let links = service::clicked_links(ctx.state, ctx.caller, id)?;
    let limit = ctx
        .request
        .query("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(20)
        .clamp(1, LIMIT_MAX);
    let start = ctx
        .request
        .query("after")
        .and_then(|a| a.parse::<usize>().ok())
        .map_or(0, |a| a + 1);
    let data: Vec<Value> = links
        .iter()
        .enumerate()
        .skip(start)
        .take(limit)
        .map(|(place, link)| {
            json!({ "id": place.to_string(), "url": link.url, "clicks": link.clicks, "unique_clicks": link.unique_clicks })
        })
        .collect();
    Ok(Reply::ok(envelope(data, links.len() > start + limit)))
}
