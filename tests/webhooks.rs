//! The webhooks API over real HTTP: create (with its signing secret), read, list with
//! pagination, update, delete, validation errors, the private-address policy for
//! endpoints, the per-team limit, and team and permission boundaries.

mod util;

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use herald::config::Config;
use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use util::{HttpResponse, OPERATOR_KEY, call, start_api};

async fn create(addr: SocketAddr, key: &str, body: Value) -> HttpResponse {
    call(addr, Method::POST, "/webhooks", Some(key), Some(body)).await
}

/// Creates a webhook for the operator's team; its id.
async fn create_ok(addr: SocketAddr, endpoint: &str, events: &[&str]) -> String {
    let created = create(addr, OPERATOR_KEY, json!({ "endpoint": endpoint, "events": events })).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    created.json()["id"].as_str().expect("id").to_owned()
}

async fn get(addr: SocketAddr, key: &str, id: &str) -> HttpResponse {
    call(addr, Method::GET, &format!("/webhooks/{id}"), Some(key), None).await
}

async fn patch(addr: SocketAddr, key: &str, id: &str, body: Value) -> HttpResponse {
    call(addr, Method::PATCH, &format!("/webhooks/{id}"), Some(key), Some(body)).await
}

async fn list(addr: SocketAddr, query: &str) -> Value {
    let listed = call(
        addr,
        Method::GET,
        &format!("/webhooks{query}"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text());
    listed.json()
}

fn endpoints(page: &Value) -> Vec<&str> {
    page["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|entry| entry["endpoint"].as_str().expect("endpoint"))
        .collect()
}

fn assert_error(response: &HttpResponse, status: StatusCode, name: &str) -> String {
    assert_eq!(response.status, status, "{}", response.text());
    let body = response.json();
    assert_eq!(body["name"], name, "{body}");
    assert_eq!(body["statusCode"], status.as_u16());
    let message = body["message"].as_str().expect("message");
    assert!(!message.is_empty(), "{body}");
    message.to_owned()
}

/// The test config with `[webhooks] allow_private_endpoints = false`: the helpers turn it
/// on for every other test, since their receivers listen on loopback.
fn strict_config(dir: &Path) -> Config {
    let text = util::config_text(dir, "[api]\nrate_limit = \"1000/s\"\n");
    let strict = text.replace("allow_private_endpoints = true", "allow_private_endpoints = false");
    assert_ne!(strict, text, "the test config names allow_private_endpoints");
    Config::from_toml(&strict, None).expect("valid config")
}

#[tokio::test]
async fn create_answers_the_signing_secret_and_get_shows_the_webhook() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;

    let body = json!({
        "endpoint": " https://hooks.example.com/resend?source=herald ",
        "events": ["email.sent", "email.bounced", "email.sent", "domain.created"],
    });
    let created = create(addr, OPERATOR_KEY, body).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    assert_eq!(created.content_type(), "application/json; charset=utf-8");
    let created = created.json();
    let id = created["id"].as_str().expect("id").to_owned();
    let secret = created["signing_secret"].as_str().expect("secret").to_owned();
    assert_eq!(
        created,
        json!({ "object": "webhook", "id": id, "signing_secret": secret })
    );
    let key = STANDARD
        .decode(secret.strip_prefix("whsec_").expect("whsec_ prefix"))
        .expect("base64 after the prefix");
    assert_eq!(key.len(), 32);

    let fetched = get(addr, OPERATOR_KEY, &id).await;
    assert_eq!(fetched.status, StatusCode::OK, "{}", fetched.text());
    let webhook = fetched.json();
    assert_eq!(webhook["object"], "webhook");
    assert_eq!(webhook["id"], id);
    assert_eq!(webhook["endpoint"], "https://hooks.example.com/resend?source=herald");
    assert_eq!(
        webhook["events"],
        json!(["email.sent", "email.bounced", "domain.created"]),
        "repeats dropped, order kept"
    );
    assert_eq!(webhook["status"], "enabled");
    assert_eq!(webhook["signing_secret"], secret);
    let created_at = webhook["created_at"].as_str().expect("created_at");
    assert!(created_at.ends_with("+00") && created_at.contains(' '), "{created_at}");

    let other = create_ok(addr, "https://hooks.example.com/other", &["email.sent"]).await;
    let other_secret = get(addr, OPERATOR_KEY, &other).await.json()["signing_secret"].clone();
    assert_ne!(other_secret, json!(secret), "each webhook has its own secret");
    running.shutdown().await;
}

#[tokio::test]
async fn the_signing_secret_never_reaches_the_request_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let id = create_ok(addr, "https://hooks.example.com/logged", &["email.sent"]).await;
    let secret = get(addr, OPERATOR_KEY, &id).await.json()["signing_secret"]
        .as_str()
        .expect("secret")
        .to_owned();

    let deadline = Instant::now() + Duration::from_secs(10);
    let logged = loop {
        let logs = call(addr, Method::GET, "/logs?limit=100", Some(OPERATOR_KEY), None)
            .await
            .json();
        let entries = logs["data"].as_array().expect("data").clone();
        let webhook_logs: Vec<Value> = entries
            .into_iter()
            .filter(|log| log["endpoint"].as_str().is_some_and(|p| p.starts_with("/webhooks")))
            .collect();
        if webhook_logs.len() == 2 {
            break webhook_logs;
        }
        assert!(Instant::now() < deadline, "logs were not written: {logs}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    for log in logged {
        let path = format!("/logs/{}", log["id"].as_str().expect("id"));
        let full = call(addr, Method::GET, &path, Some(OPERATOR_KEY), None).await;
        let text = full.text();
        assert!(!text.contains(&secret), "the secret is logged: {text}");
        let response_body = full.json()["response_body"].clone();
        assert!(response_body.is_object(), "{response_body}");
        assert!(response_body.to_string().contains("<redacted>"), "{response_body}");
    }
    running.shutdown().await;
}

#[tokio::test]
async fn list_pages_newest_first_with_after_and_before() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let empty = list(addr, "").await;
    assert_eq!(empty, json!({ "object": "list", "has_more": false, "data": [] }));
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(create_ok(addr, &format!("https://hooks.example.com/{n}"), &["email.sent"]).await);
    }

    let all = list(addr, "").await;
    assert_eq!(all["object"], "list");
    assert_eq!(all["has_more"], false);
    assert_eq!(
        endpoints(&all),
        [
            "https://hooks.example.com/4",
            "https://hooks.example.com/3",
            "https://hooks.example.com/2",
            "https://hooks.example.com/1",
            "https://hooks.example.com/0"
        ]
    );
    let entry = &all["data"][0];
    assert_eq!(entry["id"], ids[4]);
    let mut fields: Vec<&str> = entry.as_object().expect("object").keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        ["created_at", "endpoint", "events", "id", "status"],
        "list entries carry no `object` and no secret"
    );

    let first = list(addr, "?limit=2").await;
    assert_eq!(
        endpoints(&first),
        ["https://hooks.example.com/4", "https://hooks.example.com/3"]
    );
    assert_eq!(first["has_more"], true);
    let second = list(addr, &format!("?limit=2&after={}", ids[3])).await;
    assert_eq!(
        endpoints(&second),
        ["https://hooks.example.com/2", "https://hooks.example.com/1"]
    );
    assert_eq!(second["has_more"], true);
    let last = list(addr, &format!("?limit=2&after={}", ids[1])).await;
    assert_eq!(endpoints(&last), ["https://hooks.example.com/0"]);
    assert_eq!(last["has_more"], false);
    let back = list(addr, &format!("?limit=2&before={}", ids[1])).await;
    assert_eq!(
        endpoints(&back),
        ["https://hooks.example.com/3", "https://hooks.example.com/2"]
    );
    assert_eq!(back["has_more"], true, "the newest is newer still");

    for query in ["?limit=0", "?limit=101", "?after=nope", "?after=a&before=b"] {
        let path = format!("/webhooks{query}");
        let refused = call(addr, Method::GET, &path, Some(OPERATOR_KEY), None).await;
        assert_error(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation_error");
    }
    running.shutdown().await;
}

#[tokio::test]
async fn patch_changes_only_the_fields_given() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let id = create_ok(addr, "https://hooks.example.com/a", &["email.sent"]).await;
    let before = get(addr, OPERATOR_KEY, &id).await.json();

    let updated = patch(addr, OPERATOR_KEY, &id, json!({ "status": "disabled" })).await;
    assert_eq!(updated.status, StatusCode::OK, "{}", updated.text());
    assert_eq!(updated.json(), json!({ "object": "webhook", "id": id }));
    let after = get(addr, OPERATOR_KEY, &id).await.json();
    assert_eq!(after["status"], "disabled");
    assert_eq!(after["endpoint"], before["endpoint"]);
    assert_eq!(after["events"], before["events"]);

    // The Python SDK sends the id in the body too; unknown fields are ignored.
    let body = json!({
        "webhook_id": id,
        "endpoint": "http://hooks.example.com:8080/b",
        "events": ["email.delivered", "email.opened"],
        "status": "enabled",
    });
    let updated = patch(addr, OPERATOR_KEY, &id, body).await;
    assert_eq!(updated.status, StatusCode::OK, "{}", updated.text());
    let after = get(addr, OPERATOR_KEY, &id).await.json();
    assert_eq!(after["endpoint"], "http://hooks.example.com:8080/b");
    assert_eq!(after["events"], json!(["email.delivered", "email.opened"]));
    assert_eq!(after["status"], "enabled");
    assert_eq!(after["signing_secret"], before["signing_secret"], "the secret stays");
    assert_eq!(after["created_at"], before["created_at"]);

    let empty = patch(addr, OPERATOR_KEY, &id, json!({})).await;
    assert_eq!(empty.status, StatusCode::OK, "{}", empty.text());
    assert_eq!(get(addr, OPERATOR_KEY, &id).await.json(), after);

    for (body, name, mentions) in [
        (json!({ "status": "paused" }), "validation_error", "status"),
        (json!({ "events": [] }), "validation_error", "events"),
        (json!({ "events": ["email.nope"] }), "validation_error", "email.nope"),
        (
            json!({ "endpoint": "ftp://hooks.example.com/" }),
            "validation_error",
            "endpoint",
        ),
        (json!({ "endpoint": "" }), "missing_required_field", "endpoint"),
    ] {
        let refused = patch(addr, OPERATOR_KEY, &id, body.clone()).await;
        let message = assert_error(&refused, StatusCode::UNPROCESSABLE_ENTITY, name);
        assert!(message.contains(mentions), "{body}: {message}");
    }
    assert_eq!(
        get(addr, OPERATOR_KEY, &id).await.json(),
        after,
        "refused updates change nothing"
    );

    let missing = patch(addr, OPERATOR_KEY, "4ef9a417-02e9-4d39-ad75-9611e0fcc33c", json!({})).await;
    assert_error(&missing, StatusCode::NOT_FOUND, "not_found");
    running.shutdown().await;
}

#[tokio::test]
async fn delete_answers_deleted_then_not_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let id = create_ok(addr, "https://hooks.example.com/gone", &["email.sent"]).await;
    let kept = create_ok(addr, "https://hooks.example.com/kept", &["email.sent"]).await;
    let path = format!("/webhooks/{id}");

    let deleted = call(addr, Method::DELETE, &path, Some(OPERATOR_KEY), None).await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text());
    assert_eq!(
        deleted.json(),
        json!({ "object": "webhook", "id": id, "deleted": true })
    );
    assert_error(&get(addr, OPERATOR_KEY, &id).await, StatusCode::NOT_FOUND, "not_found");
    let again = call(addr, Method::DELETE, &path, Some(OPERATOR_KEY), None).await;
    assert_error(&again, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(endpoints(&list(addr, "").await), ["https://hooks.example.com/kept"]);
    assert_eq!(get(addr, OPERATOR_KEY, &kept).await.status, StatusCode::OK);

    for method in [Method::GET, Method::PATCH, Method::DELETE] {
        let refused = call(addr, method, "/webhooks/nope", Some(OPERATOR_KEY), Some(json!({}))).await;
        let message = assert_error(&refused, StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter");
        assert!(message.contains("webhook id"), "{message}");
    }
    let refused = call(addr, Method::PUT, &path, Some(OPERATOR_KEY), None).await;
    assert_error(&refused, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
    let refused = call(addr, Method::DELETE, "/webhooks", Some(OPERATOR_KEY), None).await;
    assert_error(&refused, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
    running.shutdown().await;
}

#[tokio::test]
async fn bad_bodies_are_refused_with_precise_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let long = format!("https://hooks.example.com/{}", "a".repeat(2048));
    let cases = [
        (
            json!({ "events": ["email.sent"] }),
            "missing_required_field",
            "`endpoint`",
        ),
        (
            json!({ "endpoint": "  ", "events": ["email.sent"] }),
            "missing_required_field",
            "`endpoint`",
        ),
        (
            json!({ "endpoint": "https://hooks.example.com/" }),
            "missing_required_field",
            "`events`",
        ),
        (
            json!({ "endpoint": "https://hooks.example.com/", "events": [] }),
            "validation_error",
            "at least one",
        ),
        (
            json!({ "endpoint": "https://hooks.example.com/", "events": ["email.sent", "email.exploded"] }),
            "validation_error",
            "\"email.exploded\" is not an event type",
        ),
        (
            json!({ "endpoint": "https://hooks.example.com/", "events": ["email.sent", "email.received"] }),
            "validation_error",
            "herald does not receive mail",
        ),
        (
            json!({ "endpoint": "https://hooks.example.com/", "events": "email.sent" }),
            "validation_error",
            "`events`",
        ),
        (
            json!({ "endpoint": "https://hooks.example.com/", "events": [5] }),
            "validation_error",
            "`events[0]`",
        ),
        (
            json!({ "endpoint": 5, "events": ["email.sent"] }),
            "validation_error",
            "`endpoint`",
        ),
        (
            json!({ "endpoint": "ftp://hooks.example.com/", "events": ["email.sent"] }),
            "validation_error",
            "http://",
        ),
        (
            json!({ "endpoint": "hooks.example.com/x", "events": ["email.sent"] }),
            "validation_error",
            "absolute",
        ),
        (
            json!({ "endpoint": "/x", "events": ["email.sent"] }),
            "validation_error",
            "absolute",
        ),
        (
            json!({ "endpoint": "https://user:pw@hooks.example.com/", "events": ["email.sent"] }),
            "validation_error",
            "user info",
        ),
        (
            json!({ "endpoint": "https://hooks example.com/", "events": ["email.sent"] }),
            "validation_error",
            "valid",
        ),
        (
            json!({ "endpoint": long, "events": ["email.sent"] }),
            "validation_error",
            "2048",
        ),
    ];
    for (body, name, mentions) in cases {
        let refused = create(addr, OPERATOR_KEY, body.clone()).await;
        let message = assert_error(&refused, StatusCode::UNPROCESSABLE_ENTITY, name);
        assert!(message.contains(mentions), "{body}: {message}");
    }
    let not_json = util::call_raw(
        addr,
        Method::POST,
        "/webhooks",
        Some(OPERATOR_KEY),
        bytes::Bytes::from_static(b"{nope"),
    )
    .await;
    assert_error(&not_json, StatusCode::BAD_REQUEST, "validation_error");
    assert!(endpoints(&list(addr, "").await).is_empty(), "nothing was created");
    running.shutdown().await;
}

#[tokio::test]
async fn private_endpoints_are_refused_unless_allowed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_with_key(strict_config(dir.path()), Some(OPERATOR_KEY)).await;
    let addr = running.http_addr;
    for endpoint in [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "https://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.7/hook",
        "http://192.168.1.1/hook",
        "http://0.0.0.0/hook",
    ] {
        let refused = create(
            addr,
            OPERATOR_KEY,
            json!({ "endpoint": endpoint, "events": ["email.sent"] }),
        )
        .await;
        let message = assert_error(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation_error");
        assert!(message.contains("refused"), "{endpoint}: {message}");
        assert!(message.contains("allow_private_endpoints"), "{endpoint}: {message}");
    }
    // A public address literal needs no DNS, so the test does not depend on a resolver.
    let id = create_ok(addr, "https://93.184.216.34/hook", &["email.sent"]).await;
    let refused = patch(addr, OPERATOR_KEY, &id, json!({ "endpoint": "http://127.0.0.1/hook" })).await;
    assert_error(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation_error");
    assert_eq!(
        get(addr, OPERATOR_KEY, &id).await.json()["endpoint"],
        "https://93.184.216.34/hook"
    );
    assert_eq!(endpoints(&list(addr, "").await).len(), 1);
    running.shutdown().await;

    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    create_ok(running.http_addr, "http://127.0.0.1:8080/hook", &["email.sent"]).await;
    create_ok(running.http_addr, "http://localhost/hook", &["email.sent"]).await;
    running.shutdown().await;
}

#[tokio::test]
async fn a_team_has_a_bounded_number_of_webhooks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let mut ids = Vec::new();
    for n in 0..herald::webhooks::WEBHOOKS_PER_TEAM_MAX {
        ids.push(create_ok(addr, &format!("https://hooks.example.com/{n}"), &["email.sent"]).await);
    }
    let body = json!({ "endpoint": "https://hooks.example.com/more", "events": ["email.sent"] });
    let refused = create(addr, OPERATOR_KEY, body.clone()).await;
    let message = assert_error(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation_error");
    assert!(
        message.contains(&format!("at most {}", herald::webhooks::WEBHOOKS_PER_TEAM_MAX)),
        "{message}"
    );
    let path = format!("/webhooks/{}", ids[0]);
    let deleted = call(addr, Method::DELETE, &path, Some(OPERATOR_KEY), None).await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text());
    let created = create(addr, OPERATOR_KEY, body).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    running.shutdown().await;
}

#[tokio::test]
async fn teams_see_only_their_own_webhooks_and_sending_keys_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let team = call(
        addr,
        Method::POST,
        "/teams",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "Acme" })),
    )
    .await;
    assert_eq!(team.status, StatusCode::CREATED, "{}", team.text());
    let acme = team.json()["api_key"]["token"].as_str().expect("token").to_owned();
    let operator_id = create_ok(addr, "https://hooks.example.com/operator", &["email.sent"]).await;

    assert_error(
        &get(addr, &acme, &operator_id).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    let refused = patch(addr, &acme, &operator_id, json!({ "status": "disabled" })).await;
    assert_error(&refused, StatusCode::NOT_FOUND, "not_found");
    let path = format!("/webhooks/{operator_id}");
    let refused = call(addr, Method::DELETE, &path, Some(&acme), None).await;
    assert_error(&refused, StatusCode::NOT_FOUND, "not_found");
    let acme_list = call(addr, Method::GET, "/webhooks", Some(&acme), None).await;
    assert_eq!(acme_list.json()["data"], json!([]));
    let acme_created = create(
        addr,
        &acme,
        json!({ "endpoint": "https://hooks.example.com/acme", "events": ["domain.created"] }),
    )
    .await;
    assert_eq!(acme_created.status, StatusCode::CREATED, "{}", acme_created.text());
    assert_eq!(endpoints(&list(addr, "").await), ["https://hooks.example.com/operator"]);
    let operator = get(addr, OPERATOR_KEY, &operator_id).await.json();
    assert_eq!(operator["status"], "enabled", "the other team's patch changed nothing");

    let created = call(
        addr,
        Method::POST,
        "/api-keys",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "s", "permission": "sending_access" })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let sending = created.json()["token"].as_str().expect("token").to_owned();
    let body = Some(json!({ "endpoint": "https://hooks.example.com/s", "events": ["email.sent"] }));
    for (method, path) in [
        (Method::POST, "/webhooks".to_owned()),
        (Method::GET, "/webhooks".to_owned()),
        (Method::GET, path.clone()),
        (Method::PATCH, path.clone()),
        (Method::DELETE, path.clone()),
    ] {
        let refused = call(addr, method, &path, Some(&sending), body.clone()).await;
        assert_error(&refused, StatusCode::UNAUTHORIZED, "restricted_api_key");
    }
    assert_eq!(get(addr, OPERATOR_KEY, &operator_id).await.status, StatusCode::OK);
    running.shutdown().await;
}
