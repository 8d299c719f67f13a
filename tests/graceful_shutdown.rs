//! Graceful shutdown under load (issue #8): the real `herald` binary takes a steady stream
//! of API and SMTP submissions while it delivers them to a slow SMTP sink, and gets a
//! SIGTERM in the middle of it. It must stop accepting (no submission begun once it is
//! shutting down is acknowledged), finish or safely defer what is in flight, exit by
//! itself with status 0 within `[server] shutdown_grace` plus a margin, and start clean
//! on the same data directory, where every acknowledged email reaches the sink.
//!
//! "Begun once it is shutting down" is measured from the moment the test reads herald's
//! `shutting down` log line, which herald writes just before it fires the shutdown signal;
//! a submission begun earlier is in flight, and may still be acknowledged (it is counted).
//!
//! The sink answers each end of data after [`SINK_DELAY`], so at the SIGTERM several
//! outbound transactions are in flight. Delivery is at least once: a transaction the
//! shutdown cut off may be repeated after the restart. Duplicates are counted and printed,
//! not failed.

mod util;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use util::process::{Log, Process};
use util::real::{self, email_id_of, wait_until};
use util::sink::{Sink, SinkOptions};
use util::{OPERATOR_KEY, lock};

/// `[server] shutdown_grace` in the config.
const GRACE: Duration = Duration::from_secs(5);
/// How much longer than the grace period herald may take to exit: the store's close and
/// process teardown come after it.
const EXIT_MARGIN: Duration = Duration::from_secs(3);
/// How long the sink takes to answer each end of data: long enough that transactions are
/// in flight at the SIGTERM, far shorter than the grace period.
const SINK_DELAY: Duration = Duration::from_millis(300);
/// Concurrent clients of each kind.
const API_CLIENTS: usize = 2;
const SMTP_CLIENTS: usize = 2;
/// Each client's pause between submissions. It sets the load's rate (about 100 emails a
/// second in all), so the backlog the restart must deliver stays a few seconds' work for
/// the slow sink and the test stays bounded.
const PACE: Duration = Duration::from_millis(40);
/// Messages per SMTP session.
const MESSAGES_PER_SESSION: usize = 3;
/// Acknowledgements before the SIGTERM may come.
const ACKS_BEFORE_SIGTERM: usize = 40;
/// Deliveries before the SIGTERM may come, and sink connections open at it: the delivery
/// engine is busy.
const DELIVERED_BEFORE_SIGTERM: usize = 5;
const SINK_CONNECTIONS_AT_SIGTERM: usize = 2;
/// The sending domain.
const DOMAIN: &str = "shutdown.test";
/// The bound on a start, the load's ramp-up and a clean stop.
const WAIT: Duration = Duration::from_secs(10);
/// The bound on delivering every acknowledged email after the restart.
const SETTLE: Duration = Duration::from_secs(15);
/// The bound on one submission; a probe of the shutting-down herald that hangs (its
/// listener no longer accepting) ends with it.
const SUBMISSION_TIMEOUT: Duration = Duration::from_secs(2);
/// How often conditions are checked.
const POLL: Duration = Duration::from_millis(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_refuses_new_work_drains_in_flight_and_restarts_clean() {
    let started = Instant::now();
    let sink = Sink::start(SinkOptions {
        delay: SINK_DELAY,
        ..SinkOptions::default()
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), sink.addr());
    let log = Log::default();
    let mut herald = Process::start(&config, &log, 0, WAIT).await;
    util::verified_domain(herald.http, DOMAIN).await;
    let target = Target {
        http: herald.http,
        smtps: herald.smtp[0],
        tls: herald_tls::client_config(herald_tls::Verification::Opportunistic, None).expect("TLS client"),
    };

    let load = Arc::new(Attempts::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = spawn_load(&target, &load, &stop);
    wait_until(
        WAIT,
        || {
            load.acked_len() >= ACKS_BEFORE_SIGTERM
                && sink.received_len() >= DELIVERED_BEFORE_SIGTERM
                && sink.concurrent() >= SINK_CONNECTIONS_AT_SIGTERM
        },
        || {
            format!(
                "the load to ramp up ({} acknowledged, {} delivered, {} sink connections)",
                load.acked_len(),
                sink.received_len(),
                sink.concurrent()
            )
        },
    )
    .await;

    let at_signal = (load.acked_len(), sink.received_len(), sink.concurrent());
    let signalled = Instant::now();
    herald.sigterm();
    wait_until(
        WAIT,
        || !life_lines(&log, 0, "\"shutting down\"").is_empty(),
        || "herald to log that it is shutting down".to_owned(),
    )
    .await;
    let cutoff = Instant::now();

    // Probes: fresh submissions, one after another, for as long as herald runs.
    let exited = Arc::new(AtomicBool::new(false));
    let probes = Arc::new(Attempts::default());
    let prober = tokio::spawn(probe(target.clone(), Arc::clone(&probes), Arc::clone(&exited)));
    let exit = herald.wait_exit(GRACE + EXIT_MARGIN).await;
    let stopped_in = signalled.elapsed();
    exited.store(true, Ordering::Release);
    let exit = exit.unwrap_or_else(|| panic!("herald still ran {stopped_in:.1?} after SIGTERM"));
    assert!(exit.success(), "herald exited uncleanly after SIGTERM: {exit:?}");
    stop.store(true, Ordering::Release);
    let probes_alive = tokio::time::timeout(WAIT, prober)
        .await
        .expect("the prober stops")
        .expect("the prober did not panic");
    real::join_clients(&mut clients, WAIT).await;
    // Herald is gone, so its connections to the sink are closed: everything the sink
    // accepted from the first life is counted.
    wait_until(
        WAIT,
        || sink.concurrent() == 0,
        || "the sink's connections to close".to_owned(),
    )
    .await;
    let delivered_by_exit = sink.received_len();

    // Nothing begun after herald started shutting down was acknowledged, and the probes
    // did reach the shutting-down herald, by both routes.
    let late: Vec<Attempt> = load
        .all()
        .into_iter()
        .chain(probes.all())
        .filter(|a| a.begun > cutoff && a.outcome.is_ok())
        .collect();
    assert!(
        late.is_empty(),
        "submissions begun after herald logged `shutting down` were acknowledged: {late:?}"
    );
    for via in [Via::Api, Via::Smtp] {
        assert!(
            probes_alive[via as usize] > 0,
            "no {via:?} probe began while herald was shutting down (it stopped in {stopped_in:.1?})"
        );
    }
    // Herald's last line is `stopped`; once it is read, so is everything before it.
    wait_until(
        WAIT,
        || !life_lines(&log, 0, "\"stopped\"").is_empty(),
        || "the first life's last log line".to_owned(),
    )
    .await;
    let drained = life_lines(&log, 0, "\"stopped\"");
    let errors = life_problems(&log, 0, &["ERROR"]);
    assert!(errors.is_empty(), "herald logged errors in its first life: {errors:#?}");

    // Second life: a clean start on the same data directory.
    let mut herald = Process::start(&config, &log, 1, WAIT).await;
    let acked = load.acked();
    let settled = settle(&acked, &sink).await;
    let receipts = receipts_by_email(&sink);
    let lost: Vec<&String> = acked.keys().filter(|id| !receipts.contains_key(*id)).collect();
    let duplicates: BTreeMap<&String, usize> = receipts
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(id, n)| (id, *n))
        .collect();
    let unacknowledged = receipts.keys().filter(|id| !acked.contains_key(*id)).count();
    let in_flight_acks = acked.values().filter(|a| a.begun <= cutoff && a.at > signalled).count();

    println!(
        "SIGTERM {:.1?} into the test: {} acknowledged, {} delivered, {} sink connections open",
        signalled.duration_since(started),
        at_signal.0,
        at_signal.1,
        at_signal.2
    );
    println!(
        "herald logged `shutting down` {:.0?} after the signal and exited (status 0) {stopped_in:.1?} after it; {}",
        cutoff - signalled,
        drained.first().map_or("no `stopped` line", String::as_str)
    );
    println!(
        "in flight at the signal and finished after it: {in_flight_acks} acknowledgements, {} deliveries",
        delivered_by_exit - at_signal.1
    );
    println!(
        "load: begun before herald logged `shutting down` and ended after the signal {:?}; begun after it {:?}",
        load.outcomes(|a| a.begun <= cutoff && a.at > signalled),
        load.outcomes(|a| a.begun > cutoff)
    );
    println!(
        "probes of the shutting-down herald: {} API, {} SMTP; outcomes {:?}",
        probes_alive[Via::Api as usize],
        probes_alive[Via::Smtp as usize],
        probes.outcomes(|a| a.begun > cutoff)
    );
    println!(
        "restart: {}",
        life_lines(&log, 1, "\"resuming spooled mail\"")
            .first()
            .map_or("no spooled mail to resume", String::as_str)
    );
    println!(
        "{} acknowledged ({} API); after the restart all arrived within {settled:.1?}: {} lost, {} delivered more \
         than once {duplicates:?}, {unacknowledged} delivered but never acknowledged; whole test {:.1?}",
        acked.len(),
        acked.values().filter(|a| a.via == Via::Api).count(),
        lost.len(),
        duplicates.len(),
        started.elapsed()
    );
    assert!(lost.is_empty(), "acknowledged emails never delivered: {lost:?}");
    herald.terminate(WAIT).await;
    wait_until(
        WAIT,
        || !life_lines(&log, 1, "\"stopped\"").is_empty(),
        || "the second life's last log line".to_owned(),
    )
    .await;
    let problems = life_problems(&log, 1, &["ERROR", "WARN"]);
    assert!(
        problems.is_empty(),
        "the restarted herald logged problems: {problems:#?}"
    );
}

/// Where the clients submit.
#[derive(Clone)]
struct Target {
    http: SocketAddr,
    smtps: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    Api = 0,
    Smtp = 1,
}

/// One submission: an email id when acknowledged, what failed otherwise.
#[derive(Debug, Clone)]
struct Attempt {
    via: Via,
    /// When the submission was sent: the request, or the `MAIL FROM` of a transaction;
    /// the connection attempt when no connection was made.
    begun: Instant,
    /// When its outcome was known.
    at: Instant,
    outcome: Result<String, String>,
}

/// Every attempt of a set of clients.
#[derive(Default)]
struct Attempts(Mutex<Vec<Attempt>>);

impl Attempts {
    fn record(&self, via: Via, begun: Instant, outcome: Result<String, String>) {
        lock(&self.0).push(Attempt {
            via,
            begun,
            at: Instant::now(),
            outcome,
        });
    }

    fn all(&self) -> Vec<Attempt> {
        lock(&self.0).clone()
    }

    fn acked_len(&self) -> usize {
        lock(&self.0).iter().filter(|a| a.outcome.is_ok()).count()
    }

    /// Acknowledged attempts by email id; panics if an id was acknowledged twice.
    fn acked(&self) -> BTreeMap<String, Attempt> {
        let acked: Vec<Attempt> = self.all().into_iter().filter(|a| a.outcome.is_ok()).collect();
        let count = acked.len();
        let by_id: BTreeMap<String, Attempt> = acked
            .into_iter()
            .map(|a| (a.outcome.clone().expect("filtered to acknowledgements"), a))
            .collect();
        assert_eq!(by_id.len(), count, "herald acknowledged some email id twice");
        by_id
    }

    /// Outcomes of the attempts `which` selects, by kind: `acknowledged`, or what failed.
    fn outcomes(&self, which: impl Fn(&Attempt) -> bool) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for attempt in self.all().into_iter().filter(which) {
            let what = match &attempt.outcome {
                Ok(_) => "acknowledged".to_owned(),
                Err(what) => what.clone(),
            };
            *counts.entry(format!("{:?} {what}", attempt.via)).or_default() += 1;
        }
        counts
    }
}

fn spawn_load(target: &Target, load: &Arc<Attempts>, stop: &Arc<AtomicBool>) -> JoinSet<()> {
    let number = Arc::new(AtomicUsize::new(0));
    let mut clients = JoinSet::new();
    for _ in 0..API_CLIENTS {
        let (target, load, stop, number) = (target.clone(), Arc::clone(load), Arc::clone(stop), Arc::clone(&number));
        clients.spawn(async move {
            while !stop.load(Ordering::Acquire) {
                let (begun, outcome) = post_email(target.http, number.fetch_add(1, Ordering::Relaxed)).await;
                load.record(Via::Api, begun, outcome);
                tokio::time::sleep(PACE).await;
            }
        });
    }
    for _ in 0..SMTP_CLIENTS {
        let (target, load, stop, number) = (target.clone(), Arc::clone(load), Arc::clone(stop), Arc::clone(&number));
        clients.spawn(async move {
            while !stop.load(Ordering::Acquire) {
                smtp_session(&target, &load, &number, MESSAGES_PER_SESSION).await;
                tokio::time::sleep(PACE).await;
            }
        });
    }
    clients
}

/// Submits one email by each route, again and again, until `exited`; how many of each
/// began while herald still ran.
async fn probe(target: Target, probes: Arc<Attempts>, exited: Arc<AtomicBool>) -> [usize; 2] {
    let number = AtomicUsize::new(1_000_000);
    let mut alive = [0, 0];
    while !exited.load(Ordering::Acquire) {
        alive[Via::Api as usize] += 1;
        let (begun, outcome) = post_email(target.http, number.fetch_add(1, Ordering::Relaxed)).await;
        probes.record(Via::Api, begun, outcome);
        if exited.load(Ordering::Acquire) {
            break;
        }
        alive[Via::Smtp as usize] += 1;
        smtp_session(&target, &probes, &number, 1).await;
        // Refused connections fail at once; a pause keeps the probes from spinning.
        tokio::time::sleep(POLL).await;
    }
    alive
}

/// `POST /emails` of API email `number` on a new connection: when the request was sent,
/// and the email id if herald answered `200`.
async fn post_email(http: SocketAddr, number: usize) -> (Instant, Result<String, String>) {
    let body = json!({
        "from": format!("App <app@{DOMAIN}>"),
        "to": "user@example.net",
        "subject": format!("api {number}"),
        "text": "posted while herald may be shutting down",
    });
    real::post_email(http, &body, SUBMISSION_TIMEOUT).await
}

/// One SMTPS session with AUTH PLAIN sending up to `count` messages, recording each
/// transaction; a session that fails before its first transaction is recorded as one
/// failed attempt.
async fn smtp_session(target: &Target, attempts: &Attempts, number: &AtomicUsize, count: usize) {
    let connecting = Instant::now();
    let session = async {
        let mut session = Session::open(target).await?;
        for _ in 0..count {
            let begun = Instant::now();
            let outcome = session.transaction(number.fetch_add(1, Ordering::Relaxed)).await;
            let failed = outcome.is_err();
            attempts.record(Via::Smtp, begun, outcome);
            if failed {
                return Ok(());
            }
        }
        // Everything is acknowledged; how the session ends does not matter.
        let _ = session.send(b"QUIT\r\n").await;
        Ok::<(), String>(())
    };
    match tokio::time::timeout(SUBMISSION_TIMEOUT, session).await {
        Ok(Ok(())) => {}
        Ok(Err(what)) => attempts.record(Via::Smtp, connecting, Err(what)),
        Err(_) => attempts.record(Via::Smtp, connecting, Err("timed out".to_owned())),
    }
}

type TlsStream = tokio_rustls::client::TlsStream<TcpStream>;

/// An authenticated SMTPS session.
struct Session {
    reader: BufReader<tokio::io::ReadHalf<TlsStream>>,
    writer: tokio::io::WriteHalf<TlsStream>,
}

impl Session {
    async fn open(target: &Target) -> Result<Session, String> {
        let tcp = TcpStream::connect(target.smtps)
            .await
            .map_err(|e| format!("connect: {:?}", e.kind()))?;
        let name = ServerName::try_from("herald.test").expect("a valid name");
        let stream = tokio_rustls::TlsConnector::from(Arc::clone(&target.tls))
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS: {:?}", e.kind()))?;
        let (reader, writer) = tokio::io::split(stream);
        let mut session = Session {
            reader: BufReader::new(reader),
            writer,
        };
        expect_reply(&mut session.reader, 220).await?;
        let hello = format!("EHLO load.test\r\nAUTH PLAIN {}\r\n", util::auth_plain(OPERATOR_KEY));
        session.send(hello.as_bytes()).await?;
        expect_reply(&mut session.reader, 250).await?;
        expect_reply(&mut session.reader, 235).await?;
        Ok(session)
    }

    /// MAIL, RCPT and DATA pipelined, then the message: the email id from `250 2.0.0 OK <id>`.
    async fn transaction(&mut self, number: usize) -> Result<String, String> {
        let envelope = format!("MAIL FROM:<app@{DOMAIN}>\r\nRCPT TO:<user@example.net>\r\nDATA\r\n");
        self.send(envelope.as_bytes()).await?;
        expect_reply(&mut self.reader, 250).await?;
        expect_reply(&mut self.reader, 250).await?;
        expect_reply(&mut self.reader, 354).await?;
        let message = format!(
            "From: App <app@{DOMAIN}>\r\nTo: user@example.net\r\nSubject: smtp {number}\r\n\r\n\
             sent while herald may be shutting down\r\n.\r\n"
        );
        self.send(message.as_bytes()).await?;
        let reply = expect_reply(&mut self.reader, 250).await?;
        reply
            .strip_prefix("250 2.0.0 OK ")
            .map(|id| id.trim_end().to_owned())
            .ok_or_else(|| format!("end of data answered {reply:?}"))
    }

    async fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.writer
            .write_all(bytes)
            .await
            .map_err(|e| format!("write: {:?}", e.kind()))?;
        self.writer.flush().await.map_err(|e| format!("write: {:?}", e.kind()))
    }
}

/// Reads one reply, all its lines; its last line if its code is `code`. Another code is
/// reported by its first line's code and enhanced status (`421 4.3.2`), so failures
/// group by kind.
async fn expect_reply<R: AsyncBufRead + Unpin>(reader: &mut R, code: u16) -> Result<String, String> {
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line).await {
            Ok(0) => return Err(format!("closed awaiting {code}")),
            Ok(_) => {}
            Err(e) => return Err(format!("read: {:?}", e.kind())),
        }
        if !line.starts_with(&code.to_string()) {
            let kind: String = line.split(' ').take(2).collect::<Vec<_>>().join(" ");
            return Err(format!("{} instead of {code}", kind.trim_end()));
        }
        if line.as_bytes().get(3) != Some(&b'-') {
            return Ok(line.trim_end().to_owned());
        }
    }
}

/// Waits until the sink has every acknowledged email; how long that took. Returns at the
/// deadline too: what is missing then is reported as lost.
async fn settle(acked: &BTreeMap<String, Attempt>, sink: &Sink) -> Duration {
    let started = Instant::now();
    loop {
        let delivered: BTreeSet<String> = sink.received().iter().map(email_id_of).collect();
        if acked.keys().all(|id| delivered.contains(id)) || started.elapsed() >= SETTLE {
            return started.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The sink's receipts counted by email id.
fn receipts_by_email(sink: &Sink) -> BTreeMap<String, usize> {
    let mut receipts = BTreeMap::new();
    for received in sink.received() {
        *receipts.entry(email_id_of(&received)).or_default() += 1;
    }
    receipts
}

/// The log lines of `life` that contain `needle`.
fn life_lines(log: &Log, life: usize, needle: &str) -> Vec<String> {
    let prefix = format!("[{life}] ");
    log.matching(needle)
        .into_iter()
        .filter_map(|line| line.strip_prefix(&prefix).map(str::to_owned))
        .collect()
}

/// The lines of `life` logged at one of `levels`, or not JSON at all (a panic, or the
/// `herald: ...` that precedes a failed exit).
fn life_problems(log: &Log, life: usize, levels: &[&str]) -> Vec<String> {
    life_lines(log, life, "")
        .into_iter()
        .filter(|line| match serde_json::from_str::<Value>(line) {
            Ok(value) => levels.iter().any(|level| value["level"] == *level),
            Err(_) => true,
        })
        .collect()
}

/// JSON logs, the grace period, and delivery through the sink with a one-second retry.
fn write_config(dir: &Path, sink: SocketAddr) -> PathBuf {
    real::write_config(dir, GRACE, &real::load_sections(sink))
}
