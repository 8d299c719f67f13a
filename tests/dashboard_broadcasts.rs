//! The Broadcasts pages over real HTTP, delivering into a real SMTP sink: a draft with
//! merge tags, the review's count of who would receive it (unsubscribed and suppressed
//! contacts left out), a test send that arrives as "[Test]" with its insights, sending to
//! the segment, and the outcome cards once delivered; members cannot send.

mod util;

use std::time::Duration;

use hyper::{Method, StatusCode};
use serde_json::json;
use util::cookies::{Browser, add_users, csrf};
use util::sink::{Sink, SinkOptions};
use util::{OPERATOR_KEY, call};

const PASSWORD: &str = "correct horse battery staple";

async fn signed_in(addr: std::net::SocketAddr, email: &str) -> Browser {
    util::cookies::signed_in(addr, email, PASSWORD).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broadcast_is_written_reviewed_tested_and_sent_from_the_page() {
    let sink = Sink::start(SinkOptions::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = util::relay_to(sink.addr());
    let running = util::start_api(dir.path(), &extra).await;
    let addr = running.http_addr;
    util::verified_domain(addr, "shop.test").await;
    add_users(
        addr,
        &[("ann@example.com", "admin"), ("mia@example.com", "member")],
        PASSWORD,
    )
    .await;
    let segment = call(
        addr,
        Method::POST,
        "/segments",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "Readers" })),
    )
    .await
    .json()["id"]
        .as_str()
        .expect("segment")
        .to_owned();
    for (email, unsubscribed) in [
        ("amy@example.net", false),
        ("ben@example.net", false),
        ("cat@example.net", true),
        ("dan@example.net", false),
    ] {
        let made = call(
            addr,
            Method::POST,
            "/contacts",
            Some(OPERATOR_KEY),
            Some(json!({ "email": email, "first_name": "Friend", "unsubscribed": unsubscribed, "segments": [{ "id": segment }] })),
        )
        .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    }
    call(
        addr,
        Method::POST,
        "/suppressions",
        Some(OPERATOR_KEY),
        Some(json!({ "email": "dan@example.net" })),
    )
    .await;

    let mut ann = signed_in(addr, "ann@example.com").await;
    let list = ann.get(addr, "/dashboard/broadcasts").await;
    assert!(list.text().contains("Readers"), "segments to choose");
    let token = csrf(&list);
    let created = ann
        .post(
            addr,
            "/dashboard/broadcasts",
            &[
                ("csrf", &token),
                ("name", "November news"),
                ("from", "Shop <news@shop.test>"),
                ("subject", "What is new"),
                ("segment_id", &segment),
                ("topic_id", ""),
                (
                    "html",
                    "<p>Hello {{{FIRST_NAME|there}}}, here is what is new at the shop this month.</p><p><a href=\"{{{RESEND_UNSUBSCRIBE_URL}}}\">Unsubscribe</a></p>",
                ),
            ],
        )
        .await;
    assert_eq!(created.status, StatusCode::SEE_OTHER, "{}", created.text());
    let path = created.headers["location"].to_str().expect("location").to_owned();
    let review = ann.get(addr, &path).await.text();
    assert!(review.contains("id=\"recipients\">2<"), "two of four: {review}");
    assert!(
        review.contains("data-insert-into=\"#broadcast-html\""),
        "a merge-tag menu"
    );
    assert!(review.contains("<option value=\"FIRST_NAME\">"));
    assert!(
        review.contains(&format!("src=\"{path}/preview\"")),
        "a preview frame: {review}"
    );
    let preview = ann.get(addr, &format!("{path}/preview")).await.text();
    assert!(preview.contains("Hello there,"), "the preview's fallback: {preview}");
    let as_amy = ann.get(addr, &format!("{path}?preview=amy@example.net")).await.text();
    assert!(as_amy.contains("preview?preview=amy%40example.net"), "{as_amy}");
    let as_amy = ann
        .get(addr, &format!("{path}/preview?preview=amy@example.net"))
        .await
        .text();
    assert!(as_amy.contains("Hello Friend,"), "the preview as a contact: {as_amy}");

    let tested = ann
        .post(
            addr,
            &format!("{path}/test"),
            &[("csrf", &token), ("to", "tester@example.org")],
        )
        .await;
    assert_eq!(tested.status, StatusCode::OK, "{}", tested.text());
    assert!(
        tested.text().contains("/insights\" hx-trigger=\"load\""),
        "the test email's review"
    );
    let arrived = sink.wait_for(1, Duration::from_secs(30)).await;
    let message = String::from_utf8_lossy(&arrived[0].data).into_owned();
    assert!(message.contains("Subject: [Test] What is new"), "{message}");
    assert_eq!(arrived[0].rcpt_to, vec!["tester@example.org".to_owned()]);

    // A member reviews but cannot send.
    let mut mia = signed_in(addr, "mia@example.com").await;
    let seen = mia.get(addr, &path).await;
    assert!(!seen.text().contains("id=\"send-broadcast\""));
    let refused = mia.post(addr, &format!("{path}/send"), &[("csrf", &csrf(&seen))]).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);

    let sent = ann
        .post(addr, &format!("{path}/send"), &[("csrf", &token), ("scheduled_at", "")])
        .await;
    assert_eq!(sent.status, StatusCode::SEE_OTHER, "{}", sent.text());
    let delivered = sink.wait_for(3, Duration::from_secs(30)).await;
    let mut to: Vec<String> = delivered[1..].iter().flat_map(|r| r.rcpt_to.clone()).collect();
    to.sort();
    assert_eq!(to, vec!["amy@example.net".to_owned(), "ben@example.net".to_owned()]);
    let page = util::eventually(Duration::from_secs(30), "the outcome", || {
        let mut browser = Browser {
            cookies: ann.cookies.clone(),
        };
        let path = path.clone();
        async move {
            let page = browser.get(addr, &path).await.text();
            (page.contains("id=\"broadcast-status\">sent")
                && page.contains("Delivered</span><span class=\"figure-value\">2"))
            .then_some(page)
        }
    })
    .await;
    assert!(page.contains("id=\"sent-count\">2<"), "{page}");
    assert!(running.shutdown().await);
}
