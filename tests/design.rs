//! The no-code editor's server side over real HTTP, delivering into a real SMTP sink: a
//! broadcast's design saved as MJML is compiled and sanitised by herald, refused with the
//! fault's line and column when it does not compile, refused without its unsubscribe
//! link, kept when the page's form is saved unchanged and dropped when the HTML is edited
//! by hand; the editor page alone relaxes the style policy; the design sends personalised
//! to the segment. A template's designs are published as versions, the earlier ones kept
//! and restored.

mod util;

use std::time::Duration;

use hyper::{Method, StatusCode};
use serde_json::json;
use util::cookies::{Browser, add_users, csrf};
use util::sink::{Sink, SinkOptions};
use util::{OPERATOR_KEY, call};

const PASSWORD: &str = "correct horse battery staple";

fn design(body: &str) -> String {
    format!(
        "<mjml>\n  <mj-body>\n    <mj-section>\n      <mj-column>\n{body}\n      </mj-column>\n    </mj-section>\n  </mj-body>\n</mjml>"
    )
}

const FOOTER: &str = "<mj-text><a href=\"{{{RESEND_UNSUBSCRIBE_URL}}}\">Unsubscribe</a></mj-text>";

async fn signed_in(addr: std::net::SocketAddr, email: &str) -> Browser {
    util::cookies::signed_in(addr, email, PASSWORD).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broadcast_designed_in_the_editor_is_compiled_checked_and_sent() {
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
    let segment = util::cookies::segment_with(
        addr,
        "Readers",
        &[("amy@example.net", "Amy"), ("ben@example.net", "Ben")],
    )
    .await;
    let created = call(
        addr,
        Method::POST,
        "/broadcasts",
        Some(OPERATOR_KEY),
        Some(json!({ "segment_id": segment, "from": "Shop <news@shop.test>", "subject": "Winter", "html": "<p>draft</p>" })),
    )
    .await;
    let id = created.json()["id"].as_str().expect("id").to_owned();
    let page = format!("/dashboard/broadcasts/{id}");
    let save = format!("{page}/design");

    let mut ann = signed_in(addr, "ann@example.com").await;
    let detail = ann.get(addr, &page).await;
    let token = csrf(&detail);
    assert!(detail.text().contains("Design in the editor"), "a way into the editor");
    let strict = detail.headers["content-security-policy"]
        .to_str()
        .expect("csp")
        .to_owned();
    assert!(!strict.contains("unsafe-inline"), "{strict}");

    let editor = ann.get(addr, &save).await;
    assert_eq!(editor.status, StatusCode::OK);
    let policy = editor.headers["content-security-policy"].to_str().expect("csp");
    assert!(policy.contains("style-src 'self' 'unsafe-inline'"), "{policy}");
    assert!(
        policy.contains("script-src 'self';"),
        "scripts stay same-origin: {policy}"
    );
    let body = editor.text();
    for part in [
        "grapesjs-0.23.6.min.js",
        "grapesjs-mjml-1.0.8.min.js",
        "editor.js",
        "data-kind=\"broadcast\"",
    ] {
        assert!(body.contains(part), "{part} in the editor page");
    }
    assert!(body.contains("<option value=\"FIRST_NAME\">"), "the merge-tag menu");
    assert!(!body.contains("<script>"), "no inline script");

    // A fault is placed by line and column; nothing is stored.
    let broken =
        design("        <mj-text>Hi</mj-text>\n        <mj-button href=\"https://shop.test\" =>Go</mj-button>");
    let refused = ann.post(addr, &save, &[("csrf", &token), ("mjml", &broken)]).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
    let fault = refused.json();
    assert_eq!(
        (fault["line"].as_u64(), fault["column"].as_u64()),
        (Some(6), Some(44)),
        "{fault}"
    );
    assert!(
        fault["message"].as_str().expect("message").contains("does not compile"),
        "{fault}"
    );
    // A broadcast's design keeps its unsubscribe link.
    let bare = design("        <mj-text>Hi</mj-text>");
    let refused = ann.post(addr, &save, &[("csrf", &token), ("mjml", &bare)]).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        refused.json()["message"]
            .as_str()
            .expect("message")
            .contains("unsubscribe")
    );
    let stored = call(
        addr,
        Method::GET,
        &format!("/broadcasts/{id}"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(stored.json()["html"], "<p>draft</p>", "nothing stored");
    // Members look but do not save.
    let mut mia = signed_in(addr, "mia@example.com").await;
    let theirs = csrf(&mia.get(addr, &page).await);
    let good = design(&format!(
        "        <mj-text font-size=\"18px\">Hello {{{{{{FIRST_NAME|there}}}}}}, winter is here.</mj-text>\n        \
         <mj-button href=\"https://shop.test/sale\">Shop the sale</mj-button>\n        \
         <mj-raw><script>alert(1)</script></mj-raw>\n        {FOOTER}"
    ));
    let forbidden = mia.post(addr, &save, &[("csrf", &theirs), ("mjml", &good)]).await;
    assert_eq!(forbidden.status, StatusCode::FORBIDDEN);

    let saved = ann.post(addr, &save, &[("csrf", &token), ("mjml", &good)]).await;
    assert_eq!(saved.status, StatusCode::OK, "{}", saved.text());
    assert_eq!(saved.json()["saved"], true);
    let stored = call(
        addr,
        Method::GET,
        &format!("/broadcasts/{id}"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    let html = stored.json()["html"].as_str().expect("html").to_owned();
    assert!(html.contains("mj-column-per-100"), "compiled by herald: {html}");
    assert!(html.contains("Shop the sale") && html.contains("{{{FIRST_NAME|there}}}"));
    assert!(!html.contains("<script"), "sanitised");
    assert!(!html.contains("fonts.googleapis.com"), "no web fonts pulled in");
    assert_eq!(saved.json()["html_bytes"].as_u64(), Some(html.len() as u64));
    let reopened = ann.get(addr, &save).await.text();
    let reopened_ok = reopened.contains("Shop the sale");
    assert!(reopened_ok, "the stored MJML is what the editor opens: {reopened}");

    // The page's form saved unchanged (a textarea posts CRLF) keeps the design ...
    let detail = ann.get(addr, &page).await.text();
    assert!(detail.contains("Open the editor"), "designed");
    let form_html = html.replace('\n', "\r\n");
    let kept = ann
        .post(
            addr,
            &page,
            &[
                ("csrf", &token),
                ("name", "Winter"),
                ("from", "Shop <news@shop.test>"),
                ("subject", "Winter is here"),
                ("segment_id", &segment),
                ("topic_id", ""),
                ("html", &form_html),
            ],
        )
        .await;
    assert_eq!(kept.status, StatusCode::OK, "{}", kept.text());
    assert!(ann.get(addr, &save).await.text().contains("Shop the sale"));

    // ... and the design sends, personalised, to the segment.
    let sent = ann
        .post(addr, &format!("{page}/send"), &[("csrf", &token), ("scheduled_at", "")])
        .await;
    assert_eq!(sent.status, StatusCode::SEE_OTHER, "{}", sent.text());
    let delivered = sink.wait_for(2, Duration::from_secs(30)).await;
    let mut bodies: Vec<String> = delivered
        .iter()
        .map(|m| String::from_utf8_lossy(&m.data).into_owned())
        .collect();
    bodies.sort();
    assert!(
        bodies.iter().any(|b| b.contains("Hello Amy, winter is here.")),
        "{}",
        bodies[0]
    );
    assert!(
        bodies.iter().any(|b| b.contains("Hello Ben, winter is here.")),
        "{}",
        bodies[1]
    );
    assert!(bodies[0].contains("Content-Type: text/plain"), "a text part derived");
    assert!(bodies[0].contains("Subject: Winter is here"));
    assert!(
        !bodies[0].contains("RESEND_UNSUBSCRIBE_URL"),
        "the unsubscribe link made"
    );
    // A sent broadcast is not designed any more.
    assert_eq!(ann.get(addr, &save).await.status, StatusCode::CONFLICT);

    // A second draft: editing its HTML by hand drops the design.
    let other = call(
        addr,
        Method::POST,
        "/broadcasts",
        Some(OPERATOR_KEY),
        Some(
            json!({ "segment_id": segment, "from": "Shop <news@shop.test>", "subject": "Spring", "html": "<p>x</p>" }),
        ),
    )
    .await
    .json()["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let other_save = format!("/dashboard/broadcasts/{other}/design");
    let saved = ann.post(addr, &other_save, &[("csrf", &token), ("mjml", &good)]).await;
    assert_eq!(saved.status, StatusCode::OK);
    // A big design is over the ordinary form limit, not the design's.
    let big = design(&format!(
        "        <mj-text>{}</mj-text>\n        {FOOTER}",
        "winter ".repeat(20_000)
    ));
    let saved = ann.post(addr, &other_save, &[("csrf", &token), ("mjml", &big)]).await;
    assert_eq!(saved.status, StatusCode::OK, "{}", saved.text());
    let by_hand = ann
        .post(
            addr,
            &format!("/dashboard/broadcasts/{other}"),
            &[
                ("csrf", &token),
                ("subject", "Spring"),
                ("from", "Shop <news@shop.test>"),
                ("segment_id", &segment),
                (
                    "html",
                    "<p>By hand <a href=\"{{{RESEND_UNSUBSCRIBE_URL}}}\">Unsubscribe</a></p>",
                ),
            ],
        )
        .await;
    assert_eq!(by_hand.status, StatusCode::OK, "{}", by_hand.text());
    assert!(by_hand.text().contains("Design in the editor"), "the design is gone");
    let reopened = ann.get(addr, &other_save).await.text();
    assert!(!reopened.contains("winter winter"), "the editor starts afresh");
    assert!(running.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn template_designs_are_published_as_versions_and_restored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(dir.path(), "").await;
    let addr = running.http_addr;
    add_users(addr, &[("ann@example.com", "owner")], PASSWORD).await;
    let made = call(
        addr,
        Method::POST,
        "/templates",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "Welcome", "html": "<p>v1 by hand</p>" })),
    )
    .await;
    let id = made.json()["id"].as_str().expect("id").to_owned();
    let page = format!("/dashboard/templates/{id}");
    let mut ann = signed_in(addr, "ann@example.com").await;
    let token = csrf(&ann.get(addr, &page).await);
    call(
        addr,
        Method::POST,
        &format!("/templates/{id}/publish"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;

    // A design with no unsubscribe link is a template's to choose.
    let first = design("        <mj-text>Welcome, v2</mj-text>");
    let saved = ann
        .post(addr, &format!("{page}/design"), &[("csrf", &token), ("mjml", &first)])
        .await;
    assert_eq!(saved.status, StatusCode::OK, "{}", saved.text());
    let answer = call(addr, Method::GET, &format!("/templates/{id}"), Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(answer["has_unpublished_versions"], true, "the design is a draft");
    assert!(answer["html"].as_str().expect("html").contains("Welcome, v2"));
    let published = ann.post(addr, &format!("{page}/publish"), &[("csrf", &token)]).await;
    assert!(published.text().contains("Published"));
    let second = design("        <mj-text>Welcome, v3</mj-text>");
    ann.post(addr, &format!("{page}/design"), &[("csrf", &token), ("mjml", &second)])
        .await;
    ann.post(addr, &format!("{page}/publish"), &[("csrf", &token)]).await;

    let detail = ann.get(addr, &page).await.text();
    let rows = detail.matches("<span class=\"status earlier\">").count();
    assert_eq!(rows, 2, "v1 and v2 are kept: {detail}");
    assert!(detail.contains("<span class=\"status published\">published"));
    // The first earlier version listed is v2 (newest first); view and restore it.
    let at = detail.find("/versions/").expect("a restore form") + "/versions/".len();
    let v2 = detail[at..].split('/').next().expect("version id").to_owned();
    let viewed = ann.get(addr, &format!("{page}?version={v2}")).await.text();
    assert!(
        viewed.contains(&format!("preview?version={v2}")),
        "the preview shows v2: {viewed}"
    );
    let shown = ann.get(addr, &format!("{page}/preview?version={v2}")).await.text();
    assert!(shown.contains("Welcome, v2"), "{shown}");
    let current = ann.get(addr, &format!("{page}/preview")).await.text();
    assert!(current.contains("Welcome, v3"), "{current}");
    let restored = ann
        .post(addr, &format!("{page}/versions/{v2}/restore"), &[("csrf", &token)])
        .await;
    assert!(restored.text().contains("Restored as the draft"), "{}", restored.text());
    let answer = call(addr, Method::GET, &format!("/templates/{id}"), Some(OPERATOR_KEY), None)
        .await
        .json();
    assert!(
        answer["html"].as_str().expect("html").contains("Welcome, v2"),
        "{answer}"
    );
    assert_eq!(answer["has_unpublished_versions"], true);
    assert!(
        ann.get(addr, &format!("{page}/design"))
            .await
            .text()
            .contains("Welcome, v2"),
        "the restored version's design opens in the editor"
    );
    let unknown = ann
        .post(addr, &format!("{page}/versions/{id}/restore"), &[("csrf", &token)])
        .await;
    assert!(unknown.text().contains("Template version not found"));
    assert!(running.shutdown().await);
}
