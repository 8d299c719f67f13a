//! The route table. Later issues add the REST resources here; what exists now is the
//! unauthenticated pair every deployment needs.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};

use super::response::{self, ApiError};
use crate::server::AppState;

/// Answers one request.
pub async fn handle(state: &AppState, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_owned();
    let (route, response) = match (request.method(), path.as_str()) {
        (&Method::GET | &Method::HEAD, "/healthz") => ("healthz", healthz(state).await),
        (_, "/healthz") => (
            "healthz",
            ApiError::method_not_allowed("/healthz supports GET only").into_response(),
        ),
        (&Method::GET, "/metrics") => ("metrics", metrics()),
        (_, "/metrics") => (
            "metrics",
            ApiError::method_not_allowed("/metrics supports GET only").into_response(),
        ),
        _ => (
            "unknown",
            ApiError::not_found(format!("no route for {} {path}", request.method())).into_response(),
        ),
    };
    metrics::counter!("herald_http_requests_total", "route" => route, "status" => response.status().as_str().to_owned())
        .increment(1);
    response
}

/// `200` with the spool's state when herald can accept mail; `503` when storage refuses
/// new mail, so a load balancer sends traffic elsewhere.
async fn healthz(state: &AppState) -> Response<Full<Bytes>> {
    let health = state.store.health();
    let admission = state.store.admit();
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
            "spool": { "messages": state.spool.depth() },
            "storage": {
                "disk_available_bytes": health.disk_available,
                "disk_minimum_bytes": health.disk_minimum,
            },
        }),
    )
}

fn metrics() -> Response<Full<Bytes>> {
    let handle = crate::telemetry::metrics();
    handle.run_upkeep();
    response::text(
        StatusCode::OK,
        "text/plain; version=0.0.4; charset=utf-8",
        handle.render(),
    )
}
