//! The Webhooks pages: the team's endpoints, and each one's latest messages with their
//! state, attempts and last answer. Owners and admins add an endpoint (its signing secret
//! shown once), change its URL and events, enable or disable it, rotate its secret,
//! delete it and replay a message.

use askama::Template;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Response, StatusCode};

use super::{Ctx, Signed, answer_status, html, pages, text};
use crate::events::EventKind;
use crate::storage::page::{Cursor, PageRequest};
use crate::users::Role;
use crate::webhooks::history;
use crate::webhooks::service::{self as webhooks, NewWebhook, WebhookChange};

/// Messages shown per endpoint.
const MESSAGES_SHOWN: usize = 50;

/// Answers `/dashboard/webhooks[/...]`.
pub fn route(ctx: &Ctx<'_>, signed: &Signed, method: &Method, rest: &str) -> Response<Full<Bytes>> {
    let manage = signed.user.role >= Role::Admin;
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    match (method, parts.as_slice()) {
        (&Method::GET, []) => list(ctx, signed, None),
        (&Method::POST, []) if manage => create(ctx, signed),
        (&Method::GET, [id]) => detail(ctx, signed, id, None, None),
        (&Method::POST, [id, "status"]) if manage => status(ctx, signed, id),
        (&Method::POST, [id, "edit"]) if manage => edit(ctx, signed, id),
        (&Method::POST, [id, "rotate"]) if manage => rotate(ctx, signed, id),
        (&Method::POST, [id, "delete"]) if manage => delete(ctx, signed, id),
        (&Method::POST, [id, "replay", event]) if manage => replay(ctx, signed, id, event),
        (&Method::POST, _) => text(
            StatusCode::FORBIDDEN,
            "Your role may not change webhooks; ask an owner or admin",
        ),
        _ => text(StatusCode::NOT_FOUND, "No such page"),
    }
}

fn name<T: serde::Serialize>(value: T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Every value of the form's repeated field `name`.
fn all(ctx: &Ctx<'_>, name: &str) -> Vec<String> {
    form_urlencoded::parse(&ctx.request.body)
        .filter(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
        .collect()
}

fn list(ctx: &Ctx<'_>, signed: &Signed, error: Option<String>) -> Response<Full<Bytes>> {
    let page = super::first_page();
    let found = match webhooks::list(ctx.state, &signed.caller(), &page) {
        Ok((found, _)) => found,
        Err(error) => return text(StatusCode::SERVICE_UNAVAILABLE, &error.to_string()),
    };
    let hooks = found
        .iter()
        .map(|h| pages::HookRow {
            id: h.id.to_string(),
            endpoint: h.endpoint.clone(),
            events: h.events.join(", "),
            status: name(h.status),
            created: super::when(h.created_at),
        })
        .collect();
    let status = answer_status(error.is_some());
    let page = pages::Webhooks {
        chrome: signed.chrome("webhooks"),
        hooks,
        can_manage: signed.user.role >= Role::Admin,
        kinds: EventKind::ALL.iter().map(|k| k.name()).collect(),
        endpoint: error.as_ref().and_then(|_| ctx.form("endpoint")).unwrap_or_default(),
        error,
    };
    html(status, page.render())
}

fn create(ctx: &Ctx<'_>, signed: &Signed) -> Response<Full<Bytes>> {
    let new = NewWebhook {
        endpoint: ctx.form("endpoint").filter(|e| !e.trim().is_empty()),
        events: Some(all(ctx, "events")).filter(|e| !e.is_empty()),
    };
    match webhooks::create(ctx.state, &signed.caller(), new) {
        Ok(hook) => shown(
            ctx,
            signed,
            &hook.id.to_string(),
            "Endpoint added. Copy its signing secret now: it is not shown again.",
            hook.signing_secret.expose().to_owned(),
        ),
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
    page(ctx, signed, id, notice, error, None)
}

/// The endpoint's page with a secret just made.
fn shown(ctx: &Ctx<'_>, signed: &Signed, id: &str, notice: &str, secret: String) -> Response<Full<Bytes>> {
    page(ctx, signed, id, Some(notice), None, Some(secret))
}

fn page(
    ctx: &Ctx<'_>,
    signed: &Signed,
    id: &str,
    notice: Option<&str>,
    error: Option<String>,
    secret: Option<String>,
) -> Response<Full<Bytes>> {
    let Ok(parsed) = id.parse() else {
        return text(StatusCode::NOT_FOUND, "No such webhook");
    };
    let caller = signed.caller();
    let Ok(hook) = webhooks::get(ctx.state, &caller, parsed) else {
        return text(StatusCode::NOT_FOUND, "No such webhook");
    };
    let page = PageRequest {
        limit: MESSAGES_SHOWN,
        cursor: Cursor::Start,
    };
    let found = match history::messages(ctx.state, &caller, parsed, &page).map(|(m, _)| m) {
        Ok(found) => found,
        Err(error) => return super::unreadable(&error),
    };
    let messages = found
        .iter()
        .map(|m| {
            let last = m
                .attempt_ids
                .last()
                .and_then(|a| history::attempts_of(ctx.state, m, &[*a]).ok())
                .and_then(|found| found.into_iter().next())
                .map(|a| {
                    let answer = a
                        .status
                        .map_or_else(|| a.error.clone().unwrap_or_default(), |s| s.to_string());
                    let excerpt: String = a.response.chars().take(120).collect();
                    format!("{answer} {excerpt}").trim().to_owned()
                })
                .unwrap_or_default();
            pages::MessageRow {
                event_id: m.event_id.to_string(),
                kind: m.kind.name().to_owned(),
                state: name(m.state),
                attempts: m.attempts,
                next: super::when(m.next_attempt),
                last,
            }
        })
        .collect();
    let status = answer_status(error.is_some());
    let page = pages::Webhook {
        chrome: signed.chrome("webhooks"),
        can_manage: signed.user.role >= Role::Admin,
        id: hook.id.to_string(),
        endpoint: hook.endpoint.clone(),
        events: hook.events.join(", "),
        status: name(hook.status),
        messages,
        notice,
        error,
        kinds: EventKind::ALL
            .iter()
            .map(|k| (k.name(), hook.events.iter().any(|e| e == k.name())))
            .collect(),
        secret,
    };
    html(status, page.render())
}

fn edit(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    let Ok(parsed) = id.parse() else {
        return text(StatusCode::NOT_FOUND, "No such webhook");
    };
    let events = all(ctx, "events");
    if events.is_empty() {
        return detail(ctx, signed, id, None, Some("Choose at least one event.".to_owned()));
    }
    let change = WebhookChange {
        endpoint: ctx.form("endpoint").filter(|e| !e.trim().is_empty()),
        events: Some(events),
        ..WebhookChange::default()
    };
    match webhooks::update(ctx.state, &signed.caller(), parsed, change) {
        Ok(_) => detail(ctx, signed, id, Some("Saved."), None),
        Err(error) => detail(ctx, signed, id, None, Some(error.to_string())),
    }
}

fn rotate(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    let Ok(parsed) = id.parse() else {
        return text(StatusCode::NOT_FOUND, "No such webhook");
    };
    match webhooks::rotate_secret(ctx.state, &signed.caller(), parsed) {
        Ok(hook) => shown(
            ctx,
            signed,
            id,
            "A new signing secret: copy it now. The old one keeps signing next to it for a while, so receivers can switch.",
            hook.signing_secret.expose().to_owned(),
        ),
        Err(error) => detail(ctx, signed, id, None, Some(error.to_string())),
    }
}

fn delete(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    let Ok(parsed) = id.parse() else {
        return text(StatusCode::NOT_FOUND, "No such webhook");
    };
    if ctx.form("confirm").as_deref() != Some("delete") {
        return detail(ctx, signed, id, None, Some("Type delete to confirm.".to_owned()));
    }
    match webhooks::delete(ctx.state, &signed.caller(), parsed) {
        Ok(_) => super::redirect("/dashboard/webhooks"),
        Err(error) => detail(ctx, signed, id, None, Some(error.to_string())),
    }
}

fn status(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    let Ok(parsed) = id.parse() else {
        return text(StatusCode::NOT_FOUND, "No such webhook");
    };
    let wanted = match ctx.form("status").as_deref() {
        Some("enabled") => crate::webhooks::WebhookStatus::Enabled,
        _ => crate::webhooks::WebhookStatus::Disabled,
    };
    let change = WebhookChange {
        status: Some(wanted),
        ..WebhookChange::default()
    };
    match webhooks::update(ctx.state, &signed.caller(), parsed, change) {
        Ok(_) => detail(ctx, signed, id, Some("Saved."), None),
        Err(error) => detail(ctx, signed, id, None, Some(error.to_string())),
    }
}

fn replay(ctx: &Ctx<'_>, signed: &Signed, id: &str, event: &str) -> Response<Full<Bytes>> {
    let (Ok(parsed), Ok(event)) = (id.parse(), event.parse()) else {
        return text(StatusCode::NOT_FOUND, "No such message");
    };
    match history::replay_event(ctx.state, &signed.caller(), parsed, event) {
        Ok(_) => detail(ctx, signed, id, Some("The message is being sent again."), None),
        Err(error) => detail(ctx, signed, id, None, Some(error.to_string())),
    }
}
