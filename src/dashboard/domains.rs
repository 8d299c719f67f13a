//! The Domains pages: the list with an add form, and each domain's records, DMARC
//! advice, configuration, "Verify now" and deletion (typing the name to confirm). Owners
//! and admins manage domains; members only look.

use askama::Template;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Response, StatusCode};

use super::{Ctx, Signed, answer_status, html, pages, text};
use crate::domains::TlsPolicy;
use crate::domains::service::{self as domains, DomainChange, NewDomain};
use crate::users::Role;

/// Answers `/dashboard/domains[/...]`.
pub fn route(ctx: &Ctx<'_>, signed: &Signed, method: &Method, rest: &str) -> Response<Full<Bytes>> {
    let manage = signed.user.role >= Role::Admin;
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    match (method, parts.as_slice()) {
        (&Method::GET, []) => list(ctx, signed, None),
        (&Method::POST, []) if manage => add(ctx, signed),
        (&Method::GET, [id]) => detail(ctx, signed, id, None, None),
        (&Method::POST, [id, "verify"]) if manage => verify(ctx, signed, id),
        (&Method::POST, [id, "config"]) if manage => configure(ctx, signed, id),
        (&Method::POST, [id, "delete"]) if manage => delete(ctx, signed, id),
        (&Method::POST, _) => text(
            StatusCode::FORBIDDEN,
            "Your role may not change domains; ask an owner or admin",
        ),
        _ => text(StatusCode::NOT_FOUND, "No such page"),
    }
}

fn list(ctx: &Ctx<'_>, signed: &Signed, error: Option<String>) -> Response<Full<Bytes>> {
    let page = super::first_page();
    let found = match domains::list(ctx.state, &signed.caller(), &page) {
        Ok((found, _)) => found,
        Err(error) => return text(StatusCode::SERVICE_UNAVAILABLE, &error.to_string()),
    };
    let rows = found
        .iter()
        .map(|d| pages::DomainRow {
            id: d.id.to_string(),
            name: d.name.clone(),
            status: status_name(d.status),
            region: d.region.clone(),
            created: super::when(d.created_at),
        })
        .collect();
    let status = answer_status(error.is_some());
    let page = pages::Domains {
        chrome: signed.chrome("domains"),
        can_manage: signed.user.role >= Role::Admin,
        domains: rows,
        error,
    };
    html(status, page.render())
}

fn add(ctx: &Ctx<'_>, signed: &Signed) -> Response<Full<Bytes>> {
    let new = NewDomain {
        name: ctx.form("name"),
        ..NewDomain::default()
    };
    match domains::create(ctx.state, &signed.caller(), new) {
        Ok(domain) => see_other(&format!("/dashboard/domains/{}", domain.id)),
        Err(error) => list(ctx, signed, Some(error.to_string())),
    }
}

fn detail(
    ctx: &Ctx<'_>,
    signed: &Signed,
    id: &str,
    notice: Option<&str>,
    error: Option<String>,
) -> Response<Full<Bytes>> {
    let Ok(id) = id.parse() else {
        return text(StatusCode::NOT_FOUND, "No such domain");
    };
    let Ok(domain) = domains::get(ctx.state, &signed.caller(), id) else {
        return text(StatusCode::NOT_FOUND, "No such domain");
    };
    let field = |record: &serde_json::Value, name: &str| record[name].as_str().unwrap_or_default().to_owned();
    let records = domain
        .records(ctx.state.config())
        .iter()
        .map(|r| pages::RecordRow {
            record: field(r, "record"),
            kind: field(r, "type"),
            name: field(r, "name"),
            value: field(r, "value"),
            status: field(r, "status"),
        })
        .collect();
    let dmarc = domain.dmarc_json()["value"].as_str().unwrap_or_default().to_owned();
    let status = answer_status(error.is_some());
    let config = ctx.state.config();
    let page = pages::Domain {
        chrome: signed.chrome("domains"),
        can_manage: signed.user.role >= Role::Admin,
        id: domain.id.to_string(),
        name: domain.name.clone(),
        status: status_name(domain.status),
        records,
        dmarc,
        open_tracking: domain.open_tracking,
        click_tracking: domain.click_tracking,
        tracking_subdomain: domain.tracking_subdomain.clone().unwrap_or_default(),
        tls_enforced: domain.tls == TlsPolicy::Enforced,
        region: config.region(&domain.region).name.clone(),
        regions: config.region_names().into_iter().map(str::to_owned).collect(),
        ehlo: config.ehlo_of(config.region(&domain.region)).to_owned(),
        sources: sources(ctx, &domain.region, ctx.state.is_operator_team(signed.user.team_id)),
        notice,
        error,
    };
    html(status, page.render())
}

fn verify(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    let Ok(parsed) = id.parse() else {
        return text(StatusCode::NOT_FOUND, "No such domain");
    };
    match domains::verify(ctx.state, &signed.caller(), parsed, false) {
        Ok(()) => detail(
            ctx,
            signed,
            id,
            Some("DNS is being checked; this page shows the result."),
            None,
        ),
        Err(error) => detail(ctx, signed, id, None, Some(error.to_string())),
    }
}

fn configure(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    let Ok(parsed) = id.parse() else {
        return text(StatusCode::NOT_FOUND, "No such domain");
    };
    let change = DomainChange {
        open_tracking: Some(ctx.form("open_tracking").is_some()),
        click_tracking: Some(ctx.form("click_tracking").is_some()),
        tls: Some(if ctx.form("tls_enforced").is_some() {
            TlsPolicy::Enforced
        } else {
            TlsPolicy::Opportunistic
        }),
        tracking_subdomain: Some(ctx.form("tracking_subdomain").filter(|s| !s.trim().is_empty())),
        capabilities: None,
        region: ctx.form("region"),
    };
    match domains::update(ctx.state, &signed.caller(), parsed, change) {
        Ok(()) => detail(ctx, signed, id, Some("Saved."), None),
        Err(error) => detail(ctx, signed, id, None, Some(error.to_string())),
    }
}

fn delete(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    let Ok(parsed) = id.parse() else {
        return text(StatusCode::NOT_FOUND, "No such domain");
    };
    let Ok(domain) = domains::get(ctx.state, &signed.caller(), parsed) else {
        return text(StatusCode::NOT_FOUND, "No such domain");
    };
    let typed = ctx.form("confirm").unwrap_or_default();
    if !typed.trim().eq_ignore_ascii_case(&domain.name) {
        return detail(
            ctx,
            signed,
            id,
            None,
            Some(format!("Type {} to delete it.", domain.name)),
        );
    }
    match domains::delete(ctx.state, &signed.caller(), parsed) {
        Ok(()) => see_other("/dashboard/domains"),
        Err(error) => detail(ctx, signed, id, None, Some(error.to_string())),
    }
}

/// The source addresses of `region`, as the domain page lists them: their live counts
/// (every team's mail) only for the operator's team.
fn sources(ctx: &Ctx<'_>, region: &str, operator: bool) -> Vec<pages::SourceRow> {
    let state = ctx.state.regions().get(ctx.state.config(), region);
    let hidden = || "—".to_owned();
    crate::regions::stats::of(&state, ctx.state.today())
        .into_iter()
        .map(|source| pages::SourceRow {
            address: source.address,
            connections: if operator {
                format!("{} / {}", source.connections, source.connections_max)
            } else {
                hidden()
            },
            sent_today: if operator {
                source.sent_today.to_string()
            } else {
                hidden()
            },
            warmup: source.warmup.map_or_else(
                || "no daily limit".to_owned(),
                |w| format!("day {} of {}: {} a day", w.day, w.days, w.daily_limit),
            ),
        })
        .collect()
}

fn see_other(to: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::SEE_OTHER;
    if let Ok(value) = hyper::header::HeaderValue::from_str(to) {
        response.headers_mut().insert(hyper::header::LOCATION, value);
    }
    response
}

/// A domain status's wire name.
fn status_name(status: crate::domains::DomainStatus) -> String {
    serde_json::to_value(status.wire())
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
