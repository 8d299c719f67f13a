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

/// Runs the `herald` binary with the config file `config` written in `dir`, and `args`.
fn herald(dir: &std::path::Path, config: &str, args: &[&str]) -> std::process::Output {
    let file = dir.join("herald.toml");
    std::fs::write(&file, config).expect("write the config");
    std::process::Command::new(env!("CARGO_BIN_EXE_herald"))
        .args(args)
        .arg("--config")
        .arg(&file)
        .output()
        .expect("run herald")
}

/// The count `herald store copy` printed for `kind`.
fn printed_count(printed: &str, kind: &str) -> Option<u64> {
    printed.lines().find_map(|line| {
        let (name, count) = line.trim().rsplit_once("  ")?;
        (name.trim() == kind).then(|| count.trim().parse().ok())?
    })
}

/// An operator moves a node on RocksDB to PostgreSQL: `herald store copy` (the binary, on
/// the stopped node's config) copies every record and prints the counts; the node started
/// with `[cluster] postgres` serves everything it had, bodies kept in its spool included,
/// under the same keys; a second copy is refused, and so is a node with records of its own
/// that were never copied, started on the database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_moves_its_records_with_herald_store_copy_and_serves_them_from_the_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    // `[cluster]` without a database: the node keeps its records in its RocksDB whatever
    // backend the suites run on.
    let alone = "[api]\nrate_limit = \"1000/s\"\n[cluster]\nnode_id = \"one\"\n";
    let running = start_with_key(config(dir.path(), alone), Some(OPERATOR_KEY)).await;
    let a = running.http_addr;
    let domain = verified_domain(a, "moved.example.com").await;
    let key = call(
        a,
        Method::POST,
        "/api-keys",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "app" })),
    )
    .await;
    let token = key.json()["token"].as_str().expect("token").to_owned();
    let hook = json!({ "endpoint": "https://hooks.example.com/in", "events": ["email.sent"] });
    let made = call(a, Method::POST, "/webhooks", Some(OPERATOR_KEY), Some(hook)).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    let contact = json!({ "email": "reader@example.org", "first_name": "Rea" });
    let made = call(a, Method::POST, "/contacts", Some(OPERATOR_KEY), Some(contact)).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    // Plain bodies the built message gives back: on RocksDB kept only in the spool.
    let email = json!({
        "from": "news@moved.example.com",
        "to": "reader@example.org",
        "subject": "Before the move",
        "html": "<p>Kept in the spool</p>",
    });
    let sent = call(a, Method::POST, "/emails", Some(&token), Some(email)).await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    let email_id = sent.json()["id"].as_str().expect("id").to_owned();
    let file_config = util::config_text(dir.path(), alone);
    running.shutdown().await;

    let url = postgres::database();
    let copy = herald(dir.path(), &file_config, &["store", "copy", "--to", &url]);
    let printed = String::from_utf8_lossy(&copy.stdout).into_owned();
    assert!(
        copy.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&copy.stderr)
    );
    assert_eq!(printed_count(&printed, "teams"), Some(1), "{printed}");
    assert_eq!(printed_count(&printed, "API keys"), Some(2), "{printed}");
    assert_eq!(printed_count(&printed, "domains"), Some(1), "{printed}");
    assert_eq!(printed_count(&printed, "webhooks"), Some(1), "{printed}");
    assert_eq!(printed_count(&printed, "suppressions"), Some(0), "{printed}");

    let again = herald(dir.path(), &file_config, &["store", "copy", "--to", &url]);
    let said = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{said}");
    assert!(said.contains("moved to PostgreSQL already"), "{said}");

    // The node again, on the database: everything it had, under the same keys.
    let moved = start_with_key(config(dir.path(), &cluster(&url)), None).await;
    let b = moved.http_addr;
    let domains = call(b, Method::GET, "/domains", Some(&token), None).await;
    assert_eq!(domains.status, StatusCode::OK, "{}", domains.text());
    assert_eq!(domains.json()["data"][0]["id"], json!(domain), "{}", domains.text());
    let webhooks = call(b, Method::GET, "/webhooks", Some(OPERATOR_KEY), None).await;
    assert_eq!(webhooks.json()["data"].as_array().map(Vec::len), Some(1));
    let read = call(b, Method::GET, &format!("/emails/{email_id}"), Some(&token), None).await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.text());
    assert_eq!(read.json()["subject"], json!("Before the move"));
    assert_eq!(
        read.json()["html"],
        json!("<p>Kept in the spool</p>"),
        "{}",
        read.text()
    );
    let contacts = call(b, Method::GET, "/contacts", Some(OPERATOR_KEY), None).await;
    assert_eq!(
        contacts.json()["data"][0]["email"],
        json!("reader@example.org"),
        "{}",
        contacts.text()
    );
    moved.shutdown().await;

    // Another node with records of its own, never copied: refused on the database.
    let other = tempfile::tempdir().expect("tempdir");
    let running = start_with_key(config(other.path(), alone), Some("re_other_operator_key_0123456789")).await;
    running.shutdown().await;
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let refused = herald::server::start(herald::server::Options {
        config: config(other.path(), &cluster(&url)),
        clock: std::sync::Arc::new(herald_queue::SystemClock),
        bootstrap_api_key: None,
    })
    .await;
    let error = format!(
        "{:#}",
        refused.err().expect("refused: its records would be left behind")
    );
    assert!(error.contains("herald store copy"), "{error}");

    // And copying that node into the database, which holds the first one's, is refused.
    let other_config = util::config_text(other.path(), alone);
    let copy = herald(other.path(), &other_config, &["store", "copy", "--to", &url]);
    let said = String::from_utf8_lossy(&copy.stderr);
    assert_eq!(copy.status.code(), Some(1), "{said}");
    assert!(said.contains("not empty"), "{said}");
}
