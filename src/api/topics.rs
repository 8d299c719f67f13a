//! `/topics`: the kinds of mail contacts subscribe to. The rules are
//! [`crate::contacts::topics`]'.

use serde_json::json;

use super::{Ctx, Reply};
use crate::contacts::topics::{self, NewTopic, Subscription, TopicChange, Visibility};
use crate::http::ApiError;
use crate::http::pagination::{PageRequest, envelope};

#[derive(Debug, serde::Deserialize)]
struct CreateBody {
    name: Option<String>,
    description: Option<String>,
    default_subscription: Option<Subscription>,
    visibility: Option<Visibility>,
}

/// `POST /topics`.
pub fn create(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: CreateBody = ctx.request.json()?;
    let id = topics::create(
        ctx.state,
        ctx.caller,
        NewTopic {
            name: body.name,
            description: body.description,
            default_subscription: body.default_subscription,
            visibility: body.visibility,
        },
    )?;
    Ok(Reply::created(json!({ "object": "topic", "id": id })))
}

/// `GET /topics`, newest first.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, None)?;
    let (found, has_more) = topics::list(ctx.state, ctx.caller, &page)?;
    Ok(Reply::ok(envelope(
        found.iter().map(|topic| topic.to_json(false)).collect(),
        has_more,
    )))
}

/// `GET /topics/{id}`.
pub fn get(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    Ok(Reply::ok(topics::get(ctx.state, ctx.caller, id)?.to_json(true)))
}

#[derive(Debug, serde::Deserialize)]
struct UpdateBody {
    name: Option<String>,
    #[serde(default, deserialize_with = "super::present")]
    description: Option<Option<String>>,
    default_subscription: Option<Subscription>,
    visibility: Option<Visibility>,
}

/// `PATCH /topics/{id}`.
pub fn update(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let body: UpdateBody = ctx.request.json()?;
    let change = TopicChange {
        name: body.name,
        description: body.description,
        default_subscription: body.default_subscription,
        visibility: body.visibility,
    };
    let id = topics::update(ctx.state, ctx.caller, id, change)?;
    Ok(Reply::ok(json!({ "object": "topic", "id": id })))
}

/// `DELETE /topics/{id}`.
pub fn delete(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = topics::delete(ctx.state, ctx.caller, id)?;
    Ok(Reply::ok(json!({ "object": "topic", "id": id, "deleted": true })))
}
