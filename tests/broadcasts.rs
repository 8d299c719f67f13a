//! Broadcasts over real sockets: a segment expanded into one personalised email per
//! contact, delivered into a real SMTP sink with the unsubscribe headers; unsubscribed,
//! opted-out and suppressed contacts skipped (with `email.suppressed`), a contact
//! missing a value skipped with `email.failed`; bad broadcasts refused before anything is
//! queued; a scheduled broadcast fired by the injected clock; cancel; and transactional
//! mail overtaking a large broadcast.

mod util;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use herald_queue::{ManualClock, Timestamp};
use hyper::{Method, StatusCode};
use mail_parser::MessageParser;
use serde_json::{Value, json};
use util::sink::{Sink, SinkOptions};
use util::webhook_receiver::Receiver;
use util::{HttpResponse, OPERATOR_KEY, call};

const WAIT: Duration = Duration::from_secs(60);

async fn api(addr: SocketAddr, method: Method, path: &str, body: Option<Value>) -> HttpResponse {
    call(addr, method, path, Some(OPERATOR_KEY), body).await
}

async fn created(addr: SocketAddr, path: &str, body: Value) -> String {
    let answer = api(addr, Method::POST, path, Some(body)).await;
    assert!(answer.status.is_success(), "{path}: {}", answer.text());
    answer.json()["id"].as_str().expect("id").to_owned()
}

/// Waits until the broadcast's own status is `status`; the broadcast.
async fn until(addr: SocketAddr, id: &str, status: &str) -> Value {
    util::eventually(WAIT, &format!("the broadcast to be {status}"), || async {
        let got = api(addr, Method::GET, &format!("/broadcasts/{id}"), None).await.json();
        (got["progress"]["status"] == status).then_some(got)
    })
    .await
}

fn config(dir: &std::path::Path, extra: &str) -> herald::config::Config {
    util::config(dir, &format!("[api]\nrate_limit = \"10000/s\"\n{extra}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broadcast_reaches_each_contact_personalised_and_skips_the_rest() {
    let sink = Sink::start(SinkOptions::default());
    let receiver = Receiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = format!(
        "[delivery]\nenabled = true\nrelay = \"{}\"\nretry_intervals = [\"1s\"]\n",
        sink.addr()
    );
    let running = util::start_with_key(config(dir.path(), &extra), Some(OPERATOR_KEY)).await;
    let addr = running.http_addr;
    util::verified_domain(addr, "shop.test").await;
    let hook = json!({ "endpoint": format!("http://{}/hook", receiver.addr()), "events": ["email.suppressed", "email.failed"] });
    created(addr, "/webhooks", hook).await;
    created(
        addr,
        "/contact-properties",
        json!({ "key": "plan", "type": "string", "fallback_value": "free" }),
    )
    .await;
    created(
        addr,
        "/contact-properties",
        json!({ "key": "company", "type": "string" }),
    )
    .await;
    let topic = created(
        addr,
        "/topics",
        json!({ "name": "News", "default_subscription": "opt_in" }),
    )
    .await;
    let segment = created(addr, "/segments", json!({ "name": "Everyone" })).await;
    let contacts = [
        json!({ "email": "ann@example.net", "first_name": "Ann", "properties": { "plan": "pro", "company": "Acme" } }),
        json!({ "email": "bob@example.net", "properties": { "company": "Beta & Co" } }),
        json!({ "email": "carol@example.net", "unsubscribed": true, "properties": { "company": "C" } }),
        json!({ "email": "dave@example.net", "topics": [{ "id": topic, "subscription": "opt_out" }], "properties": { "company": "D" } }),
        json!({ "email": "erin@example.net", "properties": { "company": "E" } }),
        json!({ "email": "frank@example.net" }),
    ];
    for mut contact in contacts {
        contact["segments"] = json!([{ "id": segment }]);
        created(addr, "/contacts", contact).await;
    }
    created(addr, "/suppressions", json!({ "email": "erin@example.net" })).await;

    let html = "<html><body><p>Hi {{{FIRST_NAME|there}}}, you are on {{{plan}}} at {{{contact.company}}}.</p><a href=\"{{{RESEND_UNSUBSCRIBE_URL}}}\">Unsubscribe</a></body></html>";
    let id = created(
        addr,
        "/broadcasts",
        json!({
            "segment_id": segment, "from": "News <news@shop.test>", "subject": "Hello {{{FIRST_NAME|friend}}}",
            "html": html, "preview_text": "This week", "topic_id": topic, "name": "Weekly", "send": true,
        }),
    )
    .await;
    let done = until(addr, &id, "sent").await;
    assert_eq!(done["status"], "sent");
    assert_eq!(done["name"], "Weekly");
    assert_eq!(done["audience_id"], segment.as_str());
    let progress = &done["progress"];
    assert_eq!(
        (
            progress["total"].as_u64(),
            progress["sent"].as_u64(),
            progress["unsubscribed"].as_u64(),
            progress["suppressed"].as_u64(),
            progress["failed"].as_u64()
        ),
        (Some(6), Some(2), Some(2), Some(1), Some(1)),
        "{done}"
    );

    let received = sink.wait_for(2, WAIT).await;
    let mut by_recipient = std::collections::HashMap::new();
    for message in &received {
        by_recipient.insert(message.rcpt_to[0].clone(), message.data.clone());
    }
    let read = |to: &str| {
        let data = by_recipient.get(to).unwrap_or_else(|| panic!("{to} got the broadcast"));
        MessageParser::default().parse(data).expect("MIME").into_owned()
    };
    let ann = read("ann@example.net");
    assert_eq!(ann.subject(), Some("Hello Ann"));
    let ann_html = ann.body_html(0).expect("html").into_owned();
    assert!(ann_html.contains("Hi Ann, you are on pro at Acme."), "{ann_html}");
    assert!(ann_html.contains(">This week</div>"), "the preview text: {ann_html}");
    let link = ann
        .header_raw("List-Unsubscribe")
        .expect("List-Unsubscribe")
        .trim()
        .trim_matches(['<', '>'])
        .to_owned();
    assert!(ann_html.contains(&format!("href=\"{link}\"")), "{ann_html}");
    let bob = read("bob@example.net");
    assert_eq!(bob.subject(), Some("Hello friend"));
    let bob_html = bob.body_html(0).expect("html").into_owned();
    assert!(
        bob_html.contains("Hi there, you are on free at Beta &amp; Co."),
        "fallbacks, and values escaped in HTML: {bob_html}"
    );
    assert!(!by_recipient.contains_key("carol@example.net") && !by_recipient.contains_key("erin@example.net"));

    // Skipped contacts: their events, and the recipients lists by outcome.
    let arrived = receiver.wait_for(WAIT, |r| r.all().len() >= 2).await;
    assert!(arrived, "email.suppressed and email.failed arrived");
    let events: Vec<Value> = receiver.all().iter().map(|e| e.payload()).collect();
    let suppressed = events
        .iter()
        .find(|e| e["type"] == "email.suppressed")
        .expect("suppressed");
    assert_eq!(suppressed["data"]["to"], json!(["erin@example.net"]));
    assert_eq!(suppressed["data"]["broadcast_id"], id.as_str());
    assert_eq!(
        suppressed["data"]["suppressed"]["reason"], "previous_bounce",
        "{suppressed}"
    );
    assert!(suppressed["data"]["email_id"].is_string(), "{suppressed}");
    let failed = events.iter().find(|e| e["type"] == "email.failed").expect("failed");
    assert_eq!(failed["data"]["to"], json!(["frank@example.net"]));
    assert!(failed["data"]["email_id"].is_string(), "{failed}");
    assert!(
        failed["data"]["failed"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("contact.company")),
        "{failed}"
    );
    let listed = |kind: &'static str| {
        let id = id.clone();
        async move {
            let page = api(
                addr,
                Method::GET,
                &format!("/broadcasts/{id}/recipients?type={kind}"),
                None,
            )
            .await;
            assert_eq!(page.status, StatusCode::OK, "{}", page.text());
            let mut emails: Vec<String> = page.json()["data"]
                .as_array()
                .expect("data")
                .iter()
                .map(|r| r["email"].as_str().unwrap_or_default().to_owned())
                .collect();
            emails.sort();
            emails
        }
    };
    assert_eq!(listed("sent").await, ["ann@example.net", "bob@example.net"]);
    assert_eq!(listed("suppressed").await, ["erin@example.net"]);
    assert_eq!(listed("unsubscribed").await, ["carol@example.net", "dave@example.net"]);
    let delivered = util::eventually(WAIT, "both emails to be delivered", || async {
        let emails = listed("delivered").await;
        (emails.len() == 2).then_some(emails)
    })
    .await;
    assert_eq!(delivered.len(), 2);

    // Each email is an ordinary email, tagged with the broadcast; a contact that got none
    // has one recorded as suppressed or failed, as Resend records them, so that the
    // email.suppressed and email.failed events name an email.
    let emails = api(addr, Method::GET, "/emails", None).await.json();
    let mut outcomes: Vec<(&str, &str, &str)> = emails["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|e| {
            let field = |name: &str| e[name].as_str().unwrap_or_default();
            (
                e["to"][0].as_str().unwrap_or_default(),
                field("last_event"),
                field("subject"),
            )
        })
        .collect();
    outcomes.sort();
    assert_eq!(
        outcomes,
        [
            ("ann@example.net", "delivered", "Hello Ann"),
            ("bob@example.net", "delivered", "Hello friend"),
            ("erin@example.net", "suppressed", "Hello friend"),
            ("frank@example.net", "failed", "Hello {{{FIRST_NAME|friend}}}"),
        ],
        "{emails}"
    );
    for email in emails["data"].as_array().expect("data") {
        let email = api(
            addr,
            Method::GET,
            &format!("/emails/{}", email["id"].as_str().expect("id")),
            None,
        )
        .await
        .json();
        assert_eq!(
            email["tags"],
            json!([{ "name": "broadcast_id", "value": id }]),
            "{email}"
        );
    }

    // Sent broadcasts are not changed, deleted or sent again; they are duplicated.
    for (method, path, body) in [
        (Method::PATCH, format!("/broadcasts/{id}"), Some(json!({ "name": "x" }))),
        (Method::DELETE, format!("/broadcasts/{id}"), None),
        (Method::POST, format!("/broadcasts/{id}/send"), Some(json!({}))),
        (Method::POST, format!("/broadcasts/{id}/cancel"), None),
    ] {
        let refused = api(addr, method, &path, body).await;
        assert_eq!(
            refused.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{path}: {}",
            refused.text()
        );
    }
    let copy = created(addr, &format!("/broadcasts/{id}/duplicate"), json!({})).await;
    let copy = api(addr, Method::GET, &format!("/broadcasts/{copy}"), None)
        .await
        .json();
    assert_eq!(
        (copy["status"].as_str(), copy["name"].as_str()),
        (Some("draft"), Some("Weekly (copy)"))
    );
    assert!(running.shutdown().await);
}

#[tokio::test]
async fn bad_broadcasts_are_refused_before_anything_is_queued() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_with_key(config(dir.path(), ""), Some(OPERATOR_KEY)).await;
    let addr = running.http_addr;
    util::verified_domain(addr, "shop.test").await;
    let segment = created(addr, "/segments", json!({ "name": "Empty" })).await;
    let base = json!({ "segment_id": segment, "from": "news@shop.test", "subject": "s", "html": "<p>x</p>" });
    let with = |extra: Value| {
        let mut body = base.clone();
        if let (Value::Object(body), Value::Object(extra)) = (&mut body, extra) {
            body.extend(extra);
        }
        body
    };
    let cases = [
        (
            with(json!({ "segment_id": "00000000-0000-7000-8000-000000000000" })),
            "segment",
        ),
        (with(json!({ "from": "news@elsewhere.test" })), "not verified"),
        (with(json!({ "html": "<p>{{{company}}}</p>" })), "{{{company}}}"),
        (with(json!({ "html": "<p>{{{FIRST_NAME</p>" })), "line 1"),
        (
            with(json!({ "topic_id": "00000000-0000-7000-8000-000000000000" })),
            "topic",
        ),
        (with(json!({ "subject": "{{{RESEND_UNSUBSCRIBE_URL}}}" })), "subject"),
        (with(json!({ "send": true })), "no contacts"),
    ];
    for (body, says) in cases {
        let refused = api(addr, Method::POST, "/broadcasts", Some(body.clone())).await;
        assert_eq!(
            refused.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {}",
            refused.text()
        );
        assert!(refused.text().contains(says), "{body}: {}", refused.text());
    }
    let missing = api(
        addr,
        Method::POST,
        "/broadcasts",
        Some(json!({ "from": "news@shop.test" })),
    )
    .await;
    assert_eq!(missing.status, StatusCode::UNPROCESSABLE_ENTITY);
    // A draft may be changed, deleted; nothing was ever queued.
    let draft = created(addr, "/broadcasts", base.clone()).await;
    let sent = api(
        addr,
        Method::POST,
        &format!("/broadcasts/{draft}/send"),
        Some(json!({})),
    )
    .await;
    assert_eq!(
        sent.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "an empty segment: {}",
        sent.text()
    );
    let changed = api(
        addr,
        Method::PATCH,
        &format!("/broadcasts/{draft}"),
        Some(json!({ "subject": "New" })),
    )
    .await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.text());
    let listed = api(addr, Method::GET, "/broadcasts", None).await.json();
    assert_eq!(listed["data"][0]["status"], "draft");
    assert_eq!(
        api(addr, Method::DELETE, &format!("/broadcasts/{draft}"), None)
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(running.state.spool().depth(), 0);
    assert!(running.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_broadcast_goes_at_its_time_and_cancel_takes_back_what_waits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(Timestamp::from_system_time(
        std::time::SystemTime::now(),
    )));
    let running = util::start_with_clock(config(dir.path(), ""), Some(OPERATOR_KEY), clock.clone()).await;
    let addr = running.http_addr;
    util::verified_domain(addr, "shop.test").await;
    let segment = created(addr, "/segments", json!({ "name": "Some" })).await;
    for n in 0..30 {
        created(
            addr,
            "/contacts",
            json!({ "email": format!("c{n}@example.net"), "segments": [{ "id": segment }] }),
        )
        .await;
    }
    let body = json!({ "segment_id": segment, "from": "news@shop.test", "subject": "s", "text": "Hi {{{EMAIL}}}" });
    let id = created(addr, "/broadcasts", body.clone()).await;
    let sent = api(
        addr,
        Method::POST,
        &format!("/broadcasts/{id}/send"),
        Some(json!({ "scheduled_at": "in 1 hour" })),
    )
    .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    let got = api(addr, Method::GET, &format!("/broadcasts/{id}"), None).await.json();
    assert_eq!(
        (got["status"].as_str(), got["progress"]["status"].as_str()),
        (Some("queued"), Some("scheduled"))
    );
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(running.state.spool().depth(), 0, "nothing before its time");
    clock.advance(Duration::from_secs(3601));
    let done = until(addr, &id, "sent").await;
    assert_eq!(done["progress"]["sent"], 30);
    assert_eq!(running.state.spool().depth(), 30);

    // Delivery is off: every email still waits, and a cancel of a second broadcast...
    let second = created(addr, "/broadcasts", body.clone()).await;
    api(
        addr,
        Method::POST,
        &format!("/broadcasts/{second}/send"),
        Some(json!({ "scheduled_at": "in 1 hour" })),
    )
    .await;
    let canceled = api(addr, Method::POST, &format!("/broadcasts/{second}/cancel"), None).await;
    assert_eq!(canceled.status, StatusCode::OK, "{}", canceled.text());
    assert_eq!(canceled.json()["canceled"], 0);
    clock.advance(Duration::from_secs(3601));
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let got = api(addr, Method::GET, &format!("/broadcasts/{second}"), None)
        .await
        .json();
    assert_eq!(
        (got["progress"]["status"].as_str(), got["progress"]["sent"].as_u64()),
        (Some("canceled"), Some(0))
    );
    assert_eq!(running.state.spool().depth(), 30);
    assert!(running.shutdown().await);
}

/// A `multipart/form-data` contact import of `count` addresses into `segment`.
fn import(count: usize, segment: &str) -> (String, bytes::Bytes) {
    let boundary = "herald-broadcast-test";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"segments\"\r\n\r\n{}\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"c.csv\"\r\nContent-Type: text/csv\r\n\r\nemail\n",
        json!([{ "id": segment }])
    );
    for n in 0..count {
        body.push_str(&format!("reader{n}@example.net\n"));
    }
    body.push_str(&format!("\r\n--{boundary}--\r\n"));
    (
        format!("multipart/form-data; boundary={boundary}"),
        bytes::Bytes::from(body),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactional_mail_overtakes_a_large_broadcast_which_cancel_stops() {
    // A slow receiver: the broadcast outlasts the window of waiting emails.
    let sink = Sink::start(SinkOptions {
        delay: Duration::from_millis(10),
        keep_whole: 0,
        ..SinkOptions::default()
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = format!(
        "[delivery]\nenabled = true\nrelay = \"{}\"\nretry_intervals = [\"1s\"]\nconnections_per_destination = 2\n",
        sink.addr()
    );
    let running = util::start_with_key(config(dir.path(), &extra), Some(OPERATOR_KEY)).await;
    let addr = running.http_addr;
    util::verified_domain(addr, "shop.test").await;
    let segment = created(addr, "/segments", json!({ "name": "Many" })).await;
    let contacts = 3_000;
    let (content_type, body) = import(contacts, &segment);
    let uploaded = util::call_with_headers(
        addr,
        Method::POST,
        "/contacts/imports",
        Some(OPERATOR_KEY),
        &[("content-type", content_type.as_str())],
        body,
    )
    .await;
    assert_eq!(uploaded.status, StatusCode::CREATED, "{}", uploaded.text());
    let import_id = uploaded.json()["id"].as_str().expect("id").to_owned();
    util::eventually(WAIT, "the import to finish", || async {
        let import = api(addr, Method::GET, &format!("/contacts/imports/{import_id}"), None)
            .await
            .json();
        (import["status"] == "completed").then_some(())
    })
    .await;
    let id = created(
        addr,
        "/broadcasts",
        json!({ "segment_id": segment, "from": "news@shop.test", "subject": "Big", "text": "Hello", "send": true }),
    )
    .await;
    // Once the broadcast is under way, a password reset goes.
    util::eventually(WAIT, "the broadcast to reach the sink", || async {
        (sink.received_len() > 10).then_some(())
    })
    .await;
    let reset = api(
        addr,
        Method::POST,
        "/emails",
        Some(json!({ "from": "auth@shop.test", "to": "user@example.net", "subject": "Reset", "text": "Your code" })),
    )
    .await;
    assert_eq!(reset.status, StatusCode::OK, "{}", reset.text());
    let position = util::eventually(WAIT, "the reset email to arrive", || async {
        sink.received()
            .iter()
            .position(|m| m.rcpt_to.first().is_some_and(|r| r == "user@example.net"))
    })
    .await;
    assert!(
        position < contacts / 2,
        "the reset email waited behind at most the window, not the broadcast: it came {position}th of {}",
        contacts + 1
    );
    // The broadcast is still going: cancel takes back what waits in the queue.
    let canceled = api(addr, Method::POST, &format!("/broadcasts/{id}/cancel"), None).await;
    assert_eq!(canceled.status, StatusCode::OK, "{}", canceled.text());
    let taken_back = canceled.json()["canceled"].as_u64().expect("canceled");
    let got = until(addr, &id, "canceled").await;
    let made = got["progress"]["sent"].as_u64().expect("sent");
    assert!(made < contacts as u64, "cancel stopped the expansion: {got}");
    // Everything left the queue: delivered, or canceled (by the cancel, or by delivery
    // before the attempt).
    util::eventually(WAIT, "the queue to drain", || async {
        (running.state.spool().depth() == 0).then_some(())
    })
    .await;
    let got = api(addr, Method::GET, &format!("/broadcasts/{id}"), None).await.json();
    let dropped = got["progress"]["canceled"].as_u64().expect("canceled");
    assert!(dropped >= taken_back, "{got}");
    let arrived = sink.received_len() as u64;
    assert!(
        arrived + dropped <= made + 1,
        "{arrived} arrived and {dropped} were canceled of {made} made (and the reset email)"
    );
    assert!(running.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcasts_due_together_take_turns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_with_key(config(dir.path(), ""), Some(OPERATOR_KEY)).await;
    let addr = running.http_addr;
    util::verified_domain(addr, "shop.test").await;
    let big = created(addr, "/segments", json!({ "name": "Big" })).await;
    let small = created(addr, "/segments", json!({ "name": "Small" })).await;
    let (content_type, body) = import(3_000, &big);
    let uploaded = util::call_with_headers(
        addr,
        Method::POST,
        "/contacts/imports",
        Some(OPERATOR_KEY),
        &[("content-type", content_type.as_str())],
        body,
    )
    .await;
    let import_id = uploaded.json()["id"].as_str().expect("id").to_owned();
    util::eventually(WAIT, "the import to finish", || async {
        let import = api(addr, Method::GET, &format!("/contacts/imports/{import_id}"), None)
            .await
            .json();
        (import["status"] == "completed").then_some(())
    })
    .await;
    for n in 0..5 {
        created(
            addr,
            "/contacts",
            json!({ "email": format!("few{n}@example.net"), "segments": [{ "id": small }] }),
        )
        .await;
    }
    let send = |segment: &str| json!({ "segment_id": segment, "from": "news@shop.test", "subject": "s", "text": "t", "send": true });
    let first = created(addr, "/broadcasts", send(&big)).await;
    let second = created(addr, "/broadcasts", send(&small)).await;
    let big_done = until(addr, &first, "sent").await;
    let small_done = until(addr, &second, "sent").await;
    assert_eq!(big_done["progress"]["sent"], 3_000);
    assert_eq!(small_done["progress"]["sent"], 5);
    let finished = |b: &Value| b["progress"]["finished_at"].as_str().expect("finished_at").to_owned();
    assert!(
        finished(&small_done) < finished(&big_done),
        "the small broadcast did not wait for the big one: {} vs {}",
        finished(&small_done),
        finished(&big_done)
    );
    assert!(running.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broadcasts_outcomes_and_clicked_links_count_peoples_clicks() {
    use herald::accounts::{Caller, Permission};
    use herald::broadcasts::service as broadcasts;

    let sink = Sink::start(SinkOptions::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(Timestamp::from_system_time(
        std::time::SystemTime::now(),
    )));
    let extra = format!(
        "[delivery]\nenabled = true\nrelay = \"{}\"\nretry_intervals = [\"1s\"]\n[tracking]\nscheme = \"http\"\n",
        sink.addr()
    );
    let running = util::start_with_clock(config(dir.path(), &extra), Some(OPERATOR_KEY), clock.clone()).await;
    let addr = running.http_addr;
    let domain = created(
        addr,
        "/domains",
        json!({ "name": "shop.test", "click_tracking": true, "tracking_subdomain": "links" }),
    )
    .await;
    let verified = api(
        addr,
        Method::POST,
        &format!("/domains/{domain}/verify"),
        Some(json!({ "skip_dns": true })),
    )
    .await;
    assert_eq!(verified.status, StatusCode::OK, "{}", verified.text());
    let segment = created(addr, "/segments", json!({ "name": "Three" })).await;
    for name in ["ann", "bob", "cid"] {
        created(
            addr,
            "/contacts",
            json!({ "email": format!("{name}@example.net"), "segments": [{ "id": segment }] }),
        )
        .await;
    }
    let html = "<p><a href=\"https://shop.test/sale\">Sale</a> <a href=\"https://shop.test/new\">New</a></p>";
    let id = created(
        addr,
        "/broadcasts",
        json!({ "segment_id": segment, "from": "news@shop.test", "subject": "Sale", "html": html, "send": true }),
    )
    .await;
    until(addr, &id, "sent").await;
    let received = sink.wait_for(3, WAIT).await;
    let links = |n: usize| -> Vec<String> {
        let message = MessageParser::default().parse(&received[n].data).expect("MIME");
        let body = message.body_html(0).expect("html").into_owned();
        body.split("href=\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .filter(|link| link.contains("/t/c/"))
            .map(str::to_owned)
            .collect()
    };
    // Past the first seconds, when a click is a link scanner's: these are people's.
    clock.advance(Duration::from_secs(11));
    let agent = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15";
    let click = |link: String| async move {
        let path = link
            .split_once("links.shop.test")
            .map_or(link.as_str(), |(_, p)| p)
            .to_owned();
        let clicked = util::call_with_headers(
            addr,
            Method::GET,
            &path,
            None,
            &[("host", "links.shop.test"), ("user-agent", agent)],
            bytes::Bytes::new(),
        )
        .await;
        assert_eq!(clicked.status, StatusCode::FOUND, "{}", clicked.text());
    };
    let (first, second) = (links(0), links(1));
    click(first[0].clone()).await;
    click(first[0].clone()).await;
    click(first[1].clone()).await;
    click(second[0].clone()).await;

    let team = api(addr, Method::GET, "/teams", None).await.json()["data"][0]["id"]
        .as_str()
        .expect("the operator's team")
        .parse()
        .expect("an id");
    let caller = Caller {
        team_id: team,
        key_id: team,
        permission: Permission::FullAccess,
        domain_id: None,
        operator: true,
    };
    let counted = util::eventually(WAIT, "the clicks to be recorded", || {
        let found = broadcasts::outcomes(&running.state, &caller, &id).expect("outcomes");
        async move { (found.clicked == 2).then_some(found) }
    })
    .await;
    assert_eq!((counted.delivered, counted.opened, counted.bounced), (3, 2, 0));
    // The counts kept as emails move agree with a pass over every email, the way a
    // broadcast from before the counts is read.
    let (state, broadcast) = (running.state.clone(), id.parse().expect("an id"));
    tokio::task::spawn_blocking(move || {
        let mut older = state
            .broadcasts()
            .get(team, broadcast)
            .expect("read")
            .expect("the broadcast");
        assert!(older.counted, "a new broadcast is counted as its emails move");
        older.counted = false;
        state.broadcasts().put(&older).expect("written");
    })
    .await
    .expect("rewritten");
    assert_eq!(
        broadcasts::outcomes(&running.state, &caller, &id).expect("outcomes"),
        counted
    );
    let clicked = broadcasts::clicked_links(&running.state, &caller, &id).expect("links");
    let clicked: Vec<(String, u64, u64)> = clicked
        .into_iter()
        .map(|l| (l.url, l.clicks, l.unique_clicks))
        .collect();
    assert_eq!(
        clicked,
        vec![
            ("https://shop.test/sale".to_owned(), 3, 2),
            ("https://shop.test/new".to_owned(), 1, 1),
        ]
    );
}
