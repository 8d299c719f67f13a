//! Helpers for tests of the real `herald` binary ([`Process`](super::process::Process)):
//! its config file, waiting on conditions from async code, load clients, and the sink's
//! receipts.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::task::JoinSet;

/// How often [`wait_until`] checks its condition.
const POLL: Duration = Duration::from_millis(10);

/// Writes `dir/herald.toml`: loopback port 0 everywhere, one SMTPS listener, data in
/// `dir/data`, `grace` to shut down, then `extra` (which must set `[log] format = "json"`
/// for [`Process`](super::process::Process)); its path.
pub fn write_config(dir: &Path, grace: Duration, extra: &str) -> PathBuf {
    let base = super::base_config(dir, grace, r#"{ addr = "127.0.0.1:0", tls = "implicit" }"#);
    let path = dir.join("herald.toml");
    std::fs::write(&path, format!("{base}{extra}")).expect("write config");
    path
}

/// The config sections of a load test, for [`write_config`]: a rate limit no load
/// reaches, JSON logs, and delivery through the SMTP sink at `sink` with a one-second
/// retry.
pub fn load_sections(sink: SocketAddr) -> String {
    format!(
        r#"[api]
rate_limit = "10000/s"
[log]
format = "json"
[delivery]
enabled = true
relay = "{sink}"
retry_intervals = ["1s"]
connect_timeout = "2s"
command_timeout = "10s"
"#
    )
}

/// Checks `done` every [`POLL`] until it holds; panics after `timeout` with `what`.
pub async fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool, what: impl Fn() -> String) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {}",
            what()
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Waits up to `timeout` for every load client to finish; panics if one panicked or
/// they did not.
pub async fn join_clients(clients: &mut JoinSet<()>, timeout: Duration) {
    let joined = tokio::time::timeout(timeout, async {
        while let Some(client) = clients.join_next().await {
            client.expect("a load client panicked");
        }
    })
    .await;
    assert!(joined.is_ok(), "the load clients did not stop within {timeout:?}");
}

/// The email id in herald's VERP envelope sender `<id>@<return-path host>`.
pub fn email_id_of(received: &super::sink::Received) -> String {
    let (id, _) = received
        .mail_from
        .split_once('@')
        .unwrap_or_else(|| panic!("envelope sender {:?} is not VERP", received.mail_from));
    id.to_owned()
}

/// `POST /emails` with `body` on a new connection, given up after `timeout`: when the
/// request was sent, and the email id if herald answered `200` (otherwise what went
/// wrong, with the API's message).
pub async fn post_email(http: SocketAddr, body: &Value, timeout: Duration) -> (Instant, Result<String, String>) {
    let mut sent = Instant::now();
    let exchange = async {
        let stream = TcpStream::connect(http)
            .await
            .map_err(|e| format!("connect: {:?}", e.kind()))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        tokio::spawn(connection);
        let request = Request::post("/emails")
            .header("host", http.to_string())
            .header("authorization", format!("Bearer {}", super::OPERATOR_KEY))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .expect("a valid request");
        sent = Instant::now();
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("request: {e}"))?;
        let status = response.status();
        let body = response.into_body().collect().await.map_err(|e| format!("body: {e}"))?;
        let body: Value = serde_json::from_slice(&body.to_bytes()).map_err(|e| format!("{status}: not JSON: {e}"))?;
        if status != StatusCode::OK {
            return Err(format!("{status}: {}", body["message"]));
        }
        body["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("no id: {body}"))
    };
    let outcome = tokio::time::timeout(timeout, exchange)
        .await
        .unwrap_or_else(|_| Err("timed out".to_owned()));
    (sent, outcome)
}
