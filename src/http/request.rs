//! A request read whole: method, path, query, headers and a size-limited body, with JSON
//! decoding that names the field that is wrong.

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{HeaderMap, Method, Request};
use serde::de::DeserializeOwned;

use super::ApiError;

/// Largest request body accepted, in bytes. An email with 40 MB of attachments is about
/// 54 MB once base64-encoded in JSON; anything larger is refused before parsing.
pub const BODY_MAX: usize = 60 * 1024 * 1024;

/// A request with its body read.
#[derive(Debug)]
pub struct ApiRequest {
    /// The method.
    pub method: Method,
    /// The path, without the query.
    pub path: String,
    /// Decoded query parameters, in order.
    pub query: Vec<(String, String)>,
    /// The query string as sent, for logs.
    pub raw_query: Option<String>,
    /// The headers.
    pub headers: HeaderMap,
    /// The body (for an upload, a JSON summary of its form fields, for the request log).
    pub body: Bytes,
    /// A multipart upload streamed to disk instead of read into `body`.
    pub upload: Option<super::upload::Upload>,
    /// The id its request log will have (API requests), so that what it creates can
    /// point at it.
    pub log_id: Option<herald_queue::Id>,
}

impl ApiRequest {
    /// Reads `request`, refusing bodies over `limit` bytes with `413`.
    pub async fn read(request: Request<Incoming>, limit: usize) -> Result<ApiRequest, ApiError> {
        let (parts, body) = request.into_parts();
        if let Some(length) = parts.headers.get(hyper::header::CONTENT_LENGTH) {
            let declared = length.to_str().ok().and_then(|v| v.parse::<u64>().ok());
            if declared.is_some_and(|n| n > limit as u64) {
                return Err(ApiError::too_large(limit as u64));
            }
        }
        let mut body = Limited::new(body, limit);
        let mut read = bytes::BytesMut::new();
        // A client that stops sending its body is cut off after `IDLE_MAX` without a
        // byte: it must not hold a connection slot for ever.
        loop {
            let frame = tokio::time::timeout(super::upload::IDLE_MAX, body.frame())
                .await
                .map_err(|_| {
                    ApiError::bad_request(format!(
                        "The request body stalled: nothing arrived for {} s",
                        super::upload::IDLE_MAX.as_secs()
                    ))
                })?;
            match frame {
                None => break,
                Some(Err(e)) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
                    return Err(ApiError::too_large(limit as u64));
                }
                Some(Err(e)) => return Err(ApiError::bad_request(format!("Could not read the request body: {e}"))),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        read.extend_from_slice(&data);
                    }
                }
            }
        }
        Ok(ApiRequest::from_parts(parts, read.freeze(), None))
    }

    /// A request of `parts` whose body was read as `body` (or streamed to `upload`).
    pub fn from_parts(
        parts: hyper::http::request::Parts,
        body: Bytes,
        upload: Option<super::upload::Upload>,
    ) -> ApiRequest {
        let query = parts
            .uri
            .query()
            .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default();
        ApiRequest {
            method: parts.method,
            path: parts.uri.path().to_owned(),
            query,
            raw_query: parts.uri.query().map(str::to_owned),
            headers: parts.headers,
            body,
            upload,
            log_id: None,
        }
    }

    /// The first value of query parameter `name`.
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// A header's value, when it is valid text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as any JSON value (an array for batches); empty is `{}`.
    pub fn json_value(&self) -> Result<serde_json::Value, ApiError> {
        let text: &[u8] = if self.body.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &self.body
        };
        serde_json::from_slice(text)
            .map_err(|e| ApiError::bad_request(format!("The request body is not valid JSON: {e}")))
    }

    /// The body decoded as `T`. An empty body (or whitespace) decodes as `{}`, since SDKs
    /// send nothing or `{}` on requests without parameters.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        let text: &[u8] = if self.body.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &self.body
        };
        let value: serde_json::Value = serde_json::from_slice(text)
            .map_err(|e| ApiError::bad_request(format!("The request body is not valid JSON: {e}")))?;
        if !value.is_object() {
            return Err(ApiError::bad_request("The request body must be a JSON object"));
        }
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            ApiError::validation(format!("Invalid `{path}` field: {}", e.into_inner()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: &'static str) -> ApiRequest {
        ApiRequest {
            method: Method::POST,
            path: "/x".into(),
            query: vec![("limit".into(), "5".into())],
            raw_query: Some("limit=5".into()),
            headers: HeaderMap::new(),
            body: Bytes::from_static(body.as_bytes()),
            upload: None,
            log_id: None,
        }
    }

    #[derive(Debug, serde::Deserialize)]
    struct Body {
        name: Option<String>,
        #[serde(default)]
        count: u32,
    }

    #[test]
    fn json_bodies_decode_with_precise_errors() {
        let body: Body = request("").json().expect("empty is {}");
        assert!(body.name.is_none());
        let body: Body = request(r#"{"name":"x","count":3,"unknown":true}"#)
            .json()
            .expect("unknown fields ignored");
        assert_eq!((body.name.as_deref(), body.count), (Some("x"), 3));
        let err = request("{nope").json::<Body>().expect_err("malformed");
        assert_eq!((err.status.as_u16(), err.name), (400, "validation_error"));
        let err = request(r#"{"name": 5}"#).json::<Body>().expect_err("wrong type");
        assert_eq!(err.status.as_u16(), 422);
        assert!(err.message.contains("`name`"), "{}", err.message);
        let err = request("[1,2]").json::<Body>().expect_err("not an object");
        assert_eq!(err.status.as_u16(), 400);
        assert_eq!(request("").query("limit"), Some("5"));
    }
}
