//! The Templates pages: the team's templates (name, alias, published or draft), a new one
//! from a name, subject and HTML; each template's published version and draft side by
//! side, edited as HTML (the draft until published), published, duplicated or deleted.
//! Owners and admins change things, members look. Through the templates service.

use askama::Template as _;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Response, StatusCode};

use super::design::Target;
use super::{Ctx, Signed, answer_status, html, pages, redirect, redirect_to, text};
use crate::templates::service::{self as templates, NewTemplate, TemplateChange};
use crate::users::Role;

/// Answers `/dashboard/templates[/...]`.
pub fn route(ctx: &Ctx<'_>, signed: &Signed, method: &Method, rest: &str) -> Response<Full<Bytes>> {
    let manage = signed.user.role >= Role::Admin;
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    let caller = signed.caller();
    match (method, parts.as_slice()) {
        (&Method::GET, []) => list(ctx, signed, None),
        (&Method::POST, []) if manage => {
            let new = NewTemplate {
                name: ctx.form("name"),
                subject: ctx.form("subject").filter(|s| !s.trim().is_empty()),
                html: ctx.form("html"),
                ..NewTemplate::default()
            };
            match templates::create(ctx.state, &caller, new) {
                Ok(id) => redirect_to(&format!("/dashboard/templates/{id}")),
                Err(error) => list(ctx, signed, Some(error.to_string())),
            }
        }
        (&Method::GET, [id]) => detail(ctx, signed, id, None, None),
        (&Method::POST, [id]) if manage => {
            let optional = |name: &str| ctx.form(name).map(|v| Some(v).filter(|v| !v.trim().is_empty()));
            let change = TemplateChange {
                name: ctx.form("name"),
                subject: optional("subject"),
                from: optional("from"),
                // A textarea posts CRLF line ends: the HTML as stored has LF.
                html: ctx.form("html").map(|h| h.replace("\r\n", "\n")),
                text: optional("text"),
                ..TemplateChange::default()
            };
            match templates::update(ctx.state, &caller, id, change) {
                Ok(_) => detail(ctx, signed, id, Some("Draft saved. Publish it to send it."), None),
                Err(error) => detail(ctx, signed, id, None, Some(error.to_string())),
            }
        }
        (&Method::GET, [id, "preview"]) => preview(ctx, signed, id),
        (&Method::GET, [id, "design"]) => super::design::page(ctx, signed, Target::Template, id),
        (&Method::POST, [id, "design"]) if manage => super::design::save(ctx, signed, Target::Template, id),
        (&Method::POST, [id, "publish"]) if manage => match templates::publish(ctx.state, &caller, id) {
            Ok(_) => detail(ctx, signed, id, Some("Published: sends now use this version."), None),
            Err(error) => detail(ctx, signed, id, None, Some(error.to_string())),
        },
        (&Method::POST, [id, "versions", version, "restore"]) if manage => {
            match templates::restore(ctx.state, &caller, id, version) {
                Ok(_) => detail(
                    ctx,
                    signed,
                    id,
                    Some("Restored as the draft. Publish it to send it."),
                    None,
                ),
                Err(error) => detail(ctx, signed, id, None, Some(error.to_string())),
            }
        }
        (&Method::POST, [id, "duplicate"]) if manage => match templates::duplicate(ctx.state, &caller, id) {
            Ok(copy) => redirect_to(&format!("/dashboard/templates/{copy}")),
            Err(error) => detail(ctx, signed, id, None, Some(error.to_string())),
        },
        (&Method::POST, [id, "delete"]) if manage => match templates::delete(ctx.state, &caller, id) {
            Ok(_) => redirect("/dashboard/templates"),
            Err(error) => detail(ctx, signed, id, None, Some(error.to_string())),
        },
        (&Method::POST, _) => text(
            StatusCode::FORBIDDEN,
            "Your role may not change templates; ask an owner or admin",
        ),
        _ => text(StatusCode::NOT_FOUND, "No such page"),
    }
}

fn list(ctx: &Ctx<'_>, signed: &Signed, error: Option<String>) -> Response<Full<Bytes>> {
    let page = super::first_page();
    let rows = match templates::list(ctx.state, &signed.caller(), &page).map(|(found, _)| {
        found
            .into_iter()
            .map(|t| pages::TemplateRow {
                id: t.id.to_string(),
                name: t.name,
                alias: t.alias.unwrap_or_default(),
                status: if t.published { "published" } else { "draft" },
                updated: super::when(t.updated_at),
            })
            .collect()
    }) {
        Ok(found) => found,
        Err(error) => return super::unreadable(&error),
    };
    let status = answer_status(error.is_some());
    let page = pages::Templates {
        chrome: signed.chrome("templates"),
        can_manage: signed.user.role >= Role::Admin,
        rows,
        error,
    };
    html(status, page.render())
}

fn detail(
    ctx: &Ctx<'_>,
    signed: &Signed,
    id: &str,
    notice: Option<&str>,
    error: Option<String>,
) -> Response<Full<Bytes>> {
    let Ok(template) = templates::get(ctx.state, &signed.caller(), id) else {
        return text(StatusCode::NOT_FOUND, "No such template");
    };
    let current = template.current().clone();
    let status = answer_status(error.is_some());
    let viewing = ctx.request.query("version").unwrap_or_default();
    let versions: Vec<pages::VersionRow> = template
        .draft
        .iter()
        .map(|v| (v, "draft"))
        .chain(template.published.iter().map(|v| (v, "published")))
        .chain(template.history.iter().map(|v| (v, "earlier")))
        .map(|(v, state)| pages::VersionRow {
            id: v.id.to_string(),
            state,
            created: super::when(v.created_at),
            designed: v.mjml.is_some(),
            viewing: v.id.to_string() == viewing,
        })
        .collect();
    let shown = template
        .draft
        .iter()
        .chain(&template.published)
        .chain(&template.history)
        .find(|v| v.id.to_string() == viewing)
        .unwrap_or(&current);
    let page = pages::TemplatePage {
        chrome: signed.chrome("templates"),
        can_manage: signed.user.role >= Role::Admin,
        id: template.id.to_string(),
        name: template.name.clone(),
        alias: template.alias.clone().unwrap_or_default(),
        status: template.status(),
        published_at: template.published_at.map(super::when),
        has_draft: template.draft.is_some() && template.published.is_some(),
        from: current.from.clone().unwrap_or_default(),
        subject: current.subject.clone().unwrap_or_default(),
        html: current.html.clone(),
        preview_version: (!viewing.is_empty()).then(|| shown.id.to_string()),
        preview_label: versions
            .iter()
            .find(|v| v.id == shown.id.to_string())
            .map_or("current", |v| v.state),
        designed: current.mjml.is_some(),
        versions,
        text: current.text.clone().unwrap_or_default(),
        variables: current.variables.iter().map(|v| v.key.clone()).collect(),
        merge_tags: merge_tags(&current),
        notice,
        error,
    };
    html(status, page.render())
}

/// `GET /dashboard/templates/{id}/preview[?version=id]`: the HTML of the current version,
/// or of the one asked for, for the page's preview frame.
fn preview(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    let Ok(template) = templates::get(ctx.state, &signed.caller(), id) else {
        return text(StatusCode::NOT_FOUND, "No such template");
    };
    let asked = ctx.request.query("version").unwrap_or_default();
    let shown = template
        .draft
        .iter()
        .chain(&template.published)
        .chain(&template.history)
        .find(|v| v.id.to_string() == asked)
        .unwrap_or_else(|| template.current());
    super::preview::answer(shown.html.clone(), false)
}

/// The merge tags a template's version may use: its variables and the unsubscribe link.
pub(super) fn merge_tags(version: &crate::templates::Version) -> Vec<String> {
    version
        .variables
        .iter()
        .map(|v| v.key.clone())
        .chain(std::iter::once(
            crate::unsubscribe::MARKER.trim_matches(['{', '}']).to_owned(),
        ))
        .collect()
}
