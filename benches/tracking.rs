//! Tracking: requests served per second by herald's HTTP listener (each a signature
//! check, a domain lookup from the cache, and an event written through the outbox), and
//! the cost of rewriting a 100 KB HTML message with 200 links at acceptance.
//!
//! `cargo bench --profile dev --bench tracking` (`HERALD_BENCH_SECONDS`, default 10;
//! `HERALD_BENCH_CONNECTIONS`, default 32).

#![allow(missing_docs, clippy::print_stdout)]

#[path = "common/api_client.rs"]
mod api_client;
#[path = "common/server.rs"]
mod bench_server;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use api_client::Client;
use bench_server::KEY;
use bytes::Bytes;
use herald::tracking::{Signer, rewrite};
use herald_queue::Id;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let seconds: u64 = env("HERALD_BENCH_SECONDS", 10);
    let connections: usize = env("HERALD_BENCH_CONNECTIONS", 32);
    println!("herald tracking benchmark");
    rewrite_cost();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(requests(Duration::from_secs(seconds), connections));
}

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn rewrite_cost() {
    let mut html = String::from("<!doctype html><html><body><table>");
    let mut link = 0;
    while html.len() < 100 * 1024 {
        html.push_str(&format!(
            "<tr><td style=\"font-family:Arial\">Item {link}: <a href=\"https://shop.example.com/p/{link}?utm_source=mail&amp;utm_campaign=bench\">see it</a>, lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.</td></tr>"
        ));
        link += 1;
        if link == 200 {
            while html.len() < 100 * 1024 {
                html.push_str("<tr><td>Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip.</td></tr>");
            }
        }
    }
    html.push_str("</table></body></html>");
    let signer = Signer::new(&[7; 32]);
    let (team, email) = (Id::from_bytes([1; 16]), Id::from_bytes([2; 16]));
    let click = |index: u16, target: &str| {
        signer
            .click_path(team, email, index, target)
            .map(|path| format!("https://links.example.com{path}"))
    };
    let pixel = format!("https://links.example.com{}", signer.open_path(team, email));
    let runs = 200;
    let started = Instant::now();
    let mut out = 0;
    for _ in 0..runs {
        out += rewrite::html(&html, Some(&click), Some(&pixel))
            .expect("rewrites")
            .len();
    }
    let each = started.elapsed() / runs;
    println!(
        "rewrite a {} KB message with {link} links and the pixel: {:.2} ms each ({:.0}/s on one core), {} KB out",
        html.len() / 1024,
        each.as_secs_f64() * 1e3,
        1.0 / each.as_secs_f64(),
        out / runs as usize / 1024
    );
}

async fn requests(load: Duration, connections: usize) {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let dir = bench_server::data_dir("bench-tracking");
    let running = bench_server::start(
        &dir,
        "[smtp]\nlisteners = []\n[delivery]\nenabled = false\n[tracking]\nscheme = \"http\"\n",
    )
    .await;
    let addr = running.http_addr;
    let mut client = Client::connect(addr, KEY).await;
    let domain =
        json!({ "name": "shop.test", "open_tracking": true, "click_tracking": true, "tracking_subdomain": "links" });
    let (_, created) = client.post("/domains", Bytes::from(domain.to_string())).await;
    let created: Value = serde_json::from_slice(&created).expect("domain");
    let id = created["id"].as_str().expect("id");
    client
        .post(
            &format!("/domains/{id}/verify"),
            Bytes::from(json!({ "skip_dns": true }).to_string()),
        )
        .await;
    // A hundred emails, as a campaign's recipients open them: requests spread over them.
    let batch: Vec<Value> = (0..100)
        .map(|n| json!({ "from": "a@shop.test", "to": format!("r{n}@example.net"), "subject": "s", "html": "<p><a href=\"https://example.com/\">x</a></p>" }))
        .collect();
    let (status, sent) = client
        .post("/emails/batch", Bytes::from(Value::Array(batch).to_string()))
        .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&sent));
    let sent: Value = serde_json::from_slice(&sent).expect("sent");
    let emails: Vec<Id> = sent["data"]
        .as_array()
        .expect("ids")
        .iter()
        .map(|e| e["id"].as_str().expect("id").parse().expect("uuid"))
        .collect();
    let (_, teams) = client.get("/teams").await;
    let teams: Value = serde_json::from_slice(&teams).expect("teams");
    let team: Id = teams["data"][0]["id"].as_str().expect("team").parse().expect("uuid");
    let signer = running.state.tracking_signer().expect("signer");
    let opens: Vec<String> = emails.iter().map(|id| signer.open_path(team, *id)).collect();
    let clicks: Vec<String> = emails
        .iter()
        .map(|id| signer.click_path(team, *id, 0, "https://example.com/").expect("path"))
        .collect();

    for (label, paths) in [("open (pixel)", opens), ("click (redirect)", clicks)] {
        let started = Instant::now();
        let deadline = started + load;
        let mut tasks = Vec::new();
        for n in 0..connections {
            let paths: Vec<String> = paths
                .iter()
                .skip(n % paths.len())
                .step_by(connections)
                .cloned()
                .collect();
            tasks.push(tokio::spawn(async move { hammer(addr, &paths, deadline).await }));
        }
        let mut served = 0u64;
        for task in tasks {
            served += task.await.expect("client");
        }
        let elapsed = started.elapsed().as_secs_f64();
        println!(
            "{label}: {served} requests in {elapsed:.1} s over {connections} connections = {:.0}/s",
            served as f64 / elapsed
        );
    }
    running.shutdown().await;
}

async fn hammer(addr: SocketAddr, paths: &[String], deadline: Instant) -> u64 {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(connection);
    let mut served = 0;
    while Instant::now() < deadline {
        let path = &paths[served as usize % paths.len()];
        let request = Request::get(path.as_str())
            .header("host", "links.shop.test")
            .header("user-agent", "Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0")
            .body(Full::new(Bytes::new()))
            .expect("request");
        sender.ready().await.expect("ready");
        let response = sender.send_request(request).await.expect("response");
        assert!(
            response.status().is_success() || response.status().is_redirection(),
            "{}",
            response.status()
        );
        let _ = response.into_body().collect().await;
        served += 1;
    }
    served
}
