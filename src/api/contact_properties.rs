//! `/contact-properties`: the custom fields of a team's contacts. The rules are
//! [`crate::contacts::properties`]'.

use serde_json::{Value, json};

use super::{Ctx, Reply};
use crate::contacts::properties::{self, NewProperty, PropertyChange, PropertyType};
use crate::http::ApiError;
use crate::http::pagination::{PageRequest, envelope};

#[derive(Debug, serde::Deserialize)]
struct CreateBody {
    key: Option<String>,
    #[serde(rename = "type")]
    kind: Option<PropertyType>,
    fallback_value: Option<Value>,
}

/// `POST /contact-properties`.
pub fn create(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: CreateBody = ctx.request.json()?;
    let id = properties::create(
        ctx.state,
        ctx.caller,
        NewProperty {
            key: body.key,
            kind: body.kind,
            fallback_value: body.fallback_value,
        },
    )?;
    Ok(Reply::created(json!({ "object": "contact_property", "id": id })))
}

/// `GET /contact-properties`, newest first.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, None)?;
    let (found, has_more) = properties::list(ctx.state, ctx.caller, &page)?;
    Ok(Reply::ok(envelope(
        found.iter().map(|property| property.to_json(false)).collect(),
        has_more,
    )))
}

/// `GET /contact-properties/{id}`.
pub fn get(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    Ok(Reply::ok(properties::get(ctx.state, ctx.caller, id)?.to_json(true)))
}

#[derive(Debug, serde::Deserialize)]
struct UpdateBody {
    key: Option<String>,
    #[serde(rename = "type")]
    kind: Option<PropertyType>,
    #[serde(default, deserialize_with = "super::present")]
    fallback_value: Option<Option<Value>>,
}

/// `PATCH /contact-properties/{id}`: only the fallback changes.
pub fn update(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let body: UpdateBody = ctx.request.json()?;
    let change = PropertyChange {
        key: body.key,
        kind: body.kind,
        fallback_value: body.fallback_value,
    };
    let id = properties::update(ctx.state, ctx.caller, id, change)?;
    Ok(Reply::ok(json!({ "object": "contact_property", "id": id })))
}

/// `DELETE /contact-properties/{id}`.
pub fn delete(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = properties::delete(ctx.state, ctx.caller, id)?;
    Ok(Reply::ok(
        json!({ "object": "contact_property", "id": id, "deleted": true }),
    ))
}
