//! Plans and their quotas over real sockets: a team put on a plan through the API sends
//! over the API and SMTP until its day's allowance is used, then gets `429
//! daily_quota_exceeded` and `452 4.5.3`; the injected clock crosses midnight (the day
//! resets, the month does not: `monthly_quota_exceeded`) and the month's end (both
//! reset); `GET /usage` and the `x-resend-*-quota` headers report the counts; a
//! broadcast that reaches the limit mid-expansion records each remaining recipient as
//! failed with `reached_daily_quota`.

mod util;

use std::sync::Arc;
use std::time::Duration;

use herald_queue::{ManualClock, Timestamp};
use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use util::{OPERATOR_KEY, call};

/// 2026-01-30T12:00:00Z.
const START: u64 = 1_769_774_400_000;
const HOUR: Duration = Duration::from_secs(3600);

const PLANS: &str = "[api]\nrate_limit = \"1000/s\"\n\
    [[plans]]\nname = \"small\"\nmonthly_emails = 5\ndaily_emails = 3\nrate_limit = \"200/s\"\n\
    [[plans]]\nname = \"free\"\nmonthly_emails = 3000\ndaily_emails = 100\n";

async fn send(addr: std::net::SocketAddr, to: &[&str]) -> util::HttpResponse {
    call(
        addr,
        Method::POST,
        "/emails",
        Some(OPERATOR_KEY),
        Some(json!({ "from": "Shop <news@shop.test>", "to": to, "subject": "Hi", "text": "Hello" })),
    )
    .await
}

fn header(response: &util::HttpResponse, name: &str) -> String {
    response
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// One message over implicit TLS with AUTH, to `to`; the server's last reply line.
async fn smtp_send(addr: std::net::SocketAddr, to: &str) -> String {
    let script = format!(
        "EHLO client\r\nAUTH PLAIN {}\r\nMAIL FROM:<news@shop.test>\r\nRCPT TO:<{to}>\r\nDATA\r\nFrom: Shop <news@shop.test>\r\nTo: {to}\r\nSubject: over smtp\r\n\r\nHello.\r\n.\r\nQUIT\r\n",
        util::auth_plain(OPERATOR_KEY)
    );
    let transcript = util::smtps_transcript(addr, &script).await;
    transcript
        .lines()
        .rfind(|line| line.starts_with("250 2.0.0 OK ") || line.starts_with("452"))
        .unwrap_or_else(|| panic!("no answer to DATA:\n{transcript}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_caps_the_day_and_the_month_over_the_api_and_smtp() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(START)));
    let running = util::start_with_clock(util::config(dir.path(), PLANS), Some(OPERATOR_KEY), clock.clone()).await;
    let addr = running.http_addr;
    let smtps = running.smtp[1].1;
    util::verified_domain(addr, "shop.test").await;
    let teams = call(addr, Method::GET, "/teams", Some(OPERATOR_KEY), None).await.json();
    let team = teams["data"][0]["id"].as_str().expect("the operator's team").to_owned();

    // Unlimited until put on a plan; a plan that is not configured is refused by name.
    let unknown = call(
        addr,
        Method::PATCH,
        &format!("/teams/{team}"),
        Some(OPERATOR_KEY),
        Some(json!({ "plan": "huge" })),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", unknown.text());
    assert!(unknown.text().contains("small, free"), "{}", unknown.text());
    let set = call(
        addr,
        Method::PATCH,
        &format!("/teams/{team}"),
        Some(OPERATOR_KEY),
        Some(json!({ "plan": "small" })),
    )
    .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text());
    let shown = call(addr, Method::GET, &format!("/teams/{team}"), Some(OPERATOR_KEY), None).await;
    assert_eq!(shown.json()["plan"], "small");

    // Each recipient counts; the headers say what is used.
    let two = send(addr, &["a@example.net", "b@example.net"]).await;
    assert_eq!(two.status, StatusCode::OK, "{}", two.text());
    assert_eq!(header(&two, "x-resend-daily-quota"), "2");
    assert_eq!(header(&two, "x-resend-monthly-quota"), "2");
    let over = send(addr, &["c@example.net", "d@example.net"]).await;
    assert_eq!(over.status, StatusCode::TOO_MANY_REQUESTS, "{}", over.text());
    assert_eq!(over.json()["name"], "daily_quota_exceeded");
    assert!(
        over.json()["message"]
            .as_str()
            .unwrap_or_default()
            .contains("2026-01-31T00:00:00.000Z"),
        "{}",
        over.text()
    );
    assert_eq!(header(&over, "x-resend-daily-quota"), "2", "a refusal takes nothing");
    assert_eq!(smtp_send(smtps, "c@example.net").await.get(..3), Some("250"));
    let refused = smtp_send(smtps, "d@example.net").await;
    assert!(refused.starts_with("452 4.5.3 "), "{refused}");

    let usage = call(addr, Method::GET, "/usage", Some(OPERATOR_KEY), None).await;
    assert_eq!(usage.status, StatusCode::OK, "{}", usage.text());
    let usage = usage.json();
    assert_eq!(usage["object"], "usage");
    assert_eq!(
        usage["emails"]["daily"],
        json!({ "used": 3, "limit": 3, "sent": 3, "received": 0, "resets_at": "2026-01-31T00:00:00.000Z" })
    );
    assert_eq!(usage["emails"]["monthly"]["limit"], 5);
    assert_eq!(usage["emails"]["monthly"]["resets_at"], "2026-02-01T00:00:00.000Z");
    assert!(usage["contacts"]["limit"].is_u64(), "{usage}");
    assert_eq!(usage["domains"]["used"], 1);
    assert_eq!(usage["rate_limit"], json!({ "limit": 200, "duration": "1000ms" }));
    for field in ["segments", "broadcasts", "ai_credits", "automation_runs"] {
        assert!(usage[field].is_object(), "{field}: {usage}");
    }

    // Past midnight (UTC): a new day, the same month.
    clock.advance(12 * HOUR);
    let next_day = send(addr, &["e@example.net", "f@example.net"]).await;
    assert_eq!(next_day.status, StatusCode::OK, "{}", next_day.text());
    assert_eq!(header(&next_day, "x-resend-daily-quota"), "2");
    assert_eq!(header(&next_day, "x-resend-monthly-quota"), "5");
    let month_over = send(addr, &["g@example.net"]).await;
    assert_eq!(
        month_over.json()["name"],
        "monthly_quota_exceeded",
        "{}",
        month_over.text()
    );
    assert!(smtp_send(smtps, "g@example.net").await.starts_with("452 4.5.3 "));

    // Past the month's end: both start again, read back from the store after a restart.
    clock.advance(24 * HOUR);
    running.shutdown().await;
    let running = util::start_with_clock(util::config(dir.path(), PLANS), Some(OPERATOR_KEY), clock.clone()).await;
    let addr = running.http_addr;
    let new_month = send(addr, &["h@example.net"]).await;
    assert_eq!(new_month.status, StatusCode::OK, "{}", new_month.text());
    assert_eq!(header(&new_month, "x-resend-monthly-quota"), "1");

    // A broadcast reaching the day's limit mid-expansion: what is left fails, with why.
    let segment = util::cookies::segment_with(
        addr,
        "Readers",
        &[
            ("r1@example.net", "A"),
            ("r2@example.net", "B"),
            ("r3@example.net", "C"),
        ],
    )
    .await;
    let broadcast = call(
        addr,
        Method::POST,
        "/broadcasts",
        Some(OPERATOR_KEY),
        Some(json!({ "segment_id": segment, "from": "Shop <news@shop.test>", "subject": "Sale", "html": "<p>Sale {{{RESEND_UNSUBSCRIBE_URL}}}</p>" })),
    )
    .await;
    assert_eq!(broadcast.status, StatusCode::CREATED, "{}", broadcast.text());
    let id = broadcast.json()["id"].as_str().expect("id").to_owned();
    let sent = call(
        addr,
        Method::POST,
        &format!("/broadcasts/{id}/send"),
        Some(OPERATOR_KEY),
        Some(json!({})),
    )
    .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    let progress = util::eventually(Duration::from_secs(30), "the broadcast sent", || async {
        let got = call(
            addr,
            Method::GET,
            &format!("/broadcasts/{id}"),
            Some(OPERATOR_KEY),
            None,
        )
        .await
        .json();
        (got["progress"]["status"] == "sent").then(|| got["progress"].clone())
    })
    .await;
    assert_eq!(progress["sent"], 2, "{progress}");
    assert_eq!(progress["failed"], 1, "{progress}");
    let usage: Value = call(addr, Method::GET, "/usage", Some(OPERATOR_KEY), None).await.json();
    assert_eq!(usage["emails"]["daily"]["used"], 3);
    assert_eq!(usage["broadcasts"]["used"], 1);
    running.shutdown().await;
}
