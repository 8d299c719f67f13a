//! Previews of an email's HTML, each served at its own URL for a sandboxed `<iframe>` on
//! the email's, broadcast's or template's page. A frame given its HTML inline (`srcdoc`)
//! would inherit the page's policy, which refuses inline styles, so every email would
//! look broken; served apart, the preview has a policy of its own: the email's styles,
//! no scripts (the policy's `sandbox` and the frame's both), images from `data:` only
//! unless remote ones were asked for, framed only by the dashboard.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, HeaderValue, X_FRAME_OPTIONS};
use hyper::{Response, StatusCode};

/// A preview's policy, remote images blocked (a sender can tell when they load).
const CSP_PREVIEW: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; form-action 'none'; base-uri 'none'; frame-ancestors 'self'; sandbox";

/// A preview's policy with remote images shown, as asked.
const CSP_PREVIEW_IMAGES: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data: https: http:; font-src data:; form-action 'none'; base-uri 'none'; frame-ancestors 'self'; sandbox";

/// `html` as a preview frame's document.
pub fn answer(html: String, remote_images: bool) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(html)));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(if remote_images { CSP_PREVIEW_IMAGES } else { CSP_PREVIEW }),
    );
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("SAMEORIGIN"));
    response
}
