//! Load beyond capacity (issue #8): a flood of SMTP connections past `[smtp]
//! connections_max` and `connections_per_address_max`, and API requests past the rate
//! limit. The excess is answered `421 4.7.0` and `429` (with the rate-limit headers), the
//! connections within the limits are served, memory stays bounded (the peak RSS is
//! printed), and once the flood stops the server serves normally again by itself.

mod util;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use hyper::{Method, StatusCode};
use serde_json::json;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpSocket, TcpStream};
use util::{OPERATOR_KEY, call};

/// Connections the flood opens at once: five times the server's total.
const FLOOD: usize = 500;
/// `[smtp] connections_max` for the test.
const TOTAL_MAX: usize = 100;
/// `[smtp] connections_per_address_max` for the test.
const PER_ADDRESS_MAX: usize = 60;
/// API requests sent as fast as possible against a limit of 20/s.
const API_BURST: usize = 200;
/// Resident memory the whole test process (server, flood clients and all) may reach.
const RSS_BOUND: u64 = 512 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floods_get_421_and_429_memory_stays_bounded_and_service_recovers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = util::config(dir.path(), "[api]\nrate_limit = \"20/s\"\n");
    config.smtp.limits.connections_max = TOTAL_MAX;
    config.smtp.limits.connections_per_address_max = PER_ADDRESS_MAX;
    let running = util::start_with_key(config, Some(OPERATOR_KEY)).await;
    let http = running.http_addr;
    let starttls = running.smtp[0].1;
    util::verified_domain(http, "example.test").await;

    // SMTP: FLOOD connections from two loopback addresses, each held open until all are
    // answered.
    let mut flood = Vec::new();
    for i in 0..FLOOD {
        let from = IpAddr::V4(Ipv4Addr::new(127, 0, 0, if i % 2 == 0 { 1 } else { 2 }));
        flood.push(tokio::spawn(greeting(from, starttls)));
    }
    let mut greeted = Vec::new();
    let (mut served, mut refused) = (0, 0);
    for task in flood {
        let (stream, first) = task.await.expect("flood client");
        if first.starts_with("220 ") {
            served += 1;
        } else {
            assert!(first.starts_with("421 4.7.0 "), "over a limit: {first:?}");
            refused += 1;
        }
        greeted.push(stream);
    }
    println!("SMTP flood of {FLOOD}: {served} served, {refused} refused with 421");
    assert!(served > 0 && served <= TOTAL_MAX, "{served} served");
    assert_eq!(served + refused, FLOOD);

    // While the flood holds its connections, the API still answers.
    assert_eq!(util::get(http, "/healthz").await.status, StatusCode::OK);
    drop(greeted);

    // API: a burst past the rate limit.
    let mut burst = Vec::new();
    for _ in 0..API_BURST {
        burst.push(tokio::spawn(async move {
            call(http, Method::GET, "/domains", Some(OPERATOR_KEY), None).await
        }));
    }
    let (mut ok, mut limited) = (0, 0);
    for task in burst {
        let response = task.await.expect("burst client");
        match response.status {
            StatusCode::OK => ok += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                limited += 1;
                let body = response.json();
                assert_eq!(body["name"], "rate_limit_exceeded", "{body}");
                assert!(response.headers.contains_key("retry-after"), "429 carries retry-after");
            }
            other => panic!("unexpected status {other} in the burst"),
        }
    }
    println!("API burst of {API_BURST}: {ok} answered, {limited} limited with 429");
    assert!(limited > 0 && ok > 0, "{ok} answered, {limited} limited");

    let peak = peak_rss();
    println!("peak RSS of the test process: {} MiB", peak >> 20);
    assert!(peak < RSS_BOUND, "peak RSS {} MiB", peak >> 20);

    // The flood is over: a normal client is served, over SMTP and the API.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let body = json!({"from": "a@example.test", "to": "b@example.org", "subject": "after", "text": "x"});
        let response = call(http, Method::POST, "/emails", Some(OPERATOR_KEY), Some(body)).await;
        if response.status == StatusCode::OK {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the API still refuses after the flood: {}",
            response.text()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let script = format!(
        "EHLO c\r\nAUTH PLAIN {}\r\nMAIL FROM:<a@example.test>\r\nRCPT TO:<b@example.org>\r\nDATA\r\nFrom: a@example.test\r\n\r\nx\r\n.\r\nQUIT\r\n",
        util::auth_plain(OPERATOR_KEY)
    );
    let transcript = util::smtps_transcript(running.smtp[1].1, &script).await;
    assert!(transcript.contains("250 2.0.0 OK "), "{transcript}");
    running.shutdown().await;
}

/// Connects from `from` and reads the first reply line; keeps the connection open.
async fn greeting(from: IpAddr, to: SocketAddr) -> (TcpStream, String) {
    let socket = TcpSocket::new_v4().expect("socket");
    socket.bind(SocketAddr::new(from, 0)).expect("bind a loopback address");
    let mut stream = socket.connect(to).await.expect("connect");
    let mut line = Vec::new();
    let mut byte = [0_u8; 1];
    while !line.ends_with(b"\r\n") {
        match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut byte)).await {
            Ok(Ok(1)) => line.push(byte[0]),
            other => panic!("no greeting: {other:?} after {:?}", String::from_utf8_lossy(&line)),
        }
    }
    (stream, String::from_utf8_lossy(&line).into_owned())
}

/// The process's peak resident set (`VmHWM`), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().strip_suffix("kB"))
        .and_then(|kib| kib.trim().parse::<u64>().ok())
        .expect("VmHWM")
        * 1024
}

/// Writes the disk cannot take fast enough: with a commit queue of one, a burst of
/// submissions gets `503` for what does not fit (never a `500`), everything answered `200`
/// is kept, and submissions are accepted again once the queue has drained.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submissions_beyond_what_the_disk_takes_get_503_and_nothing_accepted_is_lost() {
    const BURST: usize = 300;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = util::config(dir.path(), "[api]\nrate_limit = \"100000/s\"\n");
    config.spool.commit_queue_max = 1;
    let running = util::start_with_key(config, Some(OPERATOR_KEY)).await;
    let http = running.http_addr;
    // With a queue of one even set-up requests can meet a busy spool (each request's log
    // entry is written after its answer): they are retried, as clients would.
    let domain = until_accepted(
        http,
        "/domains",
        json!({"name": "example.test", "dkim_algorithm": "ed25519"}),
    )
    .await;
    let id = domain["id"].as_str().expect("id").to_owned();
    until_accepted(http, &format!("/domains/{id}/verify"), json!({"skip_dns": true})).await;

    let mut burst = Vec::new();
    for i in 0..BURST {
        burst.push(tokio::spawn(async move {
            let body =
                json!({"from": "a@example.test", "to": "b@example.org", "subject": format!("burst {i}"), "text": "x"});
            call(http, Method::POST, "/emails", Some(OPERATOR_KEY), Some(body)).await
        }));
    }
    let (mut accepted, mut busy) = (Vec::new(), 0);
    for task in burst {
        let response = task.await.expect("burst client");
        match response.status {
            StatusCode::OK => accepted.push(response.json()["id"].as_str().expect("id").to_owned()),
            StatusCode::SERVICE_UNAVAILABLE => {
                let body = response.json();
                assert_eq!(body["name"], "service_unavailable", "{body}");
                assert!(body["message"].as_str().is_some_and(|m| m.contains("busy")), "{body}");
                busy += 1;
            }
            other => panic!("unexpected status {other}: {}", response.text()),
        }
    }
    println!(
        "submission burst of {BURST} with a commit queue of 1: {} accepted, {busy} refused with 503",
        accepted.len()
    );
    assert!(busy > 0, "the burst never filled the commit queue");
    assert!(!accepted.is_empty());

    let mut listed = std::collections::HashSet::new();
    let mut after: Option<String> = None;
    loop {
        let path = match &after {
            Some(id) => format!("/emails?limit=100&after={id}"),
            None => "/emails?limit=100".to_owned(),
        };
        let page = call(http, Method::GET, &path, Some(OPERATOR_KEY), None).await.json();
        let data = page["data"].as_array().expect("data").clone();
        for email in &data {
            listed.insert(email["id"].as_str().expect("id").to_owned());
        }
        if page["has_more"] != true {
            break;
        }
        after = data.last().and_then(|e| e["id"].as_str()).map(str::to_owned);
    }
    for id in &accepted {
        assert!(listed.contains(id), "accepted {id} is not listed");
    }
    // The queue drains by itself (the burst's request logs are written after it).
    let after_burst = json!({"from": "a@example.test", "to": "b@example.org", "subject": "after", "text": "x"});
    until_accepted(http, "/emails", after_burst).await;
    running.shutdown().await;
}

/// `POST path` with `body`, again while the spool answers busy (at most 10 s); the
/// accepted answer's body.
async fn until_accepted(http: SocketAddr, path: &str, body: serde_json::Value) -> serde_json::Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let response = call(http, Method::POST, path, Some(OPERATOR_KEY), Some(body.clone())).await;
        if response.status.is_success() {
            return response.json();
        }
        assert_eq!(response.status, StatusCode::SERVICE_UNAVAILABLE, "{}", response.text());
        assert!(
            std::time::Instant::now() < deadline,
            "POST {path} still busy after 10 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `[http] connections_max` for [`http_connections_past_the_limit_get_503_and_room_comes_back`].
const HTTP_CONNECTIONS_MAX: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_connections_past_the_limit_get_503_and_room_comes_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = util::config(dir.path(), "");
    config.http.connections_max = HTTP_CONNECTIONS_MAX;
    let running = util::start_with_key(config, Some(OPERATOR_KEY)).await;
    let http = running.http_addr;
    // Idle keep-alive connections fill the server's room.
    let mut held = Vec::new();
    for _ in 0..HTTP_CONNECTIONS_MAX {
        held.push(TcpStream::connect(http).await.expect("connect"));
    }
    // Wait until the server has taken them all (accept runs on its own task).
    let refused = util::eventually(Duration::from_secs(10), "a connection refused with 503", || async {
        Some(healthz(http).await).filter(|answer| answer.starts_with("HTTP/1.1 503"))
    })
    .await;
    assert!(
        refused.contains("service_unavailable") && refused.contains("Too many connections"),
        "{refused}"
    );
    drop(held);
    // Room comes back once the held connections close.
    util::eventually(Duration::from_secs(10), "room for a connection again", || async {
        healthz(http).await.starts_with("HTTP/1.1 200").then_some(())
    })
    .await;
    running.shutdown().await;
}

/// `GET /healthz` on a new connection, as raw text: everything the server answered before
/// closing, or what it sent within half a second (an accepted connection stays open).
async fn healthz(http: SocketAddr) -> String {
    use tokio::io::AsyncWriteExt;
    let mut stream = TcpStream::connect(http).await.expect("connect");
    let _ = stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: herald.test\r\nConnection: close\r\n\r\n")
        .await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_millis(500), stream.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}
