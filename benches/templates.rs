//! Template rendering: renders per second of a 20 KB HTML template with 10 variables on
//! one core (parsed once, rendered many times, as a batch or broadcast renders), and
//! `POST /emails/batch` of 100 template sends against 100 plain sends of the same HTML,
//! in the same run.
//!
//! `cargo bench --profile dev --bench templates` (`HERALD_BENCH_SECONDS`, default 5 per
//! phase; `HERALD_BENCH_CONNECTIONS`, default 4).

#![allow(missing_docs, clippy::print_stdout)]

#[path = "common/api_client.rs"]
mod api_client;
#[path = "common/server.rs"]
mod bench_server;

use std::borrow::Cow;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use api_client::Client;
use bench_server::KEY;
use bytes::Bytes;
use herald::templates::merge::{self, Escape};
use serde_json::{Value, json};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const VARIABLES: usize = 10;

fn main() {
    let seconds: u64 = env("HERALD_BENCH_SECONDS", 5);
    let connections: usize = env("HERALD_BENCH_CONNECTIONS", 4);
    let html = template_html();
    println!(
        "herald templates benchmark: a {} KB template with {VARIABLES} variables",
        html.len() / 1024
    );
    render_rate(&html, Duration::from_secs(seconds));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(batches(&html, Duration::from_secs(seconds), connections));
}

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// About 20 KB of email HTML using each of the variables a few times.
fn template_html() -> String {
    let mut html = String::from("<!doctype html><html><body><table width=\"600\">");
    let mut row = 0;
    while html.len() < 20 * 1024 {
        let var = row % VARIABLES;
        html.push_str(&format!(
            "<tr><td style=\"padding:8px;font-family:Arial,sans-serif;color:#333\">Row {row}: dear {{{{{{V{var}}}}}}}, your order is on its way &mdash; {{{{{{V{}|soon}}}}}}.</td></tr>",
            (var + 1) % VARIABLES
        ));
        row += 1;
    }
    html.push_str("</table></body></html>");
    html
}

fn values(n: usize) -> Vec<(String, String)> {
    (0..VARIABLES)
        .map(|v| (format!("V{v}"), format!("value {v} for <recipient {n}> & co")))
        .collect()
}

fn render_rate(html: &str, time: Duration) {
    let parsed = merge::parse(html).expect("parses");
    let started = Instant::now();
    let mut renders = 0u64;
    let mut bytes = 0usize;
    while started.elapsed() < time {
        for n in 0..1_000 {
            let vars = values(n);
            let out = parsed
                .render(Escape::Html, |name| {
                    vars.iter()
                        .find(|(k, _)| k == name)
                        .map(|(_, v)| Cow::Borrowed(v.as_str()))
                })
                .expect("renders");
            bytes += out.len();
        }
        renders += 1_000;
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "render (one core, values escaped): {renders} renders in {elapsed:.1} s = {:.0}/s, {:.0} MB/s of output",
        renders as f64 / elapsed,
        bytes as f64 / elapsed / 1e6
    );
    let started = Instant::now();
    let mut parses = 0u64;
    while started.elapsed() < time / 5 {
        let _ = merge::parse(html).expect("parses");
        parses += 1;
    }
    println!(
        "parse: {:.0}/s (once per template a request uses)",
        parses as f64 / started.elapsed().as_secs_f64()
    );
}

async fn batches(html: &str, load: Duration, connections: usize) {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let dir = bench_server::data_dir("bench-templates");
    let running = bench_server::start(&dir, "[smtp]\nlisteners = []\n[delivery]\nenabled = false\n").await;
    let addr = running.http_addr;
    bench_server::verified_domain(addr, "bench.test", "ed25519").await;
    let mut client = Client::connect(addr, KEY).await;
    let variables: Vec<Value> = (0..VARIABLES)
        .map(|v| json!({ "key": format!("V{v}"), "type": "string" }))
        .collect();
    let template = json!({ "name": "bench", "alias": "bench", "from": "app@bench.test", "subject": "Order for {{{V0}}}", "html": html, "variables": variables });
    let (status, body) = client.post("/templates", Bytes::from(template.to_string())).await;
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let (status, _) = client.post("/templates/bench/publish", Bytes::new()).await;
    assert_eq!(status, 200);

    // The plain sends carry the very HTML the template renders for each recipient, so
    // both batches build, sign and store the same bytes: the difference is rendering.
    let parsed = merge::parse(html).expect("parses");
    let plain: Vec<Value> = (0..100)
        .map(|n| {
            let vars = values(n);
            let rendered = parsed
                .render(Escape::Html, |name| {
                    vars.iter().find(|(k, _)| k == name).map(|(_, v)| Cow::Borrowed(v.as_str()))
                })
                .expect("renders");
            json!({ "from": "app@bench.test", "to": format!("r{n}@example.net"), "subject": format!("Order for {}", vars[0].1), "html": rendered })
        })
        .collect();
    let templated: Vec<Value> = (0..100)
        .map(|n| {
            let vars: serde_json::Map<String, Value> =
                values(n).into_iter().map(|(k, v)| (k, Value::String(v))).collect();
            json!({ "to": format!("r{n}@example.net"), "template": { "id": "bench", "variables": vars } })
        })
        .collect();
    for (label, body) in [("plain", plain), ("template", templated)] {
        let body = Bytes::from(Value::Array(body).to_string());
        let (rate, p50, p99) = batch_load(addr, &body, load, connections).await;
        println!(
            "POST /emails/batch of 100 {label} sends, {connections} connections: {rate:.1} batches/s = {:.0} emails/s, p50 {p50:.1} ms, p99 {p99:.1} ms",
            rate * 100.0
        );
    }
    running.shutdown().await;
}

async fn batch_load(addr: SocketAddr, body: &Bytes, load: Duration, connections: usize) -> (f64, f64, f64) {
    let started = Instant::now();
    let deadline = started + load;
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let body = body.clone();
        tasks.push(tokio::spawn(async move {
            let mut client = Client::connect(addr, KEY).await;
            let mut times = Vec::new();
            while Instant::now() < deadline {
                let sent = Instant::now();
                let (status, reply) = client.post("/emails/batch", body.clone()).await;
                assert_eq!(status, 200, "{}", String::from_utf8_lossy(&reply));
                times.push(sent.elapsed());
            }
            times
        }));
    }
    let mut times = Vec::new();
    for task in tasks {
        times.extend(task.await.expect("client"));
    }
    let elapsed = started.elapsed().as_secs_f64();
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)].as_secs_f64() * 1e3;
    (times.len() as f64 / elapsed, at(0.5), at(0.99))
}
