//! Crash test for the webhook outbox (issue #7): the real `herald` binary accepts a burst
//! of emails while their webhook endpoint is unreachable, is killed with SIGKILL right
//! after the last `200`, and once restarted on the same data directory delivers an
//! `email.sent` event for every one of them, signed, at least once.

mod util;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use herald::events::Event;
use herald::webhooks::dispatch::{MessageState, WebhookMessage};
use herald_queue::{Scan, Store, StoreOptions};
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpSocket;
use tokio::sync::watch;
use util::{OPERATOR_KEY, call};

const HERALD: &str = env!("CARGO_BIN_EXE_herald");
/// Emails sent before the crash.
const EMAILS: usize = 50;
/// The bound on every wait: a start, the redelivery, the final stop.
const WAIT: Duration = Duration::from_secs(60);
/// Log lines shown when the test fails.
const LOG_TAIL: usize = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_pending_in_the_outbox_are_delivered_after_a_kill_9_and_restart() {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path());
    let receiver = Receiver::reserve();

    // First life: the endpoint refuses connections, so nothing can be delivered (and so
    // acknowledged) before the crash. Half the emails go in, then the test waits for the
    // dispatcher's first failed attempt, so some events are fanned-out messages awaiting a
    // retry at the crash; the other half follow right before the kill and are likely still
    // in the outbox.
    let mut first = Herald::start(dir.path(), &config);
    util::verified_domain(first.http, "crash.test").await;
    let created = call(
        first.http,
        Method::POST,
        "/webhooks",
        Some(OPERATOR_KEY),
        Some(json!({ "endpoint": format!("http://{}/hook", receiver.addr), "events": ["email.sent"] })),
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
    let seen = receiver.serve();
    let mut second = Herald::start(dir.path(), &config);
    let arrived = seen.wait_for_every(&email_ids).await;
    let redelivered_in = crashed_at.elapsed();
    second.terminate();
    let requests = seen.all();

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

/// A running `herald serve`, killed on drop so a failing test leaves no process behind.
struct Herald {
    child: Child,
    http: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl Herald {
    /// Starts the binary on `config` and waits for its `herald is ready` line.
    fn start(dir: &Path, config: &Path) -> Herald {
        let mut child = Command::new(HERALD)
            .args(["serve", "--config"])
            .arg(config)
            .current_dir(dir)
            .env("HERALD_BOOTSTRAP_API_KEY", OPERATOR_KEY)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn herald");
        let stderr = child.stderr.take().expect("stderr is piped");
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let (ready, ready_lines) = mpsc::channel();
        let keep = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(value) = serde_json::from_str::<Value>(&line)
                    && value["message"] == "herald is ready"
                {
                    let _ = ready.send(value);
                }
                keep.lock().unwrap_or_else(PoisonError::into_inner).push(line);
            }
        });
        let mut herald = Herald {
            child,
            http: SocketAddr::from(([127, 0, 0, 1], 0)),
            log,
        };
        let deadline = Instant::now() + WAIT;
        let line = loop {
            if let Ok(line) = ready_lines.recv_timeout(Duration::from_millis(100)) {
                break line;
            }
            if let Some(status) = herald.child.try_wait().expect("try_wait") {
                panic!("herald exited during startup: {status:?}");
            }
            assert!(Instant::now() < deadline, "herald was not ready within {WAIT:?}");
        };
        herald.http = line["http"]
            .as_str()
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no http address in {line}"));
        herald
    }

    /// SIGKILL: no shutdown code runs, as in a power cut or an OOM kill.
    fn kill_9(&mut self) -> ExitStatus {
        self.child.kill().expect("SIGKILL herald");
        self.child.wait().expect("wait for herald")
    }

    /// SIGTERM, and a clean exit within the bound.
    fn terminate(&mut self) {
        let status = Command::new("kill")
            .args(["-s", "TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -s TERM: {status:?}");
        let mut exit = None;
        util::wait_until(WAIT, "herald to stop after SIGTERM", || {
            exit = self.child.try_wait().expect("try_wait");
            exit.is_some()
        });
        let exit = exit.expect("exited");
        assert!(exit.success(), "herald stopped uncleanly after SIGTERM: {exit:?}");
    }
}

impl Drop for Herald {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
            eprintln!("== herald log (last {LOG_TAIL} lines)");
            for line in &log[log.len().saturating_sub(LOG_TAIL)..] {
                eprintln!("{line}");
            }
        }
    }
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
        in_outbox: outbox.iter().filter(|(_, e)| e.kind == "email.sent").count(),
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

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create copy");
    for entry in std::fs::read_dir(from).expect("read spool") {
        let entry = entry.expect("spool entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy spool file");
        }
    }
}

/// The webhook endpoint: a port held from the start, listening only once served.
struct Receiver {
    addr: SocketAddr,
    socket: TcpSocket,
}

impl Receiver {
    /// Binds a loopback port without listening on it. Connections to a bound socket that
    /// is not listening are refused, so the first herald cannot deliver anything, and
    /// unlike a closed port nothing else can take it meanwhile. A listener that merely
    /// did not accept would instead let the kernel queue the first herald's requests, to
    /// be read after the crash as if the restarted one had sent them.
    fn reserve() -> Receiver {
        let socket = TcpSocket::new_v4().expect("socket");
        socket.bind(SocketAddr::from(([127, 0, 0, 1], 0))).expect("bind");
        let addr = socket.local_addr().expect("local addr");
        Receiver { addr, socket }
    }

    /// Starts listening and answering every request `200`.
    fn serve(self) -> Seen {
        let listener = self.socket.listen(64).expect("listen");
        let (changed, watcher) = watch::channel(());
        let seen = Seen {
            requests: Arc::default(),
            watcher,
        };
        let requests = Arc::clone(&seen.requests);
        let changed = Arc::new(changed);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let requests = Arc::clone(&requests);
                let changed = Arc::clone(&changed);
                let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                    let requests = Arc::clone(&requests);
                    let changed = Arc::clone(&changed);
                    async move {
                        let recorded = Recorded::read(request).await;
                        requests.lock().unwrap_or_else(PoisonError::into_inner).push(recorded);
                        changed.send_replace(());
                        Ok::<_, hyper::Error>(Response::new(Full::new(Bytes::from_static(b"ok"))))
                    }
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service),
                );
            }
        });
        seen
    }
}

/// What the receiver has recorded.
struct Seen {
    requests: Arc<Mutex<Vec<Recorded>>>,
    watcher: watch::Receiver<()>,
}

impl Seen {
    fn all(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn email_ids(&self) -> BTreeSet<String> {
        self.all()
            .iter()
            .filter_map(|r| r.payload()["data"]["email_id"].as_str().map(str::to_owned))
            .collect()
    }

    /// Waits until an event has arrived for every id in `wanted`; the ids seen.
    async fn wait_for_every(&self, wanted: &BTreeSet<String>) -> BTreeSet<String> {
        let mut watcher = self.watcher.clone();
        let waited = tokio::time::timeout(WAIT, watcher.wait_for(|()| wanted.is_subset(&self.email_ids()))).await;
        let arrived = self.email_ids();
        match waited {
            Ok(Ok(_)) => arrived,
            Ok(Err(_)) => panic!("the receiver stopped"),
            Err(_) => panic!(
                "after {WAIT:?} the restarted herald had delivered events for {} of {} emails; missing: {:?}",
                arrived.intersection(wanted).count(),
                wanted.len(),
                wanted.difference(&arrived).collect::<Vec<_>>()
            ),
        }
    }
}

/// One webhook request as the receiver read it.
#[derive(Debug, Clone)]
struct Recorded {
    headers: hyper::HeaderMap,
    webhook_id: String,
    body: Bytes,
}

impl Recorded {
    async fn read(request: Request<hyper::body::Incoming>) -> Recorded {
        let (parts, body) = request.into_parts();
        let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        Recorded {
            webhook_id: header(&parts.headers, "webhook-id").to_owned(),
            headers: parts.headers,
            body,
        }
    }

    fn payload(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("the body is not JSON ({e}): {:?}", self.body))
    }

    /// Checks the Standard Webhooks headers, their Svix copies, and that one of the
    /// space-separated `v1,` signatures is the webhook secret's.
    fn verify(&self, secret: &str) {
        let id = header(&self.headers, "webhook-id");
        assert!(id.starts_with("msg_"), "webhook-id {id:?}");
        assert_eq!(header(&self.headers, "svix-id"), id);
        let timestamp = header(&self.headers, "webhook-timestamp");
        assert_eq!(header(&self.headers, "svix-timestamp"), timestamp);
        let signatures = header(&self.headers, "webhook-signature");
        assert_eq!(header(&self.headers, "svix-signature"), signatures);
        assert!(
            signatures.split(' ').all(|s| s.starts_with("v1,")),
            "webhook-signature {signatures:?}"
        );
        let key = base64::engine::general_purpose::STANDARD
            .decode(secret.trim_start_matches("whsec_"))
            .expect("the secret is base64 after whsec_");
        let timestamp: u64 = timestamp.parse().expect("webhook-timestamp is Unix seconds");
        let expected = herald::webhooks::signature::sign(&key, id, timestamp, &self.body);
        assert!(
            signatures.split(' ').any(|s| s == expected),
            "no signature by the webhook's secret in {signatures:?}"
        );
    }
}

fn header<'a>(headers: &'a hyper::HeaderMap, name: &str) -> &'a str {
    headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default()
}
