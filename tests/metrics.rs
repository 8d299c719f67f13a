//! `GET /emails/metrics` over real sockets: mail delivered to and bounced by a real SMTP
//! sink from two domains; totals and rates, rows by domain, by period in a half-hour
//! time zone and by email, a domain filter, and the permission a key needs. Then the
//! counters are dropped as if the emails predated them, and the next start's backfill
//! builds the same answer from the emails' timelines.

mod util;

use std::net::SocketAddr;
use std::time::Duration;

use herald_queue::{Batch, Store, StoreOptions, Table};
use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use util::sink::{Sink, SinkOptions};
use util::{OPERATOR_KEY, call};

async fn metrics(addr: SocketAddr, query: &str) -> Value {
    let answer = call(
        addr,
        Method::GET,
        &format!("/emails/metrics?{query}"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{query}: {}", answer.text());
    answer.json()
}

async fn totals_once(addr: SocketAddr, want: &Value) -> Value {
    util::eventually(Duration::from_secs(30), "the counts", || async {
        let body = metrics(addr, "metrics=sent,delivered,bounced").await;
        (body["totals"] == *want).then_some(body)
    })
    .await
}

async fn send(addr: SocketAddr, from: &str, to: &str) -> String {
    let body = json!({ "from": from, "to": to, "subject": "Hello", "text": "Hi." });
    let sent = call(addr, Method::POST, "/emails", Some(OPERATOR_KEY), Some(body)).await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    sent.json()["id"].as_str().expect("id").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_what_happened_and_a_backfill_rebuilds_them() {
    let sink = Sink::start(SinkOptions::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = format!(
        "[delivery]\nenabled = true\nrelay = \"{}\"\nretry_intervals = [\"1s\"]\n",
        sink.addr()
    );
    let running = util::start_api(dir.path(), &extra).await;
    let addr = running.http_addr;
    let shop = util::verified_domain(addr, "shop.test").await;
    let news = util::verified_domain(addr, "news.test").await;
    for n in 0..3 {
        send(addr, "Shop <orders@shop.test>", &format!("reader{n}@example.net")).await;
    }
    let bounced = send(addr, "orders@shop.test", "bounce@example.net").await;
    send(addr, "letters@news.test", "reader9@example.net").await;
    let all = totals_once(addr, &json!({ "sent": 5, "delivered": 4, "bounced": 1 })).await;
    assert_eq!(all["object"], "metrics");
    assert_eq!(all["metrics"], json!(["sent", "delivered", "bounced"]));
    assert!(all.get("data").is_none(), "no dimensions, no rows");

    let rates = metrics(
        addr,
        "metrics=delivery_rate,bounce_rate,bounced_permanent,complaint_rate",
    )
    .await;
    assert_eq!(
        rates["totals"],
        json!({ "delivery_rate": 80.0, "bounce_rate": 20.0, "bounced_permanent": 1, "complaint_rate": 0.0 })
    );

    let by_domain = metrics(addr, "dimensions=domain&metrics=sent,delivered").await;
    assert_eq!(
        by_domain["data"],
        json!([
            { "domain_id": news, "domain_name": "news.test", "sent": 1, "delivered": 1 },
            { "domain_id": shop, "domain_name": "shop.test", "sent": 4, "delivered": 3 },
        ])
    );
    let news_only = metrics(addr, &format!("domain_id={news}&metrics=sent")).await;
    assert_eq!(news_only["totals"], json!({ "sent": 1 }));

    // Hours in India (+05:30) start on the half hour, a bucket edge.
    let hourly = metrics(
        addr,
        "dimensions=period&granularity=hourly&timezone=Asia/Kolkata&metrics=sent",
    )
    .await;
    let rows = hourly["data"].as_array().expect("rows");
    let time = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().expect("a time")).expect("RFC 3339");
    let (start, end) = (time(&hourly["start_date"]), time(&hourly["end_date"]));
    let hours = u64::try_from((end - start).num_minutes())
        .expect("minutes")
        .div_ceil(60);
    assert_eq!(
        rows.len(),
        usize::try_from(hours).expect("hours"),
        "every hour of the range, zero or not"
    );
    assert_eq!(time(&rows[0]["period"]), start);
    for pair in rows.windows(2) {
        assert_eq!(
            time(&pair[1]["period"]) - time(&pair[0]["period"]),
            chrono::Duration::hours(1)
        );
    }
    assert!(
        rows.iter()
            .all(|r| r["period"].as_str().expect("period").ends_with(":00:00+05:30"))
    );
    assert_eq!(rows.iter().map(|r| r["sent"].as_u64().expect("n")).sum::<u64>(), 5);
    assert!(
        hourly["start_date"]
            .as_str()
            .expect("start")
            .ends_with("T00:00:00+05:30")
    );

    let one = metrics(
        addr,
        &format!("dimensions=email&email_id={bounced}&metrics=sent,bounced"),
    )
    .await;
    assert_eq!(one["data"], json!([{ "email_id": bounced, "sent": 1, "bounced": 1 }]));

    let refused = call(
        addr,
        Method::GET,
        "/emails/metrics?timezone=Mars/Olympus",
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(refused.json()["name"], "validation_error");
    let key = call(
        addr,
        Method::POST,
        "/api-keys",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "send", "permission": "sending_access" })),
    )
    .await;
    let token = key.json()["token"].as_str().expect("token").to_owned();
    let restricted = call(addr, Method::GET, "/emails/metrics", Some(&token), None).await;
    assert_eq!(restricted.status, StatusCode::UNAUTHORIZED);
    assert_eq!(restricted.json()["name"], "restricted_api_key");

    let before = metrics(addr, "dimensions=domain,period").await;
    assert!(running.shutdown().await);

    // As if the emails came before counters: no counters, no backfill done.
    tokio::task::block_in_place(|| {
        let mut options = StoreOptions::new(dir.path().join("data/spool"));
        options.min_free_space = 0;
        let store = Store::open(options).expect("store");
        let mut batch = Batch::new();
        for (key, _) in store
            .scan_raw(Table::COUNTERS, herald_queue::Scan::prefix(b""))
            .expect("scan")
        {
            batch.delete_raw(Table::COUNTERS, key);
        }
        batch.delete_raw(Table::META, b"counters.backfill".to_vec());
        store.commit(batch).wait().expect("commit");
    });
    let running = util::start_api(dir.path(), &extra).await;
    let addr = running.http_addr;
    totals_once(addr, &json!({ "sent": 5, "delivered": 4, "bounced": 1 })).await;
    let after = metrics(addr, "dimensions=domain,period").await;
    assert_eq!(
        after["data"], before["data"],
        "the backfill counts what was counted live"
    );
    assert_eq!(after["totals"], before["totals"]);
    assert!(running.shutdown().await);
}
