//! The audience pages: **Contacts** (newest first, 50 a page, by segment, unsubscribed and
//! a search; add, edit, delete; CSV imports with their progress and refused rows) and
//! **Audience settings** (segments, topics and contact properties: list, add, delete).
//! Owners and admins change things, members look. Everything goes through the contacts
//! services the API uses.

use askama::Template;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Response, StatusCode};
use serde_json::Value;

use super::{Ctx, Signed, answer_status, html, pages, redirect, text};
use crate::contacts::imports::{self, NewImport};
use crate::contacts::service::{self as contacts, ContactChange, NewContact};
use crate::contacts::{properties, segments, topics};
use crate::storage::page::{Cursor, PageRequest};
use crate::users::Role;

/// Contacts per page.
const PAGE: usize = 50;

/// Contacts read at most for one filtered page.
const SCANNED_MAX: usize = 5_000;

/// Answers `/dashboard/contacts[/...]`.
pub fn contacts_route(ctx: &Ctx<'_>, signed: &Signed, method: &Method, rest: &str) -> Response<Full<Bytes>> {
    let manage = signed.user.role >= Role::Admin;
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    match (method, parts.as_slice()) {
        (&Method::GET, []) => list(ctx, signed, None),
        (&Method::POST, []) if manage => add(ctx, signed),
        (&Method::GET, ["imports", id]) => import(ctx, signed, id),
        (&Method::GET, [id]) => contact(ctx, signed, id, None, None),
        (&Method::POST, [id]) if manage => edit(ctx, signed, id),
        (&Method::POST, [id, "delete"]) if manage => delete(ctx, signed, id),
        (&Method::POST, _) => text(
            StatusCode::FORBIDDEN,
            "Your role may not change contacts; ask an owner or admin",
        ),
        _ => text(StatusCode::NOT_FOUND, "No such page"),
    }
}

fn segment_names(ctx: &Ctx<'_>, signed: &Signed) -> Result<Vec<(String, String)>, crate::services::Error> {
    segments::list(ctx.state, &signed.caller(), &super::first_page())
        .map(|(list, _)| list.into_iter().map(|s| (s.id.to_string(), s.name)).collect())
}

fn list(ctx: &Ctx<'_>, signed: &Signed, error: Option<String>) -> Response<Full<Bytes>> {
    let caller = signed.caller();
    let query = |name: &str| ctx.request.query(name).map(str::trim).filter(|v| !v.is_empty());
    let segment = query("segment");
    let unsubscribed = query("unsubscribed");
    let search = query("q").unwrap_or_default().to_lowercase();
    // Subscribed to a topic: the contact's own choice, else the topic's default.
    let topic = query("topic").and_then(|id| topics::get(ctx.state, &caller, id).ok());
    let subscribed = |contact: &crate::contacts::Contact| {
        topic.as_ref().is_none_or(|t| {
            let choice = contact.topics.iter().find(|c| c.id == t.id).map(|c| c.subscription);
            choice.unwrap_or(t.default_subscription) == crate::contacts::Subscription::OptIn
        })
    };
    let mut cursor = query("after")
        .and_then(|a| a.parse().ok())
        .map_or(Cursor::Start, Cursor::After);
    let (mut rows, mut scanned, mut next) = (Vec::new(), 0, None);
    loop {
        let page = PageRequest { limit: 100, cursor };
        let (found, more) = match contacts::list(ctx.state, &caller, &page, segment) {
            Ok(found) => found,
            Err(error) => return super::refused(error),
        };
        let mut last = None;
        for contact in found {
            scanned += 1;
            last = Some(contact.id);
            let keep = unsubscribed.is_none_or(|u| (u == "yes") == contact.unsubscribed)
                && subscribed(&contact)
                && (search.is_empty()
                    || contact.email.to_lowercase().contains(&search)
                    || [&contact.first_name, &contact.last_name]
                        .iter()
                        .any(|n| n.as_deref().is_some_and(|n| n.to_lowercase().contains(&search))));
            if keep {
                rows.push(pages::ContactRow {
                    id: contact.id.to_string(),
                    email: contact.email.clone(),
                    name: [contact.first_name.clone(), contact.last_name.clone()]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join(" "),
                    unsubscribed: contact.unsubscribed,
                    added: super::when(contact.created_at),
                });
                if rows.len() == PAGE {
                    break;
                }
            }
            if scanned >= SCANNED_MAX {
                break;
            }
        }
        match last {
            Some(last) if more && rows.len() < PAGE && scanned < SCANNED_MAX => cursor = Cursor::After(last),
            Some(last) if more || rows.len() == PAGE => {
                next = Some(last.to_string());
                break;
            }
            _ => break,
        }
    }
    let imports = match imports::list(
        ctx.state,
        &caller,
        &PageRequest {
            limit: 5,
            cursor: Cursor::Start,
        },
        None,
    )
    .map(|(found, _)| {
        found
            .into_iter()
            .map(|i| pages::ImportRow {
                id: i.id.to_string(),
                status: i.status.name(),
                total: i.counts.total,
                created: i.counts.created,
                updated: i.counts.updated,
                failed: i.counts.failed,
                at: super::when(i.created_at),
            })
            .collect()
    }) {
        Ok(found) => found,
        Err(error) => return super::unreadable(&error),
    };
    let kept: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(
            ["segment", "unsubscribed", "topic", "q"]
                .iter()
                .filter_map(|name| query(name).map(|v| (*name, v))),
        )
        .finish();
    let segments = match segment_names(ctx, signed) {
        Ok(found) => found,
        Err(error) => return super::unreadable(&error),
    };
    let topic_names = match topics::list(ctx.state, &caller, &super::first_page()) {
        Ok((list, _)) => list.into_iter().map(|t| (t.id.to_string(), t.name)).collect(),
        Err(error) => return super::unreadable(&error),
    };
    let status = answer_status(error.is_some());
    let page = pages::Contacts {
        chrome: signed.chrome("contacts"),
        can_manage: signed.user.role >= Role::Admin,
        rows,
        next,
        segments,
        segment: segment.unwrap_or_default(),
        topics: topic_names,
        topic: query("topic").unwrap_or_default(),
        unsubscribed: unsubscribed.unwrap_or_default(),
        query: query("q").unwrap_or_default(),
        kept: &kept,
        imports,
        error,
    };
    html(status, page.render())
}

fn add(ctx: &Ctx<'_>, signed: &Signed) -> Response<Full<Bytes>> {
    let segment = ctx.form("segment").and_then(|s| s.parse().ok());
    let new = NewContact {
        email: ctx.form("email"),
        first_name: ctx.form("first_name").filter(|v| !v.trim().is_empty()),
        last_name: ctx.form("last_name").filter(|v| !v.trim().is_empty()),
        unsubscribed: Some(false),
        segments: segment.into_iter().collect(),
        ..NewContact::default()
    };
    match contacts::create(ctx.state, &signed.caller(), new) {
        Ok(_) => redirect("/dashboard/contacts"),
        Err(error) => list(ctx, signed, Some(error.to_string())),
    }
}

fn contact(
    ctx: &Ctx<'_>,
    signed: &Signed,
    id: &str,
    notice: Option<&str>,
    error: Option<String>,
) -> Response<Full<Bytes>> {
    let Ok(found) = contacts::get(ctx.state, &signed.caller(), id) else {
        return text(StatusCode::NOT_FOUND, "No such contact");
    };
    let names = match segment_names(ctx, signed) {
        Ok(found) => found,
        Err(error) => return super::unreadable(&error),
    };
    let in_segments = found
        .segments
        .iter()
        .map(|s| {
            let s = s.to_string();
            names.iter().find(|(id, _)| *id == s).map_or(s, |(_, n)| n.clone())
        })
        .collect();
    let described = contacts::describe(ctx.state, &signed.caller(), id).unwrap_or(Value::Null);
    let properties = described["properties"]
        .as_object()
        .map(|map| {
            map.iter()
                .map(|(key, value)| {
                    (
                        key.clone(),
                        value["value"]
                            .as_str()
                            .map_or_else(|| value["value"].to_string(), str::to_owned),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let status = answer_status(error.is_some());
    let page = pages::ContactPage {
        chrome: signed.chrome("contacts"),
        can_manage: signed.user.role >= Role::Admin,
        id: found.id.to_string(),
        email: found.email.clone(),
        first_name: found.first_name.clone().unwrap_or_default(),
        last_name: found.last_name.clone().unwrap_or_default(),
        unsubscribed: found.unsubscribed,
        segments: in_segments,
        properties,
        added: super::when(found.created_at),
        notice,
        error,
    };
    html(status, page.render())
}

fn edit(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    let optional = |name: &str| Some(ctx.form(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()));
    let change = ContactChange {
        first_name: optional("first_name"),
        last_name: optional("last_name"),
        unsubscribed: Some(ctx.form("unsubscribed").as_deref() == Some("yes")),
        ..ContactChange::default()
    };
    match contacts::update(ctx.state, &signed.caller(), id, change) {
        Ok(_) => contact(ctx, signed, id, Some("Saved."), None),
        Err(error) => contact(ctx, signed, id, None, Some(error.to_string())),
    }
}

fn delete(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    match contacts::delete(ctx.state, &signed.caller(), id) {
        Ok(_) => redirect("/dashboard/contacts"),
        Err(error) => contact(ctx, signed, id, None, Some(error.to_string())),
    }
}

/// `POST /dashboard/contacts/import`, the upload already on disk (see `super::handle`).
pub fn start_import(ctx: &Ctx<'_>, signed: &Signed) -> Response<Full<Bytes>> {
    if signed.user.role < Role::Admin {
        return text(
            StatusCode::FORBIDDEN,
            "Your role may not import contacts; ask an owner or admin",
        );
    }
    let Some(upload) = &ctx.request.upload else {
        return list(ctx, signed, Some("Choose a CSV file to import.".into()));
    };
    let segments = upload
        .field("segment")
        .filter(|s| !s.is_empty())
        .map(|s| format!("[\"{s}\"]"));
    let new = NewImport {
        column_map: None,
        on_conflict: upload.field("on_conflict").map(str::to_owned),
        segments,
        topics: None,
    };
    match imports::create(ctx.state, &signed.caller(), &upload.path, &new) {
        Ok(id) => super::redirect_to(&format!("/dashboard/contacts/imports/{id}")),
        Err(error) => list(ctx, signed, Some(error.to_string())),
    }
}

fn import(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    let Ok((found, errors, more)) = imports::get(ctx.state, &signed.caller(), id, 0) else {
        return text(StatusCode::NOT_FOUND, "No such import");
    };
    let page = pages::ImportPage {
        chrome: signed.chrome("contacts"),
        status: found.status.name(),
        done: found.status.is_final(),
        total: found.counts.total,
        created: found.counts.created,
        updated: found.counts.updated,
        skipped: found.counts.skipped,
        failed: found.counts.failed,
        at: super::when(found.created_at),
        errors: errors.into_iter().map(|e| (e.row, e.line, e.reason)).collect(),
        more,
    };
    html(StatusCode::OK, page.render())
}

/// Answers `/dashboard/audience[/...]`: segments, topics and properties.
pub fn settings_route(ctx: &Ctx<'_>, signed: &Signed, method: &Method, rest: &str) -> Response<Full<Bytes>> {
    let manage = signed.user.role >= Role::Admin;
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    let caller = signed.caller();
    let outcome = match (method, parts.as_slice()) {
        (&Method::GET, []) => return settings(ctx, signed, None),
        (&Method::POST, [kind, ..]) if !manage => {
            return text(
                StatusCode::FORBIDDEN,
                &format!("Your role may not change {kind}; ask an owner or admin"),
            );
        }
        (&Method::POST, ["segments"]) => segments::create(ctx.state, &caller, ctx.form("name")).map(drop),
        (&Method::POST, ["segments", id, "delete"]) => segments::delete(ctx.state, &caller, id).map(drop),
        (&Method::POST, ["topics"]) => {
            let new = topics::NewTopic {
                name: ctx.form("name"),
                description: ctx.form("description").filter(|d| !d.trim().is_empty()),
                default_subscription: choice(ctx, "default_subscription"),
                visibility: choice(ctx, "visibility"),
            };
            topics::create(ctx.state, &caller, new).map(drop)
        }
        (&Method::POST, ["topics", id, "delete"]) => topics::delete(ctx.state, &caller, id).map(drop),
        (&Method::POST, ["properties"]) => {
            let kind = ctx
                .form("type")
                .and_then(|v| serde_json::from_value(Value::String(v)).ok());
            let fallback = ctx.form("fallback_value").filter(|v| !v.is_empty()).map(|v| {
                if kind == Some(properties::PropertyType::Number) {
                    v.parse::<f64>().map_or(Value::String(v), Value::from)
                } else {
                    Value::String(v)
                }
            });
            let new = properties::NewProperty {
                key: ctx.form("key"),
                kind,
                fallback_value: fallback,
            };
            properties::create(ctx.state, &caller, new).map(drop)
        }
        (&Method::POST, ["properties", id, "delete"]) => properties::delete(ctx.state, &caller, id).map(drop),
        _ => return text(StatusCode::NOT_FOUND, "No such page"),
    };
    match outcome {
        Ok(()) => redirect("/dashboard/audience"),
        Err(error) => settings(ctx, signed, Some(error.to_string())),
    }
}

/// A form field naming one of an enum's wire names.
fn choice<T: serde::de::DeserializeOwned>(ctx: &Ctx<'_>, name: &str) -> Option<T> {
    ctx.form(name)
        .and_then(|value| serde_json::from_value(Value::String(value)).ok())
}

fn settings(ctx: &Ctx<'_>, signed: &Signed, error: Option<String>) -> Response<Full<Bytes>> {
    let caller = signed.caller();
    let topics = match topics::list(ctx.state, &caller, &super::first_page()).map(|(list, _)| {
        list.into_iter()
            .map(|t| {
                (
                    t.id.to_string(),
                    t.name,
                    t.default_subscription.name().to_owned(),
                    serde_json::to_value(t.visibility)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                )
            })
            .collect()
    }) {
        Ok(found) => found,
        Err(error) => return super::unreadable(&error),
    };
    let properties = match properties::list(ctx.state, &caller, &super::first_page()).map(|(list, _)| {
        list.into_iter()
            .map(|p| {
                (
                    p.id.to_string(),
                    p.key,
                    serde_json::to_value(p.kind)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    p.fallback_value
                        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                        .unwrap_or_default(),
                )
            })
            .collect()
    }) {
        Ok(found) => found,
        Err(error) => return super::unreadable(&error),
    };
    let segments = match segment_names(ctx, signed) {
        Ok(found) => found,
        Err(error) => return super::unreadable(&error),
    };
    let status = answer_status(error.is_some());
    let page = pages::Audience {
        chrome: signed.chrome("audience"),
        can_manage: signed.user.role >= Role::Admin,
        segments,
        topics,
        properties,
        error,
    };
    html(status, page.render())
}
