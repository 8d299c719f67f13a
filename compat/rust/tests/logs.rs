//! API request logs through the official Rust SDK (crates.io `resend-rs`): `logs.list` and
//! `logs.get`. Resend answers a log's `request_body` and `response_body` as JSON objects
//! (or null); the SDK keeps them as `serde_json::Value`, so they are checked to be the
//! very objects that went over the wire. Runs in a team of its own, so its logs are only
//! this test's requests. Logs are written without waiting, so lists are polled briefly.

use std::time::Duration;

use herald_compat_rust::{assert_recent, assert_resend_error, eventually, team_client, unique_address};
use resend_rs::Resend;
use resend_rs::list_opts::ListOptions;
use resend_rs::types::{AddSuppressionOptions, Log};
use serde_json::{Value, json};

/// The newest log of `method endpoint`, once it shows in `logs.list`.
async fn find_log(resend: &Resend, method: &str, endpoint: &str) -> Log {
    eventually(Duration::from_secs(5), || async {
        let list = resend
            .logs
            .list(ListOptions::default())
            .await
            .expect("logs.list decodes");
        list.data
            .into_iter()
            .find(|log| log.method == method && log.endpoint == endpoint)
    })
    .await
    .unwrap_or_else(|| panic!("a log of {method} {endpoint} shows up"))
}

#[tokio::test]
async fn a_logged_request_has_its_bodies_as_json_objects() {
    let resend = team_client("logs").await;
    let email = unique_address("logged");
    let added = resend
        .suppressions
        .add(AddSuppressionOptions::new().with_email(&email))
        .await
        .expect("suppressions.add decodes");

    let summary = find_log(&resend, "POST", "/suppressions").await;
    assert!(summary.response_status.get() / 100 == 2, "{summary:?}");
    assert!(
        summary
            .user_agent
            .as_deref()
            .is_some_and(|ua| ua.starts_with("resend-rs/")),
        "the SDK's User-Agent is logged: {summary:?}"
    );
    assert_recent(&summary.created_at);
    assert_eq!(summary.request_body, Value::Null, "list items carry no bodies");

    let log = resend.logs.get(&summary.id).await.expect("logs.get decodes");
    assert_eq!(log.id, summary.id);
    assert_eq!(log.method, "POST");
    assert_eq!(log.endpoint, "/suppressions");
    assert_eq!(log.response_status, summary.response_status);
    assert_eq!(log.user_agent, summary.user_agent);
    assert_eq!(log.created_at, summary.created_at);
    assert_eq!(
        log.request_body,
        json!({ "email": email }),
        "request_body is the request's JSON object"
    );
    assert_eq!(
        log.response_body,
        json!({ "object": "suppression", "id": &*added.id }),
        "response_body is the answer's JSON object"
    );
}

#[tokio::test]
async fn a_logged_get_has_no_request_body_and_logs_page() {
    let resend = team_client("logs-get").await;
    let _ = resend
        .suppressions
        .list(ListOptions::default())
        .await
        .expect("suppressions.list decodes");
    let summary = find_log(&resend, "GET", "/suppressions").await;
    assert_eq!(summary.response_status.get(), 200);

    let log = resend.logs.get(&summary.id).await.expect("logs.get decodes");
    assert_eq!(log.request_body, Value::Null, "a GET has no body");
    assert_eq!(
        log.response_body,
        json!({ "object": "list", "has_more": false, "data": [] }),
        "response_body is the answer's JSON object"
    );

    // The logs requests above are logged without waiting too: poll until a second log shows.
    let page = eventually(Duration::from_secs(5), || async {
        let page = resend
            .logs
            .list(ListOptions::default().with_limit(1))
            .await
            .expect("a page of one decodes");
        assert_eq!(page.len(), 1);
        page.has_more.then_some(page)
    })
    .await
    .expect("the suppressions request and at least one logs request");
    let next = resend
        .logs
        .list(ListOptions::default().with_limit(1).list_after(&page[0].id))
        .await
        .expect("the page after decodes");
    assert_eq!(next.len(), 1);
    assert_ne!(next[0].id, page[0].id);

    assert_resend_error(
        resend.logs.get("00000000-0000-4000-8000-000000000000").await,
        404,
        "not_found",
    );
}
