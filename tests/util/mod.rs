//! Helpers for integration tests: configs on loopback port 0, a real HTTP client, a real
//! TLS client, and waiting on conditions with deadlines instead of sleeping.

#![allow(dead_code)]

pub mod browser;
pub mod cookies;
pub mod dns;
pub mod identity_provider;
pub mod openapi;
pub mod postgres;
pub mod process;
pub mod real;
pub mod sink;
pub mod webhook_receiver;
pub mod world;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use herald::config::Config;
use herald::server::{self, Options, Running};
use herald_queue::SystemClock;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;

/// The `[delivery]` section of a test that delivers: on, everything relayed to `sink`,
/// a deferred message retried after a second.
pub fn relay_to(sink: SocketAddr) -> String {
    format!("[delivery]\nenabled = true\nrelay = \"{sink}\"\nretry_intervals = [\"1s\"]\n")
}

/// A config for tests: everything on loopback port 0, data in `dir`.
pub fn config_text(dir: &Path, extra: &str) -> String {
    // Delivery is off unless a test turns it on: most tests look at accepted mail, and
    // their recipients' domains do not exist.
    let extra = if extra.contains("enabled") {
        extra.to_owned()
    } else if extra.contains("[delivery]") {
        extra.replacen("[delivery]", "[delivery]\nenabled = false", 1)
    } else {
        format!("{extra}\n[delivery]\nenabled = false\n")
    };
    let base = base_config(
        dir,
        Duration::from_secs(5),
        r#"{ addr = "127.0.0.1:0", tls = "starttls" }, { addr = "127.0.0.1:0", tls = "implicit" }"#,
    );
    format!(
        "{base}[webhooks]\nallow_private_endpoints = true\n{extra}\n{}",
        shared_records(dir, &extra)
    )
}

/// The backend the suites run on: `HERALD_TEST_BACKEND=postgres` keeps the records of
/// every server a test starts in the binary's private PostgreSQL (one database per test
/// directory, so a server restarted on the same directory finds its records again);
/// otherwise they stay in the node's RocksDB, herald's default.
pub fn on_postgres() -> bool {
    std::env::var("HERALD_TEST_BACKEND").is_ok_and(|backend| backend == "postgres")
}

/// The databases of the test directories whose servers keep their records in PostgreSQL.
static DATABASES: Mutex<Vec<(std::path::PathBuf, String)>> = Mutex::new(Vec::new());

/// Runs `sql` on the database that the servers on `dir` keep their records in (the suites
/// run on PostgreSQL and a server on `dir` was configured).
pub fn records_sql(dir: &Path, sql: &str) {
    let url = lock(&DATABASES)
        .iter()
        .find(|(known, _)| known == dir)
        .map(|(_, url)| url.clone())
        .expect("the records of the servers on this directory are in PostgreSQL");
    let name = url
        .rsplit('/')
        .next()
        .and_then(|last| last.split('?').next())
        .expect("a database name");
    postgres::server().execute(name, sql);
}

/// The `[cluster]` section that puts the records of a server on `dir` in PostgreSQL when
/// the suites run there ([`on_postgres`]) and the test did not write its own.
fn shared_records(dir: &Path, extra: &str) -> String {
    if !on_postgres() || extra.contains("[cluster]") {
        return String::new();
    }
    let mut databases = lock(&DATABASES);
    let url = match databases.iter().find(|(known, _)| known == dir) {
        Some((_, url)) => url.clone(),
        None => {
            let url = postgres::database();
            databases.push((dir.to_owned(), url.clone()));
            url
        }
    };
    format!("[cluster]\npostgres = \"{url}\"\n")
}

/// The `[server]`, `[http]`, `[smtp]` and `[spool]` sections every test config begins
/// with: hostname `herald.test`, data in `dir/data`, `grace` to shut down, HTTP on
/// loopback port 0, `listeners` (the inside of the TOML array) and no free-space floor.
/// It begins and ends with a newline.
pub fn base_config(dir: &Path, grace: Duration, listeners: &str) -> String {
    format!(
        r#"
[server]
hostname = "herald.test"
data_dir = "{data}"
shutdown_grace = "{grace}s"
[http]
listen = "127.0.0.1:0"
[smtp]
listeners = [{listeners}]
[spool]
min_free_space = "0"
"#,
        data = dir.join("data").display(),
        grace = grace.as_secs(),
    )
}

pub fn config(dir: &Path, extra: &str) -> Config {
    Config::from_toml(&config_text(dir, extra), None).expect("test config is valid")
}

pub async fn start(config: Config) -> Running {
    start_with_key(config, None).await
}

/// The operator key the API tests bootstrap with.
pub const OPERATOR_KEY: &str = "re_operator_test_key_0123456789";

/// Starts a server whose first key is `key` (`HERALD_BOOTSTRAP_API_KEY`).
pub async fn start_with_key(config: Config, key: Option<&str>) -> Running {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    server::start(Options {
        config,
        clock: Arc::new(SystemClock),
        bootstrap_api_key: key.map(str::to_owned),
    })
    .await
    .expect("server starts")
}

/// Starts a server whose first key is `key`, reading time from `clock`.
pub async fn start_with_clock(config: Config, key: Option<&str>, clock: herald_queue::SharedClock) -> Running {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    server::start(Options {
        config,
        clock,
        bootstrap_api_key: key.map(str::to_owned),
    })
    .await
    .expect("server starts")
}

/// A server with [`OPERATOR_KEY`] and a generous rate limit.
pub async fn start_api(dir: &Path, extra: &str) -> Running {
    let extra = if extra.contains("[api]") {
        extra.to_owned()
    } else {
        format!("[api]\nrate_limit = \"1000/s\"\n{extra}")
    };
    start_with_key(config(dir, &extra), Some(OPERATOR_KEY)).await
}

/// A JSON API call with a bearer `key`.
pub async fn call(
    addr: SocketAddr,
    method: Method,
    path: &str,
    key: Option<&str>,
    body: Option<serde_json::Value>,
) -> HttpResponse {
    let bytes = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
    call_raw(addr, method, path, key, bytes).await
}

/// An API call with a raw body.
pub async fn call_raw(addr: SocketAddr, method: Method, path: &str, key: Option<&str>, body: Bytes) -> HttpResponse {
    call_with_headers(addr, method, path, key, &[], body).await
}

/// An API call with extra request headers (`Idempotency-Key`, `x-batch-validation`, ...).
pub async fn call_with_headers(
    addr: SocketAddr,
    method: Method,
    path: &str,
    key: Option<&str>,
    headers: &[(&str, &str)],
    body: Bytes,
) -> HttpResponse {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("HTTP handshake");
    tokio::spawn(connection);
    let mut builder = Request::builder().method(method).uri(path);
    // The server's address unless the caller names its own host (a tracking host).
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
        builder = builder.header("host", addr.to_string());
    }
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("user-agent")) {
        builder = builder.header("user-agent", "herald-tests/1.0");
    }
    // JSON unless the caller names its own type (a multipart upload).
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-type"))
    {
        builder = builder.header("content-type", "application/json");
    }
    if let Some(key) = key {
        builder = builder.header("authorization", format!("Bearer {key}"));
    }
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let response = sender
        .send_request(builder.body(Full::new(body)).expect("request"))
        .await
        .expect("response");
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.expect("body").to_bytes();
    HttpResponse { status, headers, body }
}

/// An HTTPS request to `addr`, asking for `host` by SNI and in `Host` (the server's
/// certificate is not verified); the answer and the certificate the server offered.
pub async fn https_call(
    addr: SocketAddr,
    host: &str,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Bytes,
) -> (HttpResponse, Vec<u8>) {
    let tls = herald_tls::client_config(herald_tls::Verification::Opportunistic, None).expect("client config");
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let name = rustls::pki_types::ServerName::try_from(host.to_owned()).expect("name");
    let stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .expect("TLS");
    let certificate = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|der| der.as_ref().to_vec())
        .unwrap_or_default();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("HTTP handshake");
    tokio::spawn(connection);
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header("host", host)
        .header("user-agent", "herald-tests/1.0");
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let response = sender
        .send_request(builder.body(Full::new(body)).expect("request"))
        .await
        .expect("response");
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.expect("body").to_bytes();
    (HttpResponse { status, headers, body }, certificate)
}

/// Adds `name` for the operator's team and marks it verified without DNS; its id.
pub async fn verified_domain(addr: SocketAddr, name: &str) -> String {
    let body = serde_json::json!({ "name": name, "dkim_algorithm": "ed25519" });
    let domain = call(addr, Method::POST, "/domains", Some(OPERATOR_KEY), Some(body)).await;
    assert_eq!(domain.status, StatusCode::CREATED, "{}", domain.text());
    let id = domain.json()["id"].as_str().expect("id").to_owned();
    let skip = serde_json::json!({ "skip_dns": true });
    let verified = call(
        addr,
        Method::POST,
        &format!("/domains/{id}/verify"),
        Some(OPERATOR_KEY),
        Some(skip),
    )
    .await;
    assert_eq!(verified.status, StatusCode::OK, "{}", verified.text());
    id
}

/// Opens an SMTPS session to `addr`, writes `script` and returns everything the server
/// answered until it closed the connection.
pub async fn smtps_transcript(addr: SocketAddr, script: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let tls = herald_tls::client_config(herald_tls::Verification::Opportunistic, None).expect("client config");
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let name = rustls::pki_types::ServerName::try_from("herald.test").expect("name");
    let mut stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .expect("TLS");
    stream.write_all(script.as_bytes()).await.expect("write");
    let mut transcript = Vec::new();
    let _ = stream.read_to_end(&mut transcript).await;
    String::from_utf8_lossy(&transcript).into_owned()
}

/// The email id of the first message a transcript's `250 2.0.0 OK <id>` accepted.
pub fn accepted_id(transcript: &str) -> String {
    transcript
        .split("250 2.0.0 OK ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no id in {transcript}"))
        .trim_matches(|c| c == '<' || c == '>')
        .to_owned()
}

/// `AUTH PLAIN` initial response for `resend` and `key`.
pub fn auth_plain(key: &str) -> String {
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, format!("\0resend\0{key}"))
}

/// A response read by a real HTTP/1.1 client.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: StatusCode,
    pub headers: hyper::HeaderMap,
    pub body: Bytes,
}

impl HttpResponse {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn content_type(&self) -> &str {
        self.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }
}

pub async fn http(addr: SocketAddr, method: Method, path: &str) -> HttpResponse {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("HTTP handshake");
    tokio::spawn(connection);
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string())
        .header("user-agent", "herald-tests")
        .body(Full::new(Bytes::new()))
        .expect("request");
    let response = sender.send_request(request).await.expect("response");
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.expect("body").to_bytes();
    HttpResponse { status, headers, body }
}

pub async fn get(addr: SocketAddr, path: &str) -> HttpResponse {
    http(addr, Method::GET, path).await
}

/// Reads one CRLF-terminated line.
pub async fn read_line<R: tokio::io::AsyncRead + Unpin>(reader: R) -> String {
    let mut line = String::new();
    BufReader::new(reader).read_line(&mut line).await.expect("read line");
    line
}

/// Waits until `condition` holds, checking every few milliseconds, failing after
/// `deadline`.
pub fn wait_until(deadline: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let end = Instant::now() + deadline;
    while !condition() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::park_timeout(Duration::from_millis(20));
    }
}

/// Polls the async `check` every few milliseconds until it gives a value; fails after
/// `deadline` naming `what`. For conditions that need requests to the server.
pub async fn eventually<T, F: std::future::Future<Output = Option<T>>>(
    deadline: Duration,
    what: &str,
    mut check: impl FnMut() -> F,
) -> T {
    let end = Instant::now() + deadline;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A self-signed certificate and key for `name`, as PEM.
pub fn certificate(name: &str) -> (String, String) {
    let certified = rcgen::generate_simple_self_signed(vec![name.to_owned()]).expect("rcgen");
    (certified.cert.pem(), certified.signing_key.serialize_pem())
}

/// Locks `mutex`, poisoned or not: the tests' shared state changes by single pushes and
/// increments, which a panic cannot leave half-done.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Copies the directory tree `from` into `to`, creating it.
pub fn copy_tree(from: &Path, to: &Path) {
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

/// Every page of a list, oldest page last: `list` gives a page and whether more follow.
fn every_page<T>(
    mut list: impl FnMut(&herald::storage::page::PageRequest) -> (Vec<T>, bool),
    id: impl Fn(&T) -> herald_queue::Id,
) -> Vec<T> {
    let mut all = Vec::new();
    let mut cursor = herald::storage::page::Cursor::Start;
    loop {
        let (page, more) = list(&herald::storage::page::PageRequest { limit: 100, cursor });
        let last = page.last().map(&id);
        all.extend(page);
        match (more, last) {
            (true, Some(last)) => cursor = herald::storage::page::Cursor::After(last),
            _ => return all,
        }
    }
}

/// Every webhook message `state` keeps, of every team's every endpoint, read through its
/// stores (so on either backend), oldest first.
pub fn webhook_messages(state: &herald::server::AppState) -> Vec<herald::webhooks::WebhookMessage> {
    let mut messages = Vec::new();
    for team in state.accounts().teams().expect("teams") {
        for webhook in state.webhooks().for_team(team.id).expect("webhooks") {
            messages.extend(every_page(
                |page| {
                    state
                        .webhook_log()
                        .messages(team.id, webhook.id, page)
                        .expect("messages")
                },
                |message| message.event_id,
            ));
        }
    }
    messages.sort_by_key(|message| message.event_id);
    messages
}

/// Every webhook delivery attempt `state` keeps, read through its stores, oldest first.
pub fn webhook_attempts(state: &herald::server::AppState) -> Vec<herald::webhooks::WebhookAttempt> {
    let mut attempts = Vec::new();
    for team in state.accounts().teams().expect("teams") {
        for webhook in state.webhooks().for_team(team.id).expect("webhooks") {
            attempts.extend(every_page(
                |page| {
                    state
                        .webhook_log()
                        .attempts(team.id, webhook.id, page)
                        .expect("attempts")
                },
                |attempt| attempt.id,
            ));
        }
    }
    attempts.sort_by_key(|attempt| attempt.id);
    attempts
}
