//! herald's public pages, answered without a key: tracking URLs on a verified tracking
//! host (the open pixel, the click redirect) and unsubscribe links under `[http]
//! public_url`. Whatever they are asked, a link this node did not sign is a 404.

use std::net::IpAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};

use super::response::ApiError;
use crate::server::AppState;
use crate::unsubscribe::{self, Choice, Unsubscribe, page};

/// A design image (`/images/{token}.{ext}`), answered without a key to whoever opens an
/// email that shows it: its bytes with their media type, cached for a year (an image's
/// address never shows other bytes), or a 404.
pub async fn image(state: &Arc<AppState>, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    let file = request.uri().path()[crate::images::PATH.len()..].to_owned();
    let head = request.method() == Method::HEAD;
    let services = Arc::clone(state);
    let found = tokio::task::spawn_blocking(move || crate::images::public(&services, &file)).await;
    let (format, bytes) = match found {
        Ok(Ok(Some(found))) => found,
        Ok(Ok(None)) => return ApiError::not_found("No such image").into_response(),
        Ok(Err(error)) => {
            tracing::error!(%error, "cannot read an image");
            return ApiError::unavailable("The image cannot be read now; try again later").into_response();
        }
        Err(_) => return ApiError::unavailable("The image cannot be read now; try again later").into_response(),
    };
    let length = bytes.len();
    let mut response = Response::new(Full::new(if head { Bytes::new() } else { bytes }));
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(format.media_type()),
    );
    headers.insert(hyper::header::CONTENT_LENGTH, hyper::header::HeaderValue::from(length));
    headers.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    headers.insert(
        hyper::header::X_CONTENT_TYPE_OPTIONS,
        hyper::header::HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        hyper::header::CONTENT_SECURITY_POLICY,
        hyper::header::HeaderValue::from_static("default-src 'none'; sandbox"),
    );
    response
}

/// A tracking URL (`/t/o/...` or `/t/c/...`), answered without a key: a signature this
/// node made, on a verified tracking host of the team it names (the `Host`), records the
/// open or click and answers the pixel or the redirect. Anything else is a 404: a forged
/// or altered URL never redirects.
pub async fn tracking(state: &Arc<AppState>, request: &Request<Incoming>, peer: IpAddr) -> Response<Full<Bytes>> {
    let not_found = || ApiError::not_found("No such tracking link").into_response();
    let Some(tracked) = state.tracking_signer().and_then(|s| s.verify(request.uri().path())) else {
        return not_found();
    };
    let host = request
        .headers()
        .get(hyper::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(|h| {
            h.rsplit_once(':')
                .filter(|(_, port)| port.parse::<u16>().is_ok())
                .map_or(h, |(host, _)| host)
        })
        .unwrap_or_default()
        .to_owned();
    let user_agent = request
        .headers()
        .get(hyper::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .chars()
        .take(512)
        .collect();
    let visitor = crate::tracking::Visitor { ip: peer, user_agent };
    let (services, job) = (Arc::clone(&state.services), tracked.clone());
    let recorded = tokio::task::spawn_blocking(move || {
        let team = match &job {
            crate::tracking::Tracked::Open { team_id, .. } | crate::tracking::Tracked::Click { team_id, .. } => {
                *team_id
            }
        };
        match crate::tracking::tracking_domain(&services, team, &host)? {
            Some(_) => crate::tracking::record(&services, &job, &visitor).map(|()| true),
            None => Ok(false),
        }
    })
    .await;
    match recorded {
        Ok(Ok(true)) => {}
        Ok(Ok(false)) => return not_found(),
        // The visitor still gets the pixel or the page: losing one count beats a broken link.
        Ok(Err(error)) => tracing::warn!(%error, "cannot record a tracked open or click"),
        Err(error) => tracing::error!(%error, "a tracking task failed"),
    }
    let mut response = match tracked {
        crate::tracking::Tracked::Open { .. } => {
            let mut response = Response::new(Full::new(Bytes::from_static(PIXEL)));
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("image/gif"),
            );
            response
        }
        crate::tracking::Tracked::Click { target, .. } => {
            let Ok(location) = hyper::header::HeaderValue::from_str(&target) else {
                return not_found();
            };
            let mut response = Response::new(Full::new(Bytes::new()));
            *response.status_mut() = StatusCode::FOUND;
            response.headers_mut().insert(hyper::header::LOCATION, location);
            response
        }
    };
    response.headers_mut().insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    response
}

/// A 1×1 transparent GIF.
const PIXEL: &[u8] = &[
    0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff,
    0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x02,
    0x02, 0x44, 0x01, 0x00, 0x3b,
];

/// Largest body of an unsubscribe `POST`: a one-click form, or the page's preferences.
const UNSUBSCRIBE_BODY_MAX: usize = 16 * 1024;

/// `POST`s one unsubscribe link may make: a person changing preferences a few times, or a
/// mailbox provider retrying a one-click request, fits well within it.
pub const UNSUBSCRIBE_RATE: crate::config::values::Rate = crate::config::values::Rate {
    count: 10,
    per: std::time::Duration::from_secs(60),
};

/// An unsubscribe link: `GET` shows the page (and changes nothing: link scanners follow
/// GETs), `POST` unsubscribes. A one-click `POST` (RFC 8058: `List-Unsubscribe=One-Click`,
/// as a form or multipart) answers `200` with an empty body; the page's own forms
/// (`action=unsubscribe|preferences`) answer a page.
pub async fn unsubscribe(state: &Arc<AppState>, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let token = request.uri().path().trim_start_matches(unsubscribe::PATH).to_owned();
    let verified = state.tracking_signer().and_then(|s| Unsubscribe::verify(s, &token));
    let Some(target) = verified else {
        return html(StatusCode::NOT_FOUND, page::invalid());
    };
    let method = request.method().clone();
    if method == Method::POST {
        // Counted per link (its token's hash), not per address: mailbox providers send
        // every one-click request from a few shared addresses.
        let link = {
            use std::hash::{BuildHasher, BuildHasherDefault};
            BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(&token)
        };
        let decision = state.unsubscribe_limits.check(link);
        if !decision.allowed {
            let mut response = ApiError::rate_limited().into_response();
            decision.apply(response.headers_mut());
            return response;
        }
    }
    let choice = if method == Method::POST {
        let body = match Limited::new(request.into_body(), UNSUBSCRIBE_BODY_MAX).collect().await {
            Ok(body) => body.to_bytes(),
            Err(_) => return ApiError::too_large(UNSUBSCRIBE_BODY_MAX as u64).into_response(),
        };
        Some(choice(&body))
    } else {
        None
    };
    // Public pages share the handlers' bound on blocking work.
    let Ok(_permit) = state.blocking.acquire().await else {
        return ApiError::unavailable("The server is shutting down").into_response();
    };
    let services = Arc::clone(&state.services);
    let job = target.clone();
    let asked = choice.clone();
    let outcome = tokio::task::spawn_blocking(move || {
        if let Some((choice, _)) = &asked {
            unsubscribe::apply_choice(&services, &job, choice)?;
        }
        unsubscribe::preferences(&services, &job)
    })
    .await;
    let preferences = match outcome {
        Ok(Ok(preferences)) => preferences,
        Ok(Err(crate::services::Error::NotFound(_))) => return html(StatusCode::NOT_FOUND, page::invalid()),
        Ok(Err(error)) => {
            tracing::warn!(%error, email_id = %target.email_id, "cannot carry out an unsubscribe");
            return ApiError::from(error).into_response();
        }
        Err(error) => return ApiError::internal(&error).into_response(),
    };
    match choice {
        None if method == Method::HEAD => html(StatusCode::OK, String::new()),
        None => html(StatusCode::OK, page::show(&preferences)),
        Some((_, true)) => html(StatusCode::OK, page::done(&preferences)),
        Some((_, false)) => {
            metrics::counter!("herald_unsubscribes_total", "kind" => "one_click").increment(1);
            Response::new(Full::new(Bytes::new()))
        }
    }
}

/// What a `POST` body asks, and whether it came from the page (which answers a page).
fn choice(body: &[u8]) -> (Choice, bool) {
    let fields: Vec<(String, String)> = form_urlencoded::parse(body).into_owned().collect();
    let field = |name: &str| fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    match field("action") {
        Some("preferences") => {
            let topics = fields
                .iter()
                .filter(|(name, _)| name == "topic")
                .filter_map(|(_, value)| value.parse().ok())
                .collect();
            (
                Choice::Preferences {
                    topics,
                    all: field("all").is_some(),
                },
                true,
            )
        }
        Some(_) => (Choice::OneClick, true),
        // RFC 8058's body, urlencoded or multipart: any POST to a valid link is the one click.
        None => (Choice::OneClick, false),
    }
}

/// An HTML page with the pages' security headers.
fn html(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    let set = |headers: &mut hyper::HeaderMap, name, value| {
        headers.insert(name, hyper::header::HeaderValue::from_static(value));
    };
    set(headers, hyper::header::CONTENT_TYPE, "text/html; charset=utf-8");
    set(headers, hyper::header::CACHE_CONTROL, "no-store");
    set(headers, hyper::header::CONTENT_SECURITY_POLICY, page::CSP);
    set(headers, hyper::header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, hyper::header::REFERRER_POLICY, "no-referrer");
    response
}
