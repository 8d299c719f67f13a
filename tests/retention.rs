//! Retention end to end, on the injected clock: email records, their content, events,
//! webhook messages and request logs leave the API and the store on time; mail still in
//! flight stays whatever its age; a restart in the middle of a sweep finishes it.

mod util;

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use herald::emails::EmailState;
use herald::server::Running;
use herald_queue::{Clock, Id, ManualClock, Scan, Table, Timestamp};
use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use util::dns::TestDns;
use util::sink::{Sink, SinkOptions};
use util::webhook_receiver::Receiver;
use util::{OPERATOR_KEY, call};

const SENDER_DOMAIN: &str = "sender.test";
/// How long a test waits for something the server does by itself.
const WAIT: Duration = Duration::from_secs(30);
const MINUTE: Duration = Duration::from_secs(60);

/// A server delivering to a sink on the manual clock, with `[retention]` as given.
struct World {
    dns: TestDns,
    sink: Sink,
    clock: Arc<ManualClock>,
    running: Running,
    dir: tempfile::TempDir,
}

impl World {
    async fn start(retention: &str) -> World {
        let dns = TestDns::start().await;
        dns.set_mx("example.net", &[(10, "mx.example.net")]);
        dns.set_a("mx.example.net", &[Ipv4Addr::LOCALHOST]);
        let sink = Sink::start(SinkOptions::default());
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_795_334_400_000)));
        let running = World::run(&dns, &sink, dir.path(), &clock, retention).await;
        util::verified_domain(running.http_addr, SENDER_DOMAIN).await;
        World {
            dns,
            sink,
            clock,
            running,
            dir,
        }
    }

    async fn run(
        dns: &TestDns,
        sink: &Sink,
        dir: &std::path::Path,
        clock: &Arc<ManualClock>,
        retention: &str,
    ) -> Running {
        let extra = format!(
            "[api]\nrate_limit = \"1000/s\"\n[delivery]\nenabled = true\nnameservers = [\"{}\"]\nmx_port = {}\nretry_intervals = [\"1s\"]\nmessage_lifetime = \"30d\"\n[retention]\n{retention}\n",
            dns.addr(),
            sink.addr().port()
        );
        let config = util::config(dir, &extra);
        util::start_with_clock(
            config,
            Some(OPERATOR_KEY),
            Arc::clone(clock) as herald_queue::SharedClock,
        )
        .await
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> util::HttpResponse {
        self.call_as(OPERATOR_KEY, method, path, body).await
    }

    async fn call_as(&self, key: &str, method: Method, path: &str, body: Option<Value>) -> util::HttpResponse {
        call(self.running.http_addr, method, path, Some(key), body).await
    }

    async fn send(&self, to: &str) -> String {
        self.send_bodies(to, json!({ "html": "<p>Hello</p>", "text": "Hello" }))
            .await
    }

    /// Sends an email to `to` through the API with the `html` and `text` of `bodies`.
    async fn send_bodies(&self, to: &str, bodies: Value) -> String {
        let mut body = json!({ "from": format!("App <app@{SENDER_DOMAIN}>"), "to": to, "subject": "hello" });
        body.as_object_mut()
            .expect("an object")
            .extend(bodies.as_object().expect("bodies").clone());
        let response = self.call(Method::POST, "/emails", Some(body)).await;
        assert_eq!(response.status, StatusCode::OK, "{}", response.text());
        response.json()["id"].as_str().expect("id").to_owned()
    }

    /// Submits a message with an HTML and a text part over SMTP (implicit TLS, AUTH);
    /// answers its id.
    async fn send_smtp(&self, to: &str) -> String {
        let alternatives = format!(
            "Content-Type: multipart/alternative; boundary=\"b1\"\r\n\r\n\
             --b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{SMTP_TEXT}\r\n\
             --b1\r\nContent-Type: text/html; charset=utf-8\r\n\r\n{SMTP_HTML}\r\n--b1--\r\n"
        );
        self.submit(to, &alternatives).await
    }

    /// As [`World::send_smtp`], with a file attached (`multipart/mixed`).
    async fn send_smtp_attached(&self, to: &str) -> String {
        let mixed = format!(
            "Content-Type: multipart/mixed; boundary=\"m1\"\r\n\r\n\
             --m1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{SMTP_TEXT}\r\n\
             --m1\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"a.bin\"\r\n\
             Content-Transfer-Encoding: base64\r\n\r\nQUJD\r\n--m1--\r\n"
        );
        self.submit(to, &mixed).await
    }

    /// Submits a message whose `Content-Type` and body are `content` over SMTP
    /// (implicit TLS, AUTH); answers its id.
    async fn submit(&self, to: &str, content: &str) -> String {
        let script = format!(
            "EHLO client\r\nAUTH PLAIN {auth}\r\nMAIL FROM:<app@{SENDER_DOMAIN}>\r\nRCPT TO:<{to}>\r\nDATA\r\n\
             From: App <app@{SENDER_DOMAIN}>\r\nTo: {to}\r\nSubject: over smtp\r\nMIME-Version: 1.0\r\n\
             {content}.\r\nQUIT\r\n",
            auth = util::auth_plain(OPERATOR_KEY)
        );
        util::accepted_id(&util::smtps_transcript(self.running.smtp[1].1, &script).await)
    }

    /// `GET /emails/{id}`: the status and the body.
    async fn email(&self, id: &str) -> (StatusCode, Value) {
        let response = self.call(Method::GET, &format!("/emails/{id}"), None).await;
        (response.status, response.json())
    }

    /// Waits until `check` holds of `GET /emails/{id}`.
    async fn wait_email(&self, id: &str, what: &str, check: impl Fn(StatusCode, &Value) -> bool) -> Value {
        let what = format!("email {id}: {what}");
        util::eventually(WAIT, &what, || async {
            let (status, email) = self.email(id).await;
            check(status, &email).then_some(email)
        })
        .await
    }

    /// Waits until `id`'s content has expired; answers the record, whose bodies are null.
    async fn wait_content_expired(&self, id: &str) -> Value {
        let expired = self
            .wait_email(id, "content expiry", |_, e| e["content_expired"] == true)
            .await;
        assert_eq!(expired["html"], Value::Null, "{expired}");
        assert_eq!(expired["text"], Value::Null, "{expired}");
        expired
    }

    /// Waits until `GET /emails/{id}` answers `event` as its `last_event`.
    async fn wait_last_event(&self, id: &str, event: &str) -> Value {
        self.wait_email(id, event, |_, e| e["last_event"] == event).await
    }

    /// Keys in `table` starting with `prefix`.
    fn keys(&self, table: Table, prefix: &[u8]) -> usize {
        self.running
            .state
            .node()
            .store()
            .scan_raw(table, Scan::prefix(prefix))
            .expect("scan")
            .len()
    }

    /// The team of the email `email` (its record's key is team, then email id).
    fn team_of(&self, email: &str) -> Id {
        let email = id(email);
        let records = self
            .running
            .state
            .node()
            .store()
            .scan_raw(Table::EMAILS, Scan::prefix(b""))
            .expect("scan");
        let (key, _) = records
            .iter()
            .find(|(key, _)| key.get(16..) == Some(email.as_bytes().as_slice()))
            .expect("the email's record");
        Id::from_slice(&key[..16]).expect("a team id")
    }

    /// Today's counters of `team` by state (the Metrics page's numbers).
    fn counts(&self, team: Id) -> std::collections::BTreeMap<EmailState, u64> {
        let bucket = herald::counters::bucket_of(self.clock.now());
        let day = bucket - bucket % 96;
        let mut counts = std::collections::BTreeMap::new();
        let read = self.running.state.counters().read(team, day, day + 95);
        for count in read.expect("counters") {
            if let Ok(state) = serde_json::from_value::<EmailState>(serde_json::json!(count.metric.name())) {
                *counts.entry(state).or_default() += count.n;
            }
        }
        counts
    }

    /// Waits until `table` holds no key starting with `prefix`.
    async fn wait_gone(&self, table: Table, prefix: &[u8]) {
        let what = format!("{} to hold no key starting {prefix:?}", table.name());
        util::eventually(WAIT, &what, || async { (self.keys(table, prefix) == 0).then_some(()) }).await;
    }
}

/// The bodies of [`World::send_smtp`]'s message.
const SMTP_TEXT: &str = "Hello over SMTP";
const SMTP_HTML: &str = "<p>Hello over SMTP</p>";

fn id(text: &str) -> Id {
    text.parse().expect("an id")
}

#[tokio::test]
async fn records_content_events_webhook_messages_and_logs_leave_on_time_and_mail_in_flight_stays() {
    let world =
        // The clock starts at 08:00 UTC: a day's counters, counted from its midnight,
        // expire at 09:00.
        World::start("emails = \"1h\"\ncontent = \"10m\"\nwebhook_messages = \"30m\"\nrequest_logs = \"20m\"\nmetrics = \"9h\"").await;
    let receiver = Receiver::start().await;
    let webhook = world
        .call(
            Method::POST,
            "/webhooks",
            Some(json!({ "endpoint": format!("http://{}/hook", receiver.addr()), "events": ["email.delivered"] })),
        )
        .await;
    assert_eq!(webhook.status, StatusCode::CREATED, "{}", webhook.text());
    let webhook_id = webhook.json()["id"].as_str().expect("webhook id").to_owned();

    let done = world.send("user@example.net").await;
    let waiting = world.send("defer@example.net").await;
    world.wait_last_event(&done, "delivered").await;
    world.wait_last_event(&waiting, "delivery_delayed").await;
    receiver.wait_for_len(1, WAIT).await;
    let events = world
        .call(Method::GET, &format!("/webhooks/{webhook_id}/events"), None)
        .await;
    assert_eq!(
        events.json()["data"].as_array().map(Vec::len),
        Some(1),
        "{}",
        events.text()
    );
    let team = world.team_of(&done);
    let counts = world.counts(team);
    assert_eq!(counts.get(&EmailState::Sent), Some(&2), "{counts:?}");
    assert_eq!(counts.get(&EmailState::Delivered), Some(&1), "{counts:?}");
    assert!(
        counts.get(&EmailState::DeliveryDelayed).is_some_and(|n| *n >= 1),
        "{counts:?}"
    );
    let logs = world.call(Method::GET, "/logs", None).await.json();
    let first_log = logs["data"].as_array().and_then(|l| l.last()).expect("a log")["id"].clone();

    // Content first: the record stays and says why its bodies are null.
    world.clock.advance(11 * MINUTE);
    let expired = world.wait_content_expired(&done).await;
    assert_eq!(expired["subject"], "hello", "the record stays");
    let (_, deferred) = world.email(&waiting).await;
    assert_eq!(deferred["text"], "Hello", "mail in flight keeps its content");
    assert_eq!(deferred["content_expired"], false);

    // Request logs after 20 minutes.
    world.clock.advance(10 * MINUTE);
    let first_log = first_log.as_str().expect("log id").to_owned();
    util::eventually(WAIT, "the first request log to expire", || async {
        let gone = world.call(Method::GET, &format!("/logs/{first_log}"), None).await;
        (gone.status == StatusCode::NOT_FOUND).then_some(())
    })
    .await;

    // Webhook messages and their attempts after 30 minutes.
    world.clock.advance(10 * MINUTE);
    let webhook_key = [team.as_bytes().as_slice(), id(&webhook_id).as_bytes()].concat();
    world.wait_gone(Table::WEBHOOK_MESSAGES, &webhook_key).await;
    world.wait_gone(Table::WEBHOOK_ATTEMPTS, &webhook_key).await;
    let events = world
        .call(Method::GET, &format!("/webhooks/{webhook_id}/events"), None)
        .await;
    assert_eq!(
        events.json()["data"].as_array().map(Vec::len),
        Some(0),
        "{}",
        events.text()
    );

    // The record, its status and its timeline after an hour.
    world.clock.advance(30 * MINUTE);
    world
        .wait_email(&done, "record expiry", |status, _| status == StatusCode::NOT_FOUND)
        .await;
    world.wait_gone(Table::EVENTS, id(&done).as_bytes()).await;
    let record_key = [team.as_bytes().as_slice(), id(&done).as_bytes()].concat();
    assert_eq!(world.keys(Table::EMAIL_STATUS, &record_key), 0);
    assert_eq!(world.keys(Table::EMAILS, &record_key), 0);
    let listed = world.call(Method::GET, "/emails", None).await.json();
    let ids: Vec<&str> = listed["data"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|e| e["id"].as_str())
        .collect();
    assert_eq!(ids, vec![waiting.as_str()], "only the mail in flight is listed");

    // The day's counters, nine hours after its start (retries since count again).
    util::eventually(WAIT, "the day's counters to expire", || async {
        (!world.counts(team).contains_key(&EmailState::Delivered)).then_some(())
    })
    .await;
    assert!(!world.counts(team).contains_key(&EmailState::Sent));

    // Mail still deferred after an hour keeps everything.
    let (status, deferred) = world.email(&waiting).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(deferred["last_event"], "delivery_delayed");
    assert_eq!(deferred["html"], "<p>Hello</p>");
    assert!(world.keys(Table::EVENTS, id(&waiting).as_bytes()) > 0);
    drop(world.sink);
}

#[tokio::test]
async fn an_smtp_submission_is_stored_once_and_its_bodies_leave_with_its_content() {
    let world = World::start("emails = \"1h\"\ncontent = \"10m\"").await;
    let done = world.send_smtp("user@example.net").await;
    let waiting = world.send_smtp("defer@example.net").await;
    world.wait_last_event(&done, "delivered").await;
    world.wait_last_event(&waiting, "delivery_delayed").await;

    // The API shows the bodies the client wrote, read from the one stored copy: the
    // record does not hold them; the message, delivered, stays for them.
    let (_, email) = world.email(&done).await;
    assert_eq!(email["html"], SMTP_HTML, "{email}");
    assert_eq!(email["text"], SMTP_TEXT, "{email}");
    assert_eq!(email["content_expired"], false);
    let team = world.team_of(&done);
    let store = world.running.state.node().store();
    let record = store
        .get_raw(
            Table::EMAILS,
            &[team.as_bytes().as_slice(), id(&done).as_bytes()].concat(),
        )
        .expect("read")
        .expect("the record");
    assert!(
        !String::from_utf8_lossy(&record).contains(SMTP_TEXT),
        "the record holds no body"
    );
    let retained = world.running.state.spool().retained(id(&done)).expect("read");
    assert!(
        retained.is_some_and(|raw| String::from_utf8_lossy(&raw).contains(SMTP_HTML)),
        "the delivered message is kept for its record"
    );

    // A message with an attachment is not kept: its record keeps the text.
    let attached = world.send_smtp_attached("user@example.net").await;
    world.wait_last_event(&attached, "delivered").await;
    let (_, email) = world.email(&attached).await;
    assert_eq!(email["text"], SMTP_TEXT, "{email}");
    assert_eq!(world.keys(Table::MESSAGES, id(&attached).as_bytes()), 0);

    // Content retention takes the message with the bodies; mail in flight keeps both.
    world.clock.advance(11 * MINUTE);
    world.wait_content_expired(&done).await;
    world.wait_gone(Table::MESSAGES, id(&done).as_bytes()).await;
    let (_, deferred) = world.email(&waiting).await;
    assert_eq!(deferred["html"], SMTP_HTML, "{deferred}");
    assert_eq!(deferred["content_expired"], false);

    // The record's own expiry leaves nothing; the deferred message is untouched.
    world.clock.advance(50 * MINUTE);
    world
        .wait_email(&done, "record expiry", |status, _| status == StatusCode::NOT_FOUND)
        .await;
    assert_eq!(world.keys(Table::MESSAGES, id(&done).as_bytes()), 0);
    assert_eq!(world.keys(Table::MESSAGES, id(&waiting).as_bytes()), 1);
    let (_, deferred) = world.email(&waiting).await;
    assert_eq!(deferred["text"], SMTP_TEXT, "{deferred}");
    drop(world.sink);
}

/// The record of email `email_id` as stored.
fn stored_record(world: &World, email_id: &str) -> String {
    let team = world.team_of(email_id);
    let key = [team.as_bytes().as_slice(), id(email_id).as_bytes()].concat();
    let record = world
        .running
        .state
        .node()
        .store()
        .get_raw(Table::EMAILS, &key)
        .expect("read")
        .expect("the record");
    String::from_utf8_lossy(&record).into_owned()
}

#[tokio::test]
async fn an_api_email_whose_message_gives_back_its_bodies_is_stored_once() {
    let world = World::start("emails = \"1h\"\ncontent = \"10m\"").await;
    // Line feeds (the message carries CRLF), non-ASCII, and no text: the message's text
    // part is made from the html, and the email shows none, as it was given.
    let html = "<p>Grüße aus Köln,\n10 € — “quoted”</p>\n<p>Second paragraph</p>\n";
    let once = world.send_bodies("user@example.net", json!({ "html": html })).await;
    // Text with CRLF beside ASCII html with line feeds (both sent as 7bit, with CRLF):
    // not both can be read back, so the record keeps them.
    let ascii_html = "<p>Hello</p>\n<p>Second paragraph</p>\n";
    let mixed_text = "Second\r\nline\r\n";
    let mixed = world
        .send_bodies("user@example.net", json!({ "html": ascii_html, "text": mixed_text }))
        .await;
    world.wait_last_event(&once, "delivered").await;
    world.wait_last_event(&mixed, "delivered").await;

    let (_, email) = world.email(&once).await;
    assert_eq!(email["html"], html, "{email}");
    assert_eq!(email["text"], Value::Null, "{email}");
    assert!(
        !stored_record(&world, &once).contains("Second paragraph"),
        "the record holds no body"
    );
    assert_eq!(
        world.keys(Table::MESSAGES, id(&once).as_bytes()),
        1,
        "the message is kept"
    );

    let (_, email) = world.email(&mixed).await;
    assert_eq!(
        (&email["html"], &email["text"]),
        (&json!(ascii_html), &json!(mixed_text)),
        "{email}"
    );
    assert!(
        stored_record(&world, &mixed).contains("Second paragraph"),
        "the record keeps them"
    );
    assert_eq!(world.keys(Table::MESSAGES, id(&mixed).as_bytes()), 0, "not kept");

    // Content retention takes the kept message with the bodies.
    world.clock.advance(11 * MINUTE);
    let expired = world.wait_content_expired(&once).await;
    assert_eq!(expired["html"], Value::Null, "{expired}");
    world.wait_gone(Table::MESSAGES, id(&once).as_bytes()).await;
    drop(world.sink);
}

#[tokio::test]
async fn a_message_kept_for_content_that_outlives_the_record_goes_with_the_record() {
    let world = World::start("emails = \"1h\"\ncontent = \"0\"").await;
    let done = world.send_smtp("user@example.net").await;
    world.wait_last_event(&done, "delivered").await;
    assert_eq!(world.keys(Table::MESSAGES, id(&done).as_bytes()), 1);
    world.clock.advance(61 * MINUTE);
    world
        .wait_email(&done, "record expiry", |status, _| status == StatusCode::NOT_FOUND)
        .await;
    world.wait_gone(Table::MESSAGES, id(&done).as_bytes()).await;
    drop(world.sink);
}

#[tokio::test]
async fn a_restart_in_the_middle_of_a_sweep_finishes_it() {
    const EMAILS: usize = 600;
    let world = World::start("emails = \"1h\"").await;
    let mut first = None;
    for _ in 0..EMAILS / 100 {
        let batch: Vec<Value> = (0..100)
            .map(|_| json!({ "from": format!("app@{SENDER_DOMAIN}"), "to": "user@example.net", "subject": "s", "text": "t" }))
            .collect();
        let sent = world.call(Method::POST, "/emails/batch", Some(json!(batch))).await;
        assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
        first.get_or_insert_with(|| sent.json()["data"][0]["id"].as_str().expect("id").to_owned());
    }
    let team = world.team_of(first.as_deref().expect("sent"));
    world.sink.wait_for(EMAILS, WAIT).await;
    // Delivered is final once written: wait for the last outcome to be recorded.
    util::eventually(WAIT, "every email's final outcome", || async {
        (world.keys(Table::EMAIL_EXPIRY, b"") == EMAILS).then_some(())
    })
    .await;
    assert_eq!(world.keys(Table::EMAILS, team.as_bytes()), EMAILS);

    // Due now: the sweep starts, and the server stops at once, wherever it got to.
    world.clock.advance(61 * MINUTE);
    let World {
        dns,
        sink,
        clock,
        running,
        dir,
    } = world;
    assert!(running.shutdown().await);
    let running = World::run(&dns, &sink, dir.path(), &clock, "emails = \"1h\"").await;
    util::eventually(WAIT, "every record to expire", || async {
        (running
            .state
            .node()
            .store()
            .scan_raw(Table::EMAILS, Scan::prefix(team.as_bytes()))
            .expect("scan")
            .is_empty())
        .then_some(())
    })
    .await;
    let store = running.state.node().store();
    for table in [
        Table::EMAIL_STATUS,
        Table::EVENTS,
        Table::EMAIL_EXPIRY,
        Table::CONTENT_EXPIRY,
    ] {
        assert!(
            store.scan_raw(table, Scan::prefix(b"")).expect("scan").is_empty(),
            "{} is empty",
            table.name()
        );
    }
    assert!(running.shutdown().await);
}

#[tokio::test]
async fn deleting_a_team_erases_everything_it_kept_but_its_suppression_list() {
    let world = World::start("").await;
    let created = world
        .call(Method::POST, "/teams", Some(json!({ "name": "Leaving" })))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let team_id = id(created.json()["id"].as_str().expect("team id"));
    let key = created.json()["api_key"]["token"].as_str().expect("token").to_owned();

    // The team verifies its own domain through the test DNS server, and sends.
    let domain = world
        .call_as(&key, Method::POST, "/domains", Some(json!({ "name": "leaving.test" })))
        .await;
    assert_eq!(domain.status, StatusCode::CREATED, "{}", domain.text());
    let domain = domain.json();
    world.dns.publish_domain(&domain);
    let domain_id = domain["id"].as_str().expect("domain id");
    let verify = world
        .call_as(&key, Method::POST, &format!("/domains/{domain_id}/verify"), None)
        .await;
    assert_eq!(verify.status, StatusCode::OK, "{}", verify.text());
    util::eventually(WAIT, "the team's domain to verify", || async {
        let got = world
            .call_as(&key, Method::GET, &format!("/domains/{domain_id}"), None)
            .await;
        (got.json()["status"] == "verified").then_some(())
    })
    .await;
    let receiver = Receiver::start().await;
    let hook = world
        .call_as(
            &key,
            Method::POST,
            "/webhooks",
            Some(json!({ "endpoint": format!("http://{}/hook", receiver.addr()), "events": ["email.delivered"] })),
        )
        .await;
    assert_eq!(hook.status, StatusCode::CREATED, "{}", hook.text());
    let body = json!({ "from": "app@leaving.test", "to": "user@example.net", "subject": "s", "text": "t" });
    let sent = util::call_with_headers(
        world.running.http_addr,
        Method::POST,
        "/emails",
        Some(&key),
        &[("content-type", "application/json"), ("idempotency-key", "order-1")],
        body.to_string().into(),
    )
    .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    let email = id(sent.json()["id"].as_str().expect("email id"));
    let later = json!({ "from": "app@leaving.test", "to": "user@example.net", "subject": "s", "text": "t", "scheduled_at": "in 1 hour" });
    let scheduled = world.call_as(&key, Method::POST, "/emails", Some(later)).await;
    assert_eq!(scheduled.status, StatusCode::OK, "{}", scheduled.text());
    receiver.wait_for_len(1, WAIT).await;
    let suppressed = world
        .call_as(
            &key,
            Method::POST,
            "/suppressions",
            Some(json!({ "email": "gone@example.net" })),
        )
        .await;
    assert!(suppressed.status.is_success(), "{}", suppressed.text());
    let contact = world
        .call_as(
            &key,
            Method::POST,
            "/contacts",
            Some(json!({ "email": "ann@example.net", "first_name": "Ann" })),
        )
        .await;
    assert_eq!(contact.status, StatusCode::CREATED, "{}", contact.text());
    // Its audience: a segment with a member, a topic, a property, and an import with a
    // refused row.
    let segment = world
        .call_as(&key, Method::POST, "/segments", Some(json!({ "name": "All" })))
        .await;
    let segment = segment.json()["id"].as_str().expect("segment id").to_owned();
    let joined = world
        .call_as(
            &key,
            Method::POST,
            &format!("/contacts/ann@example.net/segments/{segment}"),
            None,
        )
        .await;
    assert_eq!(joined.status, StatusCode::CREATED, "{}", joined.text());
    let topic = json!({ "name": "News", "default_subscription": "opt_in" });
    let topic = world.call_as(&key, Method::POST, "/topics", Some(topic)).await;
    assert_eq!(topic.status, StatusCode::CREATED, "{}", topic.text());
    let property = json!({ "key": "plan", "type": "string" });
    let property = world
        .call_as(&key, Method::POST, "/contact-properties", Some(property))
        .await;
    assert_eq!(property.status, StatusCode::CREATED, "{}", property.text());
    let boundary = "erasure-boundary";
    let upload = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"c.csv\"\r\n\r\nemail\nbo@example.net\nnot an address\n\r\n--{boundary}--\r\n"
    );
    let content_type = format!("multipart/form-data; boundary={boundary}");
    let import = util::call_with_headers(
        world.running.http_addr,
        Method::POST,
        "/contacts/imports",
        Some(&key),
        &[("content-type", content_type.as_str())],
        upload.into(),
    )
    .await;
    assert_eq!(import.status, StatusCode::CREATED, "{}", import.text());
    let import = import.json()["id"].as_str().expect("import id").to_owned();
    util::eventually(WAIT, "the team's import to finish", || async {
        let got = world
            .call_as(&key, Method::GET, &format!("/contacts/imports/{import}"), None)
            .await;
        (got.json()["status"] == "completed").then_some(())
    })
    .await;
    // And an image for its designs, as the editor uploads them.
    let designer = herald::accounts::Caller {
        team_id,
        key_id: team_id,
        permission: herald::accounts::Permission::FullAccess,
        domain_id: None,
        operator: false,
    };
    let state = Arc::clone(&world.running.state);
    let image = tokio::task::spawn_blocking(move || {
        herald::images::upload(&state, &designer, "logo.gif", b"GIF89a\x01\x00\x01\x00")
    })
    .await
    .expect("the upload ran")
    .expect("an image kept");
    let image_path = image.url("");
    let image_status = || async {
        util::call_with_headers(
            world.running.http_addr,
            Method::GET,
            &image_path,
            None,
            &[],
            bytes::Bytes::new(),
        )
        .await
        .status
    };
    let served = image_status().await;
    assert_eq!(served, StatusCode::OK, "{image_path}");
    let prefix = team_id.as_bytes().to_vec();
    for table in [
        Table::IMAGES,
        Table::IMAGE_BYTES,
        Table::API_KEYS,
        Table::DOMAINS,
        Table::EMAILS,
        Table::EMAIL_STATUS,
        Table::WEBHOOKS,
        Table::WEBHOOK_MESSAGES,
        Table::WEBHOOK_ATTEMPTS,
        Table::LOGS,
        Table::IDEMPOTENCY,
        Table::CONTACTS,
        Table::CONTACT_EMAILS,
        Table::CONTACT_COUNTS,
        Table::SEGMENTS,
        Table::SEGMENT_MEMBERS,
        Table::TOPICS,
        Table::CONTACT_PROPERTIES,
        Table::CONTACT_IMPORTS,
        Table::IMPORT_ERRORS,
    ] {
        assert!(
            world.keys(table, &prefix) > 0,
            "{} holds the team's records",
            table.name()
        );
    }
    assert_eq!(world.running.state.spool().depth(), 1, "the scheduled email is queued");

    // Only the operator deletes teams, never its own.
    let refused = world
        .call_as(&key, Method::DELETE, &format!("/teams/{team_id}"), None)
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
    let deleted = world.call(Method::DELETE, &format!("/teams/{team_id}"), None).await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text());
    assert_eq!(deleted.json()["deleted"], true);
    let locked_out = world.call_as(&key, Method::GET, "/domains", None).await;
    // Resend's answer to a key it does not know.
    assert_eq!(locked_out.status, StatusCode::FORBIDDEN, "the team's keys stop at once");
    assert!(
        locked_out.text().contains("API key is invalid"),
        "{}",
        locked_out.text()
    );
    let gone = world.call(Method::GET, &format!("/teams/{team_id}"), None).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);

    for table in [
        Table::TEAMS,
        Table::API_KEYS,
        Table::DOMAINS,
        Table::DOMAIN_NAMES,
        Table::EMAILS,
        Table::EMAIL_STATUS,
        Table::WEBHOOKS,
        Table::WEBHOOK_MESSAGES,
        Table::WEBHOOK_ATTEMPTS,
        Table::LOGS,
        Table::IDEMPOTENCY,
        Table::COUNTERS,
        Table::CONTACTS,
        Table::CONTACT_EMAILS,
        Table::CONTACT_COUNTS,
        Table::SEGMENTS,
        Table::SEGMENT_MEMBERS,
        Table::TOPICS,
        Table::CONTACT_PROPERTIES,
        Table::CONTACT_IMPORTS,
        Table::IMPORT_ERRORS,
        Table::IMAGES,
        Table::IMAGE_BYTES,
    ] {
        world.wait_gone(table, &prefix).await;
    }
    assert_eq!(
        image_status().await,
        StatusCode::NOT_FOUND,
        "the image left with the team"
    );
    assert_eq!(world.keys(Table::EVENTS, email.as_bytes()), 0, "the timeline is gone");
    assert_eq!(world.running.state.spool().depth(), 0, "queued mail left the queue");
    assert_eq!(
        world.keys(Table::SUPPRESSIONS, &prefix),
        1,
        "the suppression list stays"
    );
    let teams = world.call(Method::GET, "/teams", None).await.json();
    assert!(
        teams["data"]
            .as_array()
            .expect("teams")
            .iter()
            .all(|t| t["id"] != team_id.to_string()),
        "{teams}"
    );
}
