//! Templates over HTTP, end to end into a real SMTP sink: variables substituted (escaped
//! in HTML only) with fallbacks, sending by alias, drafts refused, the published version
//! pinned while a new draft waits, batches; and bad templates and sends with their exact
//! errors.

mod util;

use std::net::SocketAddr;
use std::time::Duration;

use hyper::{Method, StatusCode};
use mail_parser::MessageParser;
use serde_json::{Value, json};
use util::sink::{Sink, SinkOptions};
use util::{HttpResponse, OPERATOR_KEY, call};

const WAIT: Duration = Duration::from_secs(30);

async fn api(addr: SocketAddr, method: Method, path: &str, body: Option<Value>) -> HttpResponse {
    call(addr, method, path, Some(OPERATOR_KEY), body).await
}

fn refused(response: &HttpResponse, status: StatusCode, says: &str) {
    assert_eq!(response.status, status, "{}", response.text());
    let message = response.json()["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains(says), "{message:?} should say {says:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn template_sends_render_publish_and_pin_versions_into_the_sink() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sink = Sink::start(SinkOptions::default());
    let extra = format!(
        "[delivery]\nenabled = true\nrelay = \"{}\"\nretry_intervals = [\"1s\"]\n",
        sink.addr()
    );
    let running = util::start_api(dir.path(), &extra).await;
    let addr = running.http_addr;
    util::verified_domain(addr, "shop.test").await;

    let created = api(
        addr,
        Method::POST,
        "/templates",
        Some(json!({
            "name": "Welcome",
            "alias": "welcome",
            "from": "Shop <hello@shop.test>",
            "subject": "Welcome, {{{NAME}}}!",
            "html": "<p title=\"{{{NAME}}}\">Hi {{{NAME}}}, plan {{{PLAN|free}}}, {{{SEATS}}} seats</p>",
            "variables": [
                { "key": "NAME", "type": "string" },
                { "key": "SEATS", "type": "number", "fallback_value": 1 },
            ],
        })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    assert_eq!(created.json()["object"], "template");
    let id = created.json()["id"].as_str().expect("id").to_owned();
    let got = api(addr, Method::GET, "/templates/welcome", None).await.json();
    assert_eq!(
        (got["status"].as_str(), got["has_unpublished_versions"].as_bool()),
        (Some("draft"), Some(false))
    );
    assert_eq!(got["variables"][1]["fallback_value"], 1);
    let first_version = got["current_version_id"].as_str().expect("version").to_owned();

    // Only published templates send.
    let send = |vars: Value| json!({ "to": "ann@example.net", "template": { "id": "welcome", "variables": vars } });
    let draft = api(addr, Method::POST, "/emails", Some(send(json!({ "NAME": "Ann" })))).await;
    refused(&draft, StatusCode::UNPROCESSABLE_ENTITY, "not published");
    let published = api(addr, Method::POST, &format!("/templates/{id}/publish"), None).await;
    assert_eq!(published.json(), json!({ "object": "template", "id": id }));

    // Values are escaped in the HTML, not in the subject; fallbacks fill the rest; the
    // text part is derived from the HTML.
    let sent = api(
        addr,
        Method::POST,
        "/emails",
        Some(send(json!({ "NAME": "<Ann & \"Co\">" }))),
    )
    .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    let email_id = sent.json()["id"].as_str().expect("id").to_owned();
    let received = sink.wait_for(1, WAIT).await;
    let message = MessageParser::default().parse(&received[0].data).expect("MIME");
    assert_eq!(message.subject(), Some("Welcome, <Ann & \"Co\">!"));
    let html = message.body_html(0).expect("html").into_owned();
    assert!(
        html.contains(
            "<p title=\"&lt;Ann &amp; &quot;Co&quot;&gt;\">Hi &lt;Ann &amp; &quot;Co&quot;&gt;, plan free, 1 seats</p>"
        ),
        "{html}"
    );
    let text = message.body_text(0).expect("text").into_owned();
    assert!(text.contains("Hi <Ann & \"Co\">, plan free, 1 seats"), "{text}");
    let record = api(addr, Method::GET, &format!("/emails/{email_id}"), None)
        .await
        .json();
    assert_eq!(record["from"], "Shop <hello@shop.test>");
    assert_eq!(record["template"], json!({ "id": id, "version_id": first_version }));

    // An edit makes a draft; the published version keeps sending until published again.
    let edited = api(
        addr,
        Method::PATCH,
        "/templates/welcome",
        Some(json!({ "html": "<p>New {{{NAME}}}</p>" })),
    )
    .await;
    assert_eq!(edited.status, StatusCode::OK, "{}", edited.text());
    let got = api(addr, Method::GET, &format!("/templates/{id}"), None).await.json();
    assert_eq!(
        (got["status"].as_str(), got["has_unpublished_versions"].as_bool()),
        (Some("published"), Some(true))
    );
    assert_ne!(got["current_version_id"], first_version.as_str());
    assert_eq!(got["html"], "<p>New {{{NAME}}}</p>");
    let pinned = api(addr, Method::POST, "/emails", Some(send(json!({ "NAME": "Bo" })))).await;
    let pinned = pinned.json()["id"].as_str().expect("id").to_owned();
    let record = api(addr, Method::GET, &format!("/emails/{pinned}"), None).await.json();
    assert!(
        record["html"].as_str().expect("html").starts_with("<p title=\"Bo\">"),
        "{record}"
    );
    api(addr, Method::POST, "/templates/welcome/publish", None).await;
    // A batch of two, each with its own variables; Go sends `"subject": ""`, which is absent.
    let batch = api(
        addr,
        Method::POST,
        "/emails/batch",
        Some(json!([
            { "to": "cy@example.net", "subject": "", "template": { "id": id, "variables": { "NAME": "Cy" } } },
            { "to": "di@example.net", "template": { "id": "welcome", "variables": { "NAME": "Di" } } },
        ])),
    )
    .await;
    assert_eq!(batch.status, StatusCode::OK, "{}", batch.text());
    let received = sink.wait_for(4, WAIT).await;
    let bodies: Vec<String> = received
        .iter()
        .map(|r| {
            MessageParser::default()
                .parse(&r.data)
                .expect("MIME")
                .body_html(0)
                .expect("html")
                .into_owned()
        })
        .collect();
    assert!(
        bodies.iter().any(|b| b.contains("<p>New Cy</p>")) && bodies.iter().any(|b| b.contains("<p>New Di</p>")),
        "{bodies:?}"
    );
    let subjects: Vec<String> = received
        .iter()
        .map(|r| {
            MessageParser::default()
                .parse(&r.data)
                .expect("MIME")
                .subject()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert!(subjects.contains(&"Welcome, Cy!".to_owned()), "{subjects:?}");

    // Duplicate, list, delete.
    let copy = api(addr, Method::POST, "/templates/welcome/duplicate", None)
        .await
        .json();
    let copy_id = copy["id"].as_str().expect("copy id").to_owned();
    let copy = api(addr, Method::GET, &format!("/templates/{copy_id}"), None)
        .await
        .json();
    assert_eq!(
        (copy["name"].as_str(), copy["status"].as_str(), copy["alias"].as_str()),
        (Some("Welcome (copy)"), Some("draft"), None)
    );
    let listed = api(addr, Method::GET, "/templates", None).await.json();
    assert_eq!(listed["data"][0]["id"], copy_id.as_str());
    assert_eq!(listed["data"][1]["alias"], "welcome");
    let deleted = api(addr, Method::DELETE, "/templates/welcome", None).await;
    assert_eq!(
        deleted.json(),
        json!({ "object": "template", "id": id, "deleted": true })
    );
    refused(
        &api(addr, Method::GET, &format!("/templates/{id}"), None).await,
        StatusCode::NOT_FOUND,
        "Template not found",
    );
    assert!(running.shutdown().await);
}

#[tokio::test]
async fn bad_templates_and_sends_are_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(dir.path(), "[delivery]\nenabled = false\n").await;
    let addr = running.http_addr;
    util::verified_domain(addr, "shop.test").await;
    let create = |body: Value| async move { api(addr, Method::POST, "/templates", Some(body)).await };

    let unclosed = create(json!({ "name": "x", "html": "<p>\n  Hi {{{NAME</p>" })).await;
    refused(&unclosed, StatusCode::UNPROCESSABLE_ENTITY, "line 2, column 6");
    refused(
        &create(json!({ "name": "x" })).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "html",
    );
    let reserved =
        create(json!({ "name": "x", "html": "x", "variables": [{ "key": "EMAIL", "type": "string" }] })).await;
    refused(&reserved, StatusCode::UNPROCESSABLE_ENTITY, "reserved");
    let many: Vec<Value> = (0..51)
        .map(|n| json!({ "key": format!("V{n}"), "type": "string" }))
        .collect();
    refused(
        &create(json!({ "name": "x", "html": "x", "variables": many })).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "at most 50",
    );
    let fallback = create(
        json!({ "name": "x", "html": "x", "variables": [{ "key": "N", "type": "number", "fallback_value": "one" }] }),
    )
    .await;
    refused(&fallback, StatusCode::UNPROCESSABLE_ENTITY, "fallback_value");
    let alias = create(json!({ "name": "a", "alias": "receipt", "from": "shop@shop.test", "subject": "{{{TOPIC}}}", "html": "<p>{{{NAME}}} {{{N}}}</p>", "variables": [{ "key": "N", "type": "number" }] })).await;
    assert_eq!(alias.status, StatusCode::CREATED, "{}", alias.text());
    refused(
        &create(json!({ "name": "b", "alias": "RECEIPT", "html": "x" })).await,
        StatusCode::CONFLICT,
        "alias",
    );
    api(addr, Method::POST, "/templates/receipt/publish", None).await;
    let unsubscribe = create(json!({ "name": "u", "from": "shop@shop.test", "subject": "s", "html": "<a href=\"{{{UNSUBSCRIBE_URL}}}\">out</a>" })).await;
    let unsubscribe = unsubscribe.json()["id"].as_str().expect("id").to_owned();
    api(addr, Method::POST, &format!("/templates/{unsubscribe}/publish"), None).await;

    let send = |template: Value, extra: Value| async move {
        let mut body = json!({ "to": "ann@example.net", "template": template });
        if let (Value::Object(map), Value::Object(more)) = (&mut body, extra) {
            map.extend(more);
        }
        api(addr, Method::POST, "/emails", Some(body)).await
    };
    let ok_vars = json!({ "TOPIC": "Receipt", "NAME": "Ann", "N": 3 });
    let missing = send(
        json!({ "id": "receipt", "variables": { "TOPIC": "t", "N": 3 } }),
        json!({}),
    )
    .await;
    refused(
        &missing,
        StatusCode::UNPROCESSABLE_ENTITY,
        "Missing template variable `NAME`",
    );
    let typed = send(
        json!({ "id": "receipt", "variables": { "TOPIC": "t", "NAME": "n", "N": "three" } }),
        json!({}),
    )
    .await;
    refused(&typed, StatusCode::UNPROCESSABLE_ENTITY, "template.variables.N");
    let header = send(
        json!({ "id": "receipt", "variables": { "TOPIC": "a\r\nBcc: evil@example.net", "NAME": "n", "N": 1 } }),
        json!({}),
    )
    .await;
    refused(&header, StatusCode::UNPROCESSABLE_ENTITY, "subject");
    let with_html = send(
        json!({ "id": "receipt", "variables": ok_vars }),
        json!({ "html": "<p>mine</p>" }),
    )
    .await;
    refused(
        &with_html,
        StatusCode::UNPROCESSABLE_ENTITY,
        "cannot be sent with `template`",
    );
    let object = send(
        json!({ "id": "receipt", "variables": { "TOPIC": {}, "NAME": "n", "N": 1 } }),
        json!({}),
    )
    .await;
    refused(&object, StatusCode::UNPROCESSABLE_ENTITY, "a string or a number");
    refused(
        &send(json!({ "id": "nope", "variables": ok_vars }), json!({})).await,
        StatusCode::NOT_FOUND,
        "Template not found",
    );
    // The unsubscribe link is filled in at acceptance (tests/unsubscribe.rs follows it).
    let linked = send(json!({ "id": unsubscribe }), json!({})).await;
    assert_eq!(linked.status, StatusCode::OK, "{}", linked.text());
    let fine = send(
        json!({ "id": "receipt", "variables": ok_vars }),
        json!({ "subject": "Given" }),
    )
    .await;
    assert_eq!(fine.status, StatusCode::OK, "{}", fine.text());
    let record = api(
        addr,
        Method::GET,
        &format!("/emails/{}", fine.json()["id"].as_str().expect("id")),
        None,
    )
    .await
    .json();
    assert_eq!(
        (record["subject"].as_str(), record["html"].as_str()),
        (Some("Given"), Some("<p>Ann 3</p>"))
    );
    assert!(running.shutdown().await);
}

#[tokio::test]
async fn templates_refuse_what_escaping_cannot_keep_safe_and_renders_without_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(dir.path(), "[delivery]\nenabled = false\n").await;
    let addr = running.http_addr;
    util::verified_domain(addr, "shop.test").await;
    let create = |body: Value| async move { api(addr, Method::POST, "/templates", Some(body)).await };
    let unquoted = create(json!({ "name": "x", "html": "<a href={{{URL}}}>x</a>" })).await;
    refused(&unquoted, StatusCode::UNPROCESSABLE_ENTITY, "quoted attribute value");
    let nested = create(json!({ "name": "x", "html": "<p>{{{A|{{{B}}}}}}</p>" })).await;
    refused(
        &nested,
        StatusCode::UNPROCESSABLE_ENTITY,
        "a fallback cannot hold a variable",
    );
    let control = create(json!({ "name": "x", "html": "x", "from": "{{{N}}}\u{7}@shop.test" })).await;
    refused(&control, StatusCode::UNPROCESSABLE_ENTITY, "control characters");
    // A small template that renders huge is refused at the send, not allocated.
    let huge = create(json!({
        "name": "huge",
        "alias": "huge",
        "from": "a@shop.test",
        "subject": "s",
        "html": format!("<p>{}</p>", "{{{A}}}".repeat(1_000)),
    }))
    .await;
    assert_eq!(huge.status, StatusCode::CREATED, "{}", huge.text());
    api(addr, Method::POST, "/templates/huge/publish", None).await;
    let value = "\"".repeat(9_000);
    let sent = api(
        addr,
        Method::POST,
        "/emails",
        Some(json!({ "to": "ann@example.net", "template": { "id": "huge", "variables": { "A": value } } })),
    )
    .await;
    refused(&sent, StatusCode::UNPROCESSABLE_ENTITY, "longer than");
    assert!(running.shutdown().await);
}
