//! SMTP submission load generator: `SESSIONS` concurrent sessions over implicit TLS with
//! AUTH PLAIN, pipelined MAIL/RCPT/DATA, 2 KB messages, against a real server in this
//! process (durable acceptance). Reports messages accepted per second and the time from
//! the end of data to `250`, for one message per connection and many per connection. The
//! sessions are `common/smtp_load.rs`, shared with the `delivery` bench.
//!
//! `cargo bench --profile dev --bench smtp` (`HERALD_BENCH_MESSAGES`, default 5000;
//! `HERALD_BENCH_SESSIONS`, default 20).

#![allow(missing_docs, clippy::print_stdout)]

#[path = "common/cpu.rs"]
mod cpu;
#[path = "common/smtp_load.rs"]
mod smtp_load;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use herald::config::Config;
use herald::server::{self, Options};
use herald_queue::SystemClock;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const KEY: &str = "re_bench_operator_key_0123456789";

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let messages: usize = std::env::var("HERALD_BENCH_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    let sessions: usize = std::env::var("HERALD_BENCH_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(messages, sessions));
}

async fn run(messages: usize, sessions: usize) {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let base = std::env::current_dir().expect("cwd").join("target").join("bench-smtp");
    std::fs::create_dir_all(&base).expect("bench dir");
    let dir = tempfile::tempdir_in(&base).expect("tempdir");
    let text = format!(
        "[server]\nhostname = \"bench.herald.test\"\ndata_dir = \"{}\"\n[http]\nlisten = \"127.0.0.1:0\"\n[smtp]\nlisteners = [{{ addr = \"127.0.0.1:0\", tls = \"implicit\" }}]\nconnections_per_address_max = 1000\n[spool]\nmin_free_space = \"0\"\n[api]\nrate_limit = \"1000000/s\"\n[log]\nlevel = \"warn\"\n[delivery]\nenabled = false\n",
        dir.path().join("data").display()
    );
    let config = Config::from_toml(&text, None).expect("config");
    let running = server::start(Options {
        config,
        clock: Arc::new(SystemClock),
        bootstrap_api_key: Some(KEY.into()),
    })
    .await
    .expect("server");
    verify_domain(&running).await;
    let addr = running.smtp[0].1;
    let tls = smtp_load::tls_client();
    println!(
        "herald SMTP submission: {messages} messages of 2 KB, {sessions} sessions, implicit TLS + AUTH PLAIN, pipelining"
    );
    for per_connection in [1usize, 100] {
        let load = smtp_load::Load {
            addr,
            key: KEY.to_owned(),
            mail_from: "bench@bench.test".to_owned(),
            rcpt_to: "user@example.org".to_owned(),
            data: smtp_load::message("Bench <bench@bench.test>", "user@example.org", 26 * 76),
            sessions,
            per_connection,
        };
        phase(load, &tls, messages).await;
    }
    running.shutdown().await;
}

/// Adds the sending domain through the API and marks it verified without DNS.
async fn verify_domain(running: &server::Running) {
    let client = Http(running.http_addr);
    let created = client
        .post("/domains", r#"{"name":"bench.test","dkim_algorithm":"ed25519"}"#)
        .await;
    let id = created
        .split("\"id\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("domain id")
        .to_owned();
    let verified = client
        .post(&format!("/domains/{id}/verify"), r#"{"skip_dns":true}"#)
        .await;
    assert!(verified.starts_with("HTTP/1.1 200"), "{verified}");
}

struct Http(SocketAddr);

impl Http {
    async fn post(&self, path: &str, body: &str) -> String {
        let mut stream = TcpStream::connect(self.0).await.expect("connect");
        let request = format!(
            "POST {path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {KEY}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut response = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut stream, &mut response)
            .await
            .expect("read");
        response
    }
}

async fn phase(load: smtp_load::Load, tls: &Arc<rustls::ClientConfig>, messages: usize) {
    let per_connection = load.per_connection;
    let clock = cpu::CpuClock::new();
    let cpu_before = clock.now();
    let started = Instant::now();
    let mut latencies = smtp_load::run(Arc::new(load), tls, messages).await;
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = clock.now().since(cpu_before);
    let cpu_per_message = (cpu.user + cpu.system).as_secs_f64() * 1e6 / messages.max(1) as f64;
    latencies.sort_unstable();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    println!(
        "{per_connection:>3} message(s)/connection: {:>7.0} msg/s  end-of-data to 250: p50 {:>6.2} ms  p99 {:>6.2} ms  CPU {cpu_per_message:>4.0} us/msg (server and load generator)  ({} accepted)",
        latencies.len() as f64 / elapsed,
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        latencies.len()
    );
}
