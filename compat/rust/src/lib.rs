//! Shared by the resend-rs compatibility tests (`tests/*.rs`): SDK clients configured
//! from the environment as a user would configure them, random names, the few raw
//! requests the SDK cannot make, and assertions on SDK errors and timestamps.
//!
//! The SDK reads `RESEND_BASE_URL` and `RESEND_API_KEY` itself (`Resend::default()`), and
//! `RESEND_RATE_LIMIT` for its client-side rate limiter; scripts/compat sets all three.

use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, Utc};
use reqwest::Method;
use resend_rs::{Error, Resend};
use serde_json::{Value, json};

/// The herald under test, from `RESEND_BASE_URL` (without a trailing slash).
pub fn base_url() -> String {
    std::env::var("RESEND_BASE_URL")
        .expect("RESEND_BASE_URL must be set (run scripts/compat)")
        .trim_end_matches('/')
        .to_owned()
}

/// The suite's operator (bootstrap) key, from `RESEND_API_KEY`.
pub fn api_key() -> String {
    std::env::var("RESEND_API_KEY").expect("RESEND_API_KEY must be set (run scripts/compat)")
}

/// An SDK client made the way the SDK's docs suggest: `Resend::default()`, which reads the
/// key and base URL from the environment. Each test makes its own, because a reqwest
/// client belongs to the tokio runtime it first ran on, and every test has its own.
pub fn client() -> Resend {
    let resend = Resend::default();
    assert_eq!(
        resend.base_url().trim_end_matches('/'),
        base_url(),
        "the SDK took its base URL from RESEND_BASE_URL"
    );
    assert_eq!(resend.api_key(), api_key(), "the SDK took its key from RESEND_API_KEY");
    resend
}

/// An SDK client with another API key (base URL still from the environment).
pub fn client_with_key(key: &str) -> Resend {
    Resend::new(key)
}

/// `bytes` random bytes as lowercase hex.
pub fn random_hex(bytes: usize) -> String {
    (0..bytes).map(|_| format!("{:02x}", rand::random::<u8>())).collect()
}

/// A domain name no other test (Rust, Node or Python) uses.
pub fn unique_domain(label: &str) -> String {
    format!("rs-{label}-{}.compat.herald.test", random_hex(5))
}

/// An address no other test uses, on a domain that does not exist.
pub fn unique_address(label: &str) -> String {
    format!("rs-{label}-{}@compat.herald.test", random_hex(5))
}

/// A name (API key, team) no other test uses.
pub fn unique_name(label: &str) -> String {
    format!("rs-{label}-{}", random_hex(4))
}

/// A raw answer: status and the body parsed as JSON (`Value::Null` when it is not JSON).
#[derive(Debug)]
pub struct RawResponse {
    /// The HTTP status.
    pub status: u16,
    /// The body as JSON.
    pub json: Value,
}

/// A raw request to herald with the suite's key, bypassing the SDK.
pub async fn raw(method: Method, path: &str, body: Option<Value>) -> RawResponse {
    raw_with_key(&api_key(), method, path, body).await
}

/// A raw request to herald with `key`, bypassing the SDK.
pub async fn raw_with_key(key: &str, method: Method, path: &str, body: Option<Value>) -> RawResponse {
    let mut request = reqwest::Client::new()
        .request(method, format!("{}{path}", base_url()))
        .bearer_auth(key)
        .header("User-Agent", "herald-compat")
        .timeout(Duration::from_secs(30));
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("herald answers a raw request");
    let status = response.status().as_u16();
    let text = response.text().await.expect("a raw answer's body is readable");
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    RawResponse { status, json }
}

/// `GET {path}` raw, asserting 200, and its JSON: for fields the SDK's types leave out.
pub async fn raw_get(path: &str) -> Value {
    let response = raw(Method::GET, path, None).await;
    assert_eq!(response.status, 200, "GET {path}: {}", response.json);
    response.json
}

/// Creates a domain raw (`POST /domains`) and returns its id. For tests about something
/// else, so that a fault in the SDK's domain decoding does not hide theirs.
pub async fn create_domain_raw(name: &str) -> String {
    let response = raw(Method::POST, "/domains", Some(json!({ "name": name }))).await;
    assert_eq!(response.status, 201, "POST /domains: {}", response.json);
    response.json["id"]
        .as_str()
        .expect("a created domain has a string id")
        .to_owned()
}

/// Marks a domain verified without DNS: `POST /domains/{id}/verify` with
/// `{"skip_dns": true}`, which only the operator's key (the suite's) may send. The SDK's
/// `domains.verify()` sends no body, so this one goes raw.
pub async fn verify_without_dns(id: &str) {
    let path = format!("/domains/{id}/verify");
    let response = raw(Method::POST, &path, Some(json!({ "skip_dns": true }))).await;
    assert_eq!(response.status, 200, "POST {path}: {}", response.json);
    assert_eq!(response.json, json!({ "object": "domain", "id": id }));
}

/// A new domain, created and verified without DNS (both raw), to send from.
pub async fn sending_domain(label: &str) -> (String, String) {
    let name = unique_domain(label);
    let id = create_domain_raw(&name).await;
    verify_without_dns(&id).await;
    (name, id)
}

/// The first key of a new team of its own (`POST /teams` with the suite's operator key),
/// for raw requests in that team.
pub async fn team_key(label: &str) -> String {
    let response = raw(Method::POST, "/teams", Some(json!({ "name": unique_name(label) }))).await;
    assert_eq!(response.status, 201, "POST /teams: {}", response.json);
    response.json["api_key"]["token"]
        .as_str()
        .expect("a new team comes with its first key's token")
        .to_owned()
}

/// An SDK client for a new team of its own (`POST /teams` with the suite's operator key),
/// so that lists show only what the test itself made.
pub async fn team_client(label: &str) -> Resend {
    client_with_key(&team_key(label).await)
}

/// A new team of its own: its first key (for raw requests) and an SDK client with it.
pub async fn team_key_and_client(label: &str) -> (String, Resend) {
    let key = team_key(label).await;
    let resend = client_with_key(&key);
    (key, resend)
}

/// A random (version 4) UUID, as an id nothing has.
pub fn random_uuid() -> String {
    let hex = random_hex(16);
    format!(
        "{}-{}-4{}-8{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..]
    )
}

/// Asserts an SDK call failed with Resend's error `name` and HTTP `status`, and that the
/// error body decoded into the SDK's `ErrorResponse`.
#[track_caller]
pub fn assert_resend_error<T: std::fmt::Debug>(result: resend_rs::Result<T>, status: u16, name: &str) {
    match result {
        Err(Error::Resend(error)) => {
            assert_eq!(error.status_code, status, "{error:?}");
            assert_eq!(error.name, name, "{error:?}");
            assert!(!error.message.is_empty(), "{error:?}");
        }
        other => panic!("expected a {status} {name} error, got {other:?}"),
    }
}

/// Whether `text` is a lowercase hyphenated UUID, as herald's (and Resend's) ids are.
pub fn is_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)))
}

/// Parses a Resend resource timestamp (`2023-04-03 22:13:42.674981+00`), asserting its
/// format.
#[track_caller]
pub fn parse_timestamp(text: &str) -> DateTime<Utc> {
    let naive = text
        .strip_suffix("+00")
        .and_then(|t| NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f").ok())
        .unwrap_or_else(|| panic!("{text:?} is not a Resend timestamp"));
    naive.and_utc()
}

/// Asserts `text` is a Resend timestamp within a minute of now.
#[track_caller]
pub fn assert_recent(text: &str) {
    let age = Utc::now() - parse_timestamp(text);
    assert!(
        age > chrono::TimeDelta::seconds(-5) && age < chrono::TimeDelta::seconds(60),
        "{text} is not now"
    );
}

/// `offset` from now as RFC 3339 (what `scheduled_at` takes), to the millisecond.
pub fn rfc3339_from_now(offset: Duration) -> (DateTime<Utc>, String) {
    let at = Utc::now() + offset;
    (at, at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// Asserts two instants are within a second of each other.
#[track_caller]
pub fn assert_close(actual: DateTime<Utc>, expected: DateTime<Utc>) {
    let delta = (actual - expected).abs();
    assert!(delta < chrono::TimeDelta::seconds(1), "{actual} is not {expected}");
}

/// Polls `probe` every 200 ms for up to `timeout` until it returns `Some`.
pub async fn eventually<T, F, Fut>(timeout: Duration, mut probe: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = probe().await {
            return Some(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
