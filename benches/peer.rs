//! herald against another MTA, like for like: the same load generator (the benches'
//! shared SMTP one), the same connection pattern (20 sessions, 1 or 100 messages per
//! connection), relaying everything to the same sink, in one invocation whose runs are
//! interleaved round by round so that drift on the machine hits every target alike.
//!
//! Targets:
//! - `herald-tls`: herald in this process, implicit TLS and AUTH PLAIN, as users send;
//! - `herald-plain`: the same herald, plain SMTP from a trusted network
//!   (`[[smtp.trusted]]` 127.0.0.1/32), so that the table shows what TLS and AUTH cost;
//! - `direct`: the load generator straight to the sink, no MTA between (what the load
//!   generator and the sink cost alone; herald's CPU less this is set against the CPU
//!   floor, `common/floor.rs`, printed for each case, and against the floor of a relay:
//!   the floor plus one SMTP hop, costed as the direct run);
//! - each `NAME=HOST:PORT` of `HERALD_BENCH_PEERS` (comma separated): an MTA already
//!   running on loopback that takes plain SMTP without AUTH and relays all mail to the
//!   sink's port. `../shared/bench/postfix-peer.sh -t postfix -r 1 -n 100 --keep` leaves
//!   such a Postfix on 127.0.0.1:10025 relaying to 127.0.0.1:10026; stop the script's
//!   `smtp-sink` on 10026 (`fuser -k 10026/tcp`) and run with
//!   `HERALD_BENCH_PEERS=postfix=127.0.0.1:10025`.
//!
//! The sink, on 127.0.0.1:`HERALD_BENCH_SINK_PORT` (default 10026), is Postfix's
//! `smtp-sink` when it is installed (as the peer script relays to), herald's test sink in
//! this process otherwise or with `HERALD_BENCH_SINK=herald`. herald signs every message with DKIM (Ed25519 or RSA-2048, one run of
//! each); a peer without a DKIM milter does not, so herald does more work per message.
//!
//! For each algorithm, size (2 KB, 100 KB) and messages per connection (1, 100): one
//! untimed warm-up run per target, then `HERALD_BENCH_ROUNDS` rounds (default 3) of one
//! run per target, N messages each (`HERALD_BENCH_MESSAGES`, default 2000 at 2 KB and 500
//! at 100 KB). A run's end-to-end rate is N over the time from the first connection
//! until the sink has the N-th message; its CPU is the whole machine's (`/proc/stat`,
//! every process: the MTA, the load generator and the sink alike), per message. Printed:
//! each target's median (min-max) and the ratio of herald's medians to each peer's.
//!
//! `cargo bench --profile dev --bench peer [-- FILTER...]` (a filter such as `rsa/2048`
//! or `/100` runs only the matching algorithm/size/per-connection cases).
//! `HERALD_BENCH_TARGETS=herald-plain` (comma separated names) runs only those of the
//! built-in targets, as when profiling one of them; the floor is printed when herald-tls
//! and direct both run.

#![allow(missing_docs, clippy::print_stdout)]

#[path = "../tests/util/sink.rs"]
mod sink;
#[path = "common/smtp_load.rs"]
mod smtp_load;

#[path = "common/api_client.rs"]
mod api_client;
#[path = "common/server.rs"]
mod bench_server;
#[path = "common/floor.rs"]
mod floor;
#[path = "common/shared_sink.rs"]
mod shared_sink;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bench_server::KEY;
use herald::server::Running;
use shared_sink::SharedSink;
use smtp_load::{Load, Security};

/// SMTP sessions at once, as the Postfix peer's `smtp-source -s 20`.
const SESSIONS: usize = 20;
/// How long the sink may take to get a run's messages.
const RUN_TIMEOUT: Duration = Duration::from_secs(600);
const RECIPIENT: &str = "user@example.org";

/// The same allocator as the `herald` binary.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One MTA under test and how the load generator speaks to it.
struct Target {
    name: String,
    addr: SocketAddr,
    security: Security,
    key: Option<String>,
    herald: bool,
    /// The load generator straight to the sink, no MTA between: what the load generator
    /// and the sink cost alone, taken from herald's CPU before it is set against the
    /// floor.
    direct: bool,
}

/// A case: the DKIM algorithm herald signs with, the body size, messages per connection.
struct Case {
    algorithm: &'static str,
    bytes: usize,
    per_connection: usize,
}

impl Case {
    fn name(&self) -> String {
        format!("{}/{}/{}", self.algorithm, self.bytes, self.per_connection)
    }
}

/// One run's numbers.
#[derive(Clone, Copy)]
struct Run {
    rate: f64,
    cpu_ms: f64,
}

fn main() {
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(bench(&filters));
}

fn env_number(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

async fn bench(filters: &[String]) {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let sink_port = env_number("HERALD_BENCH_SINK_PORT").map_or(10026, |p| u16::try_from(p).expect("a port"));
    let rounds = env_number("HERALD_BENCH_ROUNDS").unwrap_or(3).max(1);
    let sink = SharedSink::start(sink_port);
    let dir = bench_server::data_dir("bench-peer");
    let herald = start(&dir, sink.addr()).await;
    let mut targets = vec![
        Target {
            name: "herald-tls".into(),
            addr: herald.smtp[0].1,
            security: Security::Implicit,
            key: Some(KEY.to_owned()),
            herald: true,
            direct: false,
        },
        Target {
            name: "herald-plain".into(),
            addr: herald.smtp[1].1,
            security: Security::Plain,
            key: None,
            herald: true,
            direct: false,
        },
        Target {
            name: "direct".into(),
            addr: sink.addr(),
            security: Security::Plain,
            key: None,
            herald: false,
            direct: true,
        },
    ];
    if let Ok(only) = std::env::var("HERALD_BENCH_TARGETS") {
        targets.retain(|t| only.split(',').any(|name| name.trim() == t.name));
    }
    for peer in std::env::var("HERALD_BENCH_PEERS").unwrap_or_default().split(',') {
        let Some((name, addr)) = peer.trim().split_once('=') else {
            continue;
        };
        targets.push(Target {
            name: name.to_owned(),
            addr: addr
                .parse()
                .unwrap_or_else(|_| panic!("HERALD_BENCH_PEERS: {addr} is not HOST:PORT")),
            security: Security::Plain,
            key: None,
            herald: false,
            direct: false,
        });
    }
    println!(
        "{SESSIONS} SMTP sessions, each connection taking 1 or 100 messages; every target relays to {} on 127.0.0.1:{sink_port}; \
         {rounds} rounds interleaved; e2e = N / (first connection .. the sink has the N-th); CPU = the whole machine's per message",
        sink.name()
    );
    println!(
        "targets: {}",
        targets.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
    );
    for algorithm in ["ed25519", "rsa"] {
        for (bytes, default_n) in [(2048, 2000), (102_400, 500)] {
            for per_connection in [1, 100] {
                let case = Case {
                    algorithm,
                    bytes,
                    per_connection,
                };
                if !filters.is_empty() && !filters.iter().any(|f| case.name().contains(f.as_str())) {
                    continue;
                }
                let n = env_number("HERALD_BENCH_MESSAGES").unwrap_or(default_n);
                let medians = measure(&case, &targets, &sink, n, rounds).await;
                // herald-tls, less what the load generator and the sink cost alone.
                let of = |wanted: fn(&Target) -> bool| {
                    targets
                        .iter()
                        .zip(&medians)
                        .find(|(t, _)| wanted(t))
                        .map(|(_, run)| run.cpu_ms)
                };
                if let (Some(tls), Some(direct)) = (of(|t| t.herald && t.key.is_some()), of(|t| t.direct)) {
                    report_floor(&case, dir.path(), tls - direct, direct);
                }
            }
        }
    }
    herald.shutdown().await;
}

/// Prints `case`'s CPU floor ([`floor`]) and the ratio of herald's CPU per message (the
/// machine's in herald-tls's median run, less the direct run's) to it; then the same
/// against the floor of a relay: the floor plus one more SMTP hop, which a relay adds to
/// the path and the floor leaves out, taken as what the direct run costs (a client and a
/// server that only speak SMTP, and the kernel carrying it between them).
fn report_floor(case: &Case, dir: &std::path::Path, herald_cpu_ms: f64, direct_cpu_ms: f64) {
    let data = data(case);
    let floor = tokio::task::block_in_place(|| floor::measure(case.algorithm, &data, dir, &smtp_load::tls_client()));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let total = ms(floor.per_message(case.per_connection));
    println!(
        "{:<22} floor CPU ms/msg {total:.3} (DKIM {:.3}, TLS handshake {:.3} per connection, records {:.3}, writes {:.3}, fsyncs {:.3}); \
         herald-tls less direct {herald_cpu_ms:.3} = {:.2}x the floor",
        case.name(),
        ms(floor.dkim),
        ms(floor.handshake),
        ms(floor.records),
        ms(floor.write),
        ms(floor.fsync),
        herald_cpu_ms / total
    );
    let relay = total + direct_cpu_ms;
    println!(
        "{:<22} relay floor CPU ms/msg {relay:.3} (the floor + one SMTP hop, direct's {direct_cpu_ms:.3}); herald-tls less direct = {:.2}x the relay floor",
        case.name(),
        herald_cpu_ms / relay
    );
}

/// The message the load generator sends for `case`.
fn data(case: &Case) -> Vec<u8> {
    let from = format!("bench@{}.bench.test", case.algorithm);
    // About `bytes` of body with its line breaks, as `smtp-source -l` sends.
    let body_len = case.bytes * 76 / 78;
    smtp_load::message(&format!("Bench <{from}>"), RECIPIENT, body_len)
}

/// Runs `case` on every target: a warm-up each, then `rounds` interleaved rounds; answers
/// each target's median run.
async fn measure(case: &Case, targets: &[Target], sink: &SharedSink, n: usize, rounds: usize) -> Vec<Run> {
    let tls = smtp_load::tls_client();
    let mut runs: Vec<Vec<Run>> = targets.iter().map(|_| Vec::new()).collect();
    for round in 0..=rounds {
        for (target, runs) in targets.iter().zip(&mut runs) {
            let messages = if round == 0 { (n / 4).max(SESSIONS) } else { n };
            let run = once(case, target, sink, &tls, messages).await;
            if round > 0 {
                runs.push(run);
            }
        }
    }
    let medians: Vec<Run> = runs.iter().map(|r| median(r)).collect();
    for ((target, runs), median) in targets.iter().zip(&runs).zip(&medians) {
        let (low, high) = runs
            .iter()
            .fold((f64::MAX, 0f64), |(low, high), r| (low.min(r.rate), high.max(r.rate)));
        println!(
            "{:<22} {:<13} e2e msg/s {:>6.0} ({low:.0}-{high:.0})  machine CPU ms/msg {:>5.2}",
            case.name(),
            target.name,
            median.rate,
            median.cpu_ms
        );
    }
    for (peer, peer_median) in targets.iter().zip(&medians).filter(|(t, _)| !t.herald && !t.direct) {
        for (herald, herald_median) in targets.iter().zip(&medians).filter(|(t, _)| t.herald) {
            println!(
                "{:<22} {} / {}: {:.2}x the rate, {:.2}x the CPU per message",
                case.name(),
                herald.name,
                peer.name,
                herald_median.rate / peer_median.rate,
                herald_median.cpu_ms / peer_median.cpu_ms
            );
        }
    }
    medians
}

/// The run whose rate is the median (the lower middle one of an even count), with its CPU.
fn median(runs: &[Run]) -> Run {
    let mut sorted = runs.to_vec();
    sorted.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    sorted[(sorted.len() - 1) / 2]
}

/// One run: `messages` to `target`, timed until the sink has them all.
async fn once(
    case: &Case,
    target: &Target,
    sink: &SharedSink,
    tls: &Arc<rustls::ClientConfig>,
    messages: usize,
) -> Run {
    let from = format!("bench@{}.bench.test", case.algorithm);
    let load = Arc::new(Load {
        addr: target.addr,
        security: target.security,
        key: target.key.clone(),
        pipelining: true,
        mail_from: from.clone(),
        rcpt_to: RECIPIENT.to_owned(),
        data: data(case),
        sessions: SESSIONS,
        per_connection: case.per_connection,
    });
    let before = sink.received_len();
    let cpu = MachineCpu::now();
    let started = Instant::now();
    let injected = smtp_load::run(load, tls, messages);
    let delivered = sink.wait_for_count(before + messages, RUN_TIMEOUT);
    let ((), arrived) = tokio::join!(
        async {
            injected.await;
        },
        delivered
    );
    assert!(
        arrived,
        "{}: the sink did not get {messages} messages in time",
        target.name
    );
    let elapsed = started.elapsed();
    let busy = cpu.busy_since();
    // Let the queue drain and the sink settle before the next target starts.
    tokio::time::sleep(Duration::from_millis(500)).await;
    Run {
        rate: messages as f64 / elapsed.as_secs_f64(),
        cpu_ms: busy.as_secs_f64() * 1e3 / messages as f64,
    }
}

/// The machine's busy CPU time so far, from the first line of `/proc/stat`.
struct MachineCpu {
    busy_ticks: u64,
}

impl MachineCpu {
    fn now() -> MachineCpu {
        let stat = std::fs::read_to_string("/proc/stat").expect("/proc/stat");
        let fields: Vec<u64> = stat
            .lines()
            .next()
            .expect("the cpu line")
            .split_whitespace()
            .skip(1)
            .filter_map(|f| f.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
        let busy = fields
            .iter()
            .take(8)
            .enumerate()
            .filter(|(i, _)| *i != 3 && *i != 4)
            .map(|(_, v)| v)
            .sum();
        MachineCpu { busy_ticks: busy }
    }

    fn busy_since(&self) -> Duration {
        let ticks = MachineCpu::now().busy_ticks.saturating_sub(self.busy_ticks);
        // USER_HZ is 100 on every architecture Linux runs herald on.
        Duration::from_millis(ticks * 10)
    }
}

/// herald with an implicit-TLS listener and a plain one, relaying to `sink`; the
/// operator's key trusted from 127.0.0.1 (its id exists only once herald has made it, so
/// herald starts twice on the same data); a sending domain per DKIM algorithm.
async fn start(dir: &tempfile::TempDir, sink: SocketAddr) -> Running {
    let sections = format!(
        "[smtp]\nlisteners = [{{ addr = \"127.0.0.1:0\", tls = \"implicit\" }}, {{ addr = \"127.0.0.1:0\", tls = \"starttls\" }}]\n\
         connections_per_address_max = 1000\n\
         [delivery]\nenabled = true\nrelay = \"{sink}\"\n\
         # Postfix's default_destination_concurrency_limit, as the peer relays with it.\nconnections_per_destination = 20\n"
    );
    let first = bench_server::start(dir, &sections).await;
    for algorithm in ["ed25519", "rsa"] {
        bench_server::verified_domain(first.http_addr, &format!("{algorithm}.bench.test"), algorithm).await;
    }
    let mut client = api_client::Client::connect(first.http_addr, KEY).await;
    let (status, keys) = client.get("/api-keys").await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&keys));
    let keys: serde_json::Value = serde_json::from_slice(&keys).expect("JSON");
    let key_id = keys["data"][0]["id"].as_str().expect("the operator's key").to_owned();
    drop(client);
    first.shutdown().await;
    let trusted = format!("{sections}[[smtp.trusted]]\nnetwork = \"127.0.0.1/32\"\napi_key_id = \"{key_id}\"\n");
    bench_server::start(dir, &trusted).await
}
