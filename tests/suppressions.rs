//! The suppressions API over real HTTP: add (and add again), read and remove by id and by
//! percent-encoded address, list with pagination and the origin filter, the batch forms,
//! validation errors, and team and permission boundaries.

mod util;

use std::net::SocketAddr;

use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use util::{HttpResponse, OPERATOR_KEY, call, start_api};

async fn add(addr: SocketAddr, key: &str, email: &str) -> HttpResponse {
    call(
        addr,
        Method::POST,
        "/suppressions",
        Some(key),
        Some(json!({ "email": email })),
    )
    .await
}

async fn add_ok(addr: SocketAddr, email: &str) -> String {
    let added = add(addr, OPERATOR_KEY, email).await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.text());
    added.json()["id"].as_str().expect("id").to_owned()
}

async fn get(addr: SocketAddr, key: &str, target: &str) -> HttpResponse {
    call(addr, Method::GET, &format!("/suppressions/{target}"), Some(key), None).await
}

async fn list(addr: SocketAddr, query: &str) -> Value {
    let listed = call(
        addr,
        Method::GET,
        &format!("/suppressions{query}"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text());
    listed.json()
}

fn emails(page: &Value) -> Vec<&str> {
    page["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|entry| entry["email"].as_str().expect("email"))
        .collect()
}

fn assert_error(response: &HttpResponse, status: StatusCode, name: &str) {
    assert_eq!(response.status, status, "{}", response.text());
    let body = response.json();
    assert_eq!(body["name"], name, "{body}");
    assert_eq!(body["statusCode"], status.as_u16());
    assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
}

#[tokio::test]
async fn an_address_is_added_once_and_read_by_id_or_encoded_address() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;

    let added = add(addr, OPERATOR_KEY, "Bob+News@Example.COM").await;
    assert_eq!(
        added.status,
        StatusCode::CREATED,
        "Resend answers 201: {}",
        added.text()
    );
    assert_eq!(added.content_type(), "application/json; charset=utf-8");
    let body = added.json();
    assert_eq!(body["object"], "suppression");
    let id = body["id"].as_str().expect("id").to_owned();
    assert_eq!(body, json!({ "object": "suppression", "id": id }));

    let again = add(addr, OPERATOR_KEY, " bob+news@example.com ").await;
    assert_eq!(again.status, StatusCode::CREATED, "{}", again.text());
    assert_eq!(again.json()["id"], id, "the same address keeps its entry");
    assert_eq!(emails(&list(addr, "").await), ["bob+news@example.com"], "no duplicate");

    let by_id = get(addr, OPERATOR_KEY, &id).await;
    assert_eq!(by_id.status, StatusCode::OK, "{}", by_id.text());
    let entry = by_id.json();
    assert_eq!(entry["object"], "suppression");
    assert_eq!(entry["id"], id);
    assert_eq!(entry["email"], "bob+news@example.com");
    assert_eq!(entry["origin"], "manual");
    assert_eq!(entry["source_id"], Value::Null);
    let created_at = entry["created_at"].as_str().expect("created_at");
    assert!(created_at.ends_with("+00") && created_at.contains(' '), "{created_at}");

    for spelling in [
        "bob%2Bnews%40example.com",
        "BOB%2BNEWS%40EXAMPLE.COM",
        "bob+news@example.com",
    ] {
        let by_address = get(addr, OPERATOR_KEY, spelling).await;
        assert_eq!(by_address.status, StatusCode::OK, "{spelling}: {}", by_address.text());
        assert_eq!(by_address.json(), entry, "{spelling}");
    }
    running.shutdown().await;
}

#[tokio::test]
async fn delete_by_id_or_encoded_address_then_not_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let by_id = add_ok(addr, "one@example.com").await;
    let by_address = add_ok(addr, "two@example.com").await;

    for (target, id) in [(by_id.as_str(), &by_id), ("two%40example.com", &by_address)] {
        let path = format!("/suppressions/{target}");
        let deleted = call(addr, Method::DELETE, &path, Some(OPERATOR_KEY), None).await;
        assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text());
        assert_eq!(
            deleted.json(),
            json!({ "object": "suppression", "id": id, "deleted": true })
        );
        let again = call(addr, Method::DELETE, &path, Some(OPERATOR_KEY), None).await;
        assert_error(&again, StatusCode::NOT_FOUND, "not_found");
        assert_error(
            &get(addr, OPERATOR_KEY, target).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
    }
    assert!(emails(&list(addr, "").await).is_empty());

    let readded = add_ok(addr, "one@example.com").await;
    assert_ne!(readded, by_id, "an address added after removal is a new entry");
    assert_error(
        &get(addr, OPERATOR_KEY, &by_id).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    running.shutdown().await;
}

#[tokio::test]
async fn list_pages_newest_first_with_after_and_before() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(add_ok(addr, &format!("user{n}@example.com")).await);
    }

    let all = list(addr, "").await;
    assert_eq!(all["object"], "list");
    assert_eq!(all["has_more"], false);
    assert_eq!(
        emails(&all),
        [
            "user4@example.com",
            "user3@example.com",
            "user2@example.com",
            "user1@example.com",
            "user0@example.com"
        ]
    );
    let entry = &all["data"][0];
    assert_eq!(entry["id"], ids[4]);
    assert_eq!(entry["origin"], "manual");
    assert!(entry.get("object").is_none(), "list entries carry no `object`: {entry}");

    let first = list(addr, "?limit=2").await;
    assert_eq!(emails(&first), ["user4@example.com", "user3@example.com"]);
    assert_eq!(first["has_more"], true);
    let second = list(addr, &format!("?limit=2&after={}", ids[3])).await;
    assert_eq!(emails(&second), ["user2@example.com", "user1@example.com"]);
    assert_eq!(second["has_more"], true);
    let last = list(addr, &format!("?limit=2&after={}", ids[1])).await;
    assert_eq!(emails(&last), ["user0@example.com"]);
    assert_eq!(last["has_more"], false);
    let back = list(addr, &format!("?limit=2&before={}", ids[1])).await;
    assert_eq!(emails(&back), ["user3@example.com", "user2@example.com"]);
    assert_eq!(back["has_more"], true, "user4 is newer still");

    assert_eq!(emails(&list(addr, "?origin=manual&limit=3").await).len(), 3);
    assert!(emails(&list(addr, "?origin=bounce").await).is_empty());

    for query in ["?limit=0", "?limit=101", "?after=nope", "?origin=spam"] {
        let refused = call(
            addr,
            Method::GET,
            &format!("/suppressions{query}"),
            Some(OPERATOR_KEY),
            None,
        )
        .await;
        assert_error(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation_error");
    }
    running.shutdown().await;
}

#[tokio::test]
async fn bad_addresses_and_targets_are_refused_clearly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    for body in [json!({}), json!({ "email": "" }), json!({ "email": "   " })] {
        let refused = call(addr, Method::POST, "/suppressions", Some(OPERATOR_KEY), Some(body)).await;
        assert_error(&refused, StatusCode::UNPROCESSABLE_ENTITY, "missing_required_field");
        assert_eq!(refused.json()["message"], "Missing `email` field.");
    }
    for bad in [
        "nope",
        "a@",
        "@b.test",
        "a b@c.test",
        "a@localhost",
        "Bob <bob@example.com>",
    ] {
        let refused = add(addr, OPERATOR_KEY, bad).await;
        assert_error(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation_error");
        let message = refused.json()["message"].as_str().expect("message").to_owned();
        assert!(message.contains("`email`"), "{bad}: {message}");
    }
    let wrong_type = call(
        addr,
        Method::POST,
        "/suppressions",
        Some(OPERATOR_KEY),
        Some(json!({ "email": 5 })),
    )
    .await;
    assert_error(&wrong_type, StatusCode::UNPROCESSABLE_ENTITY, "validation_error");

    assert_error(
        &get(addr, OPERATOR_KEY, "not-an-id").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    );
    assert_error(
        &get(addr, OPERATOR_KEY, "bob%zzexample.com").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    );
    assert_error(
        &get(addr, OPERATOR_KEY, "4ef9a417-02e9-4d39-ad75-9611e0fcc33c").await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(
        &get(addr, OPERATOR_KEY, "nobody%40example.com").await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    let wrong_method = call(addr, Method::PATCH, "/suppressions/x", Some(OPERATOR_KEY), None).await;
    assert_error(&wrong_method, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
    let wrong_method = call(addr, Method::GET, "/suppressions/batch/add", Some(OPERATOR_KEY), None).await;
    assert_error(&wrong_method, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
    running.shutdown().await;
}

#[tokio::test]
async fn batch_add_dedupes_and_batch_remove_answers_only_what_existed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let existing = add_ok(addr, "old@example.com").await;

    let body = json!({ "emails": ["a@example.com", "OLD@example.com", "A@Example.com", "b@example.com"] });
    let added = call(
        addr,
        Method::POST,
        "/suppressions/batch/add",
        Some(OPERATOR_KEY),
        Some(body),
    )
    .await;
    assert_eq!(
        added.status,
        StatusCode::CREATED,
        "Resend answers 201: {}",
        added.text()
    );
    let data = added.json()["data"].as_array().expect("data").clone();
    assert_eq!(data.len(), 3, "duplicates collapse: {data:?}");
    assert!(data.iter().all(|entry| entry["object"] == "suppression"));
    assert_eq!(data[1]["id"], existing, "an address already suppressed keeps its id");
    let mut listed = emails(&list(addr, "").await)
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<_>>();
    listed.sort();
    assert_eq!(listed, ["a@example.com", "b@example.com", "old@example.com"]);

    let by_email = json!({ "emails": ["A@example.com", "a@example.com", "missing@example.com"] });
    let removed = call(
        addr,
        Method::POST,
        "/suppressions/batch/remove",
        Some(OPERATOR_KEY),
        Some(by_email),
    )
    .await;
    assert_eq!(removed.status, StatusCode::OK, "{}", removed.text());
    assert_eq!(
        removed.json(),
        json!({ "data": [{ "object": "suppression", "id": data[0]["id"], "deleted": true }] })
    );

    let by_id = json!({ "ids": [existing, "4ef9a417-02e9-4d39-ad75-9611e0fcc33c"] });
    let removed = call(
        addr,
        Method::POST,
        "/suppressions/batch/remove",
        Some(OPERATOR_KEY),
        Some(by_id),
    )
    .await;
    assert_eq!(removed.status, StatusCode::OK, "{}", removed.text());
    assert_eq!(
        removed.json(),
        json!({ "data": [{ "object": "suppression", "id": existing, "deleted": true }] })
    );
    assert_eq!(emails(&list(addr, "").await), ["b@example.com"]);
    running.shutdown().await;
}

#[tokio::test]
async fn batches_are_bounded_and_checked_before_anything_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let too_many: Vec<String> = (0..101).map(|n| format!("u{n}@example.com")).collect();
    let hundred: Vec<String> = too_many[..100].to_vec();
    let cases = [
        ("add", json!({ "emails": too_many }), "validation_error"),
        ("add", json!({ "emails": [] }), "validation_error"),
        ("add", json!({}), "missing_required_field"),
        (
            "add",
            json!({ "emails": ["ok@example.com", "nope"] }),
            "validation_error",
        ),
        ("remove", json!({ "emails": too_many }), "validation_error"),
        ("remove", json!({}), "missing_required_field"),
        (
            "remove",
            json!({ "emails": ["a@example.com"], "ids": [] }),
            "validation_error",
        ),
        ("remove", json!({ "ids": ["nope"] }), "validation_error"),
    ];
    for (verb, body, name) in cases {
        let refused = call(
            addr,
            Method::POST,
            &format!("/suppressions/batch/{verb}"),
            Some(OPERATOR_KEY),
            Some(body.clone()),
        )
        .await;
        assert_error(&refused, StatusCode::UNPROCESSABLE_ENTITY, name);
        if body["emails"][1] == "nope" {
            let message = refused.json()["message"].as_str().expect("message").to_owned();
            assert!(message.contains("`emails[1]`"), "{message}");
        }
    }
    assert!(
        emails(&list(addr, "").await).is_empty(),
        "a refused batch writes nothing"
    );

    let full = call(
        addr,
        Method::POST,
        "/suppressions/batch/add",
        Some(OPERATOR_KEY),
        Some(json!({ "emails": hundred })),
    )
    .await;
    assert_eq!(full.status, StatusCode::CREATED, "{}", full.text());
    assert_eq!(full.json()["data"].as_array().map(Vec::len), Some(100));
    assert_eq!(emails(&list(addr, "?limit=100").await).len(), 100);
    running.shutdown().await;
}

#[tokio::test]
async fn teams_see_only_their_own_suppressions() {
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
    let operator_id = add_ok(addr, "shared@example.com").await;

    assert_error(
        &get(addr, &acme, &operator_id).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(
        &get(addr, &acme, "shared%40example.com").await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    let acme_list = call(addr, Method::GET, "/suppressions", Some(&acme), None).await;
    assert_eq!(acme_list.json()["data"], json!([]));
    let path = format!("/suppressions/{operator_id}");
    let refused = call(addr, Method::DELETE, &path, Some(&acme), None).await;
    assert_error(&refused, StatusCode::NOT_FOUND, "not_found");
    let removed = call(
        addr,
        Method::POST,
        "/suppressions/batch/remove",
        Some(&acme),
        Some(json!({ "ids": [operator_id] })),
    )
    .await;
    assert_eq!(removed.json(), json!({ "data": [] }));

    let acme_added = add(addr, &acme, "shared@example.com").await;
    assert_eq!(acme_added.status, StatusCode::CREATED, "{}", acme_added.text());
    let acme_id = acme_added.json()["id"].as_str().expect("id").to_owned();
    assert_ne!(acme_id, operator_id, "each team has its own entry for an address");
    assert_eq!(
        get(addr, OPERATOR_KEY, "shared%40example.com").await.json()["id"],
        operator_id
    );
    assert_eq!(get(addr, &acme, "shared%40example.com").await.json()["id"], acme_id);
    running.shutdown().await;
}

#[tokio::test]
async fn sending_keys_are_restricted_from_suppressions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
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
    let body = Some(json!({ "email": "x@example.com", "emails": ["x@example.com"] }));
    for (method, path) in [
        (Method::POST, "/suppressions"),
        (Method::GET, "/suppressions"),
        (Method::GET, "/suppressions/x%40example.com"),
        (Method::DELETE, "/suppressions/x%40example.com"),
        (Method::POST, "/suppressions/batch/add"),
        (Method::POST, "/suppressions/batch/remove"),
    ] {
        let refused = call(addr, method, path, Some(&sending), body.clone()).await;
        assert_error(&refused, StatusCode::UNAUTHORIZED, "restricted_api_key");
    }
    assert!(emails(&list(addr, "").await).is_empty());
    running.shutdown().await;
}
