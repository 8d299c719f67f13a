//! One-click unsubscribe over real sockets: mail sent on a topic (or whose body asks for
//! `{{{RESEND_UNSUBSCRIBE_URL}}}`) reaches a real SMTP sink with DKIM-signed
//! `List-Unsubscribe` headers; herald's HTTPS listener (`[http] tls_listen`, with a
//! certificate chosen by SNI) shows the page on `GET` without changing anything, and a
//! `POST` unsubscribes, with the contact events at a webhook receiver. Forged links are
//! 404s.

mod util;

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use hyper::{Method, StatusCode};
use mail_parser::MessageParser;
use serde_json::{Value, json};
use util::sink::{Sink, SinkOptions};
use util::webhook_receiver::Receiver;
use util::{HttpResponse, OPERATOR_KEY, call, https_call};

const WAIT: Duration = Duration::from_secs(30);

/// The public host of the test's unsubscribe pages, with its own certificate.
const PUBLIC_HOST: &str = "mail.shop.test";

async fn api(addr: SocketAddr, method: Method, path: &str, body: Option<Value>) -> HttpResponse {
    call(addr, method, path, Some(OPERATOR_KEY), body).await
}

/// A certificate and key for `host`, written under `dir`; the certificate's DER.
fn certificate(dir: &std::path::Path, host: &str) -> (std::path::PathBuf, std::path::PathBuf, Vec<u8>) {
    let issued = rcgen::generate_simple_self_signed(vec![host.to_owned()]).expect("certificate");
    let (cert, key) = (dir.join(format!("{host}.pem")), dir.join(format!("{host}.key")));
    std::fs::write(&cert, issued.cert.pem()).expect("write cert");
    std::fs::write(&key, issued.signing_key.serialize_pem()).expect("write key");
    (cert, key, issued.cert.der().to_vec())
}

/// The `List-Unsubscribe` URL of a delivered message, and the message's headers.
/// RFC 8058's one-click `POST` to `path`, over HTTPS to the public host.
async fn one_click(https: SocketAddr, path: &str) -> (HttpResponse, Vec<u8>) {
    https_call(
        https,
        PUBLIC_HOST,
        Method::POST,
        path,
        &[("content-type", "application/x-www-form-urlencoded")],
        Bytes::from_static(b"List-Unsubscribe=One-Click"),
    )
    .await
}

fn unsubscribe_link(data: &[u8]) -> (String, String) {
    let message = MessageParser::default().parse(data).expect("MIME");
    let header = message
        .header_raw("List-Unsubscribe")
        .expect("a List-Unsubscribe header")
        .trim()
        .to_owned();
    let link = header.trim_start_matches('<').trim_end_matches('>').to_owned();
    let head = String::from_utf8_lossy(&data[..message.root_part().offset_body as usize]).into_owned();
    (link, head)
}

async fn topics_of(addr: SocketAddr, contact: &str) -> Vec<(String, String)> {
    let choices = api(addr, Method::GET, &format!("/contacts/{contact}/topics"), None)
        .await
        .json();
    choices["data"]
        .as_array()
        .expect("list")
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap_or_default().to_owned(),
                t["subscription"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_never_unsubscribes_and_post_does_over_https() {
    let sink = Sink::start(SinkOptions::default());
    let receiver = Receiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (cert, key, der) = certificate(dir.path(), PUBLIC_HOST);
    let (default_cert, default_key, _) = certificate(dir.path(), "herald.test");
    let extra = format!(
        "[delivery]\nenabled = true\nrelay = \"{}\"\nretry_intervals = [\"1s\"]\n[tls]\ncert = \"{}\"\nkey = \"{}\"\nsni = [{{ cert = \"{}\", key = \"{}\" }}]\n",
        sink.addr(),
        default_cert.display(),
        default_key.display(),
        cert.display(),
        key.display()
    );
    let mut config = util::config(dir.path(), &format!("[api]\nrate_limit = \"1000/s\"\n{extra}"));
    config.http.tls_listen = Some("127.0.0.1:0".parse().expect("addr"));
    config.http.public_url = format!("https://{PUBLIC_HOST}");
    let running = util::start_with_key(config, Some(OPERATOR_KEY)).await;
    let (addr, https) = (running.http_addr, running.https_addr.expect("an HTTPS listener"));
    util::verified_domain(addr, "shop.test").await;
    let hook = json!({
        "endpoint": format!("http://{}/hook", receiver.addr()),
        "events": ["contact.created", "contact.updated", "contact.topics.updated"],
    });
    assert_eq!(
        api(addr, Method::POST, "/webhooks", Some(hook)).await.status,
        StatusCode::CREATED
    );
    let topic = api(
        addr,
        Method::POST,
        "/topics",
        Some(json!({ "name": "Product updates", "default_subscription": "opt_in", "visibility": "public" })),
    )
    .await
    .json()["id"]
        .as_str()
        .expect("topic id")
        .to_owned();
    let created = api(
        addr,
        Method::POST,
        "/contacts",
        Some(json!({ "email": "ann@example.net", "first_name": "Ann" })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());

    // A send on the topic carries the link in its signed headers.
    let on_topic = json!({
        "from": "news@shop.test", "to": "ann@example.net", "subject": "News",
        "html": "<p>News</p>", "topic_id": topic,
    });
    let sent = api(addr, Method::POST, "/emails", Some(on_topic.clone())).await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    let email_id = sent.json()["id"].as_str().expect("id").to_owned();
    let record = api(addr, Method::GET, &format!("/emails/{email_id}"), None)
        .await
        .json();
    assert_eq!(record["topic_id"], topic.as_str());
    let received = sink.wait_for(1, WAIT).await;
    let (link, head) = unsubscribe_link(&received[0].data);
    assert!(link.starts_with("https://mail.shop.test/unsubscribe/"), "{link}");
    assert!(
        head.contains("List-Unsubscribe-Post: List-Unsubscribe=One-Click"),
        "{head}"
    );
    let signed = head
        .split("DKIM-Signature:")
        .nth(1)
        .expect("a DKIM signature")
        .to_ascii_lowercase();
    assert!(
        signed.contains("list-unsubscribe") && signed.contains("list-unsubscribe-post"),
        "both headers are signed: {signed}"
    );
    let path = link.trim_start_matches("https://mail.shop.test");

    // GET (and HEAD) show the page over TLS with the host's own certificate, and change nothing.
    let (page, offered) = https_call(https, PUBLIC_HOST, Method::GET, path, &[], Bytes::new()).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text());
    assert_eq!(offered, der, "the certificate chosen by SNI");
    let text = page.text();
    assert!(
        text.contains("ann@example.net") && text.contains("Product updates"),
        "{text}"
    );
    assert!(text.contains("method=\"post\""), "a form that POSTs: {text}");
    let csp = page.headers["content-security-policy"].to_str().expect("csp");
    assert!(
        csp.contains("default-src 'none'") && !csp.contains("script-src"),
        "{csp}"
    );
    let (head_only, _) = https_call(https, PUBLIC_HOST, Method::HEAD, path, &[], Bytes::new()).await;
    assert_eq!(head_only.status, StatusCode::OK);
    assert_eq!(
        topics_of(addr, "ann@example.net").await,
        vec![("Product updates".to_owned(), "opt_in".to_owned())],
        "a GET changes nothing"
    );

    // Forged and altered links are 404s, changing nothing.
    let forged = format!("{path}x");
    let (refused, _) = one_click(https, &forged).await;
    assert_eq!(refused.status, StatusCode::NOT_FOUND);

    // RFC 8058's one-click POST: 200, empty, and out of the topic at once.
    let (clicked, _) = one_click(https, path).await;
    assert_eq!(clicked.status, StatusCode::OK, "{}", clicked.text());
    assert!(clicked.body.is_empty());
    assert_eq!(
        topics_of(addr, "ann@example.net").await,
        vec![("Product updates".to_owned(), "opt_out".to_owned())]
    );
    let ann = api(addr, Method::GET, "/contacts/ann@example.net", None).await.json();
    assert_eq!(ann["unsubscribed"], false, "out of the topic only");
    let counted = api(addr, Method::GET, "/emails/metrics?metrics=unsubscribed", None).await;
    assert_eq!(counted.json()["totals"]["unsubscribed"], 1, "{}", counted.text());
    // The count goes in the contact's own write: a second click (a mail client retrying,
    // a scanner) changes nothing, and counts nothing.
    let (again, _) = one_click(https, path).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.text());
    let counted = api(addr, Method::GET, "/emails/metrics?metrics=unsubscribed", None).await;
    assert_eq!(counted.json()["totals"]["unsubscribed"], 1, "{}", counted.text());
    let arrived = receiver
        .wait_for(WAIT, |r| {
            let kinds: Vec<Value> = r.all().iter().map(|e| e.payload()["type"].clone()).collect();
            kinds.contains(&json!("contact.topics.updated")) && kinds.contains(&json!("contact.updated"))
        })
        .await;
    assert!(arrived, "contact.topics.updated and contact.updated arrived");

    // Sends on the topic now skip her.
    let skipped = api(addr, Method::POST, "/emails", Some(on_topic)).await;
    assert_eq!(skipped.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", skipped.text());
    assert!(skipped.text().contains("opted out"), "{}", skipped.text());

    // A body's merge tag gets the link; an address that is no contact becomes one,
    // unsubscribed, through a multipart one-click POST.
    let tagged = json!({
        "from": "news@shop.test", "to": "bob@example.net", "subject": "Hi",
        "html": "<p><a href=\"{{{RESEND_UNSUBSCRIBE_URL}}}\">Unsubscribe</a></p>",
    });
    assert_eq!(
        api(addr, Method::POST, "/emails", Some(tagged)).await.status,
        StatusCode::OK
    );
    let received = sink.wait_for(2, WAIT).await;
    let (link, _) = unsubscribe_link(&received[1].data);
    let html = MessageParser::default()
        .parse(&received[1].data)
        .expect("MIME")
        .body_html(0)
        .expect("html")
        .into_owned();
    assert!(html.contains(&format!("href=\"{link}\"")), "{html}");
    let path = link.trim_start_matches("https://mail.shop.test");
    let multipart = "--b\r\nContent-Disposition: form-data; name=\"List-Unsubscribe\"\r\n\r\nOne-Click\r\n--b--\r\n";
    let (clicked, _) = https_call(
        https,
        PUBLIC_HOST,
        Method::POST,
        path,
        &[("content-type", "multipart/form-data; boundary=b")],
        Bytes::from(multipart),
    )
    .await;
    assert_eq!(clicked.status, StatusCode::OK);
    let bob = api(addr, Method::GET, "/contacts/bob@example.net", None).await.json();
    assert_eq!(bob["unsubscribed"], true, "{bob}");

    // The page's preferences form brings him back, on the topic.
    let body = format!("action=preferences&topic={topic}&all=on");
    let (saved, _) = https_call(
        https,
        PUBLIC_HOST,
        Method::POST,
        path,
        &[("content-type", "application/x-www-form-urlencoded")],
        Bytes::from(body),
    )
    .await;
    assert_eq!(saved.status, StatusCode::OK);
    assert!(saved.text().contains("Preferences saved"), "{}", saved.text());
    let bob = api(addr, Method::GET, "/contacts/bob@example.net", None).await.json();
    assert_eq!(bob["unsubscribed"], false);
    assert_eq!(
        topics_of(addr, "bob@example.net").await,
        vec![("Product updates".to_owned(), "opt_in".to_owned())]
    );

    // One link may POST ten times a minute (two so far): the eleventh is a 429 that says
    // when to come back, and changes nothing. Another link is counted apart.
    for _ in 0..8 {
        let (again, _) = one_click(https, path).await;
        assert_eq!(again.status, StatusCode::OK);
    }
    let (limited, _) = one_click(https, path).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS, "{}", limited.text());
    assert!(limited.headers.contains_key("retry-after"));
    let (shown, _) = https_call(https, PUBLIC_HOST, Method::GET, path, &[], Bytes::new()).await;
    assert_eq!(shown.status, StatusCode::OK, "a GET is not counted");
    assert!(running.shutdown().await);
}

#[tokio::test]
async fn an_http_public_url_sends_no_one_click_header() {
    let sink = Sink::start(SinkOptions::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = format!(
        "[delivery]\nenabled = true\nrelay = \"{}\"\nretry_intervals = [\"1s\"]\n",
        sink.addr()
    );
    let running = util::start_api(dir.path(), &extra).await;
    let addr = running.http_addr;
    util::verified_domain(addr, "shop.test").await;
    let topic = api(
        addr,
        Method::POST,
        "/topics",
        Some(json!({ "name": "News", "default_subscription": "opt_in" })),
    )
    .await
    .json()["id"]
        .as_str()
        .expect("topic id")
        .to_owned();
    // An opt-in topic reaches an address that is no contact yet.
    let sent = api(
        addr,
        Method::POST,
        "/emails",
        Some(json!({ "from": "a@shop.test", "to": "c@example.net", "subject": "s", "text": "t", "topic_id": topic })),
    )
    .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    let received = sink.wait_for(1, WAIT).await;
    let (link, head) = unsubscribe_link(&received[0].data);
    assert!(link.starts_with(&format!("http://{addr}/unsubscribe/")), "{link}");
    assert!(!head.contains("\nList-Unsubscribe-Post:"), "{head}");
    // The plain listener serves the page too.
    let page = util::call_with_headers(
        addr,
        Method::GET,
        link.trim_start_matches(&format!("http://{addr}")),
        None,
        &[],
        Bytes::new(),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK);
    let unknown = api(
        addr,
        Method::POST,
        "/emails",
        Some(json!({ "from": "a@shop.test", "to": "c@example.net", "subject": "s", "text": "t", "topic_id": "00000000-0000-7000-8000-000000000000" })),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", unknown.text());
    // The link is personal: a message for two recipients cannot carry one.
    let shared = api(
        addr,
        Method::POST,
        "/emails",
        Some(json!({ "from": "a@shop.test", "to": ["c@example.net", "d@example.net"], "subject": "s", "html": "<a href=\"{{{RESEND_UNSUBSCRIBE_URL}}}\">out</a>" })),
    )
    .await;
    assert_eq!(shared.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", shared.text());
    assert!(shared.text().contains("one recipient"), "{}", shared.text());
    let on_topic = api(
        addr,
        Method::POST,
        "/emails",
        Some(json!({ "from": "a@shop.test", "to": ["c@example.net", "d@example.net"], "subject": "two", "text": "t", "topic_id": topic })),
    )
    .await;
    assert_eq!(on_topic.status, StatusCode::OK, "{}", on_topic.text());
    let received = sink.wait_for(2, WAIT).await;
    let head = String::from_utf8_lossy(&received[1].data).into_owned();
    assert!(
        !head.contains("\nList-Unsubscribe:"),
        "no one's link on a shared message: {head}"
    );
    assert!(running.shutdown().await);
}
