//! `/templates`: stored templates by id or alias. The rules are
//! [`crate::templates::service`]'s.

use serde_json::json;

use super::{Ctx, Reply};
use crate::emails::input::OneOrMany;
use crate::http::pagination::{PageRequest, envelope};
use crate::http::{ApiError, format};
use crate::templates::TemplateSummary;
use crate::templates::service::{self, NewTemplate, TemplateChange, VariableInput};

#[derive(Debug, serde::Deserialize)]
struct CreateBody {
    name: Option<String>,
    alias: Option<String>,
    from: Option<String>,
    subject: Option<String>,
    reply_to: Option<OneOrMany>,
    html: Option<String>,
    text: Option<String>,
    variables: Option<Vec<VariableInput>>,
}

/// `POST /templates`: a draft.
pub fn create(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: CreateBody = ctx.request.json()?;
    let id = service::create(
        ctx.state,
        ctx.caller,
        NewTemplate {
            name: body.name,
            alias: body.alias,
            from: body.from,
            subject: body.subject,
            reply_to: body.reply_to.map(OneOrMany::into_vec),
            html: body.html,
            text: body.text,
            variables: body.variables,
        },
    )?;
    Ok(Reply::created(json!({ "object": "template", "id": id })))
}

/// `GET /templates`, newest first.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, Some(20))?;
    let (found, has_more) = service::list(ctx.state, ctx.caller, &page)?;
    Ok(Reply::ok(envelope(
        found.iter().map(TemplateSummary::to_json).collect(),
        has_more,
    )))
}

/// `GET /templates/{id-or-alias}`.
pub fn get(ctx: &Ctx<'_>, target: &str) -> Result<Reply, ApiError> {
    Ok(Reply::ok(
        service::get(ctx.state, ctx.caller, &decoded(target)?)?.to_json(),
    ))
}

#[derive(Debug, serde::Deserialize)]
struct UpdateBody {
    name: Option<String>,
    #[serde(default, deserialize_with = "super::present")]
    alias: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::present")]
    from: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::present")]
    subject: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::present")]
    reply_to: Option<Option<OneOrMany>>,
    html: Option<String>,
    #[serde(default, deserialize_with = "super::present")]
    text: Option<Option<String>>,
    variables: Option<Vec<VariableInput>>,
}

/// `PATCH /templates/{id-or-alias}`: content changes go into a draft.
pub fn update(ctx: &Ctx<'_>, target: &str) -> Result<Reply, ApiError> {
    let body: UpdateBody = ctx.request.json()?;
    // The Go SDK always sends `name` and `html`, empty when unchanged: empty is absent.
    let change = TemplateChange {
        name: body.name.filter(|n| !n.is_empty()),
        alias: body.alias,
        from: body.from,
        subject: body.subject,
        reply_to: body.reply_to.map(|r| r.map(OneOrMany::into_vec)),
        html: body.html.filter(|h| !h.is_empty()),
        text: body.text,
        variables: body.variables,
        design: None,
    };
    let id = service::update(ctx.state, ctx.caller, &decoded(target)?, change)?;
    Ok(Reply::ok(json!({ "object": "template", "id": id })))
}

/// `DELETE /templates/{id-or-alias}`.
pub fn delete(ctx: &Ctx<'_>, target: &str) -> Result<Reply, ApiError> {
    let id = service::delete(ctx.state, ctx.caller, &decoded(target)?)?;
    Ok(Reply::ok(json!({ "object": "template", "id": id, "deleted": true })))
}

/// `POST /templates/{id-or-alias}/publish`.
pub fn publish(ctx: &Ctx<'_>, target: &str) -> Result<Reply, ApiError> {
    let id = service::publish(ctx.state, ctx.caller, &decoded(target)?)?;
    Ok(Reply::ok(json!({ "object": "template", "id": id })))
}

/// `POST /templates/{id-or-alias}/duplicate`: the copy's id.
pub fn duplicate(ctx: &Ctx<'_>, target: &str) -> Result<Reply, ApiError> {
    let id = service::duplicate(ctx.state, ctx.caller, &decoded(target)?)?;
    Ok(Reply::ok(json!({ "object": "template", "id": id })))
}

/// A path segment naming a template by id or alias, percent-decoded (SDKs percent-encode an address).
fn decoded(target: &str) -> Result<String, ApiError> {
    format::named(target, "template id or alias")
}
