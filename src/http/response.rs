//! JSON responses and Resend's error body.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};

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
    /// `404 not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::NOT_FOUND,
            name: "not_found",
            message: message.into(),
        }
    }

    /// `405 method_not_allowed`.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::METHOD_NOT_ALLOWED,
            name: "method_not_allowed",
            message: message.into(),
        }
    }

    /// The response carrying this error.
    pub fn into_response(self) -> Response<Full<Bytes>> {
        json(
            self.status,
            &serde_json::json!({
                "statusCode": self.status.as_u16(),
                "name": self.name,
                "message": self.message,
            }),
        )
    }
}

/// A JSON response.
pub fn json(status: StatusCode, body: &serde_json::Value) -> Response<Full<Bytes>> {
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
