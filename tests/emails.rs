//! The emails API over real HTTP: sending with every field, the MIME that is built,
//! validation, idempotency under concurrency, batches, scheduling and cancel.

mod util;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use herald_queue::{ManualClock, Timestamp};
use hyper::{Method, StatusCode};
use mail_parser::{MessageParser, MimeHeaders};
use serde_json::{Value, json};
use util::{OPERATOR_KEY, call, start_api};

async fn send(addr: std::net::SocketAddr, key: &str, body: Value) -> util::HttpResponse {
    call(addr, Method::POST, "/emails", Some(key), Some(body)).await
}

fn spooled(running: &herald::server::Running, id: &str) -> (herald_queue::Envelope, Vec<u8>) {
    running
        .state
        .spool()
        .load(id.parse().expect("id"))
        .expect("load")
        .expect("in the spool")
}

#[tokio::test]
async fn a_minimal_email_is_spooled_as_proper_mime_and_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    util::verified_domain(addr, "example.test").await;
    let response = send(
        addr,
        OPERATOR_KEY,
        json!({
            "from": "Acme <hello@example.test>",
            "to": "user@example.org",
            "subject": "Welcome",
            "html": "<p>Hello <strong>there</strong></p>",
        }),
    )
    .await;
    assert_eq!(response.status, StatusCode::OK, "{}", response.text());
    let id = response.json()["id"].as_str().expect("id").to_owned();
    assert_eq!(response.json().as_object().map(|o| o.len()), Some(1), "just the id");

    let (envelope, raw) = spooled(&running, &id);
    assert_eq!(envelope.sender, format!("{id}@send.example.test"));
    assert_eq!(
        envelope
            .recipients
            .iter()
            .map(|r| r.address.as_str())
            .collect::<Vec<_>>(),
        vec!["user@example.org"]
    );
    let message = MessageParser::default().parse(&raw).expect("parses");
    assert_eq!(message.subject(), Some("Welcome"));
    assert_eq!(message.message_id(), Some(format!("{id}@herald.test").as_str()));
    assert!(message.date().is_some());
    assert_eq!(
        message.from().and_then(|f| f.first()).and_then(|a| a.name()),
        Some("Acme")
    );
    assert!(
        message
            .content_type()
            .is_some_and(|ct| ct.subtype() == Some("alternative")),
        "multipart/alternative"
    );
    assert!(
        message
            .body_text(0)
            .is_some_and(|t| t.contains("Hello") && t.contains("there")),
        "text derived from html"
    );
    assert!(
        message
            .body_html(0)
            .is_some_and(|h| h.contains("<strong>there</strong>"))
    );

    let record = call(addr, Method::GET, &format!("/emails/{id}"), Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(record["object"], "email");
    // In Resend's order: the object's type, then its id, ahead of the rest.
    let fields: Vec<&str> = record
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .take(3)
        .collect();
    assert_eq!(fields, ["object", "id", "to"]);
    assert_eq!(record["from"], "Acme <hello@example.test>");
    assert_eq!(record["to"], json!(["user@example.org"]));
    assert_eq!(record["last_event"], "sent");
    assert_eq!(record["cc"], Value::Null);
    assert_eq!(record["scheduled_at"], Value::Null);
    assert_eq!(record["message_id"], format!("<{id}@herald.test>"));
    assert_eq!(record["html"], "<p>Hello <strong>there</strong></p>");

    // `text: ""` opts out of the derived text part: html alone; alone it is no body.
    let html_only = send(
        addr,
        OPERATOR_KEY,
        json!({
            "from": "hello@example.test", "to": "user@example.org", "subject": "Html only",
            "html": "<p>Just html</p>", "text": "",
        }),
    )
    .await;
    assert_eq!(html_only.status, StatusCode::OK, "{}", html_only.text());
    let (_, raw) = spooled(&running, html_only.json()["id"].as_str().expect("id"));
    let message = MessageParser::default().parse(&raw).expect("parses");
    assert!(
        message.content_type().is_some_and(|ct| ct.subtype() == Some("html")),
        "{}",
        String::from_utf8_lossy(&raw)
    );
    assert!(!String::from_utf8_lossy(&raw).contains("text/plain"));
    let empty = send(
        addr,
        OPERATOR_KEY,
        json!({ "from": "hello@example.test", "to": "user@example.org", "subject": "Nothing", "text": "" }),
    )
    .await;
    assert_eq!(empty.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", empty.text());
    running.shutdown().await;
}

#[tokio::test]
async fn every_field_reaches_the_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    util::verified_domain(addr, "example.test").await;
    let pdf = b"%PDF-1.4 fake".to_vec();
    let response = send(
        addr,
        OPERATOR_KEY,
        json!({
            "from": "Zoë Müller <zoe@example.test>",
            "to": ["a@example.org", "B <b@example.org>"],
            "cc": "c@example.org",
            "bcc": ["d@example.org", "a@example.org"],
            "reply_to": ["support@example.test"],
            "subject": "Grüße aus Köln — ünïcödé subject that is long enough to need folding in the header",
            "html": "<p>Bonjour <img src=\"cid:logo\"></p>",
            "text": "Bonjour",
            "headers": { "X-Entity-Ref-ID": "123", "List-Unsubscribe": "<https://example.test/u>" },
            "tags": [{ "name": "category", "value": "welcome" }],
            "attachments": [
                { "filename": "report.pdf", "content": base64::engine::general_purpose::STANDARD.encode(&pdf) },
                { "filename": "bytes.txt", "content": [104, 105] },
                { "filename": "buffer.bin", "content": { "type": "Buffer", "data": [1, 2, 3] } },
                { "filename": "logo.png", "content": "iVBORw0KGgo=", "content_id": "logo" },
                { "filename": "résumé.txt", "content": "aGk=" },
                // Node's SDK types allow `filename: false`: no file name.
                { "filename": false, "content": "aGk=", "content_type": "text/plain" },
            ],
        }),
    )
    .await;
    assert_eq!(response.status, StatusCode::OK, "{}", response.text());
    let id = response.json()["id"].as_str().expect("id").to_owned();
    let (envelope, raw) = spooled(&running, &id);
    let recipients: Vec<&str> = envelope.recipients.iter().map(|r| r.address.as_str()).collect();
    assert_eq!(
        recipients,
        vec!["a@example.org", "b@example.org", "c@example.org", "d@example.org"],
        "bcc in the envelope, duplicates once"
    );
    let text = String::from_utf8_lossy(&raw);
    assert!(
        !text.to_ascii_lowercase().contains("\nbcc:"),
        "Bcc never reaches the headers"
    );
    assert!(raw.iter().all(u8::is_ascii), "non-ASCII is encoded");
    let message = MessageParser::default().parse(&raw).expect("parses");
    assert_eq!(
        message.subject(),
        Some("Grüße aus Köln — ünïcödé subject that is long enough to need folding in the header")
    );
    assert_eq!(
        message.from().and_then(|f| f.first()).and_then(|a| a.name()),
        Some("Zoë Müller")
    );
    assert_eq!(
        message.cc().and_then(|c| c.first()).and_then(|a| a.address()),
        Some("c@example.org")
    );
    assert_eq!(
        message.reply_to().and_then(|c| c.first()).and_then(|a| a.address()),
        Some("support@example.test")
    );
    assert_eq!(message.header_raw("X-Entity-Ref-ID").map(str::trim), Some("123"));
    assert_eq!(
        message.header_raw("List-Unsubscribe").map(str::trim),
        Some("<https://example.test/u>")
    );
    assert_eq!(message.body_text(0).as_deref(), Some("Bonjour"));
    let attachments: Vec<_> = message.attachments().collect();
    let names: Vec<&str> = attachments.iter().filter_map(|a| a.attachment_name()).collect();
    assert_eq!(
        names,
        vec!["report.pdf", "bytes.txt", "buffer.bin", "résumé.txt", "attachment-6"],
        "inline parts are referenced by Content-ID"
    );
    assert_eq!(attachments[0].contents(), pdf.as_slice());
    assert_eq!(attachments[0].content_type().map(|c| c.subtype()), Some(Some("pdf")));
    assert_eq!(attachments[1].contents(), b"hi");
    assert_eq!(attachments[2].contents(), &[1, 2, 3]);
    assert_eq!(attachments[3].content_id(), Some("logo"));
    let record = call(addr, Method::GET, &format!("/emails/{id}"), Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(record["tags"], json!([{ "name": "category", "value": "welcome" }]));
    assert_eq!(record["bcc"], json!(["d@example.org", "a@example.org"]));
    running.shutdown().await;
}

#[tokio::test]
async fn invalid_emails_get_precise_errors_and_nothing_is_sent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    util::verified_domain(addr, "example.test").await;
    let base = json!({ "from": "a@example.test", "to": "b@example.org", "subject": "s", "text": "t" });
    let with = |patch: Value| {
        let mut body = base.clone();
        for (k, v) in patch.as_object().expect("object") {
            if v.is_null() {
                body.as_object_mut().expect("object").remove(k);
            } else {
                body[k] = v.clone();
            }
        }
        body
    };
    let too_many: Vec<String> = (0..51).map(|i| format!("u{i}@example.org")).collect();
    let cases = [
        (with(json!({ "from": null })), 422, "missing_required_field", "`from`"),
        (with(json!({ "to": null })), 422, "missing_required_field", "`to`"),
        (with(json!({ "to": [] })), 422, "missing_required_field", "`to`"),
        (
            with(json!({ "subject": null })),
            422,
            "missing_required_field",
            "`subject`",
        ),
        (
            with(json!({ "text": null })),
            422,
            "missing_required_field",
            "`html` or `text`",
        ),
        (
            with(json!({ "from": "not an address" })),
            422,
            "validation_error",
            "`from`",
        ),
        (
            with(json!({ "to": ["ok@example.org", "bad@"] })),
            422,
            "validation_error",
            "`to`",
        ),
        (with(json!({ "to": too_many })), 422, "validation_error", "at most 50"),
        (with(json!({ "to": 5 })), 422, "validation_error", "`to`"),
        (
            with(json!({ "subject": "hi\r\nBcc: victim@example.org" })),
            422,
            "validation_error",
            "`subject`",
        ),
        (
            with(json!({ "headers": { "X-Evil": "a\r\nBcc: victim@example.org" } })),
            422,
            "validation_error",
            "CR, LF",
        ),
        (
            with(json!({ "headers": { "From": "x@y.test" } })),
            422,
            "validation_error",
            "set by herald",
        ),
        (
            with(json!({ "headers": { "Bad Name": "x" } })),
            422,
            "validation_error",
            "header name",
        ),
        (
            with(json!({ "tags": [{ "name": "bad tag", "value": "x" }] })),
            422,
            "validation_error",
            "`tags`",
        ),
        (
            with(json!({ "tags": [{ "name": "ok" }] })),
            422,
            "validation_error",
            "`value`",
        ),
        (
            with(json!({ "attachments": [{ "filename": "a.txt" }] })),
            422,
            "invalid_attachment",
            "`content` or `path`",
        ),
        (
            with(json!({ "attachments": [{ "filename": "a.txt", "content": "!!!" }] })),
            422,
            "invalid_attachment",
            "base64",
        ),
        (
            with(json!({ "scheduled_at": "2001-01-01T00:00:00Z" })),
            422,
            "validation_error",
            "past",
        ),
        (
            with(json!({ "scheduled_at": "in 40 days" })),
            422,
            "validation_error",
            "30 days",
        ),
        (
            with(json!({ "scheduled_at": "someday" })),
            422,
            "validation_error",
            "ISO 8601",
        ),
        (
            with(json!({ "from": "a@unverified.test" })),
            403,
            "validation_error",
            "unverified.test domain is not verified",
        ),
    ];
    for (body, status, name, fragment) in cases {
        let response = send(addr, OPERATOR_KEY, body.clone()).await;
        assert_eq!(response.status.as_u16(), status, "{body}: {}", response.text());
        assert_eq!(response.json()["name"], name, "{body}: {}", response.text());
        let message = response.json()["message"].as_str().unwrap_or_default().to_owned();
        assert!(message.contains(fragment), "{body}: {message:?} lacks {fragment:?}");
    }
    let list = call(addr, Method::GET, "/emails", Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(list["data"].as_array().map(Vec::len), Some(0), "nothing was sent");
    assert_eq!(running.state.spool().depth(), 0);
    running.shutdown().await;
}

#[tokio::test]
async fn sending_keys_send_only_from_their_domain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let ours = util::verified_domain(addr, "ours.test").await;
    util::verified_domain(addr, "other.test").await;
    let key = call(
        addr,
        Method::POST,
        "/api-keys",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "s", "permission": "sending_access", "domain_id": ours })),
    )
    .await;
    let token = key.json()["token"].as_str().expect("token").to_owned();
    let ok = send(
        addr,
        &token,
        json!({ "from": "a@ours.test", "to": "b@example.org", "subject": "s", "text": "t" }),
    )
    .await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.text());
    let refused = send(
        addr,
        &token,
        json!({ "from": "a@other.test", "to": "b@example.org", "subject": "s", "text": "t" }),
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(
        refused.json()["message"]
            .as_str()
            .is_some_and(|m| m.contains("ours.test")),
        "{}",
        refused.text()
    );
    let reading = call(addr, Method::GET, "/emails", Some(&token), None).await;
    assert_eq!(reading.json()["name"], "restricted_api_key");
    running.shutdown().await;
}

#[tokio::test]
async fn an_idempotency_key_sends_exactly_one_email_even_under_concurrency() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    util::verified_domain(addr, "example.test").await;
    let body = json!({ "from": "a@example.test", "to": "b@example.org", "subject": "once", "text": "t" });
    let keyed = |key: &'static str, body: Value| async move {
        let response = util::call_with_headers(
            addr,
            Method::POST,
            "/emails",
            Some(OPERATOR_KEY),
            &[("idempotency-key", key)],
            bytes::Bytes::from(body.to_string()),
        )
        .await;
        (response.status, response.json())
    };
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let body = body.clone();
        tasks.push(tokio::spawn(keyed("order-42", body)));
    }
    let mut ids = std::collections::HashSet::new();
    for task in tasks {
        let (status, json) = task.await.expect("task");
        match status {
            StatusCode::OK => {
                ids.insert(json["id"].as_str().expect("id").to_owned());
            }
            StatusCode::CONFLICT => assert_eq!(json["name"], "concurrent_idempotent_requests"),
            other => panic!("unexpected {other}: {json}"),
        }
    }
    let (status, again) = keyed(
        "order-42",
        json!({ "text": "t", "subject": "once", "to": "b@example.org", "from": "a@example.test" }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "same canonical body replays");
    ids.insert(again["id"].as_str().expect("id").to_owned());
    assert_eq!(ids.len(), 1, "one id for every success: {ids:?}");
    let emails = call(addr, Method::GET, "/emails", Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(emails["data"].as_array().map(Vec::len), Some(1), "exactly one email");

    let (status, mismatch) = keyed(
        "order-42",
        json!({ "from": "a@example.test", "to": "b@example.org", "subject": "other", "text": "t" }),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(mismatch["name"], "invalid_idempotent_request");
    let long: &'static str = Box::leak("k".repeat(257).into_boxed_str());
    let (status, invalid) = keyed(long, body.clone()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(invalid["name"], "invalid_idempotency_key");
    running.shutdown().await;
}

#[tokio::test]
async fn batches_are_strict_or_permissive_and_written_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    util::verified_domain(addr, "example.test").await;
    let good = |i: usize| json!({ "from": "a@example.test", "to": format!("u{i}@example.org"), "subject": format!("n{i}"), "text": "t" });
    let bad = json!({ "from": "a@example.test", "to": "nope", "subject": "x", "text": "t" });

    let strict = call(
        addr,
        Method::POST,
        "/emails/batch",
        Some(OPERATOR_KEY),
        Some(json!([good(0), bad.clone(), good(2)])),
    )
    .await;
    assert_eq!(strict.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        strict.json()["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("emails[1]")),
        "{}",
        strict.text()
    );
    assert_eq!(running.state.spool().depth(), 0, "strict: nothing sent");

    let batch: Vec<Value> = (0..100).map(good).collect();
    let ok = call(
        addr,
        Method::POST,
        "/emails/batch",
        Some(OPERATOR_KEY),
        Some(Value::Array(batch)),
    )
    .await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.text());
    assert_eq!(ok.json()["data"].as_array().map(Vec::len), Some(100));
    assert_eq!(running.state.spool().depth(), 100);

    let response = herald_permissive(addr, json!([good(1), bad, good(3)])).await;
    assert_eq!(response["data"].as_array().map(Vec::len), Some(2));
    assert_eq!(response["errors"][0]["index"], 1);
    assert_eq!(running.state.spool().depth(), 102);

    let too_many: Vec<Value> = (0..101).map(good).collect();
    let refused = call(
        addr,
        Method::POST,
        "/emails/batch",
        Some(OPERATOR_KEY),
        Some(Value::Array(too_many)),
    )
    .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    let not_array = call(addr, Method::POST, "/emails/batch", Some(OPERATOR_KEY), Some(good(1))).await;
    assert_eq!(not_array.status, StatusCode::UNPROCESSABLE_ENTITY);
    running.shutdown().await;
}

async fn herald_permissive(addr: std::net::SocketAddr, body: Value) -> Value {
    let response = util::call_with_headers(
        addr,
        Method::POST,
        "/emails/batch",
        Some(OPERATOR_KEY),
        &[("x-batch-validation", "permissive")],
        bytes::Bytes::from(body.to_string()),
    )
    .await;
    assert_eq!(response.status, StatusCode::OK);
    response.json()
}

#[tokio::test]
async fn scheduled_emails_can_be_moved_and_canceled_until_they_are_due() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_795_334_400_000)));
    let config = util::config(dir.path(), "[api]\nrate_limit = \"1000/s\"\n");
    let running = util::start_with_clock(config, Some(OPERATOR_KEY), clock.clone()).await;
    let addr = running.http_addr;
    util::verified_domain(addr, "example.test").await;
    let body = |when: &str| json!({ "from": "a@example.test", "to": "b@example.org", "subject": "later", "text": "t", "scheduled_at": when });

    let first = send(addr, OPERATOR_KEY, body("in 1 hour")).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text());
    let id = first.json()["id"].as_str().expect("id").to_owned();
    let record = call(addr, Method::GET, &format!("/emails/{id}"), Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(record["last_event"], "scheduled");
    assert_eq!(record["scheduled_at"], "2026-11-22 09:00:00.000000+00");
    assert!(
        running.state.spool().claim_due(10).expect("claim").is_empty(),
        "not due yet"
    );

    let moved = call(
        addr,
        Method::PATCH,
        &format!("/emails/{id}"),
        Some(OPERATOR_KEY),
        Some(json!({ "scheduled_at": "2026-11-22T12:00:00Z" })),
    )
    .await;
    assert_eq!(moved.json(), json!({ "object": "email", "id": id }));
    let (envelope, _) = spooled(&running, &id);
    assert_eq!(envelope.due, Timestamp::from_millis(1_795_334_400_000 + 4 * 3_600_000));

    let canceled = call(
        addr,
        Method::POST,
        &format!("/emails/{id}/cancel"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(canceled.json(), json!({ "object": "email", "id": id }));
    assert!(
        running
            .state
            .spool()
            .load(id.parse().expect("id"))
            .expect("load")
            .is_none(),
        "left the spool"
    );
    let record = call(addr, Method::GET, &format!("/emails/{id}"), Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(record["last_event"], "canceled");
    let again = call(
        addr,
        Method::POST,
        &format!("/emails/{id}/cancel"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(again.status, StatusCode::UNPROCESSABLE_ENTITY);

    // Once the time comes, delivery has begun: no more changes.
    let second = send(addr, OPERATOR_KEY, body("in 10 min")).await.json()["id"]
        .as_str()
        .expect("id")
        .to_owned();
    clock.advance(Duration::from_secs(11 * 60));
    let late = call(
        addr,
        Method::POST,
        &format!("/emails/{second}/cancel"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(late.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        late.json()["message"]
            .as_str()
            .is_some_and(|m| m.contains("delivery has already begun")),
        "{}",
        late.text()
    );
    let unscheduled = send(
        addr,
        OPERATOR_KEY,
        json!({ "from": "a@example.test", "to": "b@example.org", "subject": "now", "text": "t" }),
    )
    .await;
    let now_id = unscheduled.json()["id"].as_str().expect("id").to_owned();
    let refused = call(
        addr,
        Method::PATCH,
        &format!("/emails/{now_id}"),
        Some(OPERATOR_KEY),
        Some(json!({ "scheduled_at": "in 1 hour" })),
    )
    .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    running.shutdown().await;
}

#[tokio::test]
async fn emails_list_newest_first_without_bodies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    util::verified_domain(addr, "example.test").await;
    for i in 0..3 {
        send(
            addr,
            OPERATOR_KEY,
            json!({ "from": "a@example.test", "to": "b@example.org", "subject": format!("n{i}"), "html": "<b>x</b>" }),
        )
        .await;
    }
    let list = call(addr, Method::GET, "/emails?limit=2", Some(OPERATOR_KEY), None)
        .await
        .json();
    let subjects: Vec<&str> = list["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(|e| e["subject"].as_str())
        .collect();
    assert_eq!(subjects, vec!["n2", "n1"]);
    assert_eq!(list["has_more"], true);
    assert!(list["data"][0].get("html").is_none());
    let all = call(addr, Method::GET, "/emails?limit=100", Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(all["data"].as_array().map(Vec::len), Some(3), "{all}");
    running.shutdown().await;
}

#[tokio::test]
async fn attachments_by_path_are_fetched_and_private_addresses_refused() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let file_addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf).await;
                let body = b"invoice body";
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/csv\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(body).await;
            });
        }
    });
    let url = format!("http://{file_addr}/files/invoice.csv");

    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    util::verified_domain(running.http_addr, "example.test").await;
    let body = json!({ "from": "a@example.test", "to": "b@example.org", "subject": "s", "text": "t", "attachments": [{ "path": url }] });
    let response = send(running.http_addr, OPERATOR_KEY, body.clone()).await;
    assert_eq!(response.status, StatusCode::OK, "{}", response.text());
    let (_, raw) = spooled(&running, response.json()["id"].as_str().expect("id"));
    let message = MessageParser::default().parse(&raw).expect("parses");
    let attachment = message.attachments().next().expect("attachment");
    assert_eq!(attachment.attachment_name(), Some("invoice.csv"));
    assert_eq!(attachment.contents(), b"invoice body");
    running.shutdown().await;

    let strict_dir = tempfile::tempdir().expect("tempdir");
    let text = util::config_text(strict_dir.path(), "[api]\nrate_limit = \"1000/s\"\n")
        .replace("allow_private_endpoints = true", "allow_private_endpoints = false");
    let config = herald::config::Config::from_toml(&text, None).expect("config");
    let strict = util::start_with_key(config, Some(OPERATOR_KEY)).await;
    util::verified_domain(strict.http_addr, "example.test").await;
    let refused = send(strict.http_addr, OPERATOR_KEY, body).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(refused.json()["name"], "invalid_attachment");
    assert!(
        refused.json()["message"]
            .as_str()
            .is_some_and(|m| m.contains("refused")),
        "{}",
        refused.text()
    );
    strict.shutdown().await;
}
