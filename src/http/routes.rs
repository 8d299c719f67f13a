//! Request handling: the unauthenticated pair (`/healthz`, `/metrics`), then for
//! everything else: read the body, authenticate, rate-limit, route, check the key's
//! permission, run the handler off the async workers, add the RateLimit headers, and log
//! the exchange.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};

use super::ratelimit::Decision;
use super::request::{ApiRequest, BODY_MAX};
use super::request_log;
use super::response::{self, ApiError};
use super::router::{self, Route};
use super::{public, upload};
use crate::accounts::{AuthError, Caller, Permission};
use crate::api::{self, Ctx, Reply};
use crate::logs::RequestLog;
use crate::server::AppState;

/// Answers one request.
pub async fn handle(state: &Arc<AppState>, request: Request<Incoming>, peer: IpAddr) -> Response<super::Body> {
    let started = Instant::now();
    let path = request.uri().path();
    let (route, response) = if path == "/dashboard" || path.starts_with("/dashboard/") {
        ("dashboard", crate::dashboard::handle(state, request, peer).await)
    } else {
        let (route, response) = respond(state, request, peer, started).await;
        (route, response.map(http_body_util::BodyExt::boxed_unsync))
    };
    metrics::counter!("herald_http_requests_total", "route" => route, "status" => response.status().as_str().to_owned())
        .increment(1);
    metrics::histogram!("herald_http_request_seconds", "route" => route).record(started.elapsed().as_secs_f64());
    response
}

/// Answers every request but the dashboard's.
async fn respond(
    state: &Arc<AppState>,
    request: Request<Incoming>,
    peer: IpAddr,
    started: Instant,
) -> (&'static str, Response<Full<Bytes>>) {
    match (request.method(), request.uri().path()) {
        (&Method::GET | &Method::HEAD, "/healthz") => ("healthz", healthz(state)),
        (_, "/healthz") => (
            "healthz",
            ApiError::method_not_allowed("/healthz supports GET only").into_response(),
        ),
        (&Method::GET, "/metrics") => ("metrics", metrics(state.node())),
        (&Method::GET | &Method::HEAD, path) if path.starts_with("/t/") => {
            ("tracking", public::tracking(state, &request, peer).await)
        }
        (&Method::GET | &Method::HEAD, path) if path.starts_with(crate::images::PATH) => {
            ("images", public::image(state, &request).await)
        }
        (&Method::GET | &Method::HEAD | &Method::POST, path) if path.starts_with(crate::unsubscribe::PATH) => {
            ("unsubscribe", public::unsubscribe(state, request).await)
        }
        (_, "/metrics") => (
            "metrics",
            ApiError::method_not_allowed("/metrics supports GET only").into_response(),
        ),
        // The key is checked before the body is read: a client without one must not
        // make the server take in a body of up to `BODY_MAX`.
        _ => match authenticate(state, &request, peer) {
            Err(response) => ("unauthenticated", *response),
            Ok(caller) => {
                // Taken before the body is read: an upload is refused before it streams.
                let decision = state.rate_limits.check(caller.team_id);
                match read(state, request, &caller, &decision).await {
                    Ok(request) => api(state, request, caller, decision, started).await,
                    Err(error) => {
                        let mut response = error.into_response();
                        decision.apply(response.headers_mut());
                        ("unread", response)
                    }
                }
            }
        },
    }
}

/// Reads the request's body: into memory, up to [`BODY_MAX`], or for an upload, to a
/// file in the data directory, up to `[contacts] import_size_max`. An upload is refused
/// before it is read when it could not be taken anyway: a key that may not import, a team
/// over its rate, `[contacts] uploads_max` uploads already streaming, or a disk without
/// room for it above the spool's free-space floor.
async fn read(
    state: &AppState,
    request: Request<Incoming>,
    caller: &Caller,
    decision: &Decision,
) -> Result<ApiRequest, ApiError> {
    if !upload::is_upload(request.method(), request.uri().path()) {
        return ApiRequest::read(request, BODY_MAX).await;
    }
    if caller.permission == Permission::SendingAccess {
        return Err(ApiError::restricted_api_key());
    }
    if !decision.allowed {
        return Err(ApiError::rate_limited());
    }
    upload::read_import(state, request).await
}

/// The caller named by the `Authorization` header, or the response refusing the request.
fn authenticate(
    state: &AppState,
    request: &Request<Incoming>,
    peer: IpAddr,
) -> Result<Caller, Box<Response<Full<Bytes>>>> {
    // A header that is not visible ASCII is a wrong key, not a missing one.
    let authorization = request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
    let result = match bearer(authorization.as_deref()) {
        None => Err(ApiError::missing_api_key()),
        Some(token) => state.authenticate(token).map_err(|error| match error {
            AuthError::Missing => ApiError::missing_api_key(),
            AuthError::Invalid => ApiError::invalid_api_key(),
            AuthError::Storage(error) => error.into(),
        }),
    };
    result.map_err(|error| {
        // Without a valid key there is no team to count against: count the client's
        // address instead, which also bounds how fast keys can be guessed.
        let decision = state.anonymous_limits.check(peer);
        let error = if decision.allowed {
            error
        } else {
            ApiError::rate_limited()
        };
        let mut response = error.into_response();
        decision.apply(response.headers_mut());
        Box::new(response)
    })
}

/// The token of an `Authorization: Bearer <token>` header; `None` when there is no such
/// header, another scheme, or nothing after it.
fn bearer(header: Option<&str>) -> Option<&str> {
    let (scheme, token) = header?.trim().split_once(' ')?;
    Some(token.trim()).filter(|token| scheme.eq_ignore_ascii_case("bearer") && !token.is_empty())
}

async fn api(
    state: &Arc<AppState>,
    request: ApiRequest,
    caller: Caller,
    decision: Decision,
    started: Instant,
) -> (&'static str, Response<Full<Bytes>>) {
    let routed = router::route(&request.method, &request.path);
    let label = routed.as_ref().map_or("unknown", Route::label);
    let mut request = request;
    request.log_id = Some(state.next_id());
    let request = Arc::new(request);
    let result = match routed {
        _ if !decision.allowed => Err(ApiError::rate_limited()),
        Err(error) => Err(error),
        Ok(route) if caller.permission == Permission::SendingAccess && !route.is_sending() => {
            Err(ApiError::restricted_api_key())
        }
        Ok(route) => run(state, &caller, &request, route).await,
    };
    let (status, body) = match result {
        Ok(reply) => (reply.status, reply.body),
        Err(error) => (error.status, error.body()),
    };
    let text = body.to_string();
    let mut response = Response::new(Full::new(Bytes::from(text.clone())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json; charset=utf-8"),
    );
    decision.apply(response.headers_mut());
    quota_headers(state, caller.team_id, response.headers_mut());
    log(state, &caller, &request, status, &text, started);
    (label, response)
}

/// `x-resend-daily-quota` and `x-resend-monthly-quota`: the emails the team has used this
/// UTC day and month (this request's included), as Resend reports them.
fn quota_headers(state: &AppState, team: herald_queue::Id, headers: &mut hyper::HeaderMap) {
    match state.quotas().used(state.counters(), team, state.now()) {
        Ok(used) => {
            headers.insert("x-resend-daily-quota", hyper::header::HeaderValue::from(used.daily));
            headers.insert("x-resend-monthly-quota", hyper::header::HeaderValue::from(used.monthly));
        }
        Err(error) => tracing::warn!(%error, "cannot read the team's quota counters"),
    }
}

/// Runs the route's handler on the blocking pool, at most
/// [`AppState::BLOCKING_MAX`](crate::server::AppState) at a time.
async fn run(
    state: &Arc<AppState>,
    caller: &Caller,
    request: &Arc<ApiRequest>,
    route: Route,
) -> Result<Reply, ApiError> {
    let Ok(_permit) = state.blocking.acquire().await else {
        return Err(ApiError::unavailable("The server is shutting down"));
    };
    let (state, caller, request) = (Arc::clone(state), caller.clone(), Arc::clone(request));
    let span = tracing::info_span!(
        "request",
        method = %request.method,
        path = %request.path,
        team_id = %caller.team_id,
    );
    tokio::task::spawn_blocking(move || {
        let _span = span.entered();
        let ctx = Ctx {
            state: &state,
            caller: &caller,
            request: &request,
        };
        api::dispatch(&ctx, &route)
    })
    .await
    .unwrap_or_else(|error| Err(ApiError::internal(&error)))
}

fn log(
    state: &AppState,
    caller: &Caller,
    request: &ApiRequest,
    status: StatusCode,
    response_body: &str,
    started: Instant,
) {
    let entry = RequestLog {
        id: request.log_id.unwrap_or_else(|| state.next_id()),
        team_id: caller.team_id,
        api_key_id: caller.key_id,
        method: request.method.to_string(),
        path: request.path.clone(),
        query: request.raw_query.clone(),
        status: status.as_u16(),
        user_agent: request.header("user-agent").map(|ua| ua.chars().take(512).collect()),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        request_body: request_log::redact(&request.body),
        response_body: request_log::redact(response_body.as_bytes()),
        created_at: state.now(),
    };
    state.request_logs().record(&entry);
}

/// `200` with the spool's state when herald can accept mail; `503` when storage refuses
/// new mail, so a load balancer sends traffic elsewhere.
fn healthz(state: &AppState) -> Response<Full<Bytes>> {
    let health = state.node().health();
    let admission = state.node().admit();
    let (status, label, reason) = match &admission {
        Ok(()) => (StatusCode::OK, "ok", None),
        Err(refusal) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            Some(refusal.to_string()),
        ),
    };
    response::json(
        status,
        &serde_json::json!({
            "status": label,
            "reason": reason,
            "version": env!("CARGO_PKG_VERSION"),
            "spool": { "messages": state.spool().depth() },
            "storage": {
                "disk_available_bytes": health.disk_available,
                "disk_minimum_bytes": health.disk_minimum,
            },
        }),
    )
}

fn metrics(node: &crate::storage::Node) -> Response<Full<Bytes>> {
    crate::telemetry::record_table_sizes(node);
    let handle = crate::telemetry::metrics();
    handle.run_upkeep();
    response::text(
        StatusCode::OK,
        "text/plain; version=0.0.4; charset=utf-8",
        handle.render(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bearer_header_with_a_token_carries_one() {
        assert_eq!(bearer(Some("Bearer re_abc")), Some("re_abc"));
        assert_eq!(bearer(Some("  bearer   re_abc  ")), Some("re_abc"));
        assert_eq!(bearer(Some("Basic cmVfYWJj")), None);
        assert_eq!(bearer(Some("Bearer ")), None);
        assert_eq!(bearer(Some("Bearer")), None);
        assert_eq!(bearer(None), None);
    }
}
