//! `/contacts` over HTTP: create, read by id or address (raw or percent-encoded, the
//! domain part in any case), list, change, delete, with their `contact.*` webhook events;
//! one contact per address per team, and teams never see each other's contacts.

mod util;

use std::time::Duration;

use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use util::webhook_receiver::Receiver;
use util::{OPERATOR_KEY, call};

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn contacts_are_created_read_listed_changed_and_deleted_with_their_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let api = |method: Method, path: String, body: Option<Value>| async move {
        call(addr, method, &path, Some(OPERATOR_KEY), body).await
    };
    let receiver = Receiver::start().await;
    let hook = api(
        Method::POST,
        "/webhooks".into(),
        Some(json!({ "endpoint": format!("http://{}/hook", receiver.addr()), "events": ["contact.created", "contact.updated", "contact.deleted"] })),
    )
    .await;
    assert_eq!(hook.status, StatusCode::CREATED, "{}", hook.text());

    // Create: the address is required, bare, and once per team (any case of the domain).
    let missing = api(Method::POST, "/contacts".into(), Some(json!({ "first_name": "Ann" }))).await;
    assert_eq!(missing.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(missing.json()["name"], "missing_required_field");
    assert_eq!(missing.json()["message"], "Missing `email` field.");
    let named = api(
        Method::POST,
        "/contacts".into(),
        Some(json!({ "email": "Ann <ann@example.com>" })),
    )
    .await;
    assert_eq!(named.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", named.text());
    let created = api(
        Method::POST,
        "/contacts".into(),
        Some(json!({ "email": "Ann.Lee@Example.com", "first_name": "Ann", "last_name": "Lee" })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    assert_eq!(created.json()["object"], "contact");
    let id = created.json()["id"].as_str().expect("id").to_owned();
    let again = api(
        Method::POST,
        "/contacts".into(),
        Some(json!({ "email": "Ann.Lee@EXAMPLE.COM" })),
    )
    .await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.text());
    let other = api(
        Method::POST,
        "/contacts".into(),
        Some(json!({ "email": "bob@example.com", "unsubscribed": true })),
    )
    .await;
    assert_eq!(other.status, StatusCode::CREATED);
    let properties = api(
        Method::POST,
        "/contacts".into(),
        Some(json!({ "email": "cy@example.com", "properties": { "plan": "pro" } })),
    )
    .await;
    assert_eq!(
        properties.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        properties.text()
    );

    // Read by id, raw address, percent-encoded address; the address stays as written.
    let by_id = api(Method::GET, format!("/contacts/{id}"), None).await.json();
    assert_eq!(by_id["object"], "contact");
    assert_eq!(by_id["email"], "Ann.Lee@Example.com");
    assert_eq!(by_id["first_name"], "Ann");
    assert_eq!(by_id["unsubscribed"], false);
    assert_eq!(by_id["properties"], json!({}));
    for target in ["Ann.Lee@example.COM", "Ann.Lee%40example.com"] {
        let found = api(Method::GET, format!("/contacts/{target}"), None).await;
        assert_eq!(found.status, StatusCode::OK, "{target}: {}", found.text());
        assert_eq!(found.json()["id"], id.as_str());
    }
    let other_case = api(Method::GET, "/contacts/ann.lee@example.com".into(), None).await;
    assert_eq!(
        other_case.status,
        StatusCode::NOT_FOUND,
        "the local part is compared as written"
    );
    let nonsense = api(Method::GET, "/contacts/not-an-id".into(), None).await;
    assert_eq!(nonsense.status, StatusCode::UNPROCESSABLE_ENTITY);

    // List, newest first, paged.
    let page = api(Method::GET, "/contacts?limit=1".into(), None).await.json();
    assert_eq!(page["object"], "list");
    assert_eq!(page["has_more"], true);
    assert_eq!(page["data"][0]["email"], "bob@example.com");
    assert_eq!(page["data"][0]["unsubscribed"], true);
    let bob = page["data"][0]["id"].as_str().expect("id").to_owned();
    let rest = api(Method::GET, format!("/contacts?limit=1&after={bob}"), None)
        .await
        .json();
    assert_eq!(rest["data"][0]["id"], id.as_str());
    assert_eq!(rest["has_more"], false);

    // Change: a null name clears it; an address another contact has is a conflict.
    let changed = api(
        Method::PATCH,
        format!("/contacts/{id}"),
        Some(json!({ "last_name": null, "unsubscribed": true })),
    )
    .await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.text());
    assert_eq!(changed.json(), json!({ "object": "contact", "id": id }));
    let now = api(Method::GET, format!("/contacts/{id}"), None).await.json();
    assert_eq!(now["last_name"], Value::Null);
    assert_eq!(now["first_name"], "Ann");
    assert_eq!(now["unsubscribed"], true);
    let taken = api(
        Method::PATCH,
        format!("/contacts/{id}"),
        Some(json!({ "email": "bob@EXAMPLE.com" })),
    )
    .await;
    assert_eq!(taken.status, StatusCode::CONFLICT, "{}", taken.text());
    let moved = api(
        Method::PATCH,
        format!("/contacts/{id}"),
        Some(json!({ "email": "ann@example.org" })),
    )
    .await;
    assert_eq!(moved.status, StatusCode::OK, "{}", moved.text());
    let old = api(Method::GET, "/contacts/Ann.Lee@example.com".into(), None).await;
    assert_eq!(old.status, StatusCode::NOT_FOUND, "the old address no longer finds it");
    let new = api(Method::GET, "/contacts/ann@example.org".into(), None).await;
    assert_eq!(new.json()["id"], id.as_str());

    // Another team sees none of it.
    let team = api(Method::POST, "/teams".into(), Some(json!({ "name": "Other" })))
        .await
        .json();
    let their_key = team["api_key"]["token"].as_str().expect("token").to_owned();
    let theirs = call(addr, Method::GET, &format!("/contacts/{id}"), Some(&their_key), None).await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND);
    let their_list = call(addr, Method::GET, "/contacts", Some(&their_key), None)
        .await
        .json();
    assert_eq!(their_list["data"], json!([]));

    // Delete by address; deleting again is not an error, as Resend answers.
    let deleted = api(Method::DELETE, "/contacts/ann%40example.org".into(), None).await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text());
    assert_eq!(
        deleted.json(),
        json!({ "object": "contact", "contact": "ann@example.org", "id": id, "deleted": true })
    );
    let gone = api(Method::GET, format!("/contacts/{id}"), None).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    let twice = api(Method::DELETE, format!("/contacts/{id}"), None).await;
    assert_eq!(twice.status, StatusCode::OK);

    // Events: two creations, two changes, one deletion, with Resend's payload.
    receiver.wait_for_len(5, WAIT).await;
    let events: Vec<Value> = receiver
        .all()
        .iter()
        .map(|request| serde_json::from_slice(&request.body).expect("event JSON"))
        .collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "contact.created").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "contact.updated").count(),
        2,
        "{kinds:?}"
    );
    let deletion = events
        .iter()
        .find(|e| e["type"] == "contact.deleted")
        .expect("deleted event");
    assert_eq!(deletion["data"]["id"], id.as_str());
    assert_eq!(deletion["data"]["email"], "ann@example.org");
    assert_eq!(deletion["data"]["unsubscribed"], true);
    assert_eq!(deletion["data"]["segment_ids"], json!([]));
    assert!(running.shutdown().await);
}
