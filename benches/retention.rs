//! Retention at scale: millions of email records spread over 60 simulated days, then a
//! server started with `[retention] emails = "30d"` and `content = "7d"` sweeps what is
//! due. Reports the sweep's rate, the disk before the sweep, after it (RocksDB's own
//! compactions) and after a full compaction, and `POST /emails` latency while the sweep
//! runs against the same load before it (same store, retention off) and once it is over.
//!
//! `cargo bench --profile dev --bench retention` (`HERALD_BENCH_RECORDS`, default
//! 5,000,000; `HERALD_BENCH_SECONDS`, default 20 per load phase; `HERALD_BENCH_CONNECTIONS`,
//! default 16).

#![allow(missing_docs, clippy::print_stdout)]

#[path = "common/api_client.rs"]
mod api_client;
#[path = "common/server.rs"]
mod bench_server;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use api_client::Client;
use bench_server::KEY;
use bytes::Bytes;
use herald::emails::record::{EmailEvent, EmailRecord, Source};
use herald::emails::state::EmailState;
use herald::emails::{EmailStore, RocksEmails};
use herald::storage::Change;
use herald_queue::{Batch, DueIndex, IdGenerator, Store, Table, Timestamp};
use serde_json::json;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const DAY_MS: u64 = 86_400_000;
const DAYS: u64 = 60;
/// Records per synced write while filling the store.
const FILL_BATCH: usize = 5_000;

fn main() {
    let records: usize = env("HERALD_BENCH_RECORDS", 5_000_000);
    let seconds: u64 = env("HERALD_BENCH_SECONDS", 20);
    let connections: usize = env("HERALD_BENCH_CONNECTIONS", 16);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(records, Duration::from_secs(seconds), connections));
}

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

async fn run(records: usize, load: Duration, connections: usize) {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let dir = bench_server::data_dir("bench-retention");
    let keep = "[smtp]\nlisteners = []\n[delivery]\nenabled = false\n[retention]\nemails = \"0\"\ncontent = \"0\"\n";
    let sweep =
        "[smtp]\nlisteners = []\n[delivery]\nenabled = false\n[retention]\nemails = \"30d\"\ncontent = \"7d\"\n";
    println!("herald retention benchmark: {records} email records over {DAYS} days");

    // Fill with retention off, so nothing is swept yet.
    let running = bench_server::start(&dir, keep).await;
    let store = running.state.node().store().clone();
    let started = Instant::now();
    let filler = store.clone();
    let (expiring, content) = tokio::task::spawn_blocking(move || fill(&filler, records))
        .await
        .expect("fill");
    println!(
        "filled in {:.0} s ({:.0} records/s); {expiring} records past 30 days, {content} more past 7 days",
        started.elapsed().as_secs_f64(),
        records as f64 / started.elapsed().as_secs_f64()
    );
    bench_server::verified_domain(running.http_addr, "bench.test", "ed25519").await;
    let before = accept_load(running.http_addr, load, connections).await;
    println!("POST /emails before the sweep: {before}");
    drop(store);
    running.shutdown().await;

    let running = bench_server::start(&dir, sweep).await;
    let store = running.state.node().store().clone();
    println!("disk before the sweep: {}", disk(&store));
    let addr = running.http_addr;
    let sweep_started = Instant::now();
    let during = accept_load(addr, load, connections).await;
    let during_left = due_left(&store);
    println!("POST /emails during the sweep: {during}  ({during_left} records still to expire at its end)");
    let deadline = Instant::now() + Duration::from_secs(3_600);
    while sweeping(&store) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let swept = sweep_started.elapsed().as_secs_f64();
    println!(
        "swept {expiring} records and {content} contents in {swept:.0} s: {:.0} records/s (with the load phase's writes)",
        (expiring + content) as f64 / swept
    );
    println!("disk after the sweep: {}", disk(&store));
    let compacting = store.clone();
    let compacted = Instant::now();
    tokio::task::spawn_blocking(move || {
        for &table in Table::ALL {
            compacting.compact(table);
        }
    })
    .await
    .expect("compact");
    println!(
        "disk after a full compaction ({:.0} s): {}",
        compacted.elapsed().as_secs_f64(),
        disk(&store)
    );
    let after = accept_load(addr, load, connections).await;
    println!("POST /emails after the sweep:  {after}");
    drop(store);
    running.shutdown().await;
}

/// Writes `records` delivered emails with their status, two events and their expiry
/// entries, final at times spread evenly over the last [`DAYS`] days. Returns how many
/// are past 30 days and how many more past 7.
fn fill(store: &Store, records: usize) -> (usize, usize) {
    let ids = IdGenerator::default();
    let team = store.next_id();
    let now = store.now().as_millis();
    let html = format!("<p>{}</p>", "Thanks for your order. ".repeat(20));
    let (mut expiring, mut content) = (0, 0);
    let mut batch = Batch::new();
    // Expiry entries go through the email store's unit of work, committed beside.
    let emails = RocksEmails::new(store.clone());
    let mut armed = Change::new();
    for n in 0..records {
        let age = DAYS * DAY_MS * n as u64 / records as u64;
        let at = Timestamp::from_millis(now - DAYS * DAY_MS + age);
        match now - at.as_millis() {
            past if past > 30 * DAY_MS => expiring += 1,
            past if past > 7 * DAY_MS => content += 1,
            _ => {}
        }
        let id = ids.next(at);
        let record = EmailRecord {
            id,
            team_id: team,
            api_key_id: None,
            from: "Bench <bench@bench.test>".into(),
            to: vec!["user@example.org".into()],
            cc: Vec::new(),
            bcc: Vec::new(),
            reply_to: Vec::new(),
            subject: "Your receipt".into(),
            html: Some(html.clone()),
            text: None,
            tags: Vec::new(),
            created_at: at,
            scheduled_at: None,
            message_id: format!("<{id}@bench.herald.test>"),
            last_event: EmailState::Delivered,
            size: 1_500,
            source: Source::Api,
            template: None,
            topic_id: None,
            attempts: Vec::new(),
            content_expired: false,
            content_in_message: false,
            text_derived: false,
            line_feeds: false,
            broadcast_id: None,
            request_log_id: None,
        };
        let key = EmailRecord::key(team, id);
        batch.put(&key, &record).expect("record");
        batch.put(&key, &record.status()).expect("status");
        for kind in [EmailState::Sent, EmailState::Delivered] {
            let event = EmailEvent {
                id: ids.next(at),
                email_id: id,
                kind,
                created_at: at,
                data: json!({ "to": ["user@example.org"] }),
            };
            batch.put(EmailEvent::key(id, event.id), &event).expect("event");
        }
        herald::emails::store::retention::arm_final(&mut armed, team, id, at);
        if batch.len() >= FILL_BATCH * 4 {
            store.commit(std::mem::take(&mut batch)).wait().expect("commit");
            emails.commit(std::mem::take(&mut armed)).expect("commit");
        }
    }
    store.commit(batch).wait().expect("commit");
    emails.commit(armed).expect("commit");
    (expiring, content)
}

/// Expiry entries (records and contents) due now that are still armed.
fn due_left(store: &Store) -> usize {
    let now = store.now().as_millis();
    let due = |table: Table, retention: u64| {
        let horizon = Timestamp::from_millis(now.saturating_sub(retention));
        DueIndex::new(table)
            .due(store, horizon, None, usize::MAX)
            .expect("scan")
            .len()
    };
    due(Table::EMAIL_EXPIRY, 30 * DAY_MS) + due(Table::CONTENT_EXPIRY, 7 * DAY_MS)
}

/// Whether anything is still due in either index: one seek each.
fn sweeping(store: &Store) -> bool {
    let now = store.now().as_millis();
    let due = |table: Table, retention: u64| {
        DueIndex::new(table)
            .next_due(store)
            .expect("seek")
            .is_some_and(|at| at.as_millis() + retention <= now)
    };
    due(Table::EMAIL_EXPIRY, 30 * DAY_MS) || due(Table::CONTENT_EXPIRY, 7 * DAY_MS)
}

/// The store's size on disk and in memtables, in all and for the email tables.
fn disk(store: &Store) -> String {
    let sizes = store.table_sizes();
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let total: u64 = sizes.iter().map(|s| s.disk_bytes + s.memory_bytes).sum();
    let of = |table: Table| {
        sizes
            .iter()
            .find(|s| s.table == table)
            .map_or(0, |s| s.disk_bytes + s.memory_bytes)
    };
    format!(
        "{:.0} MiB in all (emails {:.0}, email_status {:.0}, events {:.0}, expiry indexes {:.0})",
        mib(total),
        mib(of(Table::EMAILS)),
        mib(of(Table::EMAIL_STATUS)),
        mib(of(Table::EVENTS)),
        mib(of(Table::EMAIL_EXPIRY) + of(Table::CONTENT_EXPIRY))
    )
}

/// `connections` clients posting single emails as fast as they are answered for
/// `duration`: accepted emails per second and latency percentiles.
async fn accept_load(addr: SocketAddr, duration: Duration, connections: usize) -> String {
    let body = Bytes::from(
        json!({
            "from": "Bench <bench@bench.test>",
            "to": ["user@example.org"],
            "subject": "Your receipt",
            "html": format!("<p>{}</p>", "Thanks for your order. ".repeat(60)),
        })
        .to_string(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (body, stop) = (body.clone(), Arc::clone(&stop));
        tasks.push(tokio::spawn(async move {
            let mut client = Client::connect(addr, KEY).await;
            let mut latencies = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let sent = Instant::now();
                let (status, answer) = client.post("/emails", body.clone()).await;
                assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
                latencies.push(sent.elapsed());
            }
            latencies
        }));
    }
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.expect("client"));
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort_unstable();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
            .as_secs_f64()
            * 1e3
    };
    format!(
        "{:.0} emails/s  p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
        latencies.len() as f64 / elapsed,
        pct(0.50),
        pct(0.99),
        pct(1.0)
    )
}
