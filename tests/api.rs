//! The REST API core over real HTTP: authentication, errors, API keys, teams, pagination,
//! rate limits and request logs.

mod util;

use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use util::{OPERATOR_KEY, call, call_raw, start_api};

async fn create_key(addr: std::net::SocketAddr, key: &str, body: Value) -> (String, String) {
    let response = call(addr, Method::POST, "/api-keys", Some(key), Some(body)).await;
    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text());
    let body = response.json();
    (
        body["id"].as_str().expect("id").to_owned(),
        body["token"].as_str().expect("token").to_owned(),
    )
}

#[tokio::test]
async fn requests_without_a_valid_key_are_refused_with_resend_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;

    let missing = call(addr, Method::GET, "/domains", None, None).await;
    assert_eq!(missing.status, StatusCode::UNAUTHORIZED);
    assert_eq!(missing.content_type(), "application/json; charset=utf-8");
    assert_eq!(missing.json()["name"], "missing_api_key");
    assert_eq!(missing.json()["statusCode"], 401);
    assert!(
        missing.headers.contains_key("ratelimit-remaining"),
        "RateLimit fields on every response"
    );

    let wrong = call(addr, Method::GET, "/domains", Some("re_not_a_real_key_at_all"), None).await;
    assert_eq!(wrong.status, StatusCode::FORBIDDEN);
    assert_eq!(wrong.json()["name"], "invalid_api_key");

    let unknown_route = call(addr, Method::GET, "/nope", Some(OPERATOR_KEY), None).await;
    assert_eq!(unknown_route.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown_route.json()["name"], "not_found");

    let wrong_method = call(addr, Method::PUT, "/api-keys", Some(OPERATOR_KEY), None).await;
    assert_eq!(wrong_method.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(wrong_method.json()["name"], "method_not_allowed");

    let health = call(addr, Method::GET, "/healthz", None, None).await;
    assert_eq!(health.status, StatusCode::OK, "no key needed for /healthz");
    running.shutdown().await;
}

#[tokio::test]
async fn guessing_keys_is_rate_limited_per_client_address() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "[api]\nrate_limit = \"3/m\"\n").await;
    let addr = running.http_addr;
    let mut statuses = Vec::new();
    for i in 0..5 {
        let guess = format!("re_guess_{i}_0123456789abcdef");
        statuses.push(call(addr, Method::GET, "/domains", Some(&guess), None).await.status);
    }
    assert_eq!(statuses[..3], [StatusCode::FORBIDDEN; 3]);
    assert_eq!(statuses[3..], [StatusCode::TOO_MANY_REQUESTS; 2]);
    let real = call(addr, Method::GET, "/domains", Some(OPERATOR_KEY), None).await;
    assert_eq!(
        real.status,
        StatusCode::OK,
        "a valid key counts against its team, not the address"
    );
    running.shutdown().await;
}

#[tokio::test]
async fn bad_bodies_get_precise_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let key = Some(OPERATOR_KEY);

    let malformed = call_raw(addr, Method::POST, "/api-keys", key, "{\"name\":".into()).await;
    assert_eq!(malformed.status, StatusCode::BAD_REQUEST);
    assert_eq!(malformed.json()["name"], "validation_error");
    assert!(
        malformed.json()["message"]
            .as_str()
            .is_some_and(|m| m.contains("not valid JSON"))
    );

    let wrong_type = call(addr, Method::POST, "/api-keys", key, Some(json!({ "name": 42 }))).await;
    assert_eq!(wrong_type.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        wrong_type.json()["message"]
            .as_str()
            .is_some_and(|m| m.contains("`name`")),
        "{}",
        wrong_type.text()
    );

    let missing = call(addr, Method::POST, "/api-keys", key, Some(json!({}))).await;
    assert_eq!(missing.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(missing.json()["name"], "missing_required_field");
    assert_eq!(missing.json()["message"], "Missing `name` field.");

    let bad_permission = call(
        addr,
        Method::POST,
        "/api-keys",
        key,
        Some(json!({ "name": "x", "permission": "root" })),
    )
    .await;
    assert_eq!(bad_permission.json()["name"], "invalid_access");

    let bad_id = call(addr, Method::DELETE, "/api-keys/not-a-uuid", key, None).await;
    assert_eq!(bad_id.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(bad_id.json()["name"], "invalid_parameter");

    let huge = bytes::Bytes::from(vec![b' '; herald::http::BODY_MAX + 1]);
    let too_large = call_raw(addr, Method::POST, "/api-keys", key, huge).await;
    assert_eq!(too_large.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(too_large.json()["statusCode"], 413);

    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let nested = call_raw(addr, Method::POST, "/api-keys", key, deep.into()).await;
    assert_eq!(
        nested.status,
        StatusCode::BAD_REQUEST,
        "deeply nested JSON is refused, not a crash"
    );

    let still_up = call(addr, Method::GET, "/api-keys", key, None).await;
    assert_eq!(still_up.status, StatusCode::OK);
    running.shutdown().await;
}

#[tokio::test]
async fn api_keys_work_at_once_show_their_token_once_and_die_when_deleted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let (id, token) = create_key(addr, OPERATOR_KEY, json!({ "name": "ci" })).await;
    assert!(token.starts_with("re_") && token.len() >= 35, "{token}");

    let with_new = call(addr, Method::GET, "/api-keys", Some(&token), None).await;
    assert_eq!(with_new.status, StatusCode::OK, "usable the moment it is created");
    let list = with_new.json();
    assert_eq!(list["object"], "list");
    let listed: Vec<&Value> = list["data"].as_array().expect("data").iter().collect();
    assert_eq!(listed.len(), 2, "bootstrap key and the new one");
    assert_eq!(listed[0]["id"], id.as_str(), "newest first");
    assert_eq!(listed[0]["name"], "ci");
    assert!(
        listed
            .iter()
            .all(|k| k.get("token").is_none() && k.get("digest").is_none()),
        "{list}"
    );
    // Use is recorded without making the request wait for it; it shows up shortly.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut poll = tokio::time::interval(std::time::Duration::from_millis(20));
    loop {
        poll.tick().await;
        let list = call(addr, Method::GET, "/api-keys", Some(OPERATOR_KEY), None)
            .await
            .json();
        if list["data"][0]["last_used_at"].is_string() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "last use never recorded: {list}");
    }

    let renamed = call(
        addr,
        Method::PATCH,
        &format!("/api-keys/{id}"),
        Some(OPERATOR_KEY),
        Some(json!({ "name": "ci-2" })),
    )
    .await;
    assert_eq!(renamed.json(), json!({ "object": "api_key", "id": id }));

    let deleted = call(
        addr,
        Method::DELETE,
        &format!("/api-keys/{id}"),
        Some(OPERATOR_KEY),
        Some(json!({})),
    )
    .await;
    assert_eq!(
        deleted.json(),
        json!({ "object": "api_key", "id": id, "deleted": true })
    );
    let dead = call(addr, Method::GET, "/api-keys", Some(&token), None).await;
    assert_eq!(dead.status, StatusCode::FORBIDDEN, "dead the moment it is deleted");
    let again = call(
        addr,
        Method::DELETE,
        &format!("/api-keys/{id}"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    assert_eq!(again.json()["message"], "API key not found");
    running.shutdown().await;
}

#[tokio::test]
async fn sending_keys_may_only_send() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let (_, sending) = create_key(
        addr,
        OPERATOR_KEY,
        json!({ "name": "s", "permission": "sending_access" }),
    )
    .await;
    for (method, path) in [
        (Method::GET, "/domains"),
        (Method::GET, "/api-keys"),
        (Method::POST, "/api-keys"),
        (Method::GET, "/logs"),
    ] {
        let refused = call(addr, method, path, Some(&sending), Some(json!({ "name": "x" }))).await;
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(refused.json()["name"], "restricted_api_key");
    }
    let bound_to_nothing = call(
        addr,
        Method::POST,
        "/api-keys",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "b", "permission": "full_access", "domain_id": "4ef9a417-02e9-4d39-ad75-9611e0fcc33c" })),
    )
    .await;
    assert_eq!(bound_to_nothing.status, StatusCode::UNPROCESSABLE_ENTITY);
    let unknown_domain = call(
        addr,
        Method::POST,
        "/api-keys",
        Some(OPERATOR_KEY),
        Some(
            json!({ "name": "b", "permission": "sending_access", "domain_id": "4ef9a417-02e9-4d39-ad75-9611e0fcc33c" }),
        ),
    )
    .await;
    assert_eq!(unknown_domain.status, StatusCode::NOT_FOUND);
    running.shutdown().await;
}

#[tokio::test]
async fn teams_are_created_by_the_operator_and_see_only_their_own_resources() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let created = call(
        addr,
        Method::POST,
        "/teams",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "Acme" })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let team = created.json();
    assert_eq!(team["object"], "team");
    let acme_key = team["api_key"]["token"].as_str().expect("first key").to_owned();

    let refused = call(
        addr,
        Method::POST,
        "/teams",
        Some(&acme_key),
        Some(json!({ "name": "Rogue" })),
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "only the operator creates teams");

    let domain = call(
        addr,
        Method::POST,
        "/domains",
        Some(&acme_key),
        Some(json!({ "name": "acme.example" })),
    )
    .await;
    assert_eq!(domain.status, StatusCode::CREATED, "{}", domain.text());
    let domain_id = domain.json()["id"].as_str().expect("id").to_owned();
    let (acme_extra_key, _) = create_key(addr, &acme_key, json!({ "name": "acme-2" })).await;

    let operator_domains = call(addr, Method::GET, "/domains", Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(
        operator_domains["data"].as_array().map(Vec::len),
        Some(0),
        "{operator_domains}"
    );
    let hidden = call(
        addr,
        Method::GET,
        &format!("/domains/{domain_id}"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);
    let foreign_delete = call(
        addr,
        Method::DELETE,
        &format!("/api-keys/{acme_extra_key}"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(foreign_delete.status, StatusCode::NOT_FOUND);
    let operator_keys = call(addr, Method::GET, "/api-keys", Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(operator_keys["data"].as_array().map(Vec::len), Some(1));
    let acme_keys = call(addr, Method::GET, "/api-keys", Some(&acme_key), None).await.json();
    assert_eq!(acme_keys["data"].as_array().map(Vec::len), Some(2));
    let same_name = call(
        addr,
        Method::POST,
        "/domains",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "acme.example" })),
    )
    .await;
    assert_eq!(same_name.status, StatusCode::CREATED, "names are per team");

    let teams = call(addr, Method::GET, "/teams", Some(OPERATOR_KEY), None).await.json();
    assert_eq!(teams["data"].as_array().map(Vec::len), Some(2));
    let own = call(
        addr,
        Method::GET,
        &format!("/teams/{}", team["id"].as_str().expect("id")),
        Some(&acme_key),
        None,
    )
    .await;
    assert_eq!(own.status, StatusCode::OK);
    running.shutdown().await;
}

#[tokio::test]
async fn pagination_walks_newest_first_with_after_and_before() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(
            create_key(addr, OPERATOR_KEY, json!({ "name": format!("k{i}") }))
                .await
                .0,
        );
    }
    let names = |page: &Value| -> Vec<String> {
        page["data"]
            .as_array()
            .expect("data")
            .iter()
            .map(|k| k["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let first = call(addr, Method::GET, "/api-keys?limit=2", Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(names(&first), vec!["k4", "k3"]);
    assert_eq!(first["has_more"], true);
    let second = call(
        addr,
        Method::GET,
        &format!("/api-keys?limit=2&after={}", ids[3]),
        Some(OPERATOR_KEY),
        None,
    )
    .await
    .json();
    assert_eq!(names(&second), vec!["k2", "k1"]);
    assert_eq!(second["has_more"], true);
    let last = call(
        addr,
        Method::GET,
        &format!("/api-keys?limit=2&after={}", ids[1]),
        Some(OPERATOR_KEY),
        None,
    )
    .await
    .json();
    assert_eq!(names(&last), vec!["k0", "Bootstrap"]);
    assert_eq!(last["has_more"], false);
    let back = call(
        addr,
        Method::GET,
        &format!("/api-keys?limit=2&before={}", ids[1]),
        Some(OPERATOR_KEY),
        None,
    )
    .await
    .json();
    assert_eq!(names(&back), vec!["k3", "k2"]);
    assert_eq!(back["has_more"], true);
    let everything = call(addr, Method::GET, "/api-keys", Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(
        names(&everything).len(),
        6,
        "older lists return everything without a limit"
    );

    for bad in [
        "limit=0",
        "limit=101",
        "limit=x",
        &format!("after={}&before={}", ids[0], ids[1]),
        "after=nope",
    ] {
        let refused = call(addr, Method::GET, &format!("/api-keys?{bad}"), Some(OPERATOR_KEY), None).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        assert_eq!(refused.json()["name"], "validation_error");
    }
    running.shutdown().await;
}

#[tokio::test]
async fn rate_limits_are_exact_under_concurrency_and_reported_in_headers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "[api]\nrate_limit = \"5/m\"\n").await;
    let addr = running.http_addr;
    let mut tasks = Vec::new();
    for _ in 0..20 {
        tasks.push(tokio::spawn(async move {
            call(addr, Method::GET, "/api-keys", Some(OPERATOR_KEY), None).await
        }));
    }
    let mut ok = 0;
    let mut limited = 0;
    for task in tasks {
        let response = task.await.expect("task");
        assert_eq!(response.headers["ratelimit-limit"], "5");
        assert_eq!(response.headers["ratelimit-policy"], "5;w=60");
        assert!(response.headers.contains_key("ratelimit-remaining"));
        assert!(response.headers.contains_key("ratelimit-reset"));
        match response.status {
            StatusCode::OK => ok += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                limited += 1;
                assert_eq!(response.json()["name"], "rate_limit_exceeded");
                assert_eq!(response.headers["ratelimit-remaining"], "0");
                let retry: u64 = response.headers["retry-after"]
                    .to_str()
                    .expect("text")
                    .parse()
                    .expect("seconds");
                assert!((1..=12).contains(&retry), "retry-after {retry}");
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!((ok, limited), (5, 15), "exactly the burst passes");

    running.shutdown().await;
}

#[tokio::test]
async fn a_team_with_its_own_rate_limit_is_counted_apart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "[api]\nrate_limit = \"2/m\"\n").await;
    let addr = running.http_addr;
    let created = call(
        addr,
        Method::POST,
        "/teams",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "Big", "rate_limit": "100/s" })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    assert_eq!(created.json()["rate_limit"], "100/s");
    let key = created.json()["api_key"]["token"].as_str().expect("token").to_owned();
    for _ in 0..10 {
        let response = call(addr, Method::GET, "/domains", Some(&key), None).await;
        assert_eq!(response.status, StatusCode::OK);
        assert_eq!(response.headers["ratelimit-limit"], "100");
    }
    let bad = call(
        addr,
        Method::POST,
        "/teams",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "X", "rate_limit": "lots" })),
    )
    .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    let limited = call(addr, Method::GET, "/teams", Some(OPERATOR_KEY), None).await;
    assert_eq!(
        limited.status,
        StatusCode::TOO_MANY_REQUESTS,
        "the operator's 2/m is spent"
    );
    running.shutdown().await;
}

#[tokio::test]
async fn every_request_is_logged_with_secrets_redacted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let (_, token) = create_key(addr, OPERATOR_KEY, json!({ "name": "logged" })).await;
    let _ = call(
        addr,
        Method::GET,
        "/domains/4ef9a417-02e9-4d39-ad75-9611e0fcc33c",
        Some(OPERATOR_KEY),
        None,
    )
    .await;

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut poll = tokio::time::interval(std::time::Duration::from_millis(20));
    let logs = loop {
        poll.tick().await;
        let logs = call(addr, Method::GET, "/logs?limit=100", Some(OPERATOR_KEY), None)
            .await
            .json();
        let has = |status: u16| {
            logs["data"]
                .as_array()
                .is_some_and(|d| d.iter().any(|l| l["response_status"] == status))
        };
        if has(404) && has(201) {
            break logs;
        }
        assert!(std::time::Instant::now() < deadline, "logs were not written: {logs}");
    };
    let entries = logs["data"].as_array().expect("data");
    let not_found = entries
        .iter()
        .find(|l| l["response_status"] == 404)
        .expect("the 404 is logged");
    assert_eq!(not_found["method"], "GET");
    assert!(
        not_found["endpoint"]
            .as_str()
            .is_some_and(|p| p.starts_with("/domains/"))
    );
    assert_eq!(not_found["user_agent"], "herald-tests/1.0");
    let created = entries
        .iter()
        .find(|l| l["response_status"] == 201)
        .expect("the creation is logged");
    let id = created["id"].as_str().expect("id");
    let full = call(addr, Method::GET, &format!("/logs/{id}"), Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(full["object"], "log");
    // Bodies come back as the JSON objects they were (Resend's shape; the Java SDK
    // decodes them into maps), with secrets redacted.
    let response_body = &full["response_body"];
    assert!(response_body.is_object(), "{full}");
    assert!(
        !response_body.to_string().contains(&token),
        "the token never reaches the logs: {response_body}"
    );
    assert_eq!(response_body["token"], "<redacted>");
    assert!(full["request_body"].is_object(), "{full}");
    assert!(full["request_body"].to_string().contains("logged"));
    running.shutdown().await;
}

#[tokio::test]
async fn resend_features_herald_lacks_answer_precisely_instead_of_being_taken_for_ids() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    // `/emails/{id}` would answer 422 "invalid id" for these, `/domains/{id}` 405.
    for (method, path, says) in [
        (Method::GET, "/emails/receiving", "does not receive mail"),
        (
            Method::GET,
            "/emails/receiving/4ef9a417-02e9-4d39-ad75-9611e0fcc33c",
            "does not receive mail",
        ),
        (Method::POST, "/domains/claim", "claims are not supported"),
    ] {
        let response = call(addr, method.clone(), path, Some(OPERATOR_KEY), Some(json!({}))).await;
        assert_eq!(
            response.status,
            StatusCode::NOT_FOUND,
            "{method} {path}: {}",
            response.text()
        );
        let body = response.json();
        assert_eq!(body["name"], "not_found", "{path}");
        assert!(
            body["message"].as_str().is_some_and(|m| m.contains(says)),
            "{path}: {body}"
        );
    }
    for events in [json!(["email.sent", "email.received"]), json!(["inbox.email.received"])] {
        let response = call(
            addr,
            Method::POST,
            "/webhooks",
            Some(OPERATOR_KEY),
            Some(json!({ "endpoint": "https://hooks.example.com/h", "events": events })),
        )
        .await;
        assert_eq!(response.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", response.text());
        assert!(
            response.json()["message"]
                .as_str()
                .is_some_and(|m| m.contains("herald does not receive mail")),
            "{}",
            response.text()
        );
    }
    running.shutdown().await;
}
