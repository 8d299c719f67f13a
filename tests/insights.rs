//! `GET /emails/{id}/insights` over real sockets, with a real DNS server on loopback: a
//! deliberately flawed email fails the checks it should, each with its fix, and a sound
//! one passes them; the dashboard shows the same checks on the email's page.

mod util;

use std::net::Ipv4Addr;

use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use util::dns::TestDns;
use util::{OPERATOR_KEY, call};

fn status_of<'a>(report: &'a Value, id: &str) -> &'a str {
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id} in {report}"))["status"]
        .as_str()
        .expect("status")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flawed_email_fails_the_checks_a_sound_one_passes() {
    let dns = TestDns::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = format!("[delivery]\nenabled = false\nnameservers = [\"{}\"]\n", dns.addr());
    let running = util::start_api(dir.path(), &extra).await;
    let addr = running.http_addr;
    // The sound domain publishes its records and a DMARC policy; the flawed one nothing.
    let good = call(
        addr,
        Method::POST,
        "/domains",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "mail.good.test" })),
    )
    .await
    .json();
    dns.publish_domain(&good);
    dns.set_txt("_dmarc.good.test", &["v=DMARC1; p=reject; rua=mailto:d@good.test"]);
    dns.set_a("herald.test", &[Ipv4Addr::new(127, 0, 0, 1)]);
    let good_id = good["id"].as_str().expect("id").to_owned();
    let verified = call(
        addr,
        Method::POST,
        &format!("/domains/{good_id}/verify"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(verified.status, StatusCode::OK, "{}", verified.text());
    util::eventually(std::time::Duration::from_secs(30), "the domain verified", || async {
        let domain = call(
            addr,
            Method::GET,
            &format!("/domains/{good_id}"),
            Some(OPERATOR_KEY),
            None,
        )
        .await;
        (domain.json()["status"] == "verified").then_some(())
    })
    .await;
    util::verified_domain(addr, "flawed.test").await;

    let flawed = call(
        addr,
        Method::POST,
        "/emails",
        Some(OPERATOR_KEY),
        Some(json!({
            "from": "Shop <no-reply@flawed.test>", "to": "reader@example.net", "subject": "Deal",
            "html": "<a href=\"https://bit.ly/x\">https://flawed.test/deal</a><img src=\"https://cdn.example/banner.png\">",
        })),
    )
    .await
    .json();
    let id = flawed["id"].as_str().expect("id");
    let report = call(
        addr,
        Method::GET,
        &format!("/emails/{id}/insights"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(report.status, StatusCode::OK, "{}", report.text());
    let report = report.json();
    assert_eq!(report["object"], "insights");
    for (check, want) in [
        ("no_reply", "fail"),
        ("short_links", "fail"),
        ("misleading_links", "fail"),
        ("image_only", "fail"),
        ("dmarc_record", "fail"),
        ("link_domains", "warn"),
        ("subdomain", "warn"),
        ("text_part", "warn"),
        ("size", "pass"),
        ("spf_alignment", "fail"),
        ("dkim_alignment", "fail"),
        ("tls_certificate", "warn"),
        ("list_unsubscribe", "skip"),
    ] {
        assert_eq!(status_of(&report, check), want, "{check}: {report}");
    }
    let dmarc = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["id"] == "dmarc_record")
        .expect("dmarc");
    assert!(
        dmarc["fix"].as_str().expect("a fix").contains("_dmarc.flawed.test"),
        "{dmarc}"
    );

    let sound = call(
        addr,
        Method::POST,
        "/emails",
        Some(OPERATOR_KEY),
        Some(json!({
            "from": "Good <hello@mail.good.test>", "to": "reader@example.net", "subject": "Your receipt",
            "html": "<p>Thanks for your order of three notebooks and a pen; it ships on Monday from our shop in Lyon.</p><a href=\"https://good.test/orders/1\">See your order</a>",
            "text": "Thanks for your order of three notebooks and a pen; it ships on Monday from our shop in Lyon. See your order: https://good.test/orders/1",
        })),
    )
    .await
    .json();
    let id = sound["id"].as_str().expect("id");
    let report = call(
        addr,
        Method::GET,
        &format!("/emails/{id}/insights"),
        Some(OPERATOR_KEY),
        None,
    )
    .await
    .json();
    for check in [
        "no_reply",
        "short_links",
        "misleading_links",
        "image_only",
        "dmarc_record",
        "link_domains",
        "subdomain",
        "text_part",
        "html_text_match",
        "spf_alignment",
        "dkim_alignment",
    ] {
        assert_eq!(status_of(&report, check), "pass", "{check}: {report}");
    }
    // herald.test points at 127.0.0.1, whose PTR the test server does not have.
    assert_eq!(status_of(&report, "ptr"), "fail", "{report}");

    let missing = call(
        addr,
        Method::GET,
        "/emails/01a2182c-be01-74f0-b22f-5ee4296548ea/insights",
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert!(running.shutdown().await);
}
