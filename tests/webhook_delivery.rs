//! Webhook delivery end to end: events recorded by herald reach a real HTTP receiver on
//! loopback, signed, retried after failures, and logged.

mod util;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use herald::webhooks::{MessageState, WebhookAttempt, WebhookLog, WebhookMessage};
use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use util::{OPERATOR_KEY, call};

/// One request as the receiver saw it.
#[derive(Debug, Clone)]
struct Seen {
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map_or("", |(_, v)| v.as_str())
    }
}

/// A minimal HTTP/1.1 receiver answering with the given statuses in turn (then 200).
async fn receiver(statuses: Vec<u16>) -> (SocketAddr, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let record = Arc::clone(&seen);
    tokio::spawn(async move {
        let mut statuses = statuses.into_iter();
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buffer = Vec::new();
            let mut chunk = [0u8; 4096];
            let (head_end, length) = loop {
                let n = stream.read(&mut chunk).await.unwrap_or(0);
                if n == 0 {
                    break (0, 0);
                }
                buffer.extend_from_slice(&chunk[..n]);
                if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buffer[..end]).to_lowercase();
                    let length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0usize);
                    break (end + 4, length);
                }
            };
            if head_end == 0 {
                continue;
            }
            while buffer.len() < head_end + length {
                let n = stream.read(&mut chunk).await.unwrap_or(0);
                if n == 0 {
                    break;
                }
                buffer.extend_from_slice(&chunk[..n]);
            }
            let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
            let headers = head
                .lines()
                .skip(1)
                .filter_map(|l| l.split_once(':'))
                .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
                .collect();
            let body = String::from_utf8_lossy(&buffer[head_end..]).into_owned();
            record.lock().expect("lock").push(Seen { headers, body });
            let status = statuses.next().unwrap_or(200);
            let reply = format!("HTTP/1.1 {status} X\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
            let _ = stream.write_all(reply.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
    });
    (addr, seen)
}

async fn wait_for(seen: &Mutex<Vec<Seen>>, count: usize) -> Vec<Seen> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = seen.lock().expect("lock").clone();
        if now.len() >= count {
            return now;
        }
        assert!(Instant::now() < deadline, "{} of {count} requests arrived", now.len());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A server whose `[webhooks]` section also has `keys` (retries, timeout).
async fn start_with_webhooks(dir: &std::path::Path, keys: &str) -> herald::server::Running {
    let text = util::config_text(dir, "[api]\nrate_limit = \"1000/s\"\n").replace(
        "allow_private_endpoints = true",
        &format!("allow_private_endpoints = true\n{keys}"),
    );
    let config = herald::config::Config::from_toml(&text, None).expect("config");
    util::start_with_key(config, Some(OPERATOR_KEY)).await
}

/// Creates a webhook for `events` at `addr`; the created object.
async fn create_webhook(running: &herald::server::Running, addr: SocketAddr, events: &[&str]) -> Value {
    let created = call(
        running.http_addr,
        Method::POST,
        "/webhooks",
        Some(OPERATOR_KEY),
        Some(json!({ "endpoint": format!("http://{addr}/hook"), "events": events })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    created.json()
}

fn verify(secret: &str, seen: &Seen) {
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.trim_start_matches("whsec_"))
        .expect("secret");
    let timestamp: u64 = seen.header("webhook-timestamp").parse().expect("timestamp");
    let expected = herald::webhooks::signature::sign(&key, seen.header("webhook-id"), timestamp, seen.body.as_bytes());
    assert_eq!(seen.header("webhook-signature"), expected);
    assert_eq!(seen.header("svix-signature"), expected);
    assert_eq!(seen.header("svix-id"), seen.header("webhook-id"));
    assert_eq!(seen.header("svix-timestamp"), seen.header("webhook-timestamp"));
    let agents: Vec<&str> = seen
        .headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("user-agent"))
        .map(|(_, value)| value.as_str())
        .collect();
    assert_eq!(agents.len(), 1, "one user agent, got {agents:?}");
    assert!(agents[0].starts_with("herald-webhooks/"), "{agents:?}");
}

#[tokio::test]
async fn events_reach_a_subscribed_endpoint_signed_and_retried_after_a_failure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_with_webhooks(dir.path(), "retry_intervals = [\"1s\"]").await;
    let (addr, seen) = receiver(vec![500]).await;
    let created = create_webhook(&running, addr, &["email.sent"]).await;
    let secret = created["signing_secret"].as_str().expect("secret").to_owned();
    let webhook_id = created["id"].as_str().expect("id").to_owned();

    util::verified_domain(running.http_addr, "sender.test").await;
    let body = json!({ "from": "app@sender.test", "to": "user@example.net", "subject": "hi", "text": "t" });
    let sent = call(
        running.http_addr,
        Method::POST,
        "/emails",
        Some(OPERATOR_KEY),
        Some(body),
    )
    .await;
    let email_id = sent.json()["id"].as_str().expect("id").to_owned();

    let requests = wait_for(&seen, 2).await;
    for request in &requests {
        verify(&secret, request);
        let payload: Value = serde_json::from_str(&request.body).expect("json");
        assert_eq!(payload["type"], "email.sent", "only subscribed kinds: {payload}");
        assert_eq!(payload["data"]["email_id"], email_id.as_str());
        assert!(payload["created_at"].as_str().is_some_and(|t| t.contains('T')));
    }
    assert_eq!(
        requests[0].header("webhook-id"),
        requests[1].header("webhook-id"),
        "the retry carries the same id"
    );
    assert_eq!(requests[0].body, requests[1].body);

    // The message is delivered (so nothing more is due), and both attempts are logged.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !util::webhook_messages(&running.state)
        .iter()
        .all(|m| m.state == MessageState::Delivered)
    {
        assert!(Instant::now() < deadline, "the message was never marked delivered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(seen.lock().expect("lock").len(), 2);
    let attempts: Vec<WebhookAttempt> = util::webhook_attempts(&running.state);
    assert_eq!(
        attempts.iter().map(|a| a.status).collect::<Vec<_>>(),
        vec![Some(500), Some(200)]
    );
    assert_eq!(attempts.iter().map(|a| a.attempt).collect::<Vec<_>>(), vec![1, 2]);

    // The request log lists both, newest first; replaying one sends the same message again.
    let log = call(
        running.http_addr,
        Method::GET,
        &format!("/webhooks/{webhook_id}/deliveries"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(log.status, StatusCode::OK, "{}", log.text());
    let data = log.json()["data"].clone();
    let statuses: Vec<Value> = data
        .as_array()
        .expect("list")
        .iter()
        .map(|d| d["response_status"].clone())
        .collect();
    assert_eq!(statuses, vec![json!(200), json!(500)]);
    assert_eq!(data[1]["event_type"], "email.sent");
    let failed_id = data[1]["id"].as_str().expect("id").to_owned();
    let replayed = call(
        running.http_addr,
        Method::POST,
        &format!("/webhooks/{webhook_id}/deliveries/{failed_id}/replay"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(replayed.status, StatusCode::OK, "{}", replayed.text());
    let requests = wait_for(&seen, 3).await;
    verify(&secret, &requests[2]);
    assert_eq!(requests[2].header("webhook-id"), requests[0].header("webhook-id"));
    assert_eq!(requests[2].body, requests[0].body);
    assert!(running.shutdown().await);
}

#[tokio::test]
async fn events_pending_in_the_outbox_are_delivered_after_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (addr, seen) = receiver(Vec::new()).await;
    let running = util::start_api(dir.path(), "").await;
    let team_id = match running.bootstrap {
        herald::accounts::Bootstrap::Created { team_id, .. } | herald::accounts::Bootstrap::Existing { team_id } => {
            team_id
        }
    };
    create_webhook(&running, addr, &["domain.updated"]).await;
    assert!(running.shutdown().await);

    // An event written while herald is down, as a crash right after a commit leaves it.
    {
        let store = herald_queue::Store::open(herald_queue::StoreOptions::new(dir.path().join("data").join("spool")))
            .expect("store");
        let event = herald::events::Event {
            id: store.next_id(),
            team_id,
            kind: herald::events::EventKind::DomainUpdated,
            created_at: store.now(),
            data: json!({ "name": "queued.test" }),
        };
        let log = herald::webhooks::RocksWebhookLog::new(store.clone());
        let mut change = herald::storage::Change::new();
        log.stage_event(&mut change, &event).expect("event");
        log.commit_async(change).await.expect("commit");
    }
    assert!(seen.lock().expect("lock").is_empty());

    let running = util::start_api(dir.path(), "").await;
    let requests = wait_for(&seen, 1).await;
    let payload: Value = serde_json::from_str(&requests[0].body).expect("json");
    assert_eq!(payload["type"], "domain.updated");
    assert_eq!(payload["data"]["name"], "queued.test");
    assert!(running.shutdown().await);
}

#[tokio::test]
async fn an_endpoint_that_never_answers_times_out_and_the_message_fails_after_the_last_retry() {
    // Accepts connections and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let held = Arc::new(Mutex::new(Vec::new()));
    let keep = Arc::clone(&held);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            keep.lock().expect("lock").push(stream);
        }
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_with_webhooks(dir.path(), "retry_intervals = [\"1s\"]\ntimeout = \"1s\"").await;
    create_webhook(&running, addr, &["domain.created"]).await;
    util::verified_domain(running.http_addr, "slow.test").await;

    let deadline = Instant::now() + Duration::from_secs(30);
    let message = loop {
        let messages: Vec<WebhookMessage> = util::webhook_messages(&running.state);
        if let Some(done) = messages.into_iter().find(|m| m.state == MessageState::Failed) {
            break done;
        }
        assert!(Instant::now() < deadline, "the message never failed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(message.attempts, 2, "the first try and one retry");
    let attempts: Vec<WebhookAttempt> = util::webhook_attempts(&running.state);
    assert_eq!(attempts.len(), 2);
    assert!(
        attempts.iter().all(|a| a.status.is_none() && a.error.is_some()),
        "{attempts:?}"
    );
    assert!(running.shutdown().await);
}

/// Resend's OpenAPI document describes every `email.*`, `contact.*` and `domain.*` event
/// herald sends (herald's own `topic.*`, `suppression.*` and `contact.topics.updated` are
/// not in it), so the tests' webhook receiver checks each of them against it; and the
/// check is real: a body that breaks the schema is reported.
#[test]
fn resends_document_has_a_schema_for_every_resend_event_herald_sends() {
    use herald::events::EventKind;
    let schemas = util::openapi::webhook_schemas();
    let documented: std::collections::BTreeSet<&str> = schemas.kinds().collect();
    for kind in EventKind::ALL {
        let herald_only = matches!(
            kind,
            EventKind::ContactTopicsUpdated
                | EventKind::TopicCreated
                | EventKind::TopicUpdated
                | EventKind::TopicDeleted
                | EventKind::SuppressionAdded
                | EventKind::SuppressionRemoved
        );
        assert_eq!(documented.contains(kind.name()), !herald_only, "{}", kind.name());
    }

    let valid = json!({
        "type": "email.sent",
        "created_at": "2026-11-28T10:00:00.000Z",
        "data": {
            "email_id": "4ef9a417-02e9-4d39-ad75-9611e0fcc33c",
            "created_at": "2026-11-28T10:00:00.000Z",
            "from": "app@sender.test",
            "to": ["user@example.net"],
            "subject": "hi",
        },
    });
    assert_eq!(schemas.violations(&valid), Some(vec![]));
    let mut broken = valid;
    broken["data"]["to"] = json!("user@example.net");
    broken["created_at"] = json!("yesterday");
    let violations = schemas.violations(&broken).expect("email.sent has a schema");
    assert_eq!(violations.len(), 2, "{violations:?}");
    assert_eq!(
        schemas.violations(&json!({ "type": "topic.created", "data": {} })),
        None
    );
}

/// The events no other test receives through the checking receiver (an email scheduled,
/// a domain created, updated and deleted) reach one, and every body is valid under
/// Resend's document.
#[tokio::test]
async fn scheduled_email_and_domain_events_match_resends_document() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_with_webhooks(dir.path(), "").await;
    let addr = running.http_addr;
    let receiver = util::webhook_receiver::Receiver::start().await;
    let kinds = ["email.scheduled", "domain.created", "domain.updated", "domain.deleted"];
    create_webhook(&running, receiver.addr(), &kinds).await;

    util::verified_domain(addr, "sender.test").await;
    let scheduled = json!({
        "from": "Sender <app@sender.test>",
        "to": ["user@example.net"],
        "subject": "later",
        "text": "t",
        "tags": [{ "name": "kind", "value": "reminder" }],
        "scheduled_at": "in 1 hour",
    });
    let sent = call(addr, Method::POST, "/emails", Some(OPERATOR_KEY), Some(scheduled)).await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    let gone = call(
        addr,
        Method::POST,
        "/domains",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "gone.test" })),
    )
    .await;
    assert_eq!(gone.status, StatusCode::CREATED, "{}", gone.text());
    let gone = format!("/domains/{}", gone.json()["id"].as_str().expect("id"));
    let patched = call(
        addr,
        Method::PATCH,
        &gone,
        Some(OPERATOR_KEY),
        Some(json!({ "open_tracking": true })),
    )
    .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.text());
    let deleted = call(addr, Method::DELETE, &gone, Some(OPERATOR_KEY), None).await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text());

    let arrived = receiver
        .wait_for(Duration::from_secs(30), |r| {
            let seen: Vec<Value> = r.all().iter().map(|x| x.payload()).collect();
            kinds.iter().all(|kind| seen.iter().any(|p| p["type"] == *kind))
        })
        .await;
    assert!(
        arrived,
        "not every kind arrived: {:?}",
        receiver.all().iter().map(|r| r.payload()).collect::<Vec<_>>()
    );
    for recorded in receiver.all() {
        assert_eq!(recorded.schema_violations(), None);
    }
    assert!(running.shutdown().await);
}
