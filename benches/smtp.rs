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
//! - `HERALD_BENCH_IDLE`: sessions opened at the end and held idle after AUTH, to report
//!   the memory each takes (default 500; 0 skips it);
//! - `HERALD_BENCH_TARGET`: `host:port` of another server to load instead of herald, such
//!   as the private Postfix of `shared/bench/postfix-peer.sh --keep` (then plaintext
//!   without AUTH unless set otherwise). CPU is then this process's alone.

#![allow(missing_docs, clippy::print_stdout)]

#[path = "common/api_client.rs"]
mod api_client;
#[path = "common/server.rs"]
mod bench_server;
#[path = "common/cpu.rs"]
mod cpu;
#[path = "common/smtp_load.rs"]
mod smtp_load;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bench_server::KEY;

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
    idle: usize,
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
        idle: env("HERALD_BENCH_IDLE", 500),
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
    let dir = bench_server::data_dir("bench-smtp");
    let mode = if settings.security == smtp_load::Security::StartTls {
        "starttls"
    } else {
        "implicit"
    };
    let running = match settings.target {
        Some(_) => None,
        None => {
            let sections = format!(
                "[smtp]\nlisteners = [{{ addr = \"127.0.0.1:0\", tls = \"{mode}\" }}]\nconnections_max = 5000\nconnections_per_address_max = 5000\n[delivery]\nenabled = false\n"
            );
            let running = bench_server::start(&dir, &sections).await;
            bench_server::verified_domain(running.http_addr, "bench.test", "ed25519").await;
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
    let load = |per_connection| smtp_load::Load {
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
    for &per_connection in &settings.patterns {
        phase(load(per_connection), &tls, settings.messages).await;
    }
    if settings.idle > 0 {
        idle(load(1), &tls, settings.idle).await;
    }
    if let Some(running) = running {
        running.shutdown().await;
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

/// Opens `count` sessions and holds them idle after AUTH; reports the resident memory
/// each added (server and load generator together, so an upper bound for the server's
/// share) and the run's peak.
async fn idle(load: smtp_load::Load, tls: &Arc<rustls::ClientConfig>, count: usize) {
    let before = memory("VmRSS:");
    let held = smtp_load::open_idle(Arc::new(load), tls, count).await;
    let after = memory("VmRSS:");
    println!(
        "{count} idle sessions after AUTH: {:.1} KiB resident each (server and load generator together); peak resident {} MiB over the run",
        after.saturating_sub(before) as f64 / 1024.0 / count as f64,
        memory("VmHWM:") / (1024 * 1024)
    );
    smtp_load::close_idle(held).await;
}

/// A size from `/proc/self/status` (`VmRSS:`, `VmHWM:`), in bytes.
fn memory(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .expect("/proc/self/status")
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("a size in /proc/self/status")
        * 1024
}
