//! Contacts at scale: contacts created per second through `POST /contacts` (concurrent
//! clients) and through a CSV import, the peak memory of imports of two sizes (it must
//! not grow with the file: the upload streams to disk and the worker reads a chunk at a
//! time), and list-page latency with a million contacts in the team and in one segment.
//!
//! `cargo bench --profile dev --bench contacts` (`HERALD_BENCH_CONTACTS`, default
//! 1,000,000 imported rows; `HERALD_BENCH_SECONDS`, default 10 of API creation;
//! `HERALD_BENCH_CONNECTIONS`, default 16).

#![allow(missing_docs, clippy::print_stdout)]

#[path = "common/api_client.rs"]
mod api_client;
#[path = "common/server.rs"]
mod bench_server;
#[path = "common/imports.rs"]
mod imports;

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use api_client::Client;
use bench_server::KEY;
use bytes::Bytes;
use serde_json::{Value, json};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let rows: usize = env("HERALD_BENCH_CONTACTS", 1_000_000);
    let seconds: u64 = env("HERALD_BENCH_SECONDS", 10);
    let connections: usize = env("HERALD_BENCH_CONNECTIONS", 16);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(rows, Duration::from_secs(seconds), connections));
}

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

async fn run(rows: usize, load: Duration, connections: usize) {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let dir = bench_server::data_dir("bench-contacts");
    let running = bench_server::start(&dir, "[smtp]\nlisteners = []\n[delivery]\nenabled = false\n").await;
    let addr = running.http_addr;
    println!("herald contacts benchmark: {rows} imported rows, {connections} API clients");

    let (created, elapsed) = create_load(addr, load, connections).await;
    println!(
        "POST /contacts: {created} contacts in {:.1} s = {:.0}/s",
        elapsed.as_secs_f64(),
        created as f64 / elapsed.as_secs_f64()
    );

    let mut client = Client::connect(addr, KEY).await;
    let (_, segment) = client
        .post("/segments", Bytes::from(json!({ "name": "imported" }).to_string()))
        .await;
    let segment: Value = serde_json::from_slice(&segment).expect("segment");
    let segment = segment["id"].as_str().expect("segment id").to_owned();

    let small = rows / 10;
    for (label, count) in [("small", small), ("large", rows)] {
        let csv = dir.path().join(format!("{label}.csv"));
        let bytes = write_csv(&csv, label, count);
        let before = imports::rss_kib();
        let peak = Arc::new(AtomicU64::new(before));
        let sampling = Arc::new(AtomicBool::new(true));
        let sampler = {
            let (peak, sampling) = (Arc::clone(&peak), Arc::clone(&sampling));
            std::thread::spawn(move || {
                while sampling.load(Ordering::Relaxed) {
                    peak.fetch_max(imports::rss_kib(), Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        let started = Instant::now();
        let id = imports::upload(addr, &csv, &segment).await;
        let uploaded = started.elapsed();
        let import = wait_for(&mut client, &id).await;
        let elapsed = started.elapsed();
        sampling.store(false, Ordering::Relaxed);
        sampler.join().expect("sampler");
        assert_eq!(import["status"], "completed", "{import}");
        assert_eq!(import["counts"]["created"].as_u64(), Some(count as u64), "{import}");
        println!(
            "import of {count} rows ({:.0} MiB): uploaded in {:.1} s, imported in {:.1} s = {:.0} contacts/s; RSS {} MiB before, peak {} MiB (+{} MiB)",
            bytes as f64 / 1_048_576.0,
            uploaded.as_secs_f64(),
            elapsed.as_secs_f64(),
            count as f64 / elapsed.as_secs_f64(),
            before / 1024,
            peak.load(Ordering::Relaxed) / 1024,
            peak.load(Ordering::Relaxed).saturating_sub(before) / 1024,
        );
        let _ = std::fs::remove_file(&csv);
    }

    let total = created + small + rows;
    println!(
        "list pages with {total} contacts in the team, {} in the segment:",
        small + rows
    );
    latency(&mut client, "GET /contacts?limit=100 (first page)", |_| {
        "/contacts?limit=100".to_owned()
    })
    .await;
    let deep = deep_cursor(&mut client, "/contacts").await;
    let (_, middle) = client.get(&format!("/contacts?limit=100&after={deep}")).await;
    let middle: Value = serde_json::from_slice(&middle).expect("page");
    let cursor = middle["data"][99]["id"].as_str().expect("cursor").to_owned();
    latency(&mut client, "GET /contacts?limit=100&after=<deep cursor>", |_| {
        format!("/contacts?limit=100&after={cursor}")
    })
    .await;
    let path = format!("/segments/{segment}/contacts?limit=100");
    latency(&mut client, "GET /segments/{id}/contacts?limit=100", |_| path.clone()).await;
    let path = format!("/contacts?segment_id={segment}&limit=100&after={cursor}");
    latency(&mut client, "GET /contacts?segment_id=&after=<deep cursor>", |_| {
        path.clone()
    })
    .await;
    latency(&mut client, "GET /contacts/{email} (by address)", |n| {
        format!("/contacts/large-{}%40example.com", (n * 7919) % rows)
    })
    .await;
    running.shutdown().await;
}

/// `connections` clients each creating contacts one after another for `load`.
async fn create_load(addr: SocketAddr, load: Duration, connections: usize) -> (usize, Duration) {
    let started = Instant::now();
    let deadline = started + load;
    let mut tasks = Vec::new();
    for client_no in 0..connections {
        tasks.push(tokio::spawn(async move {
            let mut client = Client::connect(addr, KEY).await;
            let mut created = 0usize;
            while Instant::now() < deadline {
                let body = json!({ "email": format!("api-{client_no}-{created}@example.com"), "first_name": "Api" });
                let (status, text) = client.post("/contacts", Bytes::from(body.to_string())).await;
                assert_eq!(status, 201, "{}", String::from_utf8_lossy(&text));
                created += 1;
            }
            created
        }));
    }
    let mut created = 0;
    for task in tasks {
        created += task.await.expect("client");
    }
    (created, started.elapsed())
}

fn write_csv(path: &Path, label: &str, rows: usize) -> u64 {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("csv"));
    writeln!(out, "email,first_name,last_name,unsubscribed").expect("write");
    for n in 0..rows {
        writeln!(out, "{label}-{n}@example.com,First{n},Last{n},false").expect("write");
    }
    out.flush().expect("flush");
    std::fs::metadata(path).expect("size").len()
}

async fn wait_for(client: &mut Client, id: &str) -> Value {
    loop {
        let (_, body) = client.get(&format!("/contacts/imports/{id}")).await;
        let import: Value = serde_json::from_slice(&body).expect("import");
        if import["status"] == "completed" || import["status"] == "failed" {
            return import;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The id 500 pages into `path`'s list.
async fn deep_cursor(client: &mut Client, path: &str) -> String {
    let mut after: Option<String> = None;
    for _ in 0..500 {
        let page = match &after {
            Some(id) => format!("{path}?limit=100&after={id}"),
            None => format!("{path}?limit=100"),
        };
        let (_, body) = client.get(&page).await;
        let body: Value = serde_json::from_slice(&body).expect("page");
        after = body["data"]
            .as_array()
            .and_then(|d| d.last())
            .map(|l| l["id"].as_str().expect("id").to_owned());
    }
    after.expect("a cursor")
}

async fn latency(client: &mut Client, label: &str, path: impl Fn(usize) -> String) {
    let mut times = Vec::with_capacity(200);
    for n in 0..200 {
        let started = Instant::now();
        let (status, body) = client.get(&path(n)).await;
        times.push(started.elapsed());
        assert_eq!(status, 200, "{label}: {}", String::from_utf8_lossy(&body));
    }
    times.sort();
    println!(
        "  {label}: p50 {:.2} ms, p99 {:.2} ms",
        times[times.len() / 2].as_secs_f64() * 1e3,
        times[times.len() * 99 / 100].as_secs_f64() * 1e3
    );
}
