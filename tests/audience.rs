//! The audience API over HTTP: segments (and legacy audiences), topics, contact
//! properties and contacts' membership and choices, with their webhook events, limits and
//! team isolation; CSV imports with bad rows, limits and a restart mid-import.

mod util;

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use util::webhook_receiver::Receiver;
use util::{HttpResponse, OPERATOR_KEY, call, call_with_headers};

const WAIT: Duration = Duration::from_secs(30);

async fn api(addr: SocketAddr, method: Method, path: &str, body: Option<Value>) -> HttpResponse {
    call(addr, method, path, Some(OPERATOR_KEY), body).await
}

async fn created(addr: SocketAddr, path: &str, body: Value) -> String {
    let response = api(addr, Method::POST, path, Some(body)).await;
    assert_eq!(response.status, StatusCode::CREATED, "{path}: {}", response.text());
    response.json()["id"].as_str().expect("id").to_owned()
}

fn ids(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|item| item["id"].as_str().expect("id").to_owned())
        .collect()
}

#[tokio::test]
async fn segments_topics_and_properties_shape_contacts_with_their_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(
        dir.path(),
        "[contacts]\nsegments_max = 3\nproperty_value_max = \"8B\"\n",
    )
    .await;
    let addr = running.http_addr;
    let receiver = Receiver::start().await;
    let hook = api(
        addr,
        Method::POST,
        "/webhooks",
        Some(json!({
            "endpoint": format!("http://{}/hook", receiver.addr()),
            "events": ["contact.created", "contact.updated", "contact.topics.updated", "topic.created", "topic.updated", "topic.deleted"],
        })),
    )
    .await;
    assert_eq!(hook.status, StatusCode::CREATED, "{}", hook.text());

    // Segments, and the same under their legacy name.
    let news = created(addr, "/segments", json!({ "name": "Newsletter" })).await;
    let vips = api(addr, Method::POST, "/audiences", Some(json!({ "name": "VIPs" }))).await;
    assert_eq!(vips.status, StatusCode::CREATED);
    assert_eq!(vips.json()["object"], "audience");
    assert_eq!(vips.json()["name"], "VIPs");
    let vips = vips.json()["id"].as_str().expect("id").to_owned();
    let got = api(addr, Method::GET, &format!("/audiences/{news}"), None).await.json();
    assert_eq!(
        (got["object"].as_str(), got["name"].as_str()),
        (Some("audience"), Some("Newsletter"))
    );
    let listed = api(addr, Method::GET, "/segments", None).await.json();
    assert_eq!(ids(&listed), [vips.clone(), news.clone()], "newest first");
    let third = created(addr, "/segments", json!({ "name": "Third" })).await;
    let over = api(addr, Method::POST, "/segments", Some(json!({ "name": "Fourth" }))).await;
    assert_eq!(over.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        over.json()["message"]
            .as_str()
            .expect("message")
            .contains("segments_max"),
        "{}",
        over.text()
    );
    let renamed = api(
        addr,
        Method::PATCH,
        &format!("/segments/{third}"),
        Some(json!({ "name": "Renamed" })),
    )
    .await;
    assert_eq!(renamed.json(), json!({ "object": "segment", "id": third }));
    assert_eq!(
        api(addr, Method::GET, &format!("/segments/{third}"), None).await.json()["name"],
        "Renamed"
    );
    let missing = api(addr, Method::POST, "/segments", Some(json!({}))).await;
    assert_eq!(missing.json()["name"], "missing_required_field");

    // Topics and properties.
    let weekly = created(
        addr,
        "/topics",
        json!({ "name": "Weekly", "default_subscription": "opt_in", "description": "Every Monday" }),
    )
    .await;
    let offers = created(
        addr,
        "/topics",
        json!({ "name": "Offers", "default_subscription": "opt_out", "visibility": "public" }),
    )
    .await;
    let topic = api(addr, Method::GET, &format!("/topics/{offers}"), None).await.json();
    assert_eq!(topic["object"], "topic");
    assert_eq!(topic["visibility"], "public");
    assert_eq!(topic["description"], Value::Null);
    let fixed = api(
        addr,
        Method::PATCH,
        &format!("/topics/{weekly}"),
        Some(json!({ "default_subscription": "opt_out" })),
    )
    .await;
    assert_eq!(fixed.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", fixed.text());
    let described = api(
        addr,
        Method::PATCH,
        &format!("/topics/{weekly}"),
        Some(json!({ "description": "Mondays" })),
    )
    .await;
    assert_eq!(described.json(), json!({ "object": "topic", "id": weekly }));
    let plan = created(
        addr,
        "/contact-properties",
        json!({ "key": "plan", "type": "string", "fallback_value": "free" }),
    )
    .await;
    created(addr, "/contact-properties", json!({ "key": "seats", "type": "number" })).await;
    let twice = api(
        addr,
        Method::POST,
        "/contact-properties",
        Some(json!({ "key": "plan", "type": "string" })),
    )
    .await;
    assert_eq!(twice.status, StatusCode::CONFLICT);
    let bad_key = api(
        addr,
        Method::POST,
        "/contact-properties",
        Some(json!({ "key": "a-b", "type": "string" })),
    )
    .await;
    assert_eq!(bad_key.status, StatusCode::UNPROCESSABLE_ENTITY);
    let bad_fallback = api(
        addr,
        Method::POST,
        "/contact-properties",
        Some(json!({ "key": "n", "type": "number", "fallback_value": "x" })),
    )
    .await;
    assert_eq!(bad_fallback.status, StatusCode::UNPROCESSABLE_ENTITY);
    let property = api(addr, Method::GET, &format!("/contact-properties/{plan}"), None)
        .await
        .json();
    assert_eq!(property["object"], "contact_property");
    assert_eq!(
        (property["key"].as_str(), property["type"].as_str()),
        (Some("plan"), Some("string"))
    );
    assert_eq!(property["fallback_value"], "free");

    // A contact in a segment, with a topic choice and properties checked against them.
    let wrong_type = api(
        addr,
        Method::POST,
        "/contacts",
        Some(json!({ "email": "ann@example.com", "properties": { "seats": "five" } })),
    )
    .await;
    assert_eq!(
        wrong_type.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        wrong_type.text()
    );
    assert!(wrong_type.text().contains("seats"));
    let too_long = api(
        addr,
        Method::POST,
        "/contacts",
        Some(json!({ "email": "ann@example.com", "properties": { "plan": "enterprise" } })),
    )
    .await;
    assert!(too_long.text().contains("property_value_max"), "{}", too_long.text());
    let unknown_segment = api(
        addr,
        Method::POST,
        "/contacts",
        Some(json!({ "email": "ann@example.com", "segments": [{ "id": "0193b1c0-0000-7000-8000-000000000000" }] })),
    )
    .await;
    assert_eq!(unknown_segment.status, StatusCode::NOT_FOUND);
    let ann = created(
        addr,
        "/contacts",
        json!({
            "email": "ann@example.com",
            "segments": [{ "id": news }],
            "topics": [{ "id": offers, "subscription": "opt_in" }],
            "properties": { "seats": 5 },
            "audience_id": null,
        }),
    )
    .await;
    let bob = created(
        addr,
        &format!("/audiences/{vips}/contacts"),
        json!({ "email": "bob@example.com", "first_name": "Bob" }),
    )
    .await;
    let contact = api(addr, Method::GET, &format!("/contacts/{ann}"), None).await.json();
    assert_eq!(
        contact["properties"],
        json!({ "plan": { "type": "string", "value": "free" }, "seats": { "type": "number", "value": "5" } })
    );
    let members = api(addr, Method::GET, &format!("/segments/{news}/contacts"), None)
        .await
        .json();
    assert_eq!(ids(&members), [ann.as_str()]);
    let filtered = api(addr, Method::GET, &format!("/contacts?segment_id={vips}"), None)
        .await
        .json();
    assert_eq!(ids(&filtered), [bob.as_str()]);
    let legacy = api(
        addr,
        Method::GET,
        &format!("/audiences/{vips}/contacts/bob%40example.com"),
        None,
    )
    .await
    .json();
    assert_eq!(legacy["first_name"], "Bob");

    // Membership moves.
    let added = api(
        addr,
        Method::POST,
        &format!("/contacts/ann@example.com/segments/{vips}"),
        None,
    )
    .await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.text());
    assert_eq!(added.json()["id"], vips.as_str());
    let of_ann = api(addr, Method::GET, &format!("/contacts/{ann}/segments/"), None)
        .await
        .json();
    assert_eq!(ids(&of_ann), [vips.clone(), news.clone()]);
    let removed = api(addr, Method::DELETE, &format!("/contacts/{ann}/segments/{news}"), None).await;
    assert_eq!(removed.json()["deleted"], true);
    let news_members = api(addr, Method::GET, &format!("/segments/{news}/contacts"), None)
        .await
        .json();
    assert_eq!(news_members["data"], json!([]));

    // Topic choices: a bare array; an opt-out also fires contact.updated.
    let choices = api(addr, Method::GET, &format!("/contacts/{bob}/topics"), None)
        .await
        .json();
    let subscriptions: Vec<(&str, &str)> = choices["data"]
        .as_array()
        .expect("list")
        .iter()
        .map(|t| {
            (
                t["name"].as_str().expect("name"),
                t["subscription"].as_str().expect("subscription"),
            )
        })
        .collect();
    assert_eq!(subscriptions, [("Offers", "opt_out"), ("Weekly", "opt_in")], "defaults");
    let set = api(
        addr,
        Method::PATCH,
        &format!("/contacts/{bob}/topics"),
        Some(json!([{ "id": weekly, "subscription": "opt_out" }])),
    )
    .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text());
    assert_eq!(
        set.json()["topics"],
        json!([{ "id": weekly, "subscription": "opt_out" }])
    );
    let bad = api(
        addr,
        Method::PATCH,
        &format!("/contacts/{bob}/topics"),
        Some(json!([{ "id": weekly, "subscription": "maybe" }])),
    )
    .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);

    // Deleting a segment keeps its contacts; another team sees none of it.
    let deleted = api(addr, Method::DELETE, &format!("/audiences/{vips}"), None).await;
    assert_eq!(
        deleted.json(),
        json!({ "object": "audience", "id": vips, "deleted": true })
    );
    assert_eq!(
        api(addr, Method::GET, &format!("/contacts/{bob}"), None).await.status,
        StatusCode::OK
    );
    assert_eq!(
        api(addr, Method::GET, &format!("/contacts/{bob}/segments"), None)
            .await
            .json()["data"],
        json!([])
    );
    let team = api(addr, Method::POST, "/teams", Some(json!({ "name": "Other" })))
        .await
        .json();
    let theirs = team["api_key"]["token"].as_str().expect("token").to_owned();
    for path in [
        format!("/segments/{news}"),
        format!("/topics/{weekly}"),
        format!("/contact-properties/{plan}"),
    ] {
        let response = call(addr, Method::GET, &path, Some(&theirs), None).await;
        assert_eq!(response.status, StatusCode::NOT_FOUND, "{path}");
    }
    let their_topics = call(addr, Method::GET, "/topics", Some(&theirs), None).await.json();
    assert_eq!(their_topics["data"], json!([]));
    let deleted = api(addr, Method::DELETE, &format!("/topics/{offers}"), None).await;
    assert_eq!(
        deleted.json(),
        json!({ "object": "topic", "id": offers, "deleted": true })
    );

    // Events: topics, creations, the topic change and the opt-out.
    let arrived = receiver
        .wait_for(WAIT, |r| {
            r.all().iter().any(|e| e.payload()["type"] == "topic.deleted")
                && r.all().iter().any(|e| e.payload()["type"] == "contact.topics.updated")
        })
        .await;
    assert!(arrived, "events arrived");
    let kinds: Vec<String> = receiver
        .all()
        .iter()
        .map(|e| e.payload()["type"].as_str().unwrap_or("").to_owned())
        .collect();
    let count = |kind: &str| kinds.iter().filter(|k| *k == kind).count();
    assert_eq!((count("topic.created"), count("topic.updated")), (2, 1), "{kinds:?}");
    assert_eq!(count("contact.created"), 2, "{kinds:?}");
    let topics_event = receiver
        .all()
        .into_iter()
        .find(|e| e.payload()["type"] == "contact.topics.updated")
        .expect("contact.topics.updated");
    assert_eq!(topics_event.payload()["data"]["id"], bob.as_str());
    // Joining VIPs and leaving the newsletter, then the opt-out.
    assert!(count("contact.updated") >= 3, "{kinds:?}");
    assert!(running.shutdown().await);
}

/// A `multipart/form-data` body: `fields` as text parts, then `csv` as the `file` part.
fn multipart(fields: &[(&str, &str)], csv: &[u8]) -> (String, Bytes) {
    let boundary = "herald-test-boundary-7d1f";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").as_bytes(),
        );
    }
    body.extend_from_slice(
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"contacts.csv\"\r\nContent-Type: text/csv\r\n\r\n").as_bytes(),
    );
    body.extend_from_slice(csv);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), Bytes::from(body))
}

async fn upload(addr: SocketAddr, fields: &[(&str, &str)], csv: &[u8]) -> HttpResponse {
    let (content_type, body) = multipart(fields, csv);
    call_with_headers(
        addr,
        Method::POST,
        "/contacts/imports",
        Some(OPERATOR_KEY),
        &[("content-type", content_type.as_str())],
        body,
    )
    .await
}

async fn api_raw(addr: SocketAddr, content_type: &str, body: Vec<u8>) -> HttpResponse {
    call_with_headers(
        addr,
        Method::POST,
        "/contacts/imports",
        Some(OPERATOR_KEY),
        &[("content-type", content_type)],
        Bytes::from(body),
    )
    .await
}

async fn finished(addr: SocketAddr, id: &str) -> Value {
    util::eventually(WAIT, "the import to finish", || async {
        let import = api(addr, Method::GET, &format!("/contacts/imports/{id}"), None)
            .await
            .json();
        (import["status"] == "completed" || import["status"] == "failed").then_some(import)
    })
    .await
}

#[tokio::test]
async fn imports_count_and_keep_bad_rows_apply_column_maps_and_refuse_what_is_too_big() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(dir.path(), "[contacts]\nimport_size_max = \"4MiB\"\ncontacts_max = 4\n").await;
    let addr = running.http_addr;
    let segment = created(addr, "/segments", json!({ "name": "Imported" })).await;
    let topic = created(
        addr,
        "/topics",
        json!({ "name": "News", "default_subscription": "opt_in" }),
    )
    .await;
    created(addr, "/contact-properties", json!({ "key": "age", "type": "number" })).await;
    created(
        addr,
        "/contacts",
        json!({ "email": "old@example.com", "first_name": "Old" }),
    )
    .await;

    let csv = "Mail,Given,Years,Opted out\n\
               ann@example.com,Ann,31,no\n\
               not-an-address,Bad,1,no\n\
               old@example.com,Renamed,,yes\n\
               cy@example.com,Cy,thirty,no\n\
               ,Nobody,2,no\n\
               \"dee@example.com\",\"Dee, Jr.\",40,0\n\
               eve@example.com,Eve,50,1\n\
               fay@example.com,Fay,60,0\n";
    let column_map = json!({
        "email": "Mail",
        "first_name": "Given",
        "unsubscribed": "Opted out",
        "properties": { "age": { "column": "Years", "type": "number" } },
    })
    .to_string();
    let segments = json!([{ "id": segment }]).to_string();
    let topics = json!([{ "id": topic, "subscription": "opt_out" }]).to_string();
    let response = upload(
        addr,
        &[
            ("column_map", &column_map),
            ("on_conflict", "upsert"),
            ("segments", &segments),
            ("topics", &topics),
        ],
        csv.as_bytes(),
    )
    .await;
    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text());
    assert_eq!(response.json()["object"], "contact_import");
    let id = response.json()["id"].as_str().expect("id").to_owned();
    let import = finished(addr, &id).await;
    assert_eq!(import["status"], "completed", "{import}");
    assert_eq!(
        import["counts"],
        json!({ "total": 8, "created": 3, "updated": 1, "skipped": 0, "failed": 4 }),
        "{import}"
    );
    // The team holds 4 contacts at most: fay would be the fifth.
    let errors: Vec<(u64, String)> = import["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| {
            (
                e["line"].as_u64().expect("line"),
                e["reason"].as_str().expect("reason").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        errors.iter().map(|(line, _)| *line).collect::<Vec<_>>(),
        [3, 5, 6, 9],
        "{import}"
    );
    assert!(errors[1].1.contains("thirty"), "{errors:?}");
    assert!(errors[2].1.contains("no email"), "{errors:?}");
    assert!(errors[3].1.contains("contacts_max"), "{errors:?}");
    let dee = api(addr, Method::GET, "/contacts/dee@example.com", None).await.json();
    assert_eq!(dee["first_name"], "Dee, Jr.");
    assert_eq!(dee["properties"]["age"], json!({ "type": "number", "value": "40" }));
    let old = api(addr, Method::GET, "/contacts/old@example.com", None).await.json();
    assert_eq!(
        (old["first_name"].as_str(), old["unsubscribed"].as_bool()),
        (Some("Renamed"), Some(true))
    );
    let members = api(
        addr,
        Method::GET,
        &format!("/segments/{segment}/contacts?limit=100"),
        None,
    )
    .await
    .json();
    assert_eq!(members["data"].as_array().map(Vec::len), Some(4));
    let news = api(addr, Method::GET, "/contacts/ann@example.com/topics", None)
        .await
        .json();
    assert_eq!(news["data"][0]["subscription"], "opt_out");
    let listed = api(addr, Method::GET, "/contacts/imports?status=completed", None)
        .await
        .json();
    assert_eq!(ids(&listed), [id.as_str()]);

    // Refusals before anything is stored: a header without an email column, an unknown
    // segment, an upload over [contacts] import_size_max, a body that is not multipart.
    let no_email = upload(addr, &[], b"name\nann\n").await;
    assert_eq!(no_email.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", no_email.text());
    let unknown = upload(
        addr,
        &[("segments", r#"[{"id":"0193b1c0-0000-7000-8000-000000000000"}]"#)],
        b"email\na@b.c\n",
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{}", unknown.text());
    let big = vec![b'a'; 4 * 1024 * 1024 + 1];
    let too_big = upload(addr, &[], &big).await;
    assert_eq!(too_big.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", too_big.text());
    assert!(too_big.text().contains("import_size_max"));
    let json_body = api(addr, Method::POST, "/contacts/imports", Some(json!({ "file": "x" }))).await;
    assert_eq!(
        json_body.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        json_body.text()
    );
    let long_header = format!("email,{}\nann@example.com,x\n", "h".repeat(65 * 1024));
    let refused = upload(addr, &[], long_header.as_bytes()).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
    assert!(refused.text().contains("header row is longer"), "{}", refused.text());
    let framing = api_raw(addr, "multipart/form-data; boundary=b", vec![b'x'; 3 * 1024 * 1024]).await;
    assert_eq!(framing.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", framing.text());
    assert!(framing.text().contains("outside any field"), "{}", framing.text());

    // A row past ROW_MAX (an unclosed quote) stops the import instead of being read whole.
    let unclosed = format!("email\nzed@example.com\n\"{}\n", "y".repeat(1_200_000));
    let response = upload(addr, &[], unclosed.as_bytes()).await;
    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text());
    let stopped = finished(addr, response.json()["id"].as_str().expect("id")).await;
    assert_eq!(stopped["status"], "failed", "{stopped}");
    assert_eq!(stopped["counts"]["total"], 1, "the row before it was read: {stopped}");
    assert!(
        stopped["failure_reason"]
            .as_str()
            .expect("reason")
            .contains("longer than"),
        "{stopped}"
    );
    // A finished import's file goes right after its last chunk is written.
    let imports_dir = dir.path().join("data/imports");
    util::eventually(WAIT, "refused and finished uploads to leave no file", || async {
        let left = std::fs::read_dir(&imports_dir).expect("imports dir").flatten().count();
        (left == 0).then_some(())
    })
    .await;
    assert!(running.shutdown().await);
}

#[tokio::test]
async fn an_import_cut_by_a_restart_resumes_without_losing_or_repeating_rows() {
    // Rows, and how far apart the broken ones are: fewer on PostgreSQL, whose imports are
    // slower (benches/results), with the same number of refused rows to page through.
    let (rows, every) = if util::on_postgres() {
        (10_000, 50)
    } else {
        (200_000, 1000)
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let config = util::config(dir.path(), "[api]\nrate_limit = \"1000/s\"\n");
    let running = util::start_with_key(config.clone(), Some(OPERATOR_KEY)).await;
    let addr = running.http_addr;
    let mut csv = String::from("email,first_name\n");
    for n in 0..rows {
        if n % every == 7 {
            csv.push_str("broken row,x\n");
        } else {
            csv.push_str(&format!("person{n}@example.com,P{n}\n"));
        }
    }
    let response = upload(addr, &[], csv.as_bytes()).await;
    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text());
    let id = response.json()["id"].as_str().expect("id").to_owned();
    // Stop as soon as the first chunks are in, long before the last.
    util::eventually(WAIT, "the import to start", || async {
        let import = api(addr, Method::GET, &format!("/contacts/imports/{id}"), None)
            .await
            .json();
        (import["counts"]["total"].as_u64() > Some(0)).then_some(())
    })
    .await;
    assert!(running.shutdown().await);

    let running = util::start_with_key(config, Some(OPERATOR_KEY)).await;
    let addr = running.http_addr;
    let resumed = api(addr, Method::GET, &format!("/contacts/imports/{id}"), None)
        .await
        .json();
    assert_ne!(resumed["status"], "completed", "the restart came mid-import: {resumed}");
    let import = finished(addr, &id).await;
    let failed = rows / every;
    assert_eq!(
        import["counts"],
        json!({ "total": rows, "created": rows - failed, "updated": 0, "skipped": 0, "failed": failed }),
        "{import}"
    );
    let lines: Vec<u64> = import["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["line"].as_u64().expect("line"))
        .collect();
    // The first 100 refused rows are shown, by line (the header is line 1); the rest
    // page after the last line shown.
    assert_eq!(lines, (0..100).map(|k| k * every as u64 + 7 + 2).collect::<Vec<_>>());
    assert_eq!(import["errors_has_more"], true);
    let last = lines[99];
    let rest = api(
        addr,
        Method::GET,
        &format!("/contacts/imports/{id}?errors_after={last}"),
        None,
    )
    .await
    .json();
    let rest: Vec<u64> = rest["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["line"].as_u64().expect("line"))
        .collect();
    assert_eq!(
        rest,
        (100..failed as u64)
            .map(|k| k * every as u64 + 7 + 2)
            .collect::<Vec<_>>()
    );
    // Every contact exactly once: page through all of them.
    let mut seen = std::collections::HashSet::new();
    let mut after: Option<String> = None;
    loop {
        let path = match &after {
            Some(id) => format!("/contacts?limit=100&after={id}"),
            None => "/contacts?limit=100".to_owned(),
        };
        let page = api(addr, Method::GET, &path, None).await.json();
        for item in page["data"].as_array().expect("data") {
            assert!(
                seen.insert(item["email"].as_str().expect("email").to_owned()),
                "a contact listed twice"
            );
        }
        after = page["data"]
            .as_array()
            .and_then(|d| d.last())
            .map(|l| l["id"].as_str().expect("id").to_owned());
        if page["has_more"] != true {
            break;
        }
    }
    assert_eq!(seen.len(), rows - failed);
    assert!(running.shutdown().await);
}

#[tokio::test]
async fn limits_refuse_by_name_and_an_unsubscribed_contact_still_gets_transactional_mail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(
        dir.path(),
        "[delivery]\nenabled = false\n[contacts]\ncontacts_max = 2\ntopics_max = 1\nproperties_max = 1\n",
    )
    .await;
    let addr = running.http_addr;
    created(
        addr,
        "/contacts",
        json!({ "email": "ann@example.com", "unsubscribed": true }),
    )
    .await;
    created(addr, "/contacts", json!({ "email": "bob@example.com" })).await;
    for (path, body, key) in [
        ("/contacts", json!({ "email": "cy@example.com" }), "contacts_max"),
        (
            "/topics",
            json!({ "name": "Two", "default_subscription": "opt_in" }),
            "topics_max",
        ),
        (
            "/contact-properties",
            json!({ "key": "two", "type": "string" }),
            "properties_max",
        ),
    ] {
        if key != "contacts_max" {
            let first = match key {
                "topics_max" => json!({ "name": "One", "default_subscription": "opt_in" }),
                _ => json!({ "key": "one", "type": "string" }),
            };
            created(addr, path, first).await;
        }
        let refused = api(addr, Method::POST, path, Some(body)).await;
        assert_eq!(
            refused.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{path}: {}",
            refused.text()
        );
        assert_eq!(refused.json()["name"], "validation_error");
        assert!(
            refused.json()["message"].as_str().expect("message").contains(key),
            "{}",
            refused.text()
        );
    }
    // Deleting one makes room again: the count follows deletions.
    let deleted = api(addr, Method::DELETE, "/contacts/bob@example.com", None).await;
    assert_eq!(deleted.status, StatusCode::OK);
    created(addr, "/contacts", json!({ "email": "cy@example.com" })).await;

    // Unsubscribing stops broadcasts, not transactional mail: no suppression, and an
    // email to the address is accepted for delivery.
    let suppressions = api(addr, Method::GET, "/suppressions", None).await.json();
    assert_eq!(suppressions["data"], json!([]));
    util::verified_domain(addr, "shop.test").await;
    let sent = api(
        addr,
        Method::POST,
        "/emails",
        Some(
            json!({ "from": "orders@shop.test", "to": "ann@example.com", "subject": "Your order", "text": "Shipped." }),
        ),
    )
    .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    let email = api(
        addr,
        Method::GET,
        &format!("/emails/{}", sent.json()["id"].as_str().expect("id")),
        None,
    )
    .await
    .json();
    assert_ne!(email["last_event"], "suppressed", "{email}");
    assert!(running.shutdown().await);
}

#[tokio::test]
async fn what_is_deleted_stays_gone_and_legacy_routes_name_members_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let plan = created(addr, "/contact-properties", json!({ "key": "plan", "type": "string" })).await;
    let segment = created(addr, "/segments", json!({ "name": "Gone soon" })).await;
    let kept = created(addr, "/audiences", json!({ "name": "Kept" })).await;
    let ann = created(
        addr,
        "/contacts",
        json!({ "email": "ann@example.com", "properties": { "plan": "pro" }, "segments": [segment, kept] }),
    )
    .await;
    created(addr, "/contacts", json!({ "email": "bob@example.com" })).await;

    // A property deleted and made again under its key starts empty.
    let deleted = api(addr, Method::DELETE, &format!("/contact-properties/{plan}"), None).await;
    assert_eq!(deleted.status, StatusCode::OK);
    created(addr, "/contact-properties", json!({ "key": "plan", "type": "string" })).await;
    let contact = api(addr, Method::GET, &format!("/contacts/{ann}"), None).await.json();
    assert_eq!(contact["properties"], json!({}), "{contact}");

    // A deleted segment leaves the contact's record at its next write.
    let deleted = api(addr, Method::DELETE, &format!("/segments/{segment}"), None).await;
    assert_eq!(deleted.status, StatusCode::OK);
    let joined = api(addr, Method::POST, &format!("/contacts/{ann}/segments/{segment}"), None).await;
    assert_eq!(joined.status, StatusCode::NOT_FOUND, "no joining a deleted segment");
    let changed = api(
        addr,
        Method::PATCH,
        &format!("/contacts/{ann}"),
        Some(json!({ "first_name": "Ann" })),
    )
    .await;
    assert_eq!(changed.status, StatusCode::OK);
    let of_ann = api(addr, Method::GET, &format!("/contacts/{ann}/segments"), None)
        .await
        .json();
    assert_eq!(ids(&of_ann), [kept.as_str()]);

    // Legacy routes name a contact through an audience it is in.
    let member = api(
        addr,
        Method::GET,
        &format!("/audiences/{kept}/contacts/ann@example.com"),
        None,
    )
    .await;
    assert_eq!(member.status, StatusCode::OK, "{}", member.text());
    for method in [Method::GET, Method::PATCH, Method::DELETE] {
        let body = (method == Method::PATCH).then(|| json!({ "first_name": "Bob" }));
        let other = api(
            addr,
            method.clone(),
            &format!("/audiences/{kept}/contacts/bob@example.com"),
            body,
        )
        .await;
        assert_eq!(other.status, StatusCode::NOT_FOUND, "{method}: {}", other.text());
    }
    assert_eq!(
        api(addr, Method::GET, "/contacts/bob@example.com", None).await.status,
        StatusCode::OK
    );
    assert!(running.shutdown().await);
}
