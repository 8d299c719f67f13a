//! Crash test for the webhook outbox (issue #7): the real `herald` binary accepts a burst
//! of emails while their webhook endpoint is unreachable, is killed with SIGKILL right
//! after the last `200`, and once restarted on the same data directory delivers an
//! `email.sent` event for every one of them, signed, at least once.

mod util;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use herald::events::{Event, EventKind};
use herald::webhooks::{MessageState, WebhookMessage};
use herald_queue::{Scan, Store, StoreOptions};
use hyper::{Method, StatusCode};
use serde_json::json;
use tokio::net::TcpSocket;
use util::process::{Log, Process};
use util::webhook_receiver::Receiver;
use util::{OPERATOR_KEY, call, copy_tree};

/// Emails sent before the crash.
const EMAILS: usize = 50;
/// The bound on every wait: a start, the redelivery, the final stop.
const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_pending_in_the_outbox_are_delivered_after_a_kill_9_and_restart() {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path());
    let port = reserve_port();
    let endpoint = port.local_addr().expect("local addr");
    let log = Log::default();

    // First life: the endpoint refuses connections, so nothing can be delivered (and so
    // acknowledged) before the crash. Half the emails go in, then the test waits for the
    // dispatcher's first failed attempt, so some events are fanned-out messages awaiting a
    // retry at the crash; the other half follow right before the kill and are likely still
    // in the outbox.
    let mut first = Process::start(&config, &log, 0, WAIT).await;
    util::verified_domain(first.http, "crash.test").await;
    let created = call(
        first.http,
        Method::POST,
        "/webhooks",
        Some(OPERATOR_KEY),
        Some(json!({ "endpoint": format!("http://{endpoint}/hook"), "events": ["email.sent"] })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let created = created.json();
    let secret = created["signing_secret"].as_str().expect("signing_secret").to_owned();
    let webhook_id = created["id"].as_str().expect("webhook id").to_owned();
    let mut email_ids = send_emails(first.http, 0..EMAILS / 2).await;
    wait_for_a_failed_attempt(first.http, &webhook_id).await;
    email_ids.extend(send_emails(first.http, EMAILS / 2..EMAILS).await);
    assert_eq!(email_ids.len(), EMAILS, "every email has its own id");
    let status = first.kill_9();
    assert!(!status.success(), "SIGKILL ended herald: {status:?}");
    let crashed_at = Instant::now();
    let at_crash = inspect_copy(dir.path());
    println!(
        "herald started and accepted {EMAILS} emails in {:.1?}; at the crash: {at_crash}",
        crashed_at - started
    );
    assert_eq!(at_crash.delivered, 0, "nothing could be delivered before the crash");
    assert_eq!(
        at_crash.in_outbox + at_crash.pending,
        EMAILS,
        "every accepted email left one undelivered event: {at_crash}"
    );
    drop(first);

    // Second life: the endpoint is up, and herald has only what it finds on disk.
    let receiver = Receiver::serve(port.listen(64).expect("listen"));
    let mut second = Process::start(&config, &log, 1, WAIT).await;
    let arrived = wait_for_every(&receiver, &email_ids).await;
    let redelivered_in = crashed_at.elapsed();
    second.terminate(WAIT).await;
    let requests = receiver.all();

    let mut by_message: HashMap<&str, usize> = HashMap::new();
    let mut message_of_email: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for request in &requests {
        request.verify(&secret);
        let payload = request.payload();
        assert_eq!(payload["type"], "email.sent", "only the subscribed kind: {payload}");
        assert!(
            payload["created_at"].as_str().is_some_and(|t| t.contains('T')),
            "{payload}"
        );
        let email_id = payload["data"]["email_id"].as_str().expect("data.email_id");
        assert!(
            email_ids.contains(email_id),
            "an event for an email never sent: {payload}"
        );
        *by_message.entry(request.webhook_id.as_str()).or_default() += 1;
        message_of_email
            .entry(email_id.to_owned())
            .or_default()
            .insert(request.webhook_id.as_str());
    }
    let missing: Vec<&String> = email_ids
        .iter()
        .filter(|id| !message_of_email.contains_key(*id))
        .collect();
    assert!(
        missing.is_empty(),
        "lost events for {} emails: {missing:?}",
        missing.len()
    );
    // At-least-once allows the same message twice, never one email fanned out into two
    // messages: receivers deduplicate on `webhook-id`.
    for (email_id, messages) in &message_of_email {
        assert_eq!(
            messages.len(),
            1,
            "email {email_id} arrived as several messages: {messages:?}"
        );
    }
    let duplicates: usize = by_message.values().map(|n| n - 1).sum();
    println!(
        "events for all {} emails arrived {redelivered_in:.1?} after the crash; by the clean stop \
         the receiver had {} requests for {} messages: {duplicates} duplicates",
        arrived.len(),
        requests.len(),
        by_message.len(),
    );
    println!("whole test: {:.1?}", started.elapsed());
}

/// Sends emails numbered `range`; their ids.
async fn send_emails(http: SocketAddr, range: std::ops::Range<usize>) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for n in range {
        let body = json!({
            "from": "app@crash.test",
            "to": "user@example.net",
            "subject": format!("crash {n}"),
            "text": "pending when herald dies",
        });
        let sent = call(http, Method::POST, "/emails", Some(OPERATOR_KEY), Some(body)).await;
        assert_eq!(sent.status, StatusCode::OK, "email {n}: {}", sent.text());
        ids.insert(sent.json()["id"].as_str().expect("email id").to_owned());
    }
    ids
}

/// Waits until the webhook's request log shows an attempt, which can only have failed.
async fn wait_for_a_failed_attempt(http: SocketAddr, webhook_id: &str) {
    let path = format!("/webhooks/{webhook_id}/deliveries");
    let deadline = Instant::now() + WAIT;
    loop {
        let log = call(http, Method::GET, &path, Some(OPERATOR_KEY), None).await;
        assert_eq!(log.status, StatusCode::OK, "{}", log.text());
        let log = log.json();
        if let Some(attempt) = log["data"].as_array().and_then(|d| d.first()) {
            assert!(attempt["response_status"].is_null(), "the endpoint answered: {attempt}");
            return;
        }
        assert!(Instant::now() < deadline, "no webhook attempt within {WAIT:?}: {log}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The test config (loopback port 0 everywhere, delivery off) with JSON logs and a
/// minute of one-second webhook retries. The first life may spend a few attempts on each
/// message against the refused endpoint; the schedule must not run out before the
/// restart, or the message would be marked failed, not lost, and the test would say lost.
fn write_config(dir: &Path) -> std::path::PathBuf {
    let retries = vec!["\"1s\""; 60].join(", ");
    let text = util::config_text(dir, "[api]\nrate_limit = \"1000/s\"\n[log]\nformat = \"json\"\n").replace(
        "allow_private_endpoints = true",
        &format!("allow_private_endpoints = true\nretry_intervals = [{retries}]"),
    );
    assert!(
        text.contains("retry_intervals"),
        "the test config names allow_private_endpoints"
    );
    let path = dir.join("herald.toml");
    std::fs::write(&path, text).expect("write config");
    path
}

/// The webhook state a crash left on disk.
#[derive(Debug, Default)]
struct AtCrash {
    /// Events not yet fanned out.
    in_outbox: usize,
    /// Messages waiting for an attempt.
    pending: usize,
    /// Messages delivered.
    delivered: usize,
    /// Attempts already made on pending messages.
    attempts: u32,
}

impl std::fmt::Display for AtCrash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} events in the outbox, {} pending messages ({} failed attempts so far), {} delivered",
            self.in_outbox, self.pending, self.attempts, self.delivered
        )
    }
}

/// Reads the webhook state from a copy of the crashed spool. Opening the spool itself
/// would run RocksDB's recovery in the test, and the restart would then find a cleanly
/// closed database instead of the crash.
fn inspect_copy(dir: &Path) -> AtCrash {
    let copy = tempfile::tempdir().expect("tempdir");
    copy_tree(&dir.join("data/spool"), copy.path());
    let mut options = StoreOptions::new(copy.path());
    options.min_free_space = 0;
    let store = Store::open(options).expect("the crashed spool's copy opens");
    let outbox = store.scan::<Event>(Scan::prefix(b"")).expect("scan outbox");
    let mut at_crash = AtCrash {
        // The domain's own events stay too when the dispatcher has not run yet.
        in_outbox: outbox.iter().filter(|(_, e)| e.kind == EventKind::EmailSent).count(),
        ..AtCrash::default()
    };
    for (_, message) in store.scan::<WebhookMessage>(Scan::prefix(b"")).expect("scan messages") {
        match message.state {
            MessageState::Pending => {
                at_crash.pending += 1;
                at_crash.attempts += message.attempts;
            }
            MessageState::Delivered => at_crash.delivered += 1,
            MessageState::Failed => panic!("a message failed before the crash: {message:?}"),
        }
    }
    at_crash
}

/// The webhook endpoint's port, held from the start and served only after the restart.
/// Connections to a bound socket that is not listening are refused, so the first herald
/// cannot deliver anything, and unlike a closed port nothing else can take it meanwhile.
/// A listener that merely did not accept would instead let the kernel queue the first
/// herald's requests, to be read after the crash as if the restarted one had sent them.
fn reserve_port() -> TcpSocket {
    let socket = TcpSocket::new_v4().expect("socket");
    socket.bind(SocketAddr::from(([127, 0, 0, 1], 0))).expect("bind");
    socket
}

/// The emails the receiver has events for.
fn email_ids(receiver: &Receiver) -> BTreeSet<String> {
    receiver
        .email_events()
        .into_iter()
        .map(|(_, email_id)| email_id)
        .filter(|email_id| !email_id.is_empty())
        .collect()
}

/// Waits until an event has arrived for every id in `wanted`; the ids seen.
async fn wait_for_every(receiver: &Receiver, wanted: &BTreeSet<String>) -> BTreeSet<String> {
    let complete = receiver.wait_for(WAIT, |r| wanted.is_subset(&email_ids(r))).await;
    let arrived = email_ids(receiver);
    assert!(
        complete,
        "after {WAIT:?} the restarted herald had delivered events for {} of {} emails; missing: {:?}",
        arrived.intersection(wanted).count(),
        wanted.len(),
        wanted.difference(&arrived).collect::<Vec<_>>()
    );
    arrived
}
