//! `/domains`: create (with a DKIM key and the records to publish), list, read, update,
//! delete, and request verification. The rules are [`crate::domains::service`]'s.

use serde_json::json;

use super::{Ctx, Reply};
use crate::domains::TlsPolicy;
use crate::domains::service::{self, Capabilities, DomainChange, NewDomain};
use crate::http::pagination::{PageRequest, envelope};
use crate::http::{ApiError, format};

#[derive(Debug, serde::Deserialize)]
struct CreateBody {
    name: Option<String>,
    region: Option<String>,
    custom_return_path: Option<String>,
    open_tracking: Option<bool>,
    click_tracking: Option<bool>,
    tls: Option<TlsPolicy>,
    tracking_subdomain: Option<String>,
    capabilities: Option<Capabilities>,
    dkim_algorithm: Option<String>,
}

/// `POST /domains`.
pub fn create(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: CreateBody = ctx.request.json()?;
    let new = NewDomain {
        name: body.name,
        region: body.region,
        custom_return_path: body.custom_return_path,
        open_tracking: body.open_tracking,
        click_tracking: body.click_tracking,
        tls: body.tls,
        tracking_subdomain: body.tracking_subdomain,
        capabilities: body.capabilities,
        dkim_algorithm: body.dkim_algorithm,
    };
    let domain = service::create(ctx.state, ctx.caller, new)?;
    Ok(Reply::created(domain.to_json(ctx.state.config())))
}

/// `GET /domains`.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, None)?;
    let (domains, has_more) = service::list(ctx.state, ctx.caller, &page)?;
    Ok(Reply::ok(envelope(
        domains.iter().map(crate::domains::Domain::summary_json).collect(),
        has_more,
    )))
}

/// `GET /domains/{id}`.
pub fn get(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let domain = service::get(ctx.state, ctx.caller, format::id(id, "domain")?)?;
    Ok(Reply::ok(domain.to_json(ctx.state.config())))
}

#[derive(Debug, serde::Deserialize)]
struct UpdateBody {
    open_tracking: Option<bool>,
    click_tracking: Option<bool>,
    tls: Option<TlsPolicy>,
    /// Absent: unchanged; `null` or `""`: cleared.
    #[serde(default, deserialize_with = "super::present")]
    tracking_subdomain: Option<Option<String>>,
    capabilities: Option<Capabilities>,
    region: Option<String>,
}

/// `PATCH /domains/{id}`: tracking, TLS policy and region.
pub fn update(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let body: UpdateBody = ctx.request.json()?;
    let change = DomainChange {
        open_tracking: body.open_tracking,
        click_tracking: body.click_tracking,
        tls: body.tls,
        tracking_subdomain: body.tracking_subdomain,
        capabilities: body.capabilities,
        region: body.region,
    };
    let id = format::id(id, "domain")?;
    service::update(ctx.state, ctx.caller, id, change)?;
    Ok(Reply::ok(json!({ "object": "domain", "id": id })))
}

/// `DELETE /domains/{id}`.
pub fn delete(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = format::id(id, "domain")?;
    service::delete(ctx.state, ctx.caller, id)?;
    Ok(Reply::ok(json!({ "object": "domain", "id": id, "deleted": true })))
}

#[derive(Debug, serde::Deserialize)]
struct VerifyBody {
    #[serde(default)]
    skip_dns: bool,
}

/// `POST /domains/{id}/verify`: checks DNS now, in the background (poll `GET` for the
/// result). With `{"skip_dns": true}` the operator marks the domain verified without DNS.
pub fn verify(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let body: VerifyBody = ctx.request.json()?;
    let id = format::id(id, "domain")?;
    service::verify(ctx.state, ctx.caller, id, body.skip_dns)?;
    Ok(Reply::ok(json!({ "object": "domain", "id": id })))
}
