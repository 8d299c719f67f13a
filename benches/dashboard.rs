//! The dashboard's Emails page at scale: `HERALD_BENCH_EMAILS` (default 1,000,000) email
//! status records written straight into a real RocksDB with the keys the server writes
//! (status record and status index entry; the bodies, in their own table, are never read
//! by the list), then pages asked over HTTP with a signed-in session, as a browser would:
//! the first page, a page filtered by status (1 % bounced, through the index), a search
//! and a rare tag (each reading at most 5,000 emails), and a CSV export of the bounced.
//! The tables are compacted before the pages are asked, so reads come from files on disk
//! (through RocksDB's block cache), not from the memtable.
//!
//! `cargo bench --profile dev --bench dashboard` (`HERALD_BENCH_EMAILS`,
//! `HERALD_BENCH_DIR` for the data).

#![allow(missing_docs, clippy::print_stdout)]

#[path = "common/api_client.rs"]
mod api_client;
#[path = "common/server.rs"]
mod bench_server;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use herald::emails::EmailState;
use herald::emails::record::{EmailRecord, Source};
use herald::emails::validate::Tag;
use herald::storage::Change;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::TcpStream;

use bench_server::KEY;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const PASSWORD: &str = "bench password long enough";

fn main() {
    let emails: usize = std::env::var("HERALD_BENCH_EMAILS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(emails));
}

async fn run(emails: usize) {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let dir = bench_server::data_dir("bench-dashboard");
    let running = bench_server::start(&dir, "[smtp]\nlisteners = []\n[delivery]\nenabled = false\n").await;
    let addr = running.http_addr;
    let mut client = api_client::Client::connect(addr, KEY).await;
    let user = json!({ "email": "bench@bench.test", "role": "owner", "password": PASSWORD });
    let (status, body) = client.post("/users", Bytes::from(user.to_string())).await;
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));

    let state = running.state.clone();
    let started = Instant::now();
    let token = tokio::task::spawn_blocking(move || {
        let store = state.node().store();
        let user = state
            .users()
            .by_email("bench@bench.test")
            .expect("read")
            .expect("the user");
        let team = user.team_id;
        let mut change = Change::new();
        let mut staged = 0;
        for i in 0..emails {
            let id = store.next_id();
            let last_event = match i % 100 {
                0 => EmailState::Bounced,
                1..=3 => EmailState::Opened,
                _ => EmailState::Delivered,
            };
            let tags = if i % 1000 == 7 {
                vec![Tag {
                    name: "campaign".into(),
                    value: "spring".into(),
                }]
            } else {
                Vec::new()
            };
            let record = EmailRecord {
                id,
                team_id: team,
                api_key_id: None,
                from: "Bench <receipts@bench.test>".into(),
                to: vec![format!("customer{i}@example.org")],
                cc: Vec::new(),
                bcc: Vec::new(),
                reply_to: Vec::new(),
                subject: format!("Your receipt #{i}"),
                html: None,
                text: None,
                tags,
                created_at: store.now(),
                scheduled_at: None,
                message_id: format!("<{id}@bench.test>"),
                last_event,
                size: 0,
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
            state
                .emails()
                .create(&mut change, &record, record.created_at)
                .expect("stage");
            staged += 1;
            if staged >= 10_000 {
                state.emails().commit(std::mem::take(&mut change)).expect("commit");
                staged = 0;
            }
        }
        state.emails().commit(change).expect("commit");
        // Out of the memtable into compacted files on disk, as a long-running store has them.
        store.compact(herald_queue::Table::EMAIL_STATUS);
        store.compact(herald_queue::Table::EMAILS_BY_STATUS);
        herald::users::sessions::start(&state, &user).expect("a session")
    })
    .await
    .expect("load");
    println!(
        "{emails} email statuses written and compacted in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let cases = [
        ("first page", "/dashboard/emails"),
        ("status=bounced (1 %)", "/dashboard/emails?status=bounced"),
        ("status=opened, second page", "/dashboard/emails?status=opened&after="),
        ("search (reads 5,000)", "/dashboard/emails?q=customer12345x"),
        ("tag=campaign:spring (0.1 %)", "/dashboard/emails?tag=campaign%3Aspring"),
        ("domain=bench.test", "/dashboard/emails?domain=bench.test"),
    ];
    println!(
        "{:<30} {:>9} {:>9} {:>9}",
        "page (50 rows)", "p50 ms", "p90 ms", "max ms"
    );
    let cookie = format!("herald_session={token}");
    let (_, first) = get(addr, "/dashboard/emails", &cookie).await;
    let newest = format!("customer{}@example.org", emails - 1);
    assert!(
        String::from_utf8_lossy(&first).contains(&newest),
        "the newest email first"
    );
    let (_, bounced) = get(addr, "/dashboard/emails?status=bounced", &cookie).await;
    assert_eq!(
        String::from_utf8_lossy(&bounced)
            .matches("<span class=\"status bounced\">")
            .count(),
        50,
        "a full page of bounced emails"
    );
    for (name, path) in cases {
        let path = if path.ends_with("after=") {
            // The cursor of the first opened page's last row.
            let (_, first) = get(addr, "/dashboard/emails?status=opened", &cookie).await;
            let text = String::from_utf8_lossy(&first);
            let at = text.find("after=").expect("a next page") + "after=".len();
            format!("{path}{}", &text[at..at + 36])
        } else {
            path.to_owned()
        };
        let mut times = Vec::new();
        for round in 0..23 {
            let started = Instant::now();
            let (status, body) = get(addr, &path, &cookie).await;
            let took = started.elapsed();
            assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
            if round >= 3 {
                times.push(took);
            }
        }
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "{name:<30} {:>9.1} {:>9.1} {:>9.1}",
            ms(times[times.len() / 2]),
            ms(times[times.len() * 9 / 10]),
            ms(times[times.len() - 1])
        );
    }
    let started = Instant::now();
    let (status, csv) = get(addr, "/dashboard/emails/export.csv?status=bounced", &cookie).await;
    assert_eq!(status, 200);
    let rows = csv.iter().filter(|b| **b == b'\n').count() - 1;
    println!(
        "CSV export of the bounced: {rows} rows, {} KiB in {:.2} s",
        csv.len() / 1024,
        started.elapsed().as_secs_f64()
    );
    assert!(running.shutdown().await);
}

async fn get(addr: SocketAddr, path: &str, cookie: &str) -> (u16, Bytes) {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(connection);
    let request = Request::get(path)
        .header("host", "bench")
        .header("cookie", cookie)
        .body(Full::new(Bytes::new()))
        .expect("request");
    let response = sender.send_request(request).await.expect("response");
    let status = response.status().as_u16();
    (status, response.into_body().collect().await.expect("body").to_bytes())
}
