//! End-to-end delivery benchmark: mail injected over SMTP and the API at once, DKIM-signed
//! and relayed by the delivery engine to a real SMTP sink on loopback, the way the Postfix
//! peer benchmark (`/work/shared/bench/postfix-peer.sh`) relays everything to `smtp-sink`.
//!
//! For each DKIM algorithm (ed25519, RSA) and message size (2 KB, 100 KB) it starts a fresh
//! server in this process with `[delivery] relay` pointing at the sink, injects N messages,
//! half through the shared SMTP load generator (implicit TLS, AUTH PLAIN, pipelining, many
//! messages per connection) and half with `POST /emails` over keep-alive connections, after
//! an untimed warm-up of N/8 messages, and reports:
//!
//! - `e2e msg/s`: N over the time from the first injection until the sink has the N-th;
//! - `inject msg/s`: N over the time until the last injection was accepted;
//! - `CPU ms/msg`: user and system CPU time of the whole process over the same span, per
//!   message. The load generator, the API clients and the sink run in this process too, so
//!   this is an upper bound on herald's own cost.
//!
//! It fails unless the sink got exactly the messages injected (N and the warm-up's), each
//! once and each with a `DKIM-Signature` for the sending domain and algorithm; a few from
//! each path are verified cryptographically against the key the domains API publishes.
//!
//! `cargo bench --profile dev --bench delivery [-- FILTER...]` (`HERALD_BENCH_MESSAGES`: N
//! for every size, default 4000 at 2 KB and 1000 at 100 KB; a filter such as `rsa/102400`
//! or `2048` runs only the matching algorithm/size pairs; `HERALD_BENCH_DELIVERY`: more
//! `[delivery]` settings, such as `workers = 4`, to compare).

#![allow(missing_docs, clippy::print_stdout)]

#[path = "../tests/util/sink.rs"]
mod sink;
#[path = "common/smtp_load.rs"]
mod smtp_load;

#[path = "common/api_client.rs"]
mod api_client;
#[path = "common/server.rs"]
mod bench_server;
#[path = "common/cpu.rs"]
mod cpu;

use std::borrow::Borrow;
use std::collections::HashSet;
use std::hash::Hash;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use herald::server::Running;
use mail_auth::common::parse::TxtRecordParser;
use serde_json::json;
use sink::{Received, Sink, SinkOptions};

use api_client::Client;
use cpu::{Cpu, CpuClock};

use bench_server::KEY;
const SENDER_DOMAIN: &str = "bench.test";
const FROM: &str = "Bench <bench@bench.test>";
const RECIPIENT: &str = "user@example.org";
/// The subject of API mail, to tell it from SMTP mail (`Subject: load`) at the sink.
const API_SUBJECT: &str = "load via API";

/// SMTP sessions at once, as the Postfix peer's `smtp-source -s 20`.
const SMTP_SESSIONS: usize = 20;
/// Messages per SMTP connection at most: "many", without one session taking them all.
const SMTP_PER_CONNECTION_MAX: usize = 100;
/// Keep-alive API connections at once.
const API_CONNECTIONS: usize = 20;
/// How long the sink may take to get every message before the run fails.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(600);
/// How long to keep watching the sink after the N-th message, for duplicates.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(1);
/// One message in this many is sent before the measurement, to warm up.
const WARMUP_SHARE: usize = 8;
/// Messages of each path whose signature is verified cryptographically.
const VERIFIED_PER_PATH: usize = 2;
/// Messages the sink keeps whole; of the rest it keeps the headers.
const KEPT_WHOLE: usize = 100;

/// The same allocator as the `herald` binary, so the numbers match what operators run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A message size to measure.
struct Size {
    label: &'static str,
    /// The body's length, line breaks included, as `smtp-source -l`.
    bytes: usize,
    /// N when `HERALD_BENCH_MESSAGES` is not set.
    messages_default: usize,
}

const SIZES: [Size; 2] = [
    Size {
        label: "2 KB",
        bytes: 2048,
        messages_default: 4000,
    },
    Size {
        label: "100 KB",
        bytes: 102_400,
        messages_default: 1000,
    },
];

const ALGORITHMS: [&str; 2] = ["ed25519", "rsa"];

fn main() {
    let messages: Option<usize> = std::env::var("HERALD_BENCH_MESSAGES").ok().and_then(|v| v.parse().ok());
    // `cargo bench` passes `--bench`; other arguments select the runs whose name
    // (`ed25519/2048`, `rsa/102400`) contains one of them.
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(messages, &filters));
}

async fn run(messages: Option<usize>, filters: &[String]) {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let clock = CpuClock::new();
    println!(
        "herald end to end: SMTP (implicit TLS + AUTH PLAIN, pipelining, {SMTP_SESSIONS} sessions) and POST /emails \
         ({API_CONNECTIONS} keep-alive connections), half each, at once -> DKIM signing -> relay to an SMTP sink"
    );
    println!(
        "CPU is the whole process (herald, the load generator, the API clients and the sink), user + system, \
         from /proc/self/stat"
    );
    for algorithm in ALGORITHMS {
        for size in &SIZES {
            let name = format!("{algorithm}/{}", size.bytes);
            if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
                continue;
            }
            let n = messages.unwrap_or(size.messages_default);
            let result = case(&clock, algorithm, size, n).await;
            result.print(algorithm, size.label);
        }
    }
}

/// What one (algorithm, size) run measured.
struct Outcome {
    messages: usize,
    smtp_messages: usize,
    smtp_injected: Duration,
    api_injected: Duration,
    delivered: Duration,
    cpu: Cpu,
    warmup: usize,
    /// The average size of a message at the sink, signature and added headers included.
    sink_message_bytes: usize,
}

impl Outcome {
    fn print(&self, algorithm: &str, size: &str) {
        let n = self.messages as f64;
        let api_messages = (self.messages - self.smtp_messages) as f64;
        let per_message = |d: Duration| d.as_secs_f64() * 1e3 / n;
        println!(
            "{algorithm:<8} {size:>6}: e2e msg/s {:>6.0}  inject msg/s {:>6.0} (SMTP {:>5.0}, API {:>5.0})  \
             CPU ms/msg {:>5.2} (user {:.2}, sys {:.2})  delivered {} (+{} warm-up) of {:.1} KB at the sink, all DKIM-signed",
            n / self.delivered.as_secs_f64(),
            n / self.smtp_injected.max(self.api_injected).as_secs_f64(),
            self.smtp_messages as f64 / self.smtp_injected.as_secs_f64(),
            api_messages / self.api_injected.as_secs_f64(),
            per_message(self.cpu.user + self.cpu.system),
            per_message(self.cpu.user),
            per_message(self.cpu.system),
            self.messages,
            self.warmup,
            self.sink_message_bytes as f64 / 1024.0,
        );
    }
}

/// One run: a fresh sink and server, a warm-up, then `messages` injected, every one
/// awaited at the sink and checked.
async fn case(clock: &CpuClock, algorithm: &str, size: &Size, messages: usize) -> Outcome {
    // Like `smtp-sink`, the sink does not keep every body: the first messages whole, for
    // the DKIM verification, the headers of the rest for the other checks.
    let sink = Sink::start(SinkOptions {
        keep_whole: KEPT_WHOLE,
        ..SinkOptions::default()
    });
    let dir = bench_server::data_dir("bench-delivery");
    let running = start(&dir, sink.addr()).await;
    let dkim = verified_domain(running.http_addr, algorithm).await;
    let inject = Injector::new(&running, size, messages);

    // The same mix, untimed, as the Postfix peer's `-w`: the first connections, threads
    // and allocator arenas are a cost of starting, not of delivering.
    let warmup = messages / WARMUP_SHARE;
    tokio::join!(inject.smtp(warmup / 2), inject.api(warmup - warmup / 2));
    sink.wait_for(warmup, DELIVERY_TIMEOUT).await;

    let smtp_messages = messages / 2;
    let cpu_before = clock.now();
    let started = Instant::now();
    let smtp = async {
        inject.smtp(smtp_messages).await;
        started.elapsed()
    };
    let api = async {
        inject.api(messages - smtp_messages).await;
        started.elapsed()
    };
    let delivered = async {
        sink.wait_for(warmup + messages, DELIVERY_TIMEOUT).await;
        started.elapsed()
    };
    let (smtp_injected, api_injected, delivered) = tokio::join!(smtp, api, delivered);
    let cpu = clock.now().since(cpu_before);

    tokio::time::sleep(DUPLICATE_WINDOW).await;
    let received = sink.received();
    let expected = Expected {
        messages: warmup + messages,
        api_messages: warmup - warmup / 2 + messages - smtp_messages,
        algorithm,
    };
    check(&received, &expected, &dkim).await;
    running.shutdown().await;
    Outcome {
        messages,
        smtp_messages,
        smtp_injected,
        api_injected,
        delivered,
        cpu,
        warmup,
        sink_message_bytes: received.iter().map(|r| r.size).sum::<usize>() / received.len(),
    }
}

/// Sends the run's messages: over SMTP with the shared load generator, or to the API.
struct Injector {
    load: Arc<smtp_load::Load>,
    tls: Arc<rustls::ClientConfig>,
    http: SocketAddr,
    email: Bytes,
}

impl Injector {
    fn new(running: &Running, size: &Size, messages: usize) -> Injector {
        // About `size.bytes` of body with its line breaks, as `smtp-source -l` sends.
        let body_len = size.bytes * 76 / 78;
        let load = smtp_load::Load {
            addr: running.smtp[0].1,
            security: smtp_load::Security::Implicit,
            key: Some(KEY.to_owned()),
            pipelining: true,
            mail_from: format!("bench@{SENDER_DOMAIN}"),
            rcpt_to: RECIPIENT.to_owned(),
            data: smtp_load::message(FROM, RECIPIENT, body_len),
            sessions: SMTP_SESSIONS,
            per_connection: (messages / 2).div_ceil(SMTP_SESSIONS).clamp(1, SMTP_PER_CONNECTION_MAX),
        };
        let email = json!({
            "from": FROM,
            "to": [RECIPIENT],
            "subject": API_SUBJECT,
            "text": smtp_load::text(body_len, "\n"),
        });
        Injector {
            load: Arc::new(load),
            tls: smtp_load::tls_client(),
            http: running.http_addr,
            email: Bytes::from(email.to_string()),
        }
    }

    async fn smtp(&self, count: usize) {
        smtp_load::run(Arc::clone(&self.load), &self.tls, count).await;
    }

    /// `count` emails posted over [`API_CONNECTIONS`] keep-alive connections; panics on
    /// any answer but `200`.
    async fn api(&self, count: usize) {
        let remaining = Arc::new(AtomicUsize::new(count));
        let mut tasks = Vec::new();
        for _ in 0..API_CONNECTIONS.min(count) {
            let (remaining, body, addr) = (Arc::clone(&remaining), self.email.clone(), self.http);
            tasks.push(tokio::spawn(async move {
                let mut client = Client::connect(addr, KEY).await;
                while remaining
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                    .is_ok()
                {
                    let (status, answer) = client.post("/emails", body.clone()).await;
                    assert_eq!(status, 200, "POST /emails: {}", String::from_utf8_lossy(&answer));
                }
            }));
        }
        for task in tasks {
            task.await.expect("an API client panicked");
        }
    }
}

async fn start(dir: &tempfile::TempDir, sink: SocketAddr) -> Running {
    let sections = format!(
        "[smtp]\nlisteners = [{{ addr = \"127.0.0.1:0\", tls = \"implicit\" }}]\nconnections_per_address_max = 1000\n[delivery]\nenabled = true\nrelay = \"{sink}\"\n# Postfix's default_destination_concurrency_limit, as the peer relays with it.\nconnections_per_destination = 20\n{}\n",
        std::env::var("HERALD_BENCH_DELIVERY").unwrap_or_default()
    );
    bench_server::start(dir, &sections).await
}

/// The sending domain's DKIM key, as published, and where.
struct PublishedKey {
    /// `<selector>._domainkey.bench.test.`, as the verifier asks for it.
    name: Box<str>,
    record: String,
}

/// Adds the sending domain with `algorithm` keys and marks it verified without DNS.
async fn verified_domain(addr: SocketAddr, algorithm: &str) -> PublishedKey {
    let created = bench_server::verified_domain(addr, SENDER_DOMAIN, algorithm).await;
    let dkim = created["records"]
        .as_array()
        .and_then(|records| records.iter().find(|r| r["record"] == "DKIM"))
        .expect("the new domain lists a DKIM record");
    PublishedKey {
        name: format!("{}.{SENDER_DOMAIN}.", dkim["name"].as_str().expect("name")).into(),
        record: dkim["value"].as_str().expect("value").to_owned(),
    }
}

/// What the sink should have got.
struct Expected<'a> {
    /// Messages in all, the warm-up's included.
    messages: usize,
    /// Of those, the ones posted to the API.
    api_messages: usize,
    /// The DKIM algorithm of the sending domain.
    algorithm: &'a str,
}

/// Panics unless `received` holds the expected number of distinct messages, each signed
/// by the sending domain with the expected algorithm, and a few of each path verify
/// against `key`.
async fn check(received: &[Received], expected: &Expected<'_>, key: &PublishedKey) {
    let messages = expected.messages;
    assert_eq!(
        received.len(),
        messages,
        "the sink got {} messages for {messages} injected",
        received.len()
    );
    // The return path is `<email id>@send.<domain>` (VERP), one per message.
    let distinct: HashSet<_> = received.iter().map(|r| &r.mail_from).collect();
    assert_eq!(distinct.len(), messages, "some messages arrived twice");
    let algorithm = if expected.algorithm == "rsa" {
        "rsa-sha256"
    } else {
        "ed25519-sha256"
    };
    for message in received {
        let tags = signature_tags(&message.data)
            .unwrap_or_else(|| panic!("a message without DKIM-Signature: {}", head(message)));
        assert!(
            tags.contains(&("a".to_owned(), algorithm.to_owned()))
                && tags.contains(&("d".to_owned(), SENDER_DOMAIN.to_owned())),
            "expected a={algorithm} d={SENDER_DOMAIN}, got {tags:?}"
        );
    }
    let (api, smtp): (Vec<_>, Vec<_>) = received
        .iter()
        .partition(|r| head(r).contains(&format!("Subject: {API_SUBJECT}")));
    assert_eq!(api.len(), expected.api_messages, "API messages at the sink");
    for path in [api, smtp] {
        let whole: Vec<_> = path.into_iter().filter(|r| r.data.len() == r.size).collect();
        let picks = whole.iter().step_by((whole.len() / VERIFIED_PER_PATH).max(1));
        let mut verified = 0;
        for message in picks.take(VERIFIED_PER_PATH) {
            verify(message, key).await;
            verified += 1;
        }
        assert_eq!(verified, VERIFIED_PER_PATH, "messages kept whole to verify");
    }
}

/// The tags of the first `DKIM-Signature` header, unfolded, or `None` without one.
fn signature_tags(data: &[u8]) -> Option<Vec<(String, String)>> {
    let headers = head_bytes(data);
    let headers = String::from_utf8_lossy(headers);
    let start = headers
        .split("\r\n")
        .position(|line| line.to_ascii_lowercase().starts_with("dkim-signature:"))?;
    let mut lines = headers.split("\r\n").skip(start);
    let first = lines.next()?.split_once(':')?.1.to_owned();
    let value = lines
        .take_while(|line| line.starts_with([' ', '\t']))
        .fold(first, |value, line| value + line);
    Some(
        value
            .split(';')
            .filter_map(|tag| tag.split_once('='))
            .map(|(name, value)| (name.trim().to_owned(), value.split_whitespace().collect()))
            .collect(),
    )
}

/// The header section of a message.
fn head_bytes(data: &[u8]) -> &[u8] {
    let end = data.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(data.len());
    &data[..end]
}

fn head(message: &Received) -> String {
    String::from_utf8_lossy(head_bytes(&message.data)).into_owned()
}

/// Verifies `message`'s signature against `key`, which the verifier finds in its cache
/// instead of DNS.
async fn verify(message: &Received, key: &PublishedKey) {
    let domain_key =
        mail_auth::common::verify::DomainKey::parse(key.record.as_bytes()).expect("the published record parses");
    let cache = OneRecord {
        name: key.name.clone(),
        txt: mail_auth::Txt::from(domain_key),
    };
    // The resolver is never asked: every lookup hits `cache` or fails the check below.
    let dns = herald::dns::Dns::new(&[], false).expect("resolver");
    let authenticator = mail_auth::MessageAuthenticator(dns.resolver().clone());
    let parsed = mail_auth::AuthenticatedMessage::parse(&message.data).expect("the message parses");
    let results = authenticator
        .verify_dkim(mail_auth::Parameters::new(&parsed).with_txt_cache(&cache))
        .await;
    assert!(
        results.iter().any(|r| *r.result() == mail_auth::DkimResult::Pass),
        "DKIM does not verify: {:?}\n{}",
        results.iter().map(|r| r.result().clone()).collect::<Vec<_>>(),
        head(message)
    );
}

/// A resolver cache that holds one TXT record.
struct OneRecord {
    name: Box<str>,
    txt: mail_auth::Txt,
}

impl mail_auth::ResolverCache<Box<str>, mail_auth::Txt> for OneRecord {
    fn get<Q>(&self, name: &Q) -> Option<mail_auth::Txt>
    where
        Box<str>: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        (self.name.borrow() == name).then(|| self.txt.clone())
    }

    fn remove<Q>(&self, _: &Q) -> Option<mail_auth::Txt>
    where
        Box<str>: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        None
    }

    fn insert(&self, _: Box<str>, _: mail_auth::Txt, _: Instant) {}
}
