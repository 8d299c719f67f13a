//! herald served on PostgreSQL, over real sockets: a node keeps its records in a private
//! PostgreSQL (`util/postgres.rs`), a second node started on an empty data directory
//! joins the same database and sees and accepts everything the first made (its own
//! bootstrap key ignored), and a data directory whose records went to the database
//! refuses to start without it.

mod util;

use hyper::{Method, StatusCode};
use serde_json::json;
use util::{OPERATOR_KEY, call, config, postgres, start_with_key, verified_domain};

/// The `[cluster]` table naming `url`.
fn cluster(url: &str) -> String {
    format!("[api]\nrate_limit = \"1000/s\"\n[cluster]\npostgres = \"{url}\"\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_node_joins_the_database_and_sees_everything() {
    let url = postgres::database();
    let (first_dir, second_dir) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    let first = start_with_key(config(first_dir.path(), &cluster(&url)), Some(OPERATOR_KEY)).await;
    let a = first.http_addr;

    // Made through the first node: a verified domain, an API key, a webhook, an email.
    let domain = verified_domain(a, "shop.example.com").await;
    let key = call(
        a,
        Method::POST,
        "/api-keys",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "ci" })),
    )
    .await;
    assert_eq!(key.status, StatusCode::CREATED, "{}", key.text());
    let token = key.json()["token"].as_str().expect("token").to_owned();
    let hook = json!({ "endpoint": "https://hooks.example.com/h", "events": ["email.sent"] });
    let webhook = call(a, Method::POST, "/webhooks", Some(OPERATOR_KEY), Some(hook)).await;
    assert_eq!(webhook.status, StatusCode::CREATED, "{}", webhook.text());
    let email = json!({
        "from": "Shop <news@shop.example.com>",
        "to": ["ann@example.org"],
        "subject": "Hello from the first node",
        "html": "<p>Hi</p>",
    });
    let sent = call(a, Method::POST, "/emails", Some(&token), Some(email)).await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    let email_id = sent.json()["id"].as_str().expect("id").to_owned();
    let in_first = call(a, Method::GET, &format!("/emails/{email_id}"), Some(&token), None).await;
    assert_eq!(in_first.status, StatusCode::OK, "{}", in_first.text());

    // A second node on an empty data directory: its own bootstrap key is ignored, the
    // first node's keys work, and everything made through the first is there.
    let other_key = "re_second_node_key_0123456789";
    let second = start_with_key(config(second_dir.path(), &cluster(&url)), Some(other_key)).await;
    let b = second.http_addr;
    let refused = call(b, Method::GET, "/domains", Some(other_key), None).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
    assert_eq!(refused.json()["name"], json!("invalid_api_key"));
    let domains = call(b, Method::GET, "/domains", Some(OPERATOR_KEY), None).await;
    assert_eq!(domains.status, StatusCode::OK, "{}", domains.text());
    assert_eq!(domains.json()["data"][0]["id"], json!(domain), "{}", domains.text());
    assert_eq!(domains.json()["data"][0]["status"], json!("verified"));
    let webhooks = call(b, Method::GET, "/webhooks", Some(OPERATOR_KEY), None).await;
    assert_eq!(
        webhooks.json()["data"].as_array().map(Vec::len),
        Some(1),
        "{}",
        webhooks.text()
    );
    let read = call(b, Method::GET, &format!("/emails/{email_id}"), Some(&token), None).await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.text());
    assert_eq!(read.json()["subject"], json!("Hello from the first node"));
    assert_eq!(read.json()["html"], json!("<p>Hi</p>"), "content is shared too");

    // What the second node makes, the first sees.
    let later = json!({ "name": "shop.example.net", "dkim_algorithm": "ed25519" });
    let made = call(b, Method::POST, "/domains", Some(&token), Some(later)).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    let listed = call(a, Method::GET, "/domains", Some(OPERATOR_KEY), None).await;
    assert_eq!(
        listed.json()["data"].as_array().map(Vec::len),
        Some(2),
        "{}",
        listed.text()
    );

    first.shutdown().await;
    second.shutdown().await;

    // The first node's data directory without the database: refused, not forked.
    let alone = util::config(first_dir.path(), "");
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let refused = herald::server::start(herald::server::Options {
        config: alone,
        clock: std::sync::Arc::new(herald_queue::SystemClock),
        bootstrap_api_key: None,
    })
    .await;
    let error = format!("{:#}", refused.err().expect("refused without the database"));
    assert!(error.contains("records are in PostgreSQL"), "{error}");
    assert!(!error.contains("secret"), "{error}");
}
