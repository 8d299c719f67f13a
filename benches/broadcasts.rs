//! Broadcasts at scale: a broadcast to a segment of N contacts (default 100,000).
//!
//! 1. Expansion, delivery off: from `POST /broadcasts` with `send: true` until the
//!    broadcast is `sent`, every email personalised and durably spooled; emails per
//!    second and the peak RSS while it runs (it must not grow with the segment: a page
//!    of contacts at a time).
//! 2. Delivery on, to a loopback SMTP sink, DKIM-signed (RSA-2048): the whole broadcast
//!    delivered, and meanwhile a transactional `POST /emails` every 100 ms, each timed
//!    from the request to its arrival at the sink (p50, p99, max): the broadcast's pacing
//!    keeps them from waiting behind it.
//!
//! `cargo bench --profile dev --bench broadcasts` (`HERALD_BENCH_CONTACTS`, default
//! 100,000; `HERALD_BENCH_DELIVERY=0` runs the expansion only).

#![allow(missing_docs, clippy::print_stdout)]

#[path = "common/api_client.rs"]
mod api_client;
#[path = "common/server.rs"]
mod bench_server;
#[path = "common/imports.rs"]
mod imports;
#[path = "../tests/util/sink.rs"]
mod sink;

use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use api_client::Client;
use bench_server::KEY;
use bytes::Bytes;
use serde_json::{Value, json};
use sink::{Sink, SinkOptions};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let contacts: usize = std::env::var("HERALD_BENCH_CONTACTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(contacts));
}

async fn run(contacts: usize) {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    println!("herald broadcasts benchmark: {contacts} contacts");
    expansion(contacts).await;
    if std::env::var("HERALD_BENCH_DELIVERY").as_deref() != Ok("0") {
        delivery(contacts).await;
    }
}

/// Phase 1: expansion and spooling, delivery off.
async fn expansion(contacts: usize) {
    let dir = bench_server::data_dir("bench-broadcasts");
    let running = bench_server::start(&dir, "[smtp]\nlisteners = []\n[delivery]\nenabled = false\n").await;
    let addr = running.http_addr;
    let segment = audience(addr, &dir, contacts).await;
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
    let id = broadcast(addr, &segment).await;
    let done = until_sent(addr, &id).await;
    let elapsed = started.elapsed();
    sampling.store(false, Ordering::Relaxed);
    sampler.join().expect("sampler");
    assert_eq!(done["progress"]["sent"].as_u64(), Some(contacts as u64), "{done}");
    assert_eq!(running.state.spool().depth(), contacts as u64);
    println!(
        "expansion: {contacts} personalised emails spooled durably in {:.1} s = {:.0} emails/s; RSS {} MiB before, peak {} MiB (+{} MiB)",
        elapsed.as_secs_f64(),
        contacts as f64 / elapsed.as_secs_f64(),
        before / 1024,
        peak.load(Ordering::Relaxed) / 1024,
        peak.load(Ordering::Relaxed).saturating_sub(before) / 1024
    );
    running.shutdown().await;
}

/// Phase 2: delivery to a sink, with transactional mail timed through it.
async fn delivery(contacts: usize) {
    let sink = Sink::start(SinkOptions {
        keep_whole: 0,
        ..SinkOptions::default()
    });
    let dir = bench_server::data_dir("bench-broadcasts");
    let sections = format!(
        "[smtp]\nlisteners = []\n[delivery]\nrelay = \"{}\"\nretry_intervals = [\"1s\"]\n",
        sink.addr()
    );
    let running = bench_server::start(&dir, &sections).await;
    let addr = running.http_addr;
    let segment = audience(addr, &dir, contacts).await;
    let started = Instant::now();
    let id = broadcast(addr, &segment).await;
    let mut client = Client::connect(addr, KEY).await;
    let mut sent_at: HashMap<String, Instant> = HashMap::new();
    let mut latencies = Vec::new();
    let mut seen = 0;
    let mut probe = 0;
    let mut next_probe = Instant::now();
    let total = contacts;
    while seen < total + probe || latencies.len() < probe {
        if seen < total && Instant::now() >= next_probe {
            let to = format!("probe-{probe}@example.org");
            let body = json!({ "from": "auth@bench.test", "to": to, "subject": "Your code", "text": "123456" });
            let (status, text) = client.post("/emails", Bytes::from(body.to_string())).await;
            assert_eq!(status, 200, "{}", String::from_utf8_lossy(&text));
            sent_at.insert(to, Instant::now());
            probe += 1;
            next_probe += Duration::from_millis(100);
        }
        for recipient in sink.recipients_since(seen) {
            seen += 1;
            if let Some(at) = sent_at.remove(&recipient) {
                latencies.push(at.elapsed());
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(1800),
            "the broadcast took too long"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = started.elapsed();
    let done = until_sent(addr, &id).await;
    assert_eq!(done["progress"]["sent"].as_u64(), Some(contacts as u64), "{done}");
    latencies.sort();
    let at = |q: usize| latencies[(latencies.len() * q / 100).min(latencies.len() - 1)].as_secs_f64();
    println!(
        "delivery: {contacts} broadcast emails (RSA-2048 DKIM) into the sink in {:.1} s = {:.0} emails/s end to end",
        elapsed.as_secs_f64(),
        contacts as f64 / elapsed.as_secs_f64()
    );
    println!(
        "transactional POST /emails during it, to the sink: {} sent, p50 {:.3} s, p99 {:.3} s, max {:.3} s",
        latencies.len(),
        at(50),
        at(99),
        latencies.last().map_or(0.0, Duration::as_secs_f64)
    );
    running.shutdown().await;
}

/// A verified domain, a `plan` property and a segment of `contacts` imported contacts;
/// the segment's id.
async fn audience(addr: SocketAddr, dir: &tempfile::TempDir, contacts: usize) -> String {
    bench_server::verified_domain(addr, "bench.test", "rsa").await;
    let mut client = Client::connect(addr, KEY).await;
    let (_, property) = client
        .post(
            "/contact-properties",
            Bytes::from(json!({ "key": "plan", "type": "string", "fallback_value": "free" }).to_string()),
        )
        .await;
    drop(property);
    let (_, segment) = client
        .post("/segments", Bytes::from(json!({ "name": "everyone" }).to_string()))
        .await;
    let segment: Value = serde_json::from_slice(&segment).expect("segment");
    let segment = segment["id"].as_str().expect("segment id").to_owned();
    let csv = dir.path().join("contacts.csv");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&csv).expect("csv"));
    writeln!(out, "email,first_name").expect("write");
    for n in 0..contacts {
        writeln!(out, "reader-{n}@example.com,Reader{n}").expect("write");
    }
    out.flush().expect("flush");
    drop(out);
    let id = imports::upload(addr, &csv, &segment).await;
    loop {
        let (_, body) = client.get(&format!("/contacts/imports/{id}")).await;
        let import: Value = serde_json::from_slice(&body).expect("import");
        if import["status"] == "completed" {
            break;
        }
        assert_ne!(import["status"], "failed", "{import}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    segment
}

async fn broadcast(addr: SocketAddr, segment: &str) -> String {
    let mut client = Client::connect(addr, KEY).await;
    let html = "<html><body><p>Hi {{{FIRST_NAME|there}}}, you are on {{{plan}}}.</p><p><a href=\"https://bench.test/offer\">The offer</a></p><p><a href=\"{{{RESEND_UNSUBSCRIBE_URL}}}\">Unsubscribe</a></p></body></html>";
    let body = json!({ "segment_id": segment, "from": "News <news@bench.test>", "subject": "News for {{{FIRST_NAME}}}", "html": html, "send": true });
    let (status, created) = client.post("/broadcasts", Bytes::from(body.to_string())).await;
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&created));
    let created: Value = serde_json::from_slice(&created).expect("broadcast");
    created["id"].as_str().expect("id").to_owned()
}

async fn until_sent(addr: SocketAddr, id: &str) -> Value {
    let mut client = Client::connect(addr, KEY).await;
    loop {
        let (_, body) = client.get(&format!("/broadcasts/{id}")).await;
        let got: Value = serde_json::from_slice(&body).expect("broadcast");
        if got["progress"]["status"] == "sent" {
            return got;
        }
        assert_ne!(got["progress"]["status"], "canceled", "{got}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
