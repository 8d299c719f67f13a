//! Crash safety under load (issue #8): the real `herald` binary takes a steady stream of
//! API and SMTP submissions while it delivers them to a real SMTP sink and posts their
//! events to a real webhook receiver, and is killed with SIGKILL several times, each time
//! restarted on the same data directory. At the end every acknowledged email must have
//! reached the sink, had its `email.sent` and `email.delivered` events delivered, and be
//! listed by `GET /emails`. Zero losses is the only pass.
//!
//! At-least-once allows duplicates, but only where a kill explains them: a message the
//! sink accepted in one life may arrive again in a later one (herald died before
//! recording the `250`), and a webhook request may be repeated under the same
//! `webhook-id`. Both are counted and reported. The same email twice within one life, or
//! one event fanned out into two messages, is a bug and fails the test.
//!
//! The kills land at chosen kinds of moment, in an order drawn from a seed the test
//! prints (`CRASH_LOAD_SEED` repeats it): anywhere in the load, right after the sink
//! accepts a message (before herald can record it), and right after the receiver reads a
//! webhook request (before herald sees the `200`). Each waits on a condition, never a
//! sleep: a random number of new acknowledgements, and deliveries and webhook requests in
//! the current life.

mod util;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hyper::{Method, StatusCode};
use rustls::pki_types::ServerName;
use serde_json::json;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinSet;
use util::process::{Log, Process};
use util::real::{self, email_id_of, wait_until};
use util::sink::{Sink, SinkOptions};
use util::webhook_receiver::Receiver;
use util::{OPERATOR_KEY, call, lock};

/// SIGKILLs in one run: each kind of [`Moment`] twice. A run takes seconds, so more
/// kills cost little and find more.
const KILLS: usize = 6;
/// New acknowledgements in a life before its kill may come.
const ACKS_BEFORE_KILL: RangeInclusive<usize> = 10..=40;
/// Acknowledgements the last life takes before the load stops, so it serves new mail
/// besides recovering the old.
const ACKS_IN_LAST_LIFE: usize = 30;
/// Submissions started, at most: the bound on the test's size. The kills need about
/// `KILLS * 40 + 30` acknowledgements, more while webhook requests lag behind (runs
/// acknowledged 240 to 410); the bound leaves room for a slow machine.
const SUBMISSIONS_MAX: usize = 800;
/// Concurrent clients of each kind.
const API_CLIENTS: usize = 2;
const SMTP_CLIENTS: usize = 2;
/// Messages per SMTP session, at most.
const MESSAGES_PER_SESSION: RangeInclusive<usize> = 1..=3;
/// The sending domain.
const DOMAIN: &str = "crash.test";
/// The bound on a start, a stop and each step of the load.
const WAIT: Duration = Duration::from_secs(20);
/// The bound on delivering everything after the load stops.
const SETTLE: Duration = Duration::from_secs(40);
/// The bound on one submission.
const SUBMISSION_TIMEOUT: Duration = Duration::from_secs(10);
/// Lost emails described in detail on failure.
const EVIDENCE_MAX: usize = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_acknowledged_email_or_event_is_lost_when_herald_is_killed_under_load() {
    let started = Instant::now();
    let seed = seed();
    println!("seed {seed} (CRASH_LOAD_SEED={seed} repeats the test's choices)");
    let mut rng = Rng(seed);
    let sink = Sink::start(SinkOptions::default());
    let receiver = Receiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), sink.addr());
    let log = Log::default();
    let mut herald = Process::start(&config, &log, 0, WAIT).await;
    util::verified_domain(herald.http, DOMAIN).await;
    let secret = create_webhook(herald.http, receiver.addr()).await;

    let (target, watcher) = watch::channel(Target::up(0, &herald));
    let load = Arc::new(Load::new(watcher));
    let mut clients = load.spawn_clients(&mut rng);
    let mut moments = [Moment::Anywhere, Moment::SinkAccepted, Moment::WebhookRead];
    let mut kills = Vec::new();
    for life in 0..KILLS {
        if life % moments.len() == 0 {
            rng.shuffle(&mut moments);
        }
        let moment = moments[life % moments.len()];
        kill_under_load(&mut herald, moment, &mut rng, &load, &sink, &receiver).await;
        target.send_replace(Target::Down);
        // Once herald's connections to the sink are closed, everything the sink accepted
        // from this life is recorded, so `Kill::sink` splits the receipts by life.
        wait_until(
            WAIT,
            || sink.concurrent() == 0,
            || {
                format!(
                    "the sink to see herald's connections close ({} open)",
                    sink.concurrent()
                )
            },
        )
        .await;
        kills.push(Kill {
            life,
            moment,
            at: started.elapsed(),
            acked: load.acked_len(),
            sink: sink.received_len(),
            webhooks: receiver.len(),
        });
        herald = Process::start(&config, &log, life + 1, WAIT).await;
        target.send_replace(Target::up(life + 1, &herald));
    }
    let last = kills.last().expect("KILLS > 0");
    assert!(
        last.sink > 0 && last.webhooks > 0,
        "deliveries and webhook requests before the last kill: {last:?}"
    );
    load.wait_for_acks(load.acked_len() + ACKS_IN_LAST_LIFE).await;
    target.send_replace(Target::Stop);
    real::join_clients(&mut clients, WAIT).await;
    let load_ended = started.elapsed();

    let acked = load.acked();
    let settled = settle(&acked, &sink, &receiver).await;
    let seen = Seen::gather(&sink, &receiver, &secret, &kills, herald.http).await;
    let report = seen.report(&acked, &load, &kills);
    println!("{report}");
    println!(
        "load ended at {load_ended:.1?}, everything arrived {settled:.1?} later; whole test {:.1?}",
        started.elapsed()
    );
    let losses = seen.losses(&acked);
    if !losses.is_empty() {
        let evidence = evidence(&losses, &acked, &seen, herald.http, &log).await;
        panic!("{} acknowledged emails lost something:\n{evidence}", losses.len());
    }
    seen.assert_duplicates_explained();
    seen.assert_nothing_unknown();
    herald.terminate(WAIT).await;
}

/// Waits for the moment of one kill, then kills.
async fn kill_under_load(
    herald: &mut Process,
    moment: Moment,
    rng: &mut Rng,
    load: &Load,
    sink: &Sink,
    receiver: &Receiver,
) {
    let acks = load.acked_len() + rng.pick(ACKS_BEFORE_KILL);
    let (sink_from, webhooks_from) = (sink.received_len(), receiver.len());
    load.wait_for_acks(acks).await;
    wait_until(
        WAIT,
        || sink.received_len() > sink_from && receiver.len() > webhooks_from,
        || {
            format!(
                "deliveries and webhook requests in this life (sink {sink_from} -> {}, webhooks {webhooks_from} -> {})",
                sink.received_len(),
                receiver.len()
            )
        },
    )
    .await;
    match moment {
        Moment::Anywhere => {}
        Moment::SinkAccepted => drop(sink.wait_for(sink.received_len() + 1, WAIT).await),
        Moment::WebhookRead => receiver.wait_for_len(receiver.len() + 1, WAIT).await,
    }
    let status = herald.kill_9();
    assert!(!status.success(), "SIGKILL ended herald: {status:?}");
}

/// Waits until the sink and the receiver have everything for `acked`; how long that took.
/// Returns at the deadline too: what is missing then is reported as lost.
async fn settle(acked: &BTreeMap<String, Ack>, sink: &Sink, receiver: &Receiver) -> Duration {
    let started = Instant::now();
    let complete = || {
        let delivered: BTreeSet<String> = sink.received().iter().map(email_id_of).collect();
        let events = receiver.email_events();
        acked.keys().all(|id| {
            delivered.contains(id)
                && events.contains(&("email.sent".to_owned(), id.clone()))
                && events.contains(&("email.delivered".to_owned(), id.clone()))
        })
    };
    while !complete() && started.elapsed() < SETTLE {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    started.elapsed()
}

/// One kill, and what the sink and the receiver had by the time herald's connections were
/// gone.
#[derive(Debug)]
struct Kill {
    life: usize,
    moment: Moment,
    at: Duration,
    acked: usize,
    sink: usize,
    webhooks: usize,
}

/// What a kill waits for, after its share of the load.
#[derive(Debug, Clone, Copy)]
enum Moment {
    /// Nothing more.
    Anywhere,
    /// The sink's next `250` to the end of data, which herald may not have read yet.
    SinkAccepted,
    /// The receiver's next request, which herald has no answer to yet.
    WebhookRead,
}

/// Where the load clients send, as the test restarts herald.
#[derive(Debug, Clone, PartialEq)]
enum Target {
    Up(Up),
    /// Killed, not restarted yet.
    Down,
    /// The load is over.
    Stop,
}

#[derive(Debug, Clone, PartialEq)]
struct Up {
    life: usize,
    http: SocketAddr,
    smtps: SocketAddr,
}

impl Target {
    fn up(life: usize, herald: &Process) -> Target {
        assert_eq!(herald.smtp.len(), 1, "the config has one SMTP listener");
        Target::Up(Up {
            life,
            http: herald.http,
            smtps: herald.smtp[0],
        })
    }
}

/// An acknowledged email.
#[derive(Debug, Clone)]
struct Ack {
    via: Via,
    /// The life that acknowledged it.
    life: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    Api,
    Smtp,
}

/// The submission clients' shared state.
struct Load {
    target: watch::Receiver<Target>,
    /// Submissions left to start.
    budget: AtomicUsize,
    /// Numbers the messages' subjects.
    started: AtomicUsize,
    /// Email ids in the order they were acknowledged.
    acked: Mutex<Vec<(String, Ack)>>,
    /// Submissions that failed, by what failed: expected around kills, not acknowledged.
    failures: Mutex<BTreeMap<String, usize>>,
}

impl Load {
    fn new(target: watch::Receiver<Target>) -> Load {
        Load {
            target,
            budget: AtomicUsize::new(SUBMISSIONS_MAX),
            started: AtomicUsize::new(0),
            acked: Mutex::default(),
            failures: Mutex::default(),
        }
    }

    fn spawn_clients(self: &Arc<Self>, rng: &mut Rng) -> JoinSet<()> {
        let tls = herald_tls::client_config(herald_tls::Verification::Opportunistic, None).expect("TLS client");
        let mut clients = JoinSet::new();
        for _ in 0..API_CLIENTS {
            clients.spawn(api_client(Arc::clone(self)));
        }
        for _ in 0..SMTP_CLIENTS {
            clients.spawn(smtp_client(Arc::clone(self), Rng(rng.next()), Arc::clone(&tls)));
        }
        clients
    }

    /// Takes up to `wanted` submissions from the budget; 0 when it is spent.
    fn take(&self, wanted: usize) -> usize {
        let taken = self.budget.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
            Some(left - left.min(wanted))
        });
        let left = taken.expect("the closure always returns Some");
        left.min(wanted)
    }

    fn number(&self) -> usize {
        self.started.fetch_add(1, Ordering::Relaxed)
    }

    fn ack(&self, id: &str, via: Via, life: usize) {
        assert!(
            id.parse::<herald_queue::Id>().is_ok(),
            "acknowledged with something that is not an email id: {id:?}"
        );
        lock(&self.acked).push((id.to_owned(), Ack { via, life }));
    }

    fn fail(&self, what: String) {
        *lock(&self.failures).entry(what).or_default() += 1;
    }

    fn acked_len(&self) -> usize {
        lock(&self.acked).len()
    }

    /// Every acknowledged email; panics if an id was acknowledged twice.
    fn acked(&self) -> BTreeMap<String, Ack> {
        let list = lock(&self.acked).clone();
        let count = list.len();
        let acked: BTreeMap<String, Ack> = list.into_iter().collect();
        assert_eq!(acked.len(), count, "herald acknowledged some email id twice");
        acked
    }

    async fn wait_for_acks(&self, count: usize) {
        wait_until(
            WAIT,
            || self.acked_len() >= count,
            || {
                format!(
                    "{count} acknowledgements ({} so far, {} submissions left in the budget, failures {:?})",
                    self.acked_len(),
                    self.budget.load(Ordering::Relaxed),
                    lock(&self.failures)
                )
            },
        )
        .await;
    }

    /// The next herald to submit to, waiting while it is down; `None` once the load stops.
    async fn next_target(&self, watcher: &mut watch::Receiver<Target>) -> Option<Up> {
        let target = watcher.wait_for(|t| *t != Target::Down).await.ok()?.clone();
        match target {
            Target::Up(up) => Some(up),
            Target::Down | Target::Stop => None,
        }
    }
}

/// Posts emails one after another until the load stops or the budget is spent.
async fn api_client(load: Arc<Load>) {
    let mut watcher = load.target.clone();
    while let Some(up) = load.next_target(&mut watcher).await {
        if load.take(1) == 0 {
            return;
        }
        let number = load.number();
        // Every other email is large enough for a body file.
        let padding = if number.is_multiple_of(2) {
            String::new()
        } else {
            format!("\n{}", "x".repeat(98)).repeat(LARGE_BODY_LINES)
        };
        let body = json!({
            "from": format!("App <app@{DOMAIN}>"),
            "to": "user@example.net",
            "subject": format!("api {number}"),
            "text": format!("posted while herald may die{padding}"),
        });
        match real::post_email(up.http, &body, SUBMISSION_TIMEOUT).await.1 {
            Ok(id) => load.ack(&id, Via::Api, up.life),
            Err(what) => {
                load.fail(format!("api {what}"));
                pause_after_failure(&mut watcher, &up).await;
            }
        }
    }
}

/// Sends sessions of one to three messages until the load stops or the budget is spent.
async fn smtp_client(load: Arc<Load>, mut rng: Rng, tls: Arc<rustls::ClientConfig>) {
    let mut watcher = load.target.clone();
    while let Some(up) = load.next_target(&mut watcher).await {
        let count = load.take(rng.pick(MESSAGES_PER_SESSION));
        if count == 0 {
            return;
        }
        let session = tokio::time::timeout(SUBMISSION_TIMEOUT, smtp_session(&load, &up, &tls, count)).await;
        let failure = match session {
            Ok(Ok(())) => continue,
            Ok(Err(what)) => what,
            Err(_) => "timed out".to_owned(),
        };
        load.fail(format!("smtp {failure}"));
        pause_after_failure(&mut watcher, &up).await;
    }
}

/// After a failure, which is a kill unless herald refused: waits briefly for the next
/// life, so a client does not spin on the dead one's closed ports.
async fn pause_after_failure(watcher: &mut watch::Receiver<Target>, up: &Up) {
    let moved_on = |t: &Target| !matches!(t, Target::Up(now) if now == up);
    let _ = tokio::time::timeout(Duration::from_millis(100), watcher.wait_for(moved_on)).await;
}

/// One SMTPS session with AUTH PLAIN sending `count` messages, MAIL, RCPT and DATA
/// pipelined; acknowledges each `250 2.0.0 OK <id>` as it is read.
async fn smtp_session(load: &Load, up: &Up, tls: &Arc<rustls::ClientConfig>, count: usize) -> Result<(), String> {
    let tcp = TcpStream::connect(up.smtps)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let name = ServerName::try_from("herald.test").expect("a valid name");
    let stream = tokio_rustls::TlsConnector::from(Arc::clone(tls))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS: {e}"))?;
    let (reader, mut writer) = tokio::io::split(stream);
    let mut reader = BufReader::new(reader);
    let mut send = async |bytes: &[u8]| -> Result<(), String> {
        writer.write_all(bytes).await.map_err(|e| format!("write: {e}"))?;
        writer.flush().await.map_err(|e| format!("write: {e}"))
    };
    expect_reply(&mut reader, 220).await?;
    send(format!("EHLO load.test\r\nAUTH PLAIN {}\r\n", util::auth_plain(OPERATOR_KEY)).as_bytes()).await?;
    expect_reply(&mut reader, 250).await?;
    expect_reply(&mut reader, 235).await?;
    for _ in 0..count {
        send(format!("MAIL FROM:<app@{DOMAIN}>\r\nRCPT TO:<user@example.net>\r\nDATA\r\n").as_bytes()).await?;
        expect_reply(&mut reader, 250).await?;
        expect_reply(&mut reader, 250).await?;
        expect_reply(&mut reader, 354).await?;
        let number = load.number();
        // Every other message is large enough for a body file.
        let padding = if number.is_multiple_of(2) {
            String::new()
        } else {
            format!("{}\r\n", "x".repeat(98)).repeat(LARGE_BODY_LINES)
        };
        let message = format!(
            "From: App <app@{DOMAIN}>\r\nTo: user@example.net\r\nSubject: smtp {number}\r\n\r\nsent while herald may die\r\n{padding}.\r\n"
        );
        send(message.as_bytes()).await?;
        let reply = expect_reply(&mut reader, 250).await?;
        let id = reply
            .strip_prefix("250 2.0.0 OK ")
            .ok_or_else(|| format!("end of data answered {reply:?}"))?;
        load.ack(id.trim_end(), Via::Smtp, up.life);
    }
    // Everything is acknowledged; how the session ends does not matter.
    let _ = send(b"QUIT\r\n").await;
    Ok(())
}

/// Lines of 100 bytes that take every other message past the 4 KiB from which herald
/// writes it to a body file.
const LARGE_BODY_LINES: usize = 84;

/// Reads one reply, all its lines; its last line if its code is `code`.
async fn expect_reply<R: AsyncBufRead + Unpin>(reader: &mut R, code: u16) -> Result<String, String> {
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line).await {
            Ok(0) => return Err(format!("closed awaiting {code}")),
            Ok(_) => {}
            Err(e) => return Err(format!("read: {e}")),
        }
        if !line.starts_with(&code.to_string()) {
            return Err(format!("{} instead of {code}", line.trim_end()));
        }
        if line.as_bytes().get(3) != Some(&b'-') {
            return Ok(line.trim_end().to_owned());
        }
    }
}

/// Everything observed once the load stopped and the deliveries settled.
struct Seen {
    /// The sink's receipts in order: email id and the life that delivered it.
    receipts: Vec<(String, usize)>,
    /// Event type and email id -> the `webhook-id`s that carried it.
    events: BTreeMap<(String, String), BTreeSet<String>>,
    /// `webhook-id` -> requests.
    requests: BTreeMap<String, usize>,
    /// What `GET /emails` lists.
    listed: BTreeSet<String>,
}

impl Seen {
    async fn gather(sink: &Sink, receiver: &Receiver, secret: &str, kills: &[Kill], http: SocketAddr) -> Seen {
        let receipts = sink
            .received()
            .iter()
            .enumerate()
            .map(|(index, received)| {
                let life = kills.iter().filter(|kill| kill.sink <= index).count();
                (email_id_of(received), life)
            })
            .collect();
        let mut seen = Seen {
            receipts,
            events: BTreeMap::new(),
            requests: BTreeMap::new(),
            listed: list_emails(http).await,
        };
        for request in receiver.all() {
            request.verify(secret);
            let payload = request.payload();
            let kind = payload["type"].as_str().expect("type").to_owned();
            let email_id = payload["data"]["email_id"].as_str().expect("data.email_id").to_owned();
            seen.events
                .entry((kind, email_id))
                .or_default()
                .insert(request.webhook_id.clone());
            *seen.requests.entry(request.webhook_id).or_default() += 1;
        }
        seen
    }

    fn delivered(&self) -> BTreeSet<&str> {
        self.receipts.iter().map(|(id, _)| id.as_str()).collect()
    }

    fn has_event(&self, kind: &str, id: &str) -> bool {
        self.events.contains_key(&(kind.to_owned(), id.to_owned()))
    }

    /// Acknowledged emails with something missing, and what.
    fn losses(&self, acked: &BTreeMap<String, Ack>) -> BTreeMap<String, Vec<&'static str>> {
        let delivered = self.delivered();
        let mut losses = BTreeMap::new();
        for id in acked.keys() {
            let missing: Vec<&'static str> = [
                (!delivered.contains(id.as_str())).then_some("delivery to the sink"),
                (!self.has_event("email.sent", id)).then_some("email.sent webhook"),
                (!self.has_event("email.delivered", id)).then_some("email.delivered webhook"),
                (!self.listed.contains(id)).then_some("GET /emails entry"),
            ]
            .into_iter()
            .flatten()
            .collect();
            if !missing.is_empty() {
                losses.insert(id.clone(), missing);
            }
        }
        losses
    }

    /// Receipts of one email by life: more than one receipt in a life is a duplicate no
    /// kill explains.
    fn lives_by_email(&self) -> BTreeMap<&str, Vec<usize>> {
        let mut lives: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (id, life) in &self.receipts {
            lives.entry(id).or_default().push(*life);
        }
        lives
    }

    /// For each kill: how many emails the sink got in the life it ended and again later
    /// (herald had not recorded their delivery), and how far back, in sink receipts before
    /// the kill, the oldest of them was delivered: the window that a crash repeats.
    fn redelivered(&self, kills: &[Kill]) -> Vec<(usize, usize)> {
        let mut first: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        let mut again = BTreeSet::new();
        for (index, (id, life)) in self.receipts.iter().enumerate() {
            match first.get(id.as_str()) {
                Some(&(_, first_life)) if first_life < *life => drop(again.insert(id.as_str())),
                Some(_) => {}
                None => drop(first.insert(id, (index, *life))),
            }
        }
        let mut per_kill = vec![(0, 0); kills.len()];
        for id in again {
            let (index, life) = first[id];
            let (count, oldest) = &mut per_kill[life];
            *count += 1;
            *oldest = (*oldest).max(kills[life].sink - index);
        }
        per_kill
    }

    fn assert_duplicates_explained(&self) {
        let unexplained: Vec<_> = self
            .lives_by_email()
            .into_iter()
            .filter(|(_, lives)| lives.iter().collect::<BTreeSet<_>>().len() < lives.len())
            .collect();
        assert!(
            unexplained.is_empty(),
            "emails the sink received twice from one life (no kill between): {unexplained:?}"
        );
        let fanned_twice: Vec<_> = self.events.iter().filter(|(_, messages)| messages.len() > 1).collect();
        assert!(
            fanned_twice.is_empty(),
            "events that reached the webhook as several messages: {fanned_twice:?}"
        );
    }

    /// Every delivery and event belongs to an email `GET /emails` knows.
    fn assert_nothing_unknown(&self) {
        let unknown: BTreeSet<&str> = self
            .delivered()
            .into_iter()
            .chain(self.events.keys().map(|(_, id)| id.as_str()))
            .filter(|id| !self.listed.contains(*id))
            .collect();
        assert!(
            unknown.is_empty(),
            "deliveries or events for emails herald does not list: {unknown:?}"
        );
    }

    fn report(&self, acked: &BTreeMap<String, Ack>, load: &Load, kills: &[Kill]) -> String {
        let by_api = acked.values().filter(|a| a.via == Via::Api).count();
        let delivered = self.delivered();
        let sink_duplicates: usize = self.lives_by_email().values().map(|lives| lives.len() - 1).sum();
        let webhook_duplicates: usize = self.requests.values().map(|n| n - 1).sum();
        let unacknowledged = delivered.iter().filter(|id| !acked.contains_key(**id)).count();
        let redelivered = self.redelivered(kills);
        let mut text = String::new();
        for (kill, (again, oldest)) in kills.iter().zip(&redelivered) {
            text += &format!(
                "kill {} at {:.1?} ({:?}): by then {} acknowledged, {} sink receipts, {} webhook requests; \
                 {again} emails delivered again after it, the oldest {oldest} receipts before it\n",
                kill.life + 1,
                kill.at,
                kill.moment,
                kill.acked,
                kill.sink,
                kill.webhooks
            );
        }
        let mut by_life = vec![0; kills.len() + 1];
        for ack in acked.values() {
            by_life[ack.life] += 1;
        }
        text += &format!(
            "acknowledged {} ({by_api} API, {} SMTP; by life {by_life:?}); failed submissions {:?}\n\
             sink: {} receipts of {} emails, {sink_duplicates} duplicates; {unacknowledged} delivered \
             emails were never acknowledged (accepted as herald died)\n\
             webhooks: {} requests for {} messages, {webhook_duplicates} duplicate requests\n\
             GET /emails lists {}",
            acked.len(),
            acked.len() - by_api,
            lock(&load.failures),
            self.receipts.len(),
            delivered.len(),
            self.requests.values().sum::<usize>(),
            self.requests.len(),
            self.listed.len(),
        );
        text
    }
}

/// What herald knows of each lost email, and its log lines.
async fn evidence(
    losses: &BTreeMap<String, Vec<&'static str>>,
    acked: &BTreeMap<String, Ack>,
    seen: &Seen,
    http: SocketAddr,
    log: &Log,
) -> String {
    let lives = seen.lives_by_email();
    let mut text = String::new();
    for (id, missing) in losses.iter().take(EVIDENCE_MAX) {
        let email = call(http, Method::GET, &format!("/emails/{id}"), Some(OPERATOR_KEY), None).await;
        text += &format!(
            "- {id}: {:?}, lacks {missing:?}; sink receipts in lives {:?}; GET /emails/{{id}}: {} {}\n",
            acked[id],
            lives.get(id.as_str()),
            email.status,
            email.text()
        );
        for line in log.matching(id).iter().take(8) {
            text += &format!("    {line}\n");
        }
    }
    if losses.len() > EVIDENCE_MAX {
        text += &format!("... and {} more: {:?}\n", losses.len() - EVIDENCE_MAX, losses.keys());
    }
    text
}

/// Every email id `GET /emails` lists, a page of 100 at a time.
async fn list_emails(http: SocketAddr) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut path = "/emails?limit=100".to_owned();
    for _ in 0..=SUBMISSIONS_MAX / 100 + 1 {
        let page = call(http, Method::GET, &path, Some(OPERATOR_KEY), None).await;
        assert_eq!(page.status, StatusCode::OK, "GET {path}: {}", page.text());
        let page = page.json();
        let data = page["data"].as_array().expect("data");
        ids.extend(data.iter().map(|e| e["id"].as_str().expect("id").to_owned()));
        let Some(last) = data.last().filter(|_| page["has_more"] == true) else {
            return ids;
        };
        path = format!("/emails?limit=100&after={}", last["id"].as_str().expect("id"));
    }
    panic!("GET /emails has more pages than {SUBMISSIONS_MAX} submissions fill");
}

/// Creates the webhook for `email.sent` and `email.delivered`; its signing secret.
async fn create_webhook(http: SocketAddr, receiver: SocketAddr) -> String {
    let body = json!({ "endpoint": format!("http://{receiver}/hook"), "events": ["email.sent", "email.delivered"] });
    let created = call(http, Method::POST, "/webhooks", Some(OPERATOR_KEY), Some(body)).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    created.json()["signing_secret"]
        .as_str()
        .expect("signing_secret")
        .to_owned()
}

/// JSON logs, delivery through the sink with a one-second retry, and a minute of
/// one-second webhook retries: a schedule that ran out would mark a message failed, and
/// the test would call it lost.
fn write_config(dir: &Path, sink: SocketAddr) -> PathBuf {
    let webhook_retries = vec!["\"1s\""; 60].join(", ");
    let extra = format!(
        r#"{load}[webhooks]
allowed_networks = ["127.0.0.0/8"]
retry_intervals = [{webhook_retries}]
timeout = "5s"
"#,
        load = real::load_sections(sink)
    );
    real::write_config(dir, Duration::from_secs(5), &extra)
}

/// `CRASH_LOAD_SEED`, or one from the clock.
fn seed() -> u64 {
    if let Ok(text) = std::env::var("CRASH_LOAD_SEED") {
        return text.parse().expect("CRASH_LOAD_SEED is a u64");
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970");
    now.as_secs() ^ (u64::from(now.subsec_nanos()) << 32)
}

/// SplitMix64: a few lines of deterministic, well-mixed choices, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn pick(&mut self, range: RangeInclusive<usize>) -> usize {
        let span = (range.end() - range.start() + 1) as u64;
        range.start() + usize::try_from(self.next() % span).expect("below a usize span")
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.pick(0..=i));
        }
    }
}
