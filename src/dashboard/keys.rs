//! The API keys page: the team's keys; owners and admins create them (the token is shown
//! once, as the API shows it) and delete them.

use askama::Template;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Response, StatusCode};

use super::{Ctx, Signed, answer_status, html, pages, text};
use crate::accounts::Permission;
use crate::accounts::keys::{self, NewKey};
use crate::users::Role;

/// Answers `/dashboard/api-keys[/...]`.
pub fn route(ctx: &Ctx<'_>, signed: &Signed, method: &Method, rest: &str) -> Response<Full<Bytes>> {
    let manage = signed.user.role >= Role::Admin;
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    match (method, parts.as_slice()) {
        (&Method::GET, []) => page(ctx, signed, None, None),
        (&Method::POST, []) if manage => create(ctx, signed),
        (&Method::POST, [id, "delete"]) if manage => delete(ctx, signed, id),
        (&Method::POST, _) => text(
            StatusCode::FORBIDDEN,
            "Your role may not change API keys; ask an owner or admin",
        ),
        _ => text(StatusCode::NOT_FOUND, "No such page"),
    }
}

fn page(ctx: &Ctx<'_>, signed: &Signed, token: Option<String>, error: Option<String>) -> Response<Full<Bytes>> {
    let request = super::first_page();
    let found = match keys::list(ctx.state, &signed.caller(), &request) {
        Ok((found, _)) => found,
        Err(error) => return text(StatusCode::SERVICE_UNAVAILABLE, &error.to_string()),
    };
    let domains: Vec<(String, String)> = match crate::domains::service::list(ctx.state, &signed.caller(), &request)
        .map(|(list, _)| list.into_iter().map(|d| (d.id.to_string(), d.name)).collect())
    {
        Ok(found) => found,
        Err(error) => return super::unreadable(&error),
    };
    let rows = found
        .iter()
        .map(|listed| pages::KeyRow {
            domain: listed
                .key
                .domain_id
                .map(|id| {
                    let id = id.to_string();
                    domains
                        .iter()
                        .find(|(d, _)| *d == id)
                        .map_or(id.clone(), |(_, name)| name.clone())
                })
                .unwrap_or_default(),
            id: listed.key.id.to_string(),
            name: listed.key.name.clone(),
            permission: match listed.key.permission {
                Permission::FullAccess => "full_access".to_owned(),
                Permission::SendingAccess => "sending_access".to_owned(),
            },
            created: super::when(listed.key.created_at),
            last_used: listed.last_used_at.map_or_else(|| "never".to_owned(), super::when),
        })
        .collect();
    let status = answer_status(error.is_some());
    let page = pages::Keys {
        chrome: signed.chrome("keys"),
        can_manage: signed.user.role >= Role::Admin,
        keys: rows,
        domains,
        token,
        error,
    };
    html(status, page.render())
}

fn create(ctx: &Ctx<'_>, signed: &Signed) -> Response<Full<Bytes>> {
    let new = NewKey {
        name: ctx.form("name"),
        permission: ctx.form("permission"),
        domain_id: ctx.form("domain_id").and_then(|id| id.parse().ok()),
    };
    match keys::create(ctx.state, &signed.caller(), new) {
        Ok((_, token)) => page(ctx, signed, Some(token.expose().to_owned()), None),
        Err(error) => page(ctx, signed, None, Some(error.to_string())),
    }
}

fn delete(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    let Ok(id) = id.parse() else {
        return text(StatusCode::NOT_FOUND, "No such key");
    };
    match keys::delete(ctx.state, &signed.caller(), id) {
        Ok(()) => page(ctx, signed, None, None),
        Err(error) => page(ctx, signed, None, Some(error.to_string())),
    }
}
