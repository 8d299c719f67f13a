//! Sending regions over real sockets: two regions on loopback source addresses
//! (`127.0.0.2`, `127.0.0.3`) relaying to a sink that records each connection's peer
//! address and EHLO name. Mail from each domain arrives from its region's addresses only,
//! a domain moved to another region sends from there next, a region that is not
//! configured is refused by name, the SPF record names the region's addresses, and a
//! warming address's daily limit defers the excess with `delivery_delayed` until the
//! injected clock reaches the next UTC day.

mod util;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use herald::server::Running;
use herald_queue::{ManualClock, Timestamp};
use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use util::sink::{Received, Sink, SinkOptions};
use util::{OPERATOR_KEY, call};

/// 2026-11-20T12:00:00Z.
const START: u64 = 1_795_176_000_000;
const WAIT: Duration = Duration::from_secs(30);
const US: &str = "127.0.0.2";
const EU: &str = "127.0.0.3";

struct World {
    sink: Sink,
    running: Running,
    clock: Arc<ManualClock>,
    /// What [`World::restart`] starts herald with again.
    extra: String,
    dir: tempfile::TempDir,
}

impl World {
    /// herald with regions `us-east-1` (from [`US`]) and `eu-west-1` (from [`EU`], its
    /// own relay, and `eu` appended to its section), both reaching the sink.
    async fn start(eu: &str) -> World {
        World::start_with("idle_timeout = \"2s\"\n", |relay| {
            format!(
                "[[regions]]\nname = \"us-east-1\"\nsource_addresses = [\"{US}\"]\nehlo = \"mta-us.herald.test\"\n\
                 [[regions]]\nname = \"eu-west-1\"\nsource_addresses = [\"{EU}\"]\nehlo = \"mta-eu.herald.test\"\nrelay = \"{relay}\"\n{eu}"
            )
        })
        .await
    }

    /// herald relaying to a sink, with `delivery` added to `[delivery]` and the
    /// `[[regions]]` that `regions` writes for the sink's address.
    async fn start_with(delivery: &str, regions: impl FnOnce(SocketAddr) -> String) -> World {
        let sink = Sink::start(SinkOptions::default());
        let relay = sink.addr();
        let dir = tempfile::tempdir().expect("tempdir");
        let extra = format!(
            "[api]\nrate_limit = \"1000/s\"\n{}{delivery}{}",
            util::relay_to(relay),
            regions(relay)
        );
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(START)));
        World::run(sink, clock, extra, dir, Some(OPERATOR_KEY)).await
    }

    /// herald over `dir` with `extra` in its configuration, bootstrapping `key` when given.
    async fn run(
        sink: Sink,
        clock: Arc<ManualClock>,
        extra: String,
        dir: tempfile::TempDir,
        key: Option<&str>,
    ) -> World {
        let config = util::config(dir.path(), &extra);
        let running = util::start_with_clock(config, key, clock.clone()).await;
        World {
            sink,
            running,
            clock,
            extra,
            dir,
        }
    }

    /// Stops herald and starts it again over the same data, clock and sink: what it
    /// knows afterwards it read from the store.
    async fn restart(self) -> World {
        let World {
            sink,
            running,
            clock,
            extra,
            dir,
        } = self;
        assert!(running.shutdown().await, "a clean stop");
        World::run(sink, clock, extra, dir, None).await
    }

    fn addr(&self) -> SocketAddr {
        self.running.http_addr
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> util::HttpResponse {
        call(self.addr(), method, path, Some(OPERATOR_KEY), body).await
    }

    /// A verified domain `name` in `region`; its id.
    async fn domain(&self, name: &str, region: &str) -> String {
        let id = util::verified_domain(self.addr(), name).await;
        let moved = self.move_domain(&id, region).await;
        assert_eq!(moved.status, StatusCode::OK, "{}", moved.text());
        id
    }

    /// `PATCH /domains/{id}` to `region`.
    async fn move_domain(&self, id: &str, region: &str) -> util::HttpResponse {
        self.call(
            Method::PATCH,
            &format!("/domains/{id}"),
            Some(json!({ "region": region })),
        )
        .await
    }

    async fn send(&self, domain: &str, to: &str) -> String {
        self.send_to(domain, &[to]).await
    }

    /// Sends one email from `domain` to every address of `to`; its id.
    async fn send_to(&self, domain: &str, to: &[&str]) -> String {
        let body = json!({ "from": format!("App <app@{domain}>"), "to": to, "subject": "hello", "text": "Hello." });
        let response = self.call(Method::POST, "/emails", Some(body)).await;
        assert_eq!(response.status, StatusCode::OK, "{}", response.text());
        response.json()["id"].as_str().expect("id").to_owned()
    }

    /// Waits until the email's `last_event` is one of `events`; which one.
    async fn wait_event(&self, id: &str, events: &[&str]) -> String {
        settled(self.addr(), id, events).await
    }

    /// `GET /queue/stats`'s entry for source address `ip`.
    async fn source(&self, ip: &str) -> Value {
        let stats = self.call(Method::GET, "/queue/stats", None).await.json();
        stats["sources"]
            .as_array()
            .and_then(|sources| sources.iter().find(|s| s["address"] == ip))
            .cloned()
            .unwrap_or_else(|| panic!("no source {ip} in {stats}"))
    }
}

/// Waits until the email `id`'s `last_event` is one of `events`; which one.
async fn settled(addr: SocketAddr, id: &str, events: &[&str]) -> String {
    util::eventually(WAIT, &format!("email {id} to reach one of {events:?}"), || async {
        let email = call(addr, Method::GET, &format!("/emails/{id}"), Some(OPERATOR_KEY), None)
            .await
            .json();
        let last = email["last_event"].as_str().unwrap_or_default().to_owned();
        events.contains(&last.as_str()).then_some(last)
    })
    .await
}

/// Who each received message was sent to, from where and as whom.
fn arrivals(received: &[Received]) -> Vec<(String, IpAddr, String)> {
    received
        .iter()
        .map(|r| (r.rcpt_to[0].clone(), r.peer, r.ehlo.clone()))
        .collect()
}

/// `herald queue stats` against the server at `addr`, as the operator.
fn herald_queue_stats(addr: SocketAddr) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_herald"))
        .args(["queue", "stats"])
        .env("HERALD_URL", format!("http://{addr}"))
        .env("HERALD_API_KEY", OPERATOR_KEY)
        .env_remove("RUST_LOG")
        .output()
        .expect("run herald queue stats");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).expect("utf-8")
}

fn ip(text: &str) -> IpAddr {
    text.parse().expect("an address")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_leaves_from_its_domains_region_and_follows_a_region_change() {
    let world = World::start("").await;

    // A region this server does not run is refused, naming the ones it does.
    let refused = world
        .call(
            Method::POST,
            "/domains",
            Some(json!({ "name": "south.test", "region": "sa-east-1" })),
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
    assert_eq!(refused.json()["name"], "invalid_region");
    let message = refused.json()["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains("us-east-1, eu-west-1"), "{message}");

    let us_id = world.domain("us.test", "us-east-1").await;
    let eu_id = world.domain("eu.test", "eu-west-1").await;
    let moved = world.move_domain(&eu_id, "mars-1").await;
    assert_eq!(moved.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", moved.text());

    // The domain answers its region, and its SPF record names the region's address, EHLO
    // name and smarthost beside `[domains] spf`.
    let eu = world.call(Method::GET, &format!("/domains/{eu_id}"), None).await.json();
    assert_eq!(eu["region"], "eu-west-1");
    let spf = eu["records"]
        .as_array()
        .and_then(|records| records.iter().find(|r| r["record"] == "SPF" && r["type"] == "TXT"))
        .and_then(|r| r["value"].as_str())
        .expect("an SPF record")
        .to_owned();
    assert_eq!(
        spf,
        "v=spf1 a:herald.test ip4:127.0.0.3 a:mta-eu.herald.test ip4:127.0.0.1 ~all"
    );
    let us = world.call(Method::GET, &format!("/domains/{us_id}"), None).await.json();
    assert_eq!(us["region"], "us-east-1");

    for n in 0..3 {
        world.send("us.test", &format!("us{n}@example.net")).await;
        world.send("eu.test", &format!("eu{n}@example.net")).await;
    }
    let received = world.sink.wait_for(6, WAIT).await;
    for (to, peer, ehlo) in arrivals(&received) {
        if to.starts_with("us") {
            assert_eq!((peer, ehlo.as_str()), (ip(US), "mta-us.herald.test"), "{to}");
        } else {
            assert_eq!((peer, ehlo.as_str()), (ip(EU), "mta-eu.herald.test"), "{to}");
        }
    }

    // Moved to us-east-1: mail not yet in flight leaves from there.
    let moved = world.move_domain(&eu_id, "us-east-1").await;
    assert_eq!(moved.status, StatusCode::OK, "{}", moved.text());
    let after = world.call(Method::GET, &format!("/domains/{eu_id}"), None).await.json();
    assert_eq!(after["region"], "us-east-1");
    world.send("eu.test", "moved@example.net").await;
    let received = world.sink.wait_for(7, WAIT).await;
    let moved = arrivals(&received)
        .into_iter()
        .find(|(to, _, _)| to == "moved@example.net")
        .expect("the moved domain's mail");
    assert_eq!((moved.1, moved.2.as_str()), (ip(US), "mta-us.herald.test"));

    // The operator sees each address's connections and day.
    let us_source = world.source(US).await;
    assert_eq!(us_source["region"], "us-east-1");
    assert_eq!(us_source["sent_today"], 4);
    assert_eq!(us_source["daily_limit"], Value::Null);
    assert_eq!(world.source(EU).await["sent_today"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warming_address_defers_the_excess_until_the_next_utc_day() {
    let world =
        World::start("[[regions.warmup]]\naddress = \"127.0.0.3\"\nstart = \"2026-11-20\"\ndaily_limits = [2, 10]\n")
            .await;
    world.domain("warm.test", "eu-west-1").await;
    let mut ids = Vec::new();
    for n in 0..4 {
        ids.push(world.send("warm.test", &format!("w{n}@example.net")).await);
    }
    world.sink.wait_for(2, WAIT).await;
    let mut delayed = Vec::new();
    for id in &ids {
        if world.wait_event(id, &["delivered", "delivery_delayed"]).await == "delivery_delayed" {
            delayed.push(id.clone());
        }
    }
    assert_eq!(delayed.len(), 2, "two of four wait for tomorrow");
    assert_eq!(world.sink.received_len(), 2);
    let source = world.source(EU).await;
    assert_eq!(source["sent_today"], 2);
    assert_eq!(source["daily_limit"], 2);
    assert_eq!(source["warmup"], json!({ "day": 1, "days": 2 }));
    // `herald queue stats` prints the same, one line per address.
    let printed = herald_queue_stats(world.addr());
    let line: Vec<&str> = printed
        .lines()
        .find(|line| line.contains("127.0.0.3"))
        .unwrap_or_else(|| panic!("no source line in\n{printed}"))
        .split_whitespace()
        .collect();
    assert_eq!(
        (line[0], line[3], line[4], line[5]),
        ("eu-west-1", "2", "2", "1/2"),
        "{printed}"
    );
    let queued = world
        .call(Method::GET, &format!("/queue/{}", delayed[0]), None)
        .await
        .json();
    let reply = queued.to_string();
    assert!(reply.contains("warm-up limit"), "{reply}");
    // Held until the first hour of the next UTC day, not retried on the intervals
    // meanwhile.
    let resumes = queued["next_attempt_at"].as_str().unwrap_or_default();
    assert!(resumes.starts_with("2026-11-21 00:"), "{queued}");

    // The next UTC day the limit is ten: the two go out, from the same address.
    world.clock.advance(Duration::from_secs(13 * 3600 + 60));
    for id in &delayed {
        world.wait_event(id, &["delivered"]).await;
    }
    let received = world.sink.wait_for(4, WAIT).await;
    assert!(received.iter().all(|r| r.peer == ip(EU)), "{:?}", arrivals(&received));
    let source = world.source(EU).await;
    assert_eq!(source["sent_today"], 2);
    assert_eq!(source["daily_limit"], 10);
    assert_eq!(source["warmup"], json!({ "day": 2, "days": 2 }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_transaction_counts_against_the_stored_day() {
    let world =
        World::start("[[regions.warmup]]\naddress = \"127.0.0.3\"\nstart = \"2026-11-20\"\ndaily_limits = [10]\n")
            .await;
    world.domain("warm.test", "eu-west-1").await;
    // Two recipient domains: two transactions, over the same relay, address and TLS.
    let id = world
        .send_to("warm.test", &["one@one.example", "two@two.example"])
        .await;
    world.wait_event(&id, &["delivered"]).await;
    world.sink.wait_for(2, WAIT).await;
    assert_eq!(world.source(EU).await["sent_today"], 2);
    // After a restart the day's count is the stored one, which counted both.
    let world = world.restart().await;
    assert_eq!(world.source(EU).await["sent_today"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_this_host_cannot_bind_is_passed_over() {
    // 192.0.2.77 (TEST-NET-1) is on no interface here: binding it fails.
    let world = World::start_with(
        "idle_timeout = \"1s\"\nconnections_per_destination = 1\nmessages_per_connection = 1\n",
        |_| format!("[[regions]]\nname = \"us-east-1\"\nsource_addresses = [\"192.0.2.77\", \"{US}\"]\n"),
    )
    .await;
    util::verified_domain(world.addr(), "bind.test").await;
    let mut ids = Vec::new();
    for n in 0..4 {
        ids.push(world.send("bind.test", &format!("b{n}@example.net")).await);
    }
    // Each message gets its own connection; none is deferred or backed off for the
    // address that cannot be bound.
    let received = world.sink.wait_for(4, WAIT).await;
    assert!(received.iter().all(|r| r.peer == ip(US)), "{:?}", arrivals(&received));
    for id in &ids {
        world.wait_event(id, &["delivered"]).await;
        let email_id: herald_queue::Id = id.parse().expect("id");
        let kinds: Vec<herald::emails::EmailState> = world
            .running
            .state
            .emails()
            .timeline(email_id)
            .expect("the timeline")
            .into_iter()
            .map(|event| event.kind)
            .collect();
        assert!(
            kinds.contains(&herald::emails::EmailState::Delivered),
            "{id}: {kinds:?}"
        );
        assert!(
            !kinds.contains(&herald::emails::EmailState::DeliveryDelayed),
            "{id}: {kinds:?}"
        );
    }
}
