//! A real webhook endpoint for integration tests, on `127.0.0.1` and an ephemeral port:
//! it answers every request it reads whole with `200` and records it, for checking
//! payloads and Standard Webhooks signatures. A request cut short (its sender killed
//! mid-body) is answered `400` and not recorded: it was not delivered. Every body it
//! records is checked against the schema Resend's OpenAPI document gives its event type
//! (`super::openapi`): a test whose receiver got a body that breaks it fails when the
//! receiver is dropped.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::lock;

/// A running receiver. Its accept task ends with the test's runtime.
pub struct Receiver {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    /// Counts the requests, to wake a waiting test at once rather than at its next poll.
    count: Arc<watch::Sender<usize>>,
    /// Bodies that break their event type's schema in Resend's document, with the reasons.
    violations: Arc<Mutex<Vec<String>>>,
}

impl Receiver {
    /// Starts listening on `127.0.0.1:0`.
    pub async fn start() -> Receiver {
        Receiver::serve(TcpListener::bind("127.0.0.1:0").await.expect("bind the receiver"))
    }

    /// Starts answering on `listener`, already listening: a test that holds its port
    /// unlistened for a while (refusing connections) makes it with `TcpSocket::listen`.
    pub fn serve(listener: TcpListener) -> Receiver {
        // Loaded here rather than on the first request, so that a document that cannot be
        // read fails the test with its reason instead of failing a connection.
        super::openapi::webhook_schemas();
        let receiver = Receiver {
            addr: listener.local_addr().expect("local addr"),
            requests: Arc::default(),
            count: Arc::new(watch::Sender::new(0)),
            violations: Arc::default(),
        };
        let (requests, count) = (Arc::clone(&receiver.requests), Arc::clone(&receiver.count));
        let violations = Arc::clone(&receiver.violations);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (requests, count) = (Arc::clone(&requests), Arc::clone(&count));
                let violations = Arc::clone(&violations);
                let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                    let (requests, count) = (Arc::clone(&requests), Arc::clone(&count));
                    let violations = Arc::clone(&violations);
                    async move {
                        let status = match Recorded::read(request).await {
                            Some(recorded) => {
                                if let Some(found) = recorded.schema_violations() {
                                    lock(&violations).push(found);
                                }
                                let mut requests = lock(&requests);
                                requests.push(recorded);
                                count.send_replace(requests.len());
                                StatusCode::OK
                            }
                            None => StatusCode::BAD_REQUEST,
                        };
                        let mut response = Response::new(Full::new(Bytes::from_static(b"ok")));
                        *response.status_mut() = status;
                        Ok::<_, hyper::Error>(response)
                    }
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service),
                );
            }
        });
        receiver
    }

    /// The address to name in the webhook's endpoint.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Requests recorded so far.
    pub fn len(&self) -> usize {
        lock(&self.requests).len()
    }

    /// Every recorded request, in arrival order.
    pub fn all(&self) -> Vec<Recorded> {
        lock(&self.requests).clone()
    }

    /// Event type and `data.email_id` of every request ("" where absent).
    pub fn email_events(&self) -> std::collections::BTreeSet<(String, String)> {
        lock(&self.requests)
            .iter()
            .map(|r| {
                let payload = r.payload();
                let field = |value: &Value| value.as_str().unwrap_or_default().to_owned();
                (field(&payload["type"]), field(&payload["data"]["email_id"]))
            })
            .collect()
    }

    /// Waits until `count` requests have arrived; panics after `timeout`.
    pub async fn wait_for_len(&self, count: usize, timeout: Duration) {
        let mut watcher = self.count.subscribe();
        let arrived = tokio::time::timeout(timeout, watcher.wait_for(|&n| n >= count)).await;
        // The sender lives in `self`, so the inner result is always `Ok`.
        assert!(
            matches!(arrived, Ok(Ok(_))),
            "the webhook receiver did not get request {count} within {timeout:?} ({} arrived)",
            self.len()
        );
    }

    /// Waits until `condition` holds of the receiver, checking it again on each request;
    /// whether it did within `timeout`.
    pub async fn wait_for(&self, timeout: Duration, mut condition: impl FnMut(&Receiver) -> bool) -> bool {
        let mut watcher = self.count.subscribe();
        let holds = async {
            loop {
                // Seen before checking, so a request recorded during the check wakes the
                // next wait. The condition runs outside the watch's lock: a request is
                // recorded holding `requests` and then taking that lock.
                watcher.mark_unchanged();
                if condition(self) {
                    return;
                }
                // The sender lives in `self`, so this never fails.
                let _ = watcher.changed().await;
            }
        };
        tokio::time::timeout(timeout, holds).await.is_ok()
    }
}

impl Drop for Receiver {
    /// Fails the test when a body broke its schema; not while the test is already failing,
    /// whose own message matters more.
    fn drop(&mut self) {
        let violations = lock(&self.violations);
        if !violations.is_empty() && !std::thread::panicking() {
            panic!(
                "webhook bodies that break Resend's OpenAPI document:\n{}",
                violations.join("\n")
            );
        }
    }
}

/// One request as the receiver read it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Its headers.
    pub headers: hyper::HeaderMap,
    /// The `webhook-id` header: the same on every retry of one message.
    pub webhook_id: String,
    /// Its body, whole.
    pub body: Bytes,
}

impl Recorded {
    async fn read(request: Request<hyper::body::Incoming>) -> Option<Recorded> {
        let (parts, body) = request.into_parts();
        let body = body.collect().await.ok()?.to_bytes();
        Some(Recorded {
            webhook_id: header(&parts.headers, "webhook-id").to_owned(),
            headers: parts.headers,
            body,
        })
    }

    /// The body as JSON; panics if it is not.
    pub fn payload(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("the body is not JSON ({e}): {:?}", self.body))
    }

    /// What is wrong with the body under Resend's schema for its event type, as one
    /// message; `None` when nothing is (or the document has no schema for the type).
    pub fn schema_violations(&self) -> Option<String> {
        let payload: Value = match serde_json::from_slice(&self.body) {
            Ok(payload) => payload,
            Err(e) => return Some(format!("a body that is not JSON ({e}): {:?}", self.body)),
        };
        let violations = super::openapi::webhook_schemas().violations(&payload)?;
        (!violations.is_empty()).then(|| format!("{}: {}\n  {}", payload["type"], payload, violations.join("\n  ")))
    }

    /// Checks the Standard Webhooks headers, their Svix copies, and that one of the
    /// space-separated `v1,` signatures is by `secret` (`whsec_<base64>`).
    pub fn verify(&self, secret: &str) {
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
