//! The read-only pages: an email's detail (timeline, delivery attempts, a sandboxed
//! preview with no scripts and no remote images, the text and HTML) and the API logs
//! (filtered by status class, each with its redacted bodies).

use askama::Template;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Response, StatusCode};

use super::{Ctx, Signed, html, pages, text};
use crate::logs::RequestLog;
use crate::wire;

/// Logs read at most to fill a filtered page.
const LOGS_SCANNED_MAX: usize = 5_000;

/// Logs per page.
const LOGS_PAGE: usize = 50;

/// `GET /dashboard/emails/{id}`.
pub fn email(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    let Ok(id) = id.parse() else {
        return text(StatusCode::NOT_FOUND, "No such email");
    };
    let Ok(record) = crate::emails::service::get(ctx.state, &signed.caller(), id) else {
        return text(StatusCode::NOT_FOUND, "No such email");
    };
    let events = match ctx.state.emails().timeline(record.id) {
        Ok(found) => found,
        Err(error) => return super::unreadable(&error),
    };
    let events = events
        .into_iter()
        .map(|event| pages::EventRow {
            kind: event.kind.to_string(),
            at: super::when(event.created_at),
            detail: if event.data.is_null() {
                String::new()
            } else {
                event.data.to_string()
            },
        })
        .collect();
    let attempts = record
        .attempts
        .iter()
        .map(|a| pages::AttemptRow {
            at: super::when(a.at),
            recipients: a.recipients.join(", "),
            host: [a.host.clone(), a.ip.clone().map(|ip| format!("({ip})"))]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" "),
            tls: a.tls.clone().unwrap_or_else(|| "none".to_owned()),
            reply: a.reply.clone(),
        })
        .collect();
    let images = ctx.request.query("images") == Some("1");
    let mut headers = vec![("From", record.from.clone()), ("To", record.to.join(", "))];
    if !record.cc.is_empty() {
        headers.push(("Cc", record.cc.join(", ")));
    }
    if !record.bcc.is_empty() {
        headers.push(("Bcc", record.bcc.join(", ")));
    }
    if !record.reply_to.is_empty() {
        headers.push(("Reply-To", record.reply_to.join(", ")));
    }
    headers.push(("Subject", record.subject.clone()));
    headers.push(("Date", wire::iso8601(record.created_at)));
    headers.push(("Message-ID", record.message_id.clone()));
    for tag in &record.tags {
        headers.push(("X-Tag", format!("{}={}", tag.name, tag.value)));
    }
    let page = pages::Email {
        chrome: signed.chrome("emails"),
        id: record.id.to_string(),
        subject: record.subject.clone(),
        status: record.last_event.to_string(),
        from: record.from.clone(),
        to: [record.to.clone(), record.cc.clone()].concat().join(", "),
        sent: super::when(record.created_at),
        message_id: record.message_id.clone(),
        events,
        attempts,
        html: record.html.clone(),
        text: record.text,
        log: record.request_log_id.map(|id| id.to_string()),
        headers,
        images,
    };
    html(StatusCode::OK, page.render())
}

/// `GET /dashboard/emails/{id}/preview[?images=1]`: the email's HTML for its page's
/// preview frame, remote images shown only when asked for.
pub fn preview(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    let Ok(id) = id.parse() else {
        return text(StatusCode::NOT_FOUND, "No such email");
    };
    let Ok(record) = crate::emails::service::get(ctx.state, &signed.caller(), id) else {
        return text(StatusCode::NOT_FOUND, "No such email");
    };
    let images = ctx.request.query("images") == Some("1");
    super::preview::answer(record.html.unwrap_or_default(), images)
}

/// `GET /dashboard/logs`.
pub fn logs(ctx: &Ctx<'_>, signed: &Signed) -> Response<Full<Bytes>> {
    let filter = match ctx.request.query("status") {
        Some("2xx") => "2xx",
        Some("errors") => "errors",
        _ => "",
    };
    let method = ctx
        .request
        .query("method")
        .unwrap_or_default()
        .trim()
        .to_ascii_uppercase();
    let key = ctx.request.query("key").unwrap_or_default().trim().to_owned();
    let agent = ctx.request.query("agent").unwrap_or_default().trim().to_owned();
    let agent_lower = agent.to_lowercase();
    let key_names = super::key_names(ctx, signed);
    let scanned = match ctx.state.request_logs().newest(signed.user.team_id, LOGS_SCANNED_MAX) {
        Ok(found) => found,
        Err(error) => return super::unreadable(&error),
    };
    let rows = scanned
        .into_iter()
        .filter(|log| match filter {
            "2xx" => log.status / 100 == 2,
            "errors" => log.status >= 400,
            _ => true,
        })
        .filter(|log| method.is_empty() || log.method == method)
        .filter(|log| key.is_empty() || log.api_key_id.to_string() == key)
        .filter(|log| {
            agent_lower.is_empty()
                || log
                    .user_agent
                    .as_deref()
                    .is_some_and(|a| a.to_lowercase().contains(&agent_lower))
        })
        .take(LOGS_PAGE)
        .map(|log| pages::LogRow {
            key: key_names
                .iter()
                .find(|(id, _)| *id == log.api_key_id.to_string())
                .map_or_else(|| log.api_key_id.to_string(), |(_, name)| name.clone()),
            id: log.id.to_string(),
            path: log.path.clone(),
            status: log.status,
            class: log.status / 100,
            method: log.method.clone(),
            at: super::when(log.created_at),
            agent: log.user_agent.unwrap_or_default(),
        })
        .collect();
    let page = pages::Logs {
        chrome: signed.chrome("logs"),
        filter,
        rows,
        method: &method,
        key: &key,
        agent: &agent,
        keys: key_names,
    };
    html(StatusCode::OK, page.render())
}

/// `GET /dashboard/logs/{id}`.
pub fn log(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    let Ok(id) = id.parse() else {
        return text(StatusCode::NOT_FOUND, "No such log");
    };
    let Ok(Some(log)) = ctx.state.request_logs().get(signed.user.team_id, id) else {
        return text(StatusCode::NOT_FOUND, "No such log");
    };
    let pretty = |body: Option<&str>| {
        let value = crate::http::request_log::body_json(body);
        serde_json::to_string_pretty(&value).unwrap_or_default()
    };
    let page = pages::Log {
        chrome: signed.chrome("logs"),
        method: log.method.clone(),
        path: log.path.clone(),
        status: log.status,
        class: log.status / 100,
        at: super::when(log.created_at),
        duration: log.duration_ms,
        key: log.api_key_id.to_string(),
        agent: log.user_agent.clone().unwrap_or_default(),
        request: pretty(log.request_body.as_deref()),
        response: pretty(log.response_body.as_deref()),
        emails: created_emails(&log),
    };
    html(StatusCode::OK, page.render())
}

/// The emails a logged request created: the ids its response names, for a send.
fn created_emails(log: &RequestLog) -> Vec<String> {
    if log.method != "POST" || !matches!(log.path.as_str(), "/emails" | "/emails/batch") || log.status / 100 != 2 {
        return Vec::new();
    }
    let body = crate::http::request_log::body_json(log.response_body.as_deref());
    let ids = match &body["data"] {
        serde_json::Value::Array(items) => items.iter().map(|item| &item["id"]).collect(),
        _ => vec![&body["id"]],
    };
    ids.into_iter()
        .filter_map(|id| id.as_str().filter(|id| id.parse::<herald_queue::Id>().is_ok()))
        .map(str::to_owned)
        .collect()
}

/// `GET /dashboard/emails/{id}/insights`: the deliverability checks, as a fragment for
/// htmx (which asks with `HX-Request`) or as a page.
pub fn insights(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    let Ok(id) = id.parse() else {
        return text(StatusCode::NOT_FOUND, "No such email");
    };
    let Ok(report) = crate::insights::for_email(ctx.state, &ctx.state.dns, &signed.caller(), id) else {
        return text(StatusCode::NOT_FOUND, "No such email");
    };
    let count = |status| report.checks.iter().filter(|c| c.status == status).count();
    let (passed, warnings, failed) = (
        count(crate::insights::Status::Pass),
        count(crate::insights::Status::Warn),
        count(crate::insights::Status::Fail),
    );
    let checks = report
        .checks
        .into_iter()
        .map(|c| pages::InsightRow {
            status: c.status.name(),
            title: c.title,
            detail: c.detail,
            fix: c.fix,
        })
        .collect();
    if ctx.request.header("hx-request").is_some() {
        let panel = pages::InsightsPanel {
            checks,
            passed,
            warnings,
            failed,
        };
        return html(StatusCode::OK, panel.render());
    }
    let page = pages::Insights {
        chrome: signed.chrome("emails"),
        id: id.to_string(),
        checks,
        passed,
        warnings,
        failed,
    };
    html(StatusCode::OK, page.render())
}
