//! JSON responses and Resend's error body.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::Value;

/// The content type of every API response, as Resend sends it.
const JSON: &str = "application/json; charset=utf-8";

/// An error in Resend's wire format: `{"statusCode", "name", "message"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Resend's error name, such as `not_found`.
    pub name: &'static str,
    /// What is wrong, for a person.
    pub message: String,
}

impl ApiError {
    fn new(status: StatusCode, name: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            name,
            message: message.into(),
        }
    }

    /// `401 missing_api_key`.
    pub fn missing_api_key() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "missing_api_key",
            "Missing API key in the authorization header. Include the following header in the request: Authorization: Bearer YOUR_API_KEY",
        )
    }

    /// `403 invalid_api_key`.
    pub fn invalid_api_key() -> Self {
        Self::new(StatusCode::FORBIDDEN, "invalid_api_key", "API key is invalid")
    }

    /// `401 restricted_api_key`: a sending key on a non-sending endpoint.
    pub fn restricted_api_key() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "restricted_api_key",
            "This API key is restricted to only send emails",
        )
    }

    /// `403 invalid_access`: the key may not do this (operator-only endpoints).
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "invalid_access", message)
    }

    /// `404 not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// `405 method_not_allowed`.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", message)
    }

    /// `422 validation_error`.
    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "validation_error", message)
    }

    /// `400 validation_error`: the body is not JSON, or not of the expected shape.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "validation_error", message)
    }

    /// `422 missing_required_field`.
    pub fn missing_field(field: &str) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "missing_required_field",
            format!("Missing `{field}` field."),
        )
    }

    /// `422 invalid_parameter`: a path or query parameter is malformed.
    pub fn invalid_parameter(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter", message)
    }

    /// `409 conflict`: the resource already exists.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// `413 payload_too_large`.
    pub fn too_large(limit: u64) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("The request body exceeds the limit of {limit} bytes"),
        )
    }

    /// `413 payload_too_large` with the limit's own explanation (a named config key).
    pub fn too_large_because(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", message)
    }

    /// `429 rate_limit_exceeded`.
    pub fn rate_limited() -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_exceeded",
            "Too many requests. You can only make a limited number of requests per second; see the ratelimit-* headers.",
        )
    }

    /// `503 service_unavailable`: storage refuses writes for now.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "service_unavailable", message)
    }

    /// `500 application_error`: a fault on herald's side. The detail goes to the log, not
    /// to the client.
    pub fn internal(error: &dyn std::fmt::Display) -> Self {
        tracing::error!(%error, "request failed");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "application_error",
            "An unexpected error occurred; it has been logged",
        )
    }

    /// The error's JSON body.
    pub fn body(&self) -> Value {
        serde_json::json!({
            "statusCode": self.status.as_u16(),
            "name": self.name,
            "message": self.message,
        })
    }

    /// The response carrying this error.
    pub fn into_response(self) -> Response<Full<Bytes>> {
        json(self.status, &self.body())
    }
}

impl From<herald_queue::Error> for ApiError {
    fn from(error: herald_queue::Error) -> Self {
        match error {
            herald_queue::Error::Unavailable(refusal) => ApiError::unavailable(refusal.to_string()),
            other => ApiError::internal(&other),
        }
    }
}

impl From<crate::storage::Error> for ApiError {
    fn from(error: crate::storage::Error) -> Self {
        match error {
            crate::storage::Error::Unavailable(refusal) => ApiError::unavailable(refusal.to_string()),
            other => ApiError::internal(&other),
        }
    }
}

impl From<crate::services::Error> for ApiError {
    fn from(error: crate::services::Error) -> Self {
        use crate::services::Error;
        match error {
            Error::Invalid { name, message } => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, name, message),
            Error::MissingField(field) => ApiError::missing_field(field),
            Error::NotFound(message) => ApiError::not_found(message),
            Error::Forbidden(message) => ApiError::forbidden(message),
            Error::Restricted => ApiError::restricted_api_key(),
            Error::Conflict(message) => ApiError::conflict(message),
            Error::Store(error) => error.into(),
            other => ApiError::internal(&other),
        }
    }
}

/// A JSON response.
pub fn json(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(JSON));
    response
}

/// A plain-text response (Prometheus exposition format).
pub fn text(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
