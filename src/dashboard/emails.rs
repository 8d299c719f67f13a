//! `GET /dashboard/emails` (the list, filtered by status, date range, domain, API key,
//! tag and a search; pages of 50 through [`crate::emails::browse`]) and
//! `GET /dashboard/emails/export.csv` (the same filters, every matching email, streamed
//! as CSV while it is read).

use std::sync::Arc;

use askama::Template;
use bytes::Bytes;
use chrono::NaiveDate;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::header::HeaderValue;
use hyper::{Response, StatusCode};

use super::{Ctx, Signed, html, pages, text};
use crate::emails::browse::{self, Filter};
use crate::emails::record::EmailStatus;
use crate::http::Body;
use crate::wire;

/// Emails per page.
const PAGE: usize = 50;

/// Emails read per step of an export.
const EXPORT_STEP: usize = 500;

/// Bytes of CSV gathered before they are sent.
const CHUNK: usize = 64 * 1024;

/// The statuses the page filters by.
const STATUSES: &[&str] = &[
    "sent",
    "scheduled",
    "delivered",
    "delivery_delayed",
    "bounced",
    "complained",
    "opened",
    "clicked",
    "failed",
    "canceled",
    "suppressed",
];

/// The filter the query asks for, and the query string that repeats it.
fn filter(ctx: &Ctx<'_>) -> Result<(Filter, String), String> {
    let query = |name: &str| ctx.request.query(name).map(str::trim).filter(|v| !v.is_empty());
    let date = |name: &str| -> Result<Option<NaiveDate>, String> {
        query(name)
            .map(|v| {
                NaiveDate::parse_from_str(v, "%Y-%m-%d").map_err(|_| format!("{name} must be a date like 2026-11-20"))
            })
            .transpose()
    };
    let start_of = |day: NaiveDate| {
        let at = day
            .and_hms_opt(0, 0, 0)
            .unwrap_or_default()
            .and_utc()
            .timestamp_millis();
        herald_queue::Timestamp::from_millis(u64::try_from(at).unwrap_or(0))
    };
    let status = match query("status") {
        None => None,
        Some(name) => {
            Some(serde_json::from_value(serde_json::json!(name)).map_err(|_| format!("there is no status {name:?}"))?)
        }
    };
    let api_key_id = match query("key") {
        None => None,
        Some(id) => Some(id.parse().map_err(|_| "key must be an API key's id".to_owned())?),
    };
    let tag = query("tag").map(|t| match t.split_once(':') {
        Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
        None => (t.to_owned(), None),
    });
    let filter = Filter {
        status,
        since: date("since")?.map(start_of),
        until: date("until")?.map(|d| start_of(d + chrono::Duration::days(1))),
        domain: query("domain").map(|d| d.trim_end_matches('.').to_ascii_lowercase()),
        api_key_id,
        tag,
        search: query("q").unwrap_or_default().to_lowercase(),
    };
    let kept: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(
            ["status", "since", "until", "domain", "key", "tag", "q"]
                .iter()
                .filter_map(|name| query(name).map(|v| (*name, v))),
        )
        .finish();
    Ok((filter, kept))
}

fn row(status: &EmailStatus) -> pages::EmailRow {
    pages::EmailRow {
        id: status.id.to_string(),
        to: status.to.join(", "),
        status: status.last_event.to_string(),
        subject: status.subject.clone(),
        sent: status.id.timestamp().map(super::when).unwrap_or_default(),
    }
}

/// `GET /dashboard/emails`.
pub fn list(ctx: &Ctx<'_>, signed: &Signed) -> Response<Full<Bytes>> {
    let (filter, kept) = match filter(ctx) {
        Ok(found) => found,
        Err(why) => return text(StatusCode::BAD_REQUEST, &why),
    };
    let before = ctx.request.query("after").and_then(|a| a.parse().ok());
    let page = match browse::page(ctx.state, &signed.caller(), &filter, before, PAGE) {
        Ok(page) => page,
        Err(error) => return text(StatusCode::SERVICE_UNAVAILABLE, &error.to_string()),
    };
    let keys = super::key_names(ctx, signed);
    let get = |name: &str| ctx.request.query(name).unwrap_or_default().trim().to_owned();
    let page = pages::Emails {
        chrome: signed.chrome("emails"),
        rows: page.rows.iter().map(row).collect(),
        next: page.next.map(|id| id.to_string()),
        status: &get("status"),
        query: &get("q"),
        since: &get("since"),
        until: &get("until"),
        domain: &get("domain"),
        key: &get("key"),
        tag: &get("tag"),
        keys,
        statuses: STATUSES,
        kept: &kept,
    };
    html(StatusCode::OK, page.render())
}

/// `GET /dashboard/emails/export.csv`: every email the filters match, newest first, as
/// CSV written while it is read (a blocking task feeds the response through a small
/// channel, so a slow reader holds back the reading, not memory).
pub fn export(state: Arc<crate::server::AppState>, signed: &Signed, ctx: &Ctx<'_>) -> Response<Body> {
    let (filter, _) = match filter(ctx) {
        Ok(found) => found,
        Err(why) => return text(StatusCode::BAD_REQUEST, &why).map(BodyExt::boxed_unsync),
    };
    let caller = signed.caller();
    let (sender, receiver) = tokio::sync::mpsc::channel::<Bytes>(4);
    tokio::task::spawn_blocking(move || {
        let mut buffer = Vec::with_capacity(CHUNK * 2);
        let mut before = None;
        {
            let mut writer = csv::Writer::from_writer(&mut buffer);
            let _ = writer.write_record([
                "id",
                "created_at",
                "from",
                "to",
                "subject",
                "last_event",
                "tags",
                "api_key_id",
            ]);
        }
        loop {
            let page = match browse::page(&state, &caller, &filter, before, EXPORT_STEP) {
                Ok(page) => page,
                Err(error) => {
                    tracing::warn!(%error, "an email export stopped");
                    return;
                }
            };
            let mut writer = csv::Writer::from_writer(&mut buffer);
            for status in &page.rows {
                let tags: Vec<String> = status.tags.iter().map(|t| format!("{}:{}", t.name, t.value)).collect();
                let _ = writer.write_record([
                    status.id.to_string(),
                    status.id.timestamp().map(wire::iso8601).unwrap_or_default(),
                    status.from.clone(),
                    status.to.join(", "),
                    status.subject.clone(),
                    status.last_event.to_string(),
                    tags.join(" "),
                    status.api_key_id.map(|id| id.to_string()).unwrap_or_default(),
                ]);
            }
            let _ = writer.flush();
            drop(writer);
            let last = page.next.is_none();
            if buffer.len() >= CHUNK || last {
                let chunk = std::mem::take(&mut buffer);
                if !chunk.is_empty() && sender.blocking_send(Bytes::from(chunk)).is_err() {
                    return; // the client went away
                }
            }
            if last {
                return;
            }
            before = page.next;
        }
    });
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        let chunk = receiver.recv().await?;
        Some((Ok::<_, std::convert::Infallible>(Frame::data(chunk)), receiver))
    });
    let mut response = Response::new(StreamBody::new(stream).boxed_unsync());
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    headers.insert(
        hyper::header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"emails.csv\""),
    );
    headers.insert(hyper::header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
