//! Open and click tracking over real sockets: a domain whose tracking CNAME is verified
//! through a real DNS server on loopback sends into a real SMTP sink with its links and
//! pixel rewritten; herald's HTTP listener, asked with the tracking host in `Host`,
//! redirects clicks and serves the pixel, and a webhook receiver gets `email.clicked` and
//! `email.opened`. Forged URLs and other hosts get a 404.

mod util;

use std::net::SocketAddr;
use std::time::Duration;

use hyper::{Method, StatusCode};
use mail_parser::MessageParser;
use serde_json::{Value, json};
use util::dns::TestDns;
use util::sink::{Sink, SinkOptions};
use util::webhook_receiver::Receiver;
use util::{HttpResponse, OPERATOR_KEY, call, call_with_headers};

const WAIT: Duration = Duration::from_secs(30);

async fn api(addr: SocketAddr, method: Method, path: &str, body: Option<Value>) -> HttpResponse {
    call(addr, method, path, Some(OPERATOR_KEY), body).await
}

async fn visit(addr: SocketAddr, host: &str, url: &str, agent: &str) -> HttpResponse {
    let path = url.split_once(host).map_or(url, |(_, path)| path);
    call_with_headers(
        addr,
        Method::GET,
        path,
        None,
        &[("host", host), ("user-agent", agent)],
        bytes::Bytes::new(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tracked_links_redirect_and_pixels_count_with_their_events() {
    let dns = TestDns::start().await;
    let sink = Sink::start(SinkOptions::default());
    let receiver = Receiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = format!(
        "[delivery]\nenabled = true\nrelay = \"{}\"\nnameservers = [\"{}\"]\nretry_intervals = [\"1s\"]\n[domains]\nretry_intervals = [\"1s\"]\n[tracking]\nscheme = \"http\"\ncname_target = \"track.herald.test\"\n",
        sink.addr(),
        dns.addr()
    );
    let running = util::start_api(dir.path(), &extra).await;
    let addr = running.http_addr;
    let hook =
        json!({ "endpoint": format!("http://{}/hook", receiver.addr()), "events": ["email.opened", "email.clicked"] });
    assert_eq!(
        api(addr, Method::POST, "/webhooks", Some(hook)).await.status,
        StatusCode::CREATED
    );

    // The Tracking record is published and verified like the others.
    let domain = api(
        addr,
        Method::POST,
        "/domains",
        Some(json!({ "name": "shop.test", "open_tracking": true, "click_tracking": true, "tracking_subdomain": "links" })),
    )
    .await
    .json();
    let tracking = util::dns::domain_record(&domain, "Tracking", "CNAME").clone();
    assert_eq!(
        (
            tracking["name"].as_str(),
            tracking["value"].as_str(),
            tracking["ttl"].as_str()
        ),
        (Some("links"), Some("track.herald.test"), Some("Auto"))
    );
    dns.publish_domain(&domain);
    dns.set_cname("links.shop.test", "track.herald.test");
    let id = domain["id"].as_str().expect("id").to_owned();
    assert_eq!(
        api(addr, Method::POST, &format!("/domains/{id}/verify"), None)
            .await
            .status,
        StatusCode::OK
    );
    util::eventually(WAIT, "the domain and its tracking record to verify", || async {
        let got = api(addr, Method::GET, &format!("/domains/{id}"), None).await.json();
        let tracking = util::dns::domain_record(&got, "Tracking", "CNAME").clone();
        (got["status"] == "verified" && tracking["status"] == "verified").then_some(())
    })
    .await;

    let html = "<html><body><p>Hi</p><a href=\"https://example.com/offer?a=1&amp;b=2\">Offer</a> <a href=\"mailto:help@shop.test\">Help</a> <a href=\"{{{RESEND_UNSUBSCRIBE_URL}}}\">Unsubscribe</a></body></html>";
    let sent = api(
        addr,
        Method::POST,
        "/emails",
        Some(json!({ "from": "news@shop.test", "to": "ann@example.net", "subject": "Hi", "html": html })),
    )
    .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    let email_id = sent.json()["id"].as_str().expect("id").to_owned();
    let received = sink.wait_for(1, WAIT).await;
    let message = MessageParser::default().parse(&received[0].data).expect("MIME");
    let delivered = message.body_html(0).expect("html").into_owned();
    assert!(delivered.contains("mailto:help@shop.test"), "mailto stays: {delivered}");
    assert!(
        delivered.contains(&format!("href=\"http://{addr}/unsubscribe/")),
        "the unsubscribe link is never tracked: {delivered}"
    );
    assert!(
        !delivered.contains("href=\"https://example.com"),
        "the link is tracked: {delivered}"
    );
    let link = delivered
        .split("href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a link")
        .to_owned();
    assert!(link.starts_with("http://links.shop.test/t/c/"), "{link}");
    let pixel = delivered
        .split("<img src=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a pixel")
        .to_owned();
    assert!(pixel.starts_with("http://links.shop.test/t/o/"), "{pixel}");
    let record = api(addr, Method::GET, &format!("/emails/{email_id}"), None)
        .await
        .json();
    assert_eq!(record["html"], html, "the record keeps the email as given");

    // Other hosts and altered URLs are not answered: never an open redirect.
    assert_eq!(
        visit(addr, &addr.to_string(), &link, "Mozilla/5.0 (X11)").await.status,
        StatusCode::NOT_FOUND
    );
    let forged = format!("{link}x");
    assert_eq!(
        visit(addr, "links.shop.test", &forged, "Mozilla/5.0 (X11)")
            .await
            .status,
        StatusCode::NOT_FOUND
    );

    // A person's click redirects to the link (the HTML's `&amp;` is the URL's `&`).
    let agent = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15";
    let clicked = visit(addr, "links.shop.test", &link, agent).await;
    assert_eq!(clicked.status, StatusCode::FOUND, "{}", clicked.text());
    assert_eq!(clicked.headers["location"], "https://example.com/offer?a=1&b=2");
    assert_eq!(clicked.headers["cache-control"], "no-store");
    let opened = visit(addr, "links.shop.test:80", &pixel, agent).await;
    assert_eq!(opened.status, StatusCode::OK);
    assert_eq!(opened.headers["content-type"], "image/gif");
    assert!(opened.body.starts_with(b"GIF89a"));

    let arrived = receiver
        .wait_for(WAIT, |r| {
            let kinds: Vec<Value> = r.all().iter().map(|e| e.payload()["type"].clone()).collect();
            kinds.contains(&json!("email.clicked")) && kinds.contains(&json!("email.opened"))
        })
        .await;
    assert!(arrived, "both events arrived");
    let click = receiver
        .all()
        .into_iter()
        .map(|e| e.payload())
        .find(|p| p["type"] == "email.clicked")
        .expect("clicked");
    assert_eq!(click["data"]["email_id"], email_id.as_str());
    assert_eq!(click["data"]["click"]["link"], "https://example.com/offer?a=1&b=2");
    assert_eq!(click["data"]["click"]["userAgent"], agent);
    assert_eq!(click["data"]["click"]["ipAddress"], "127.0.0.1");
    let record = api(addr, Method::GET, &format!("/emails/{email_id}"), None)
        .await
        .json();
    assert!(
        ["opened", "clicked"].contains(&record["last_event"].as_str().unwrap_or("")),
        "{record}"
    );
    assert!(running.shutdown().await);
}

#[tokio::test]
async fn without_a_verified_tracking_record_nothing_is_rewritten() {
    let sink = Sink::start(SinkOptions::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = format!(
        "[delivery]\nenabled = true\nrelay = \"{}\"\nretry_intervals = [\"1s\"]\n",
        sink.addr()
    );
    let running = util::start_api(dir.path(), &extra).await;
    let addr = running.http_addr;
    // Verified without DNS, but no tracking subdomain: the flags alone track nothing.
    let domain = api(
        addr,
        Method::POST,
        "/domains",
        Some(json!({ "name": "plain.test", "open_tracking": true, "click_tracking": true })),
    )
    .await
    .json();
    let id = domain["id"].as_str().expect("id");
    api(
        addr,
        Method::POST,
        &format!("/domains/{id}/verify"),
        Some(json!({ "skip_dns": true })),
    )
    .await;
    let html = "<p><a href=\"https://example.com/x\">x</a></p>";
    let sent = api(
        addr,
        Method::POST,
        "/emails",
        Some(json!({ "from": "a@plain.test", "to": "b@example.net", "subject": "s", "html": html })),
    )
    .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    let received = sink.wait_for(1, WAIT).await;
    let message = MessageParser::default().parse(&received[0].data).expect("MIME");
    let delivered = message.body_html(0).expect("html").into_owned();
    assert!(
        delivered.contains("href=\"https://example.com/x\"") && !delivered.contains("<img"),
        "{delivered}"
    );
    assert!(running.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_submitted_over_smtp_is_tracked_too() {
    let sink = Sink::start(SinkOptions::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = format!(
        "[delivery]\nenabled = true\nrelay = \"{}\"\nretry_intervals = [\"1s\"]\n[tracking]\nscheme = \"http\"\n",
        sink.addr()
    );
    let running = util::start_api(dir.path(), &extra).await;
    let addr = running.http_addr;
    let domain = api(
        addr,
        Method::POST,
        "/domains",
        Some(json!({ "name": "shop.test", "open_tracking": true, "click_tracking": true, "tracking_subdomain": "links" })),
    )
    .await
    .json();
    let id = domain["id"].as_str().expect("id");
    // The operator vouches for the domain's DNS, its tracking host included.
    api(
        addr,
        Method::POST,
        &format!("/domains/{id}/verify"),
        Some(json!({ "skip_dns": true })),
    )
    .await;
    let script = format!(
        "EHLO client\r\nAUTH PLAIN {}\r\nMAIL FROM:<app@shop.test>\r\nRCPT TO:<user@example.net>\r\nDATA\r\nFrom: App <app@shop.test>\r\nTo: user@example.net\r\nSubject: over smtp\r\nMIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n<html><body><a href=3D\"https://example.com/deal?x=3D1\">Deal</a></body></html>\r\n.\r\nQUIT\r\n",
        util::auth_plain(OPERATOR_KEY)
    );
    let transcript = util::smtps_transcript(running.smtp[1].1, &script).await;
    assert!(transcript.contains("250 2.0.0 OK"), "{transcript}");
    let received = sink.wait_for(1, WAIT).await;
    let message = MessageParser::default().parse(&received[0].data).expect("MIME");
    assert_eq!(message.subject(), Some("over smtp"));
    let html = message.body_html(0).expect("html").into_owned();
    let link = html
        .split("href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a link")
        .to_owned();
    assert!(link.starts_with("http://links.shop.test/t/c/"), "{html}");
    assert!(html.contains("<img src=\"http://links.shop.test/t/o/"), "{html}");
    let clicked = visit(addr, "links.shop.test", &link, "Mozilla/5.0 (X11; Linux) Firefox/130.0").await;
    assert_eq!(clicked.status, StatusCode::FOUND, "{}", clicked.text());
    assert_eq!(clicked.headers["location"], "https://example.com/deal?x=1");
    // The record shows the bodies the client wrote, not the rewritten ones sent.
    let email_id = util::accepted_id(&transcript);
    let email = api(addr, Method::GET, &format!("/emails/{email_id}"), None)
        .await
        .json();
    assert_eq!(
        email["html"], "<html><body><a href=\"https://example.com/deal?x=1\">Deal</a></body></html>\r\n",
        "{email}"
    );
    assert!(running.shutdown().await);
}
