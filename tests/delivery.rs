//! The delivery engine end to end: mail accepted by the API goes to a real SMTP sink on
//! loopback, found as the MX through a real DNS server on loopback.

mod util;

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use herald::server::Running;
use herald_queue::{ManualClock, SharedClock, Timestamp};
use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use util::dns::TestDns;
use util::sink::{Sink, SinkOptions};
use util::{OPERATOR_KEY, call};

const SENDER_DOMAIN: &str = "sender.test";
const WAIT: Duration = Duration::from_secs(30);

struct World {
    dns: TestDns,
    /// The sending domain's id.
    domain_id: String,
    sink: Sink,
    running: Running,
    _dir: tempfile::TempDir,
}

impl World {
    async fn start(options: SinkOptions, extra: &str) -> World {
        World::start_with_clock(options, extra, None).await
    }

    async fn start_with_clock(options: SinkOptions, extra: &str, clock: Option<SharedClock>) -> World {
        let dns = TestDns::start().await;
        dns.set_mx("example.net", &[(10, "mx.example.net")]);
        dns.set_a("mx.example.net", &[Ipv4Addr::LOCALHOST]);
        let sink = Sink::start(options);
        let dir = tempfile::tempdir().expect("tempdir");
        let delivery = format!(
            "[api]\nrate_limit = \"1000/s\"\n[delivery]\nenabled = true\nnameservers = [\"{}\"]\nmx_port = {}\nretry_intervals = [\"1s\"]\nidle_timeout = \"3s\"\nconnect_timeout = \"2s\"\ncommand_timeout = \"10s\"\n{extra}",
            dns.addr(),
            sink.addr().port()
        );
        let config = util::config(dir.path(), &delivery);
        let running = match clock {
            Some(clock) => util::start_with_clock(config, Some(OPERATOR_KEY), clock).await,
            None => util::start_with_key(config, Some(OPERATOR_KEY)).await,
        };
        let domain_id = util::verified_domain(running.http_addr, SENDER_DOMAIN).await;
        World {
            dns,
            domain_id,
            sink,
            running,
            _dir: dir,
        }
    }

    async fn send(&self, to: &[&str]) -> String {
        let body = json!({ "from": format!("App <app@{SENDER_DOMAIN}>"), "to": to, "subject": "hello", "text": "Hello there.\n.\nA line with a dot." });
        let response = call(
            self.running.http_addr,
            Method::POST,
            "/emails",
            Some(OPERATOR_KEY),
            Some(body),
        )
        .await;
        assert_eq!(response.status, StatusCode::OK, "{}", response.text());
        response.json()["id"].as_str().expect("id").to_owned()
    }

    async fn email(&self, id: &str) -> Value {
        let response = call(
            self.running.http_addr,
            Method::GET,
            &format!("/emails/{id}"),
            Some(OPERATOR_KEY),
            None,
        )
        .await;
        assert_eq!(response.status, StatusCode::OK, "{}", response.text());
        response.json()
    }

    /// Waits until the email's `last_event` is `event`.
    async fn wait_event(&self, id: &str, event: &str) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let email = self.email(id).await;
            if email["last_event"] == event {
                return email;
            }
            assert!(
                Instant::now() < deadline,
                "email {id} never reached {event}; last: {}",
                email["last_event"]
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The email's timeline events, as `(email.<kind>, to, data)`: delivery writes each
    /// one in the same batch as its webhook event (the outbox is drained by the webhook
    /// dispatcher, so the timeline is what stays).
    fn events(&self, id: &str) -> Vec<(String, String, Value)> {
        let email_id: herald_queue::Id = id.parse().expect("id");
        self.running
            .state
            .emails()
            .timeline(email_id)
            .expect("the timeline")
            .into_iter()
            .map(|event| {
                let to = event.data["to"][0].as_str().unwrap_or_default().to_owned();
                (format!("email.{}", event.kind), to, event.data)
            })
            .collect()
    }

    fn kinds_for(&self, id: &str, to: &str) -> Vec<String> {
        self.events(id)
            .into_iter()
            .filter(|(kind, recipient, _)| recipient == to && kind != "email.sent")
            .map(|(kind, _, _)| kind)
            .collect()
    }
}

/// A sink that answers each end of data after `delay_ms`.
fn slow_sink(delay_ms: u64) -> SinkOptions {
    SinkOptions {
        delay: Duration::from_millis(delay_ms),
        ..SinkOptions::default()
    }
}

/// The `[delivery]` lines that give `example.net` `connections` connections of
/// `per_connection` messages each.
fn destination_limits(connections: usize, per_connection: usize) -> String {
    format!(
        "[[delivery.destinations]]\npattern = \"example.net\"\nconnections = {connections}\nmessages_per_connection = {per_connection}\n"
    )
}

/// `<special><n>@example.net` when `n % every == at`, else `user<n>@example.net`.
fn recipient(n: usize, every: usize, at: usize, special: &str) -> String {
    let local = if n % every == at { special } else { "user" };
    format!("{local}{n}@example.net")
}

/// Every recipient the sink accepted, sorted.
fn accepted_sorted(sink: &Sink) -> Vec<String> {
    let mut accepted: Vec<String> = sink.received().iter().flat_map(|r| r.rcpt_to.clone()).collect();
    accepted.sort();
    accepted
}

fn starttls_sink() -> SinkOptions {
    SinkOptions {
        starttls: true,
        ..SinkOptions::default()
    }
}

#[tokio::test]
async fn mail_is_signed_and_delivered_over_starttls_to_the_mx_in_dns() {
    let world = World::start(starttls_sink(), "").await;
    let id = world.send(&["user@example.net"]).await;
    let received = world.sink.wait_for(1, WAIT).await;
    let message = &received[0];
    assert_eq!(
        message.mail_from,
        format!("{id}@send.{SENDER_DOMAIN}"),
        "VERP return path"
    );
    assert_eq!(message.rcpt_to, vec!["user@example.net".to_owned()]);
    assert!(message.tls, "STARTTLS was offered, so it was used");
    let text = message.text();
    assert!(text.starts_with("DKIM-Signature:"), "{text}");
    assert!(
        text.contains("\r\n.\r\nA line with a dot."),
        "dot-stuffing round trip: {text}"
    );

    let email = world.wait_event(&id, "delivered").await;
    assert_eq!(email["last_event"], "delivered");
    assert_eq!(world.kinds_for(&id, "user@example.net"), vec!["email.delivered"]);
    assert_eq!(world.sink.ehlo_names()[0], "herald.test");

    // The signature verifies against the record the domains API publishes.
    let domain_id = &world.domain_id;
    let domain = call(
        world.running.http_addr,
        Method::GET,
        &format!("/domains/{domain_id}"),
        Some(OPERATOR_KEY),
        None,
    )
    .await
    .json();
    let dkim = domain["records"]
        .as_array()
        .expect("records")
        .iter()
        .find(|r| r["record"] == "DKIM")
        .expect("a DKIM record");
    let name = format!("{}.{SENDER_DOMAIN}", dkim["name"].as_str().expect("name"));
    world.dns.set_txt(&name, &[dkim["value"].as_str().expect("value")]);
    let resolver = herald::dns::Dns::new(&[world.dns.addr()], false).expect("resolver");
    let authenticator = mail_auth::MessageAuthenticator(resolver.resolver().clone());
    let parsed = mail_auth::AuthenticatedMessage::parse(&message.data).expect("parse");
    let results = authenticator.verify_dkim(mail_auth::Parameters::new(&parsed)).await;
    assert!(
        results.iter().any(|r| *r.result() == mail_auth::DkimResult::Pass),
        "DKIM: {:?}",
        results.iter().map(|r| r.result().clone()).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn each_recipient_gets_its_own_outcome_in_one_transaction() {
    let world = World::start(SinkOptions::default(), "").await;
    let ok = "ok@example.net";
    let bounce = "bounce@example.net";
    let later = "deferonce@example.net";
    let id = world.send(&[ok, bounce, later]).await;

    let first = world.sink.wait_for(1, WAIT).await;
    assert_eq!(
        first[0].rcpt_to,
        vec![ok.to_owned()],
        "one transaction, refused ones left out"
    );
    let second = world.sink.wait_for(2, WAIT).await;
    assert_eq!(second[1].rcpt_to, vec![later.to_owned()], "the deferred one, retried");
    world.wait_event(&id, "delivered").await;

    assert_eq!(world.kinds_for(&id, ok), vec!["email.delivered"]);
    assert_eq!(
        world.kinds_for(&id, later),
        vec!["email.delivery_delayed", "email.delivered"]
    );
    let bounced: Vec<_> = world
        .events(&id)
        .into_iter()
        .filter(|(kind, to, _)| to == bounce && kind == "email.bounced")
        .collect();
    assert_eq!(bounced.len(), 1);
    let details = &bounced[0].2["bounce"];
    assert_eq!(details["type"], "Permanent");
    assert_eq!(details["subType"], "NoEmail");
    assert!(details["message"].as_str().unwrap_or_default().contains("No such user"));

    // The hard bounce put the address on the suppression list.
    let listed = call(
        world.running.http_addr,
        Method::GET,
        "/suppressions/bounce%40example.net",
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text());
    assert_eq!(listed.json()["origin"], "bounce");
    assert_eq!(listed.json()["source_id"], id.as_str());

    // And the next email to it is suppressed without connecting.
    let connections = world.sink.connections();
    let next = world.send(&[bounce]).await;
    world.wait_event(&next, "suppressed").await;
    assert_eq!(world.kinds_for(&next, bounce), vec!["email.suppressed"]);
    assert_eq!(
        world.sink.connections(),
        connections,
        "no connection for a suppressed address"
    );
}

#[tokio::test]
async fn a_null_mx_bounces_and_a_dead_first_mx_falls_back_to_the_second() {
    let world = World::start(SinkOptions::default(), "").await;
    world.dns.set_mx("nomail.example", &[(0, ".")]);
    let id = world.send(&["someone@nomail.example"]).await;
    let email = world.wait_event(&id, "bounced").await;
    assert_eq!(email["last_event"], "bounced");
    let events = world.events(&id);
    let bounce = events
        .iter()
        .find(|(kind, _, _)| kind == "email.bounced")
        .expect("bounce");
    assert!(
        bounce.2["bounce"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("null MX")
    );
    assert_eq!(world.sink.connections(), 0);

    // Nothing listens on 127.0.0.2 at the sink's port: the first MX refuses connections.
    world
        .dns
        .set_mx("two.example", &[(10, "down.two.example"), (20, "up.two.example")]);
    world.dns.set_a("down.two.example", &[Ipv4Addr::new(127, 0, 0, 2)]);
    world.dns.set_a("up.two.example", &[Ipv4Addr::LOCALHOST]);
    let id = world.send(&["user@two.example"]).await;
    world.wait_event(&id, "delivered").await;
    assert_eq!(world.sink.received().len(), 1);
}

#[tokio::test]
async fn required_tls_without_starttls_defers_instead_of_sending_in_plaintext() {
    let world = World::start(SinkOptions::default(), "").await;
    let domain_id = &world.domain_id;
    let patched = call(
        world.running.http_addr,
        Method::PATCH,
        &format!("/domains/{domain_id}"),
        Some(OPERATOR_KEY),
        Some(json!({ "tls": "enforced" })),
    )
    .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.text());
    let id = world.send(&["user@example.net"]).await;
    world.wait_event(&id, "delivery_delayed").await;
    assert!(world.sink.received().is_empty(), "nothing went in plaintext");
    let events = world.events(&id);
    assert_eq!(
        events
            .iter()
            .filter(|(kind, _, _)| kind == "email.delivery_delayed")
            .count(),
        1
    );
}

#[tokio::test]
async fn a_destination_gets_at_most_its_connections_and_they_are_reused() {
    let world = World::start(slow_sink(20), &destination_limits(2, 100)).await;
    let mut ids = Vec::new();
    for n in 0..20 {
        ids.push(world.send(&[&format!("user{n}@example.net")]).await);
    }
    world.sink.wait_for(20, WAIT).await;
    assert!(
        world.sink.max_concurrent() <= 2,
        "{} concurrent",
        world.sink.max_concurrent()
    );
    assert!(
        world.sink.connections() <= 2,
        "{} connections for 20 messages",
        world.sink.connections()
    );
    for id in &ids {
        world.wait_event(id, "delivered").await;
    }
}

/// Mail queued for a destination while a message is in flight follows it on the same
/// connection, its MAIL, RCPT and DATA in the write that ends the message before it; a
/// recipient the server refuses in such a pipelined transaction gets its own outcome and
/// the connection carries on, within its messages per connection.
#[tokio::test]
async fn queued_mail_follows_the_message_before_it_pipelined_behind_its_end_of_data() {
    let world = World::start(slow_sink(30), &destination_limits(1, 4)).await;
    let mut ids = Vec::new();
    for n in 0..12 {
        ids.push((world.send(&[&recipient(n, 3, 2, "bounce")]).await, n % 3 == 2));
    }
    for (id, bounced) in &ids {
        world
            .wait_event(id, if *bounced { "bounced" } else { "delivered" })
            .await;
    }
    let expected: Vec<String> = (0..12)
        .filter(|n| n % 3 != 2)
        .map(|n| format!("user{n}@example.net"))
        .collect();
    assert_eq!(accepted_sorted(&world.sink), sorted(expected));
    assert!(
        world.sink.pipelined_after_data() > 0,
        "no transaction followed an end of data"
    );
    // Each connection carried at most 4 transactions, the refused ones counted: 12 take
    // at least three connections.
    assert!(
        world.sink.messages_per_connection().iter().all(|&n| n <= 4),
        "{:?}",
        world.sink.messages_per_connection()
    );
    assert!(
        world.sink.connections() >= 3,
        "{} connections",
        world.sink.connections()
    );
}

/// A transaction whose commands went out behind the message before it, on a connection
/// the server then closes (`421` to its RCPT), goes again on a fresh connection: every
/// message arrives, once.
#[tokio::test]
async fn a_pipelined_transaction_on_a_connection_that_closes_goes_again_once() {
    let mut options = slow_sink(30);
    options
        .recipients
        .insert(0, util::sink::RecipientRule::once("closing", 421, "4.3.2 Closing"));
    let world = World::start(options, &destination_limits(1, 100)).await;
    let mut ids = Vec::new();
    for n in 0..8 {
        ids.push(world.send(&[&recipient(n, 4, 1, "closing")]).await);
    }
    for id in &ids {
        world.wait_event(id, "delivered").await;
    }
    let expected: Vec<String> = (0..8).map(|n| recipient(n, 4, 1, "closing")).collect();
    assert_eq!(accepted_sorted(&world.sink), sorted(expected), "each message once");
    assert!(world.sink.pipelined_after_data() > 0, "nothing was pipelined");
    assert!(
        world.sink.connections() >= 3,
        "{} connections",
        world.sink.connections()
    );
}

fn sorted(mut list: Vec<String>) -> Vec<String> {
    list.sort();
    list
}

#[tokio::test]
async fn a_destination_rate_spaces_messages_out() {
    let world = World::start(
        SinkOptions::default(),
        "[[delivery.destinations]]\npattern = \"*.net\"\nrate = \"10/s\"\n",
    )
    .await;
    let started = Instant::now();
    for n in 0..6 {
        world.send(&[&format!("user{n}@example.net")]).await;
    }
    world.sink.wait_for(6, WAIT).await;
    // Six messages at 10/s need at least five intervals of 100 ms.
    assert!(
        started.elapsed() >= Duration::from_millis(450),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn mail_that_keeps_failing_expires_as_a_bounce() {
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_795_334_400_000)));
    let world = World::start_with_clock(
        SinkOptions::default(),
        "message_lifetime = \"1h\"\n",
        Some(clock.clone()),
    )
    .await;
    let id = world.send(&["defer@example.net"]).await;
    world.wait_event(&id, "delivery_delayed").await;
    clock.advance(Duration::from_secs(2 * 3600));
    let email = world.wait_event(&id, "bounced").await;
    assert_eq!(email["last_event"], "bounced");
    let kinds = world.kinds_for(&id, "defer@example.net");
    assert_eq!(kinds, vec!["email.delivery_delayed", "email.bounced"]);
    let events = world.events(&id);
    let bounce = events
        .iter()
        .find(|(kind, _, _)| kind == "email.bounced")
        .expect("bounce");
    assert!(
        bounce.2["bounce"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("lifetime")
    );
}

#[tokio::test]
async fn mail_accepted_while_delivery_was_off_goes_out_after_a_restart() {
    let dns = TestDns::start().await;
    dns.set_mx("example.net", &[(10, "mx.example.net")]);
    dns.set_a("mx.example.net", &[Ipv4Addr::LOCALHOST]);
    let sink = Sink::start(SinkOptions::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let text = |enabled: bool| {
        format!(
            "[delivery]\nenabled = {enabled}\nnameservers = [\"{}\"]\nmx_port = {}\n",
            dns.addr(),
            sink.addr().port()
        )
    };
    let running = util::start_with_key(util::config(dir.path(), &text(false)), Some(OPERATOR_KEY)).await;
    util::verified_domain(running.http_addr, SENDER_DOMAIN).await;
    let body = json!({ "from": format!("app@{SENDER_DOMAIN}"), "to": "user@example.net", "subject": "s", "text": "t" });
    let sent = call(
        running.http_addr,
        Method::POST,
        "/emails",
        Some(OPERATOR_KEY),
        Some(body),
    )
    .await;
    assert_eq!(sent.status, StatusCode::OK);
    assert!(running.shutdown().await);
    assert_eq!(sink.connections(), 0);

    let running = util::start_with_key(util::config(dir.path(), &text(true)), Some(OPERATOR_KEY)).await;
    let received = sink.wait_for(1, WAIT).await;
    assert_eq!(received[0].rcpt_to, vec!["user@example.net".to_owned()]);
    assert!(running.shutdown().await);
}

#[tokio::test]
async fn a_smarthost_gets_all_mail_with_auth_inside_tls() {
    // The smarthost is a second herald: STARTTLS, AUTH with an API key, verified domains.
    let relay_dir = tempfile::tempdir().expect("tempdir");
    let relay = util::start_api(relay_dir.path(), "").await;
    util::verified_domain(relay.http_addr, SENDER_DOMAIN).await;
    util::verified_domain(relay.http_addr, &format!("send.{SENDER_DOMAIN}")).await;
    let starttls = relay.smtp[0].1;

    let dir = tempfile::tempdir().expect("tempdir");
    let extra = format!(
        "[api]\nrate_limit = \"1000/s\"\n[delivery]\nenabled = true\nrelay = \"{starttls}\"\nrelay_username = \"resend\"\nrelay_password = \"{OPERATOR_KEY}\"\nretry_intervals = [\"1s\"]\n"
    );
    let running = util::start_with_key(util::config(dir.path(), &extra), Some(OPERATOR_KEY)).await;
    util::verified_domain(running.http_addr, SENDER_DOMAIN).await;
    let body = json!({ "from": format!("app@{SENDER_DOMAIN}"), "to": "user@nowhere.example", "subject": "via relay", "text": "t" });
    let sent = call(
        running.http_addr,
        Method::POST,
        "/emails",
        Some(OPERATOR_KEY),
        Some(body),
    )
    .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());

    let deadline = Instant::now() + WAIT;
    loop {
        let listed = call(relay.http_addr, Method::GET, "/emails", Some(OPERATOR_KEY), None).await;
        let data = listed.json()["data"].clone();
        if let Some(email) = data.as_array().and_then(|list| list.first()) {
            assert_eq!(email["subject"], "via relay");
            assert_eq!(email["to"][0], "user@nowhere.example");
            break;
        }
        assert!(Instant::now() < deadline, "the smarthost never got the message");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn shutdown_lets_the_transaction_in_flight_finish_and_records_it() {
    let dns = TestDns::start().await;
    dns.set_mx("example.net", &[(10, "mx.example.net")]);
    dns.set_a("mx.example.net", &[Ipv4Addr::LOCALHOST]);
    let sink = Sink::start(SinkOptions {
        delay: Duration::from_millis(800),
        ..SinkOptions::default()
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[delivery]\nenabled = true\nnameservers = [\"{}\"]\nmx_port = {}\n",
        dns.addr(),
        sink.addr().port()
    );
    let running = util::start_with_key(util::config(dir.path(), &text), Some(OPERATOR_KEY)).await;
    util::verified_domain(running.http_addr, SENDER_DOMAIN).await;
    let body = json!({ "from": format!("app@{SENDER_DOMAIN}"), "to": "user@example.net", "subject": "s", "text": "t" });
    let sent = call(
        running.http_addr,
        Method::POST,
        "/emails",
        Some(OPERATOR_KEY),
        Some(body),
    )
    .await;
    let id = sent.json()["id"].as_str().expect("id").to_owned();
    let deadline = Instant::now() + WAIT;
    // Shut down while the sink holds the message's `250` back: the transaction is in
    // flight, past its data.
    while sink.replies_pending() == 0 {
        assert!(Instant::now() < deadline, "the message never reached the sink");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(running.shutdown().await);
    assert_eq!(sink.received().len(), 1, "the transaction finished during shutdown");

    // Its outcome was written: after a restart nothing is sent again.
    let running = util::start_with_key(util::config(dir.path(), &text), Some(OPERATOR_KEY)).await;
    let email = call(
        running.http_addr,
        Method::GET,
        &format!("/emails/{id}"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(email.json()["last_event"], "delivered");
    assert_eq!(running.state.spool().depth(), 0, "nothing left to send again");
    assert_eq!(sink.received().len(), 1);
    assert!(running.shutdown().await);
}

#[tokio::test]
async fn a_receiver_with_broken_tls_gets_its_mail_in_plaintext_unless_tls_is_required() {
    let world = World::start(
        SinkOptions {
            starttls: true,
            broken_tls: true,
            ..SinkOptions::default()
        },
        "",
    )
    .await;
    let id = world.send(&["user@example.net"]).await;
    let received = world.sink.wait_for(1, WAIT).await;
    assert!(!received[0].tls);
    world.wait_event(&id, "delivered").await;
}

#[tokio::test]
async fn mail_submitted_over_smtp_is_signed_and_delivered_too() {
    let world = World::start(SinkOptions::default(), "").await;
    let implicit = world.running.smtp[1].1;
    let script = format!(
        "EHLO client\r\nAUTH PLAIN {}\r\nMAIL FROM:<app@{SENDER_DOMAIN}>\r\nRCPT TO:<user@example.net>\r\nDATA\r\nFrom: App <app@{SENDER_DOMAIN}>\r\nTo: user@example.net\r\nSubject: over smtp\r\n\r\nHello.\r\n.\r\nQUIT\r\n",
        util::auth_plain(OPERATOR_KEY)
    );
    let transcript = util::smtps_transcript(implicit, &script).await;
    let id = util::accepted_id(&transcript);
    let received = world.sink.wait_for(1, WAIT).await;
    assert_eq!(received[0].mail_from, format!("{id}@send.{SENDER_DOMAIN}"));
    assert!(received[0].text().starts_with("DKIM-Signature:"));
    assert!(received[0].text().contains("Subject: over smtp"));
    world.wait_event(&id, "delivered").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_outcome_waits_for_the_emails_lock() {
    // An open, a click or a bounce by mail changes the email's record under its lock; the
    // outcome of its delivery, written from another thread, must take the same lock, or
    // it writes over what they wrote (and a broadcast counts the email twice).
    let world = World::start(SinkOptions::default(), "").await;
    let id = world.send(&["deferonce@example.net"]).await;
    world.wait_event(&id, "delivery_delayed").await;
    let teams = call(world.running.http_addr, Method::GET, "/teams", Some(OPERATOR_KEY), None).await;
    let team: herald_queue::Id = teams.json()["data"][0]["id"]
        .as_str()
        .expect("the operator's team")
        .parse()
        .expect("an id");
    let email: herald_queue::Id = id.parse().expect("an id");

    // Hold the email's lock, on a thread of its own, across the retry.
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let state = Arc::clone(&world.running.state);
    let holder = std::thread::spawn(move || {
        let _guard = herald::emails::lock(&state, team, email);
        locked_tx.send(()).expect("the test waits");
        let _ = release_rx.recv();
    });
    locked_rx.recv().expect("locked");
    world.sink.wait_for(1, WAIT).await;
    // The sink has the message; its outcome waits for the lock meanwhile.
    let early = tokio::time::timeout(Duration::from_millis(500), world.wait_event(&id, "delivered")).await;
    assert!(early.is_err(), "the outcome was written while the email was locked");
    assert_eq!(world.email(&id).await["last_event"], "delivery_delayed");
    release_tx.send(()).expect("the holder waits");
    holder.join().expect("the holder");
    world.wait_event(&id, "delivered").await;
}
