//! SMTP submission load generator: `SESSIONS` concurrent sessions over implicit TLS with
//! AUTH PLAIN, pipelined MAIL/RCPT/DATA, 2 KB messages, against a real server in this
//! process (durable acceptance). Reports messages accepted per second and the time from
//! the end of data to `250`, for one message per connection and many per connection.
//!
//! `cargo bench --profile dev --bench smtp` (`HERALD_BENCH_MESSAGES`, default 5000;
//! `HERALD_BENCH_SESSIONS`, default 20).

#![allow(missing_docs, clippy::print_stdout)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use herald::config::Config;
use herald::server::{self, Options};
use herald_queue::SystemClock;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
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
    let tls = Arc::new(
        rustls::ClientConfig::builder()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCert))
            .with_no_client_auth(),
    );
    println!(
        "herald SMTP submission: {messages} messages of 2 KB, {sessions} sessions, implicit TLS + AUTH PLAIN, pipelining"
    );
    for per_connection in [1usize, 100] {
        phase(addr, &tls, messages, sessions, per_connection).await;
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

async fn phase(
    addr: SocketAddr,
    tls: &Arc<rustls::ClientConfig>,
    messages: usize,
    sessions: usize,
    per_connection: usize,
) {
    let remaining = Arc::new(AtomicUsize::new(messages));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..sessions {
        let (remaining, tls) = (Arc::clone(&remaining), Arc::clone(tls));
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            loop {
                let claimed = claim(&remaining, per_connection);
                if claimed == 0 {
                    return latencies;
                }
                latencies.extend(session(addr, &tls, claimed).await);
            }
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.expect("session"));
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort_unstable();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    println!(
        "{per_connection:>3} message(s)/connection: {:>7.0} msg/s  end-of-data to 250: p50 {:>6.2} ms  p99 {:>6.2} ms  ({} accepted)",
        latencies.len() as f64 / elapsed,
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        latencies.len()
    );
}

fn claim(remaining: &AtomicUsize, want: usize) -> usize {
    let mut current = remaining.load(Ordering::Relaxed);
    loop {
        let take = current.min(want);
        if take == 0 {
            return 0;
        }
        match remaining.compare_exchange(current, current - take, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return take,
            Err(actual) => current = actual,
        }
    }
}

/// One session sending `count` messages; returns each end-of-data-to-250 time.
async fn session(addr: SocketAddr, tls: &Arc<rustls::ClientConfig>, count: usize) -> Vec<Duration> {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    tcp.set_nodelay(true).expect("nodelay");
    let stream = tokio_rustls::TlsConnector::from(Arc::clone(tls))
        .connect(ServerName::try_from("bench.herald.test").expect("name"), tcp)
        .await
        .expect("tls");
    let (reader, mut writer) = tokio::io::split(stream);
    let mut reader = BufReader::new(reader);
    expect(&mut reader, "220").await;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("\0resend\0{KEY}"));
    writer
        .write_all(format!("EHLO bench.client\r\nAUTH PLAIN {auth}\r\n").as_bytes())
        .await
        .expect("write");
    expect(&mut reader, "250").await;
    expect(&mut reader, "235").await;
    let body = format!(
        "From: Bench <bench@bench.test>\r\nTo: user@example.org\r\nSubject: load\r\n\r\n{}\r\n.\r\n",
        "x".repeat(76)
            .repeat(26)
            .as_bytes()
            .chunks(76)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect::<Vec<_>>()
            .join("\r\n")
    );
    let mut latencies = Vec::with_capacity(count);
    for _ in 0..count {
        writer
            .write_all(b"MAIL FROM:<bench@bench.test>\r\nRCPT TO:<user@example.org>\r\nDATA\r\n")
            .await
            .expect("write");
        expect(&mut reader, "250").await;
        expect(&mut reader, "250").await;
        expect(&mut reader, "354").await;
        writer.write_all(body.as_bytes()).await.expect("write");
        let sent = Instant::now();
        expect(&mut reader, "250").await;
        latencies.push(sent.elapsed());
    }
    writer.write_all(b"QUIT\r\n").await.expect("write");
    latencies
}

/// Reads one reply (all its lines) and checks its code.
async fn expect<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R, code: &str) {
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).await.expect("read");
        assert!(line.starts_with(code), "expected {code}, got {line:?}");
        if line.as_bytes().get(3) == Some(&b' ') {
            return;
        }
    }
}

#[derive(Debug)]
struct AnyCert;

impl rustls::client::danger::ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        rustls::crypto::aws_lc_rs::default_provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}
