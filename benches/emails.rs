//! Load benchmark of `POST /emails`: accepted emails per second over keep-alive
//! connections (single emails and batches of 100), with latency percentiles, against a
//! real server in this process with a real RocksDB on disk and durable acceptance.
//!
//! `cargo bench --profile dev --bench emails` (`HERALD_BENCH_SECONDS`, default 10 per phase;
//! `HERALD_BENCH_CONNECTIONS`, default 64). With `HERALD_BENCH_POSTGRES=1` the records go
//! to a private PostgreSQL started for the run (the tests' `util/postgres.rs`; fsync off
//! there, so this measures herald's side, not the database's disk).

#![allow(missing_docs, clippy::print_stdout)]

#[path = "common/api_client.rs"]
mod api_client;
#[path = "common/server.rs"]
mod bench_server;
#[path = "../tests/util/postgres.rs"]
mod postgres;

use api_client::Client;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{Value, json};

use bench_server::KEY;

/// The same allocator as the `herald` binary, so the numbers match what operators run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // `cargo bench` passes `--bench`; a filter argument selects nothing here.
    let seconds: u64 = env("HERALD_BENCH_SECONDS", 10);
    let connections: usize = env("HERALD_BENCH_CONNECTIONS", 64);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(Duration::from_secs(seconds), connections));
}

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

async fn run(duration: Duration, connections: usize) {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let dir = bench_server::data_dir("bench-emails");
    let mut config = "[smtp]\nlisteners = []\n[delivery]\nenabled = false\n".to_owned();
    let on_postgres = std::env::var("HERALD_BENCH_POSTGRES").is_ok_and(|v| v == "1");
    if on_postgres {
        config.push_str(&format!("[cluster]\npostgres = \"{}\"\n", postgres::database()));
    }
    let running = bench_server::start(&dir, &config).await;
    let addr = running.http_addr;
    bench_server::verified_domain(addr, "bench.test", "ed25519").await;

    let email = json!({
        "from": "Bench <bench@bench.test>",
        "to": ["user@example.org"],
        "subject": "Your receipt",
        "html": format!("<p>{}</p>", "Thanks for your order. ".repeat(60)),
    });
    let single = Bytes::from(email.to_string());
    let batch = Bytes::from(Value::Array(vec![email; 100]).to_string());

    println!(
        "herald POST /emails load benchmark: {connections} keep-alive connections, {}s per phase, records in {}",
        duration.as_secs(),
        if on_postgres { "PostgreSQL" } else { "RocksDB" }
    );
    let single_phase = |name, rate, connections| Phase {
        name,
        path: "/emails",
        body: single.clone(),
        connections,
        rate,
        emails_per_request: 1,
    };
    let max = single_phase("single, max rate", None, connections)
        .run(addr, duration)
        .await;
    single_phase("single, half of max", Some(max / 2.0), connections)
        .run(addr, duration)
        .await;
    single_phase("single, 200/s", Some(200.0), connections.min(8))
        .run(addr, duration)
        .await;
    let batches = Phase {
        name: "batch of 100",
        path: "/emails/batch",
        body: batch,
        connections: connections.min(16),
        rate: None,
        emails_per_request: 100,
    };
    batches.run(addr, duration).await;
    if std::env::var_os("HERALD_BENCH_METRICS").is_some() {
        let text = herald::telemetry::metrics().render();
        for line in text
            .lines()
            .filter(|l| l.starts_with("herald_spool_commit") || l.starts_with("herald_http_request_seconds"))
        {
            println!("{line}");
        }
    }
    running.shutdown().await;
}

/// One load phase: `connections` clients posting `body` to `path` for a while; with
/// `rate`, paced to that many requests per second in all.
struct Phase {
    name: &'static str,
    path: &'static str,
    body: Bytes,
    connections: usize,
    rate: Option<f64>,
    emails_per_request: usize,
}

impl Phase {
    /// Runs the phase for `duration`; returns accepted emails per second.
    async fn run(self, addr: SocketAddr, duration: Duration) -> f64 {
        let Phase {
            name,
            path,
            body,
            connections,
            rate,
            emails_per_request,
        } = self;
        let stop = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..connections {
            let (body, stop) = (body.clone(), Arc::clone(&stop));
            let interval = rate.map(|r| Duration::from_secs_f64(connections as f64 / r));
            tasks.push(tokio::spawn(async move {
                let mut client = Client::connect(addr, KEY).await;
                let mut latencies = Vec::new();
                let mut failures = 0u64;
                let mut next = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    if let Some(interval) = interval {
                        tokio::time::sleep_until(next.into()).await;
                        next += interval;
                    }
                    let sent = Instant::now();
                    let (status, _) = client.post(path, body.clone()).await;
                    latencies.push(sent.elapsed());
                    if status != 200 {
                        failures += 1;
                    }
                }
                (latencies, failures)
            }));
        }
        tokio::time::sleep(duration).await;
        stop.store(true, Ordering::Relaxed);
        let mut latencies = Vec::new();
        let mut failures = 0;
        for task in tasks {
            let (l, f) = task.await.expect("client");
            latencies.extend(l);
            failures += f;
        }
        let elapsed = started.elapsed().as_secs_f64();
        latencies.sort_unstable();
        let requests = latencies.len() as f64;
        let pct = |p: f64| {
            latencies
                .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
                .copied()
                .unwrap_or_default()
        };
        let emails = (requests - failures as f64) * emails_per_request as f64 / elapsed;
        println!(
            "{name:<22} {emails:>9.0} emails/s  {:>8.0} req/s  p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms  failures {failures}",
            requests / elapsed,
            pct(0.50).as_secs_f64() * 1e3,
            pct(0.99).as_secs_f64() * 1e3,
            latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
        );
        emails
    }
}
