//! A broadcast survives `kill -9` mid-expansion: the real binary expands a 20,000-contact
//! segment, is killed twice while its emails are being made, and restarts; the broadcast
//! finishes with exactly one email per contact (none missing, none twice), counted both
//! by the broadcast's markers and by the spool itself (delivery is off, so every email
//! made is still queued).

mod util;

use std::path::Path;
use std::time::Duration;

use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use util::process::{Log, Process};
use util::{OPERATOR_KEY, call};

const WAIT: Duration = Duration::from_secs(60);

const CONTACTS: usize = 20_000;

fn write_config(dir: &Path) -> std::path::PathBuf {
    let text = util::config_text(dir, "[api]\nrate_limit = \"10000/s\"\n[log]\nformat = \"json\"\n");
    let path = dir.join("herald.toml");
    std::fs::write(&path, text).expect("write config");
    path
}

async fn api(addr: std::net::SocketAddr, method: Method, path: &str, body: Option<Value>) -> Value {
    let answer = call(addr, method, path, Some(OPERATOR_KEY), body).await;
    assert!(answer.status.is_success(), "{path}: {}", answer.text());
    answer.json()
}

async fn progress(addr: std::net::SocketAddr, id: &str) -> Value {
    api(addr, Method::GET, &format!("/broadcasts/{id}"), None).await["progress"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broadcast_killed_mid_expansion_sends_each_contact_exactly_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path());
    let log = Log::default();
    let mut herald = Process::start(&config, &log, 0, WAIT).await;
    util::verified_domain(herald.http, "shop.test").await;
    let segment = api(herald.http, Method::POST, "/segments", Some(json!({ "name": "All" }))).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let boundary = "crash-boundary";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"segments\"\r\n\r\n{}\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"c.csv\"\r\nContent-Type: text/csv\r\n\r\nemail,first_name\n",
        json!([{ "id": segment }])
    );
    for n in 0..CONTACTS {
        body.push_str(&format!("c{n}@example.net,Reader{n}\n"));
    }
    body.push_str(&format!("\r\n--{boundary}--\r\n"));
    let uploaded = util::call_with_headers(
        herald.http,
        Method::POST,
        "/contacts/imports",
        Some(OPERATOR_KEY),
        &[("content-type", &format!("multipart/form-data; boundary={boundary}"))],
        bytes::Bytes::from(body),
    )
    .await;
    assert_eq!(uploaded.status, StatusCode::CREATED, "{}", uploaded.text());
    let import = uploaded.json()["id"].as_str().expect("id").to_owned();
    let addr = herald.http;
    util::eventually(WAIT, "the import to finish", || async {
        let got = api(addr, Method::GET, &format!("/contacts/imports/{import}"), None).await;
        (got["status"] == "completed").then_some(())
    })
    .await;

    let id = api(
        herald.http,
        Method::POST,
        "/broadcasts",
        Some(json!({ "segment_id": segment, "from": "news@shop.test", "subject": "Hi {{{FIRST_NAME}}}", "text": "Hello", "send": true })),
    )
    .await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let mut kills = Vec::new();
    for (life, after) in [(1, 1_000), (2, 8_000)] {
        let addr = herald.http;
        let id2 = id.clone();
        let at = util::eventually(WAIT, "the expansion to be under way", || {
            let id = id2.clone();
            async move {
                let progress = progress(addr, &id).await;
                let sent = progress["sent"].as_u64().unwrap_or(0);
                (sent >= after).then_some(sent)
            }
        })
        .await;
        herald.kill_9();
        kills.push(at);
        herald = Process::start(&config, &log, life, WAIT).await;
    }
    let addr = herald.http;
    let id2 = id.clone();
    let done = util::eventually(WAIT, "the broadcast to finish", || {
        let id = id2.clone();
        async move {
            let progress = progress(addr, &id).await;
            (progress["status"] == "sent").then_some(progress)
        }
    })
    .await;
    println!("killed at {kills:?} emails made; finished: {done}");
    assert!(
        kills.iter().all(|sent| (*sent as usize) < CONTACTS),
        "both kills landed mid-expansion: {kills:?}"
    );
    assert_eq!(done["total"], CONTACTS, "{done}");
    assert_eq!(done["sent"], CONTACTS, "{done}");
    let health = util::get(addr, "/healthz").await.json();
    assert_eq!(
        health["spool"]["messages"], CONTACTS,
        "one queued email per contact, no more: {health}"
    );
    herald.terminate(WAIT).await;
}
