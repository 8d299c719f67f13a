//! SMTP submission load generator: `SESSIONS` concurrent sessions, by default over
//! implicit TLS with AUTH PLAIN and pipelined MAIL/RCPT/DATA, 2 KB messages, against a
//! real server in this process (durable acceptance). Reports messages accepted per second,
//! the time from the end of data to `250` and CPU per message, for one message per
//! connection and many per connection. The sessions are `common/smtp_load.rs`, shared
//! with the `delivery` bench.
//!
//! `cargo bench --profile dev --bench smtp`, set by environment variables:
//!
//! - `HERALD_BENCH_MESSAGES`: messages per pattern (default 5000);
//! - `HERALD_BENCH_SESSIONS`: sessions at once (default 20);
//! - `HERALD_BENCH_PER_CONNECTION`: the patterns, messages per connection (default `1,100`);
//! - `HERALD_BENCH_SIZE`: message body bytes (default 1976, a 2 KB message);
//! - `HERALD_BENCH_SECURITY`: `implicit` (default), `starttls` or `plain`;
//! - `HERALD_BENCH_AUTH`: `1` (default) or `0`;
//! - `HERALD_BENCH_PIPELINING`: `1` (default) or `0`;
//! - `HERALD_BENCH_TARGET`: `host:port` of another server to load instead of herald, such
//!   as the private Postfix of `shared/bench/postfix-peer.sh --keep` (then plaintext
//!   without AUTH unless set otherwise). CPU is then this process's alone.

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

/// The run, as the environment sets it.
struct Settings {
    messages: usize,
    sessions: usize,
    patterns: Vec<usize>,
    body: usize,
    security: smtp_load::Security,
    auth: bool,
    pipelining: bool,
    target: Option<SocketAddr>,
}

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|_| panic!("{name}={text:?} is not a valid value")),
        Err(_) => default,
    }
}

fn settings() -> Settings {
    let target: Option<SocketAddr> = std::env::var("HERALD_BENCH_TARGET")
        .ok()
        .map(|text| text.parse().expect("HERALD_BENCH_TARGET is host:port"));
    let security = std::env::var("HERALD_BENCH_SECURITY").map_or(
        if target.is_some() {
            smtp_load::Security::Plain
        } else {
            smtp_load::Security::Implicit
        },
        |text| smtp_load::Security::parse(&text).expect("HERALD_BENCH_SECURITY is plain, starttls or implicit"),
    );
    let auth = env("HERALD_BENCH_AUTH", u8::from(target.is_none())) == 1;
    if target.is_none() {
        assert!(
            security != smtp_load::Security::Plain && auth,
            "herald takes mail only after TLS and AUTH: HERALD_BENCH_SECURITY=plain and HERALD_BENCH_AUTH=0 are for HERALD_BENCH_TARGET"
        );
    }
    Settings {
        messages: env("HERALD_BENCH_MESSAGES", 5000),
        sessions: env("HERALD_BENCH_SESSIONS", 20),
        patterns: std::env::var("HERALD_BENCH_PER_CONNECTION")
            .unwrap_or_else(|_| "1,100".into())
            .split(',')
            .map(|n| {
                n.trim()
                    .parse()
                    .expect("HERALD_BENCH_PER_CONNECTION is a list of counts")
            })
            .collect(),
        body: env("HERALD_BENCH_SIZE", 26 * 76),
        security,
        auth,
        pipelining: env("HERALD_BENCH_PIPELINING", 1u8) == 1,
        target,
    }
}

fn main() {
    let settings = settings();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(settings));
}

async fn run(settings: Settings) {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let base = std::env::current_dir().expect("cwd").join("target").join("bench-smtp");
    std::fs::create_dir_all(&base).expect("bench dir");
    let dir = tempfile::tempdir_in(&base).expect("tempdir");
    let mode = if settings.security == smtp_load::Security::StartTls {
        "starttls"
    } else {
        "implicit"
    };
    let text = format!(
        "[server]\nhostname = \"bench.herald.test\"\ndata_dir = \"{}\"\n[http]\nlisten = \"127.0.0.1:0\"\n[smtp]\nlisteners = [{{ addr = \"127.0.0.1:0\", tls = \"{mode}\" }}]\nconnections_per_address_max = 1000\n[spool]\nmin_free_space = \"0\"\n[api]\nrate_limit = \"1000000/s\"\n[log]\nlevel = \"warn\"\n[delivery]\nenabled = false\n",
        dir.path().join("data").display()
    );
    let running = match settings.target {
        Some(_) => None,
        None => {
            let config = Config::from_toml(&text, None).expect("config");
            let running = server::start(Options {
                config,
                clock: Arc::new(SystemClock),
                bootstrap_api_key: Some(KEY.into()),
            })
            .await
            .expect("server");
            verify_domain(&running).await;
            Some(running)
        }
    };
    let addr = settings
        .target
        .unwrap_or_else(|| running.as_ref().map(|r| r.smtp[0].1).expect("herald"));
    let tls = smtp_load::tls_client();
    println!(
        "{} SMTP submission: {} messages of {} bytes of body, {} sessions, {:?}{}{}",
        if settings.target.is_some() {
            "external server"
        } else {
            "herald"
        },
        settings.messages,
        settings.body,
        settings.sessions,
        settings.security,
        if settings.auth { " + AUTH PLAIN" } else { ", no AUTH" },
        if settings.pipelining {
            ", pipelining"
        } else {
            ", one command at a time"
        },
    );
    for &per_connection in &settings.patterns {
        let load = smtp_load::Load {
            addr,
            security: settings.security,
            key: settings.auth.then(|| KEY.to_owned()),
            pipelining: settings.pipelining,
            mail_from: "bench@bench.test".to_owned(),
            rcpt_to: "user@example.org".to_owned(),
            data: smtp_load::message("Bench <bench@bench.test>", "user@example.org", settings.body),
            sessions: settings.sessions,
            per_connection,
        };
        phase(load, &tls, settings.messages).await;
    }
    if let Some(running) = running {
        running.shutdown().await;
    }
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
        "{per_connection:>3} message(s)/connection: {:>7.0} msg/s  end-of-data to 250: p50 {:>6.2} ms  p99 {:>6.2} ms  CPU {cpu_per_message:>4.0} us/msg (this process)  ({} accepted)",
        latencies.len() as f64 / elapsed,
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        latencies.len()
    );
}
