//! Domains over real HTTP, verified against a real DNS server on loopback.

mod util;

use std::time::{Duration, Instant};

use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use util::dns::TestDns;
use util::{OPERATOR_KEY, call, start_api};

fn dns_config(dns: &TestDns) -> String {
    format!(
        "[delivery]\nnameservers = [\"{}\"]\n[domains]\nrecheck_interval = \"1s\"\nretry_intervals = [\"1s\"]\n",
        dns.addr()
    )
}

async fn create(addr: std::net::SocketAddr, body: Value) -> Value {
    let response = call(addr, Method::POST, "/domains", Some(OPERATOR_KEY), Some(body)).await;
    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text());
    response.json()
}

fn record<'a>(domain: &'a Value, kind: &str, rtype: &str) -> &'a Value {
    util::dns::domain_record(domain, kind, rtype)
}

/// Publishes the records the API asked for (DMARC aside) in the test DNS.
fn publish(dns: &TestDns, domain: &Value) {
    dns.publish_domain(domain);
}

async fn wait_for_status(addr: std::net::SocketAddr, id: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut poll = tokio::time::interval(Duration::from_millis(20));
    loop {
        poll.tick().await;
        let domain = call(addr, Method::GET, &format!("/domains/{id}"), Some(OPERATOR_KEY), None)
            .await
            .json();
        if domain["status"] == status {
            return domain;
        }
        assert!(Instant::now() < deadline, "domain never reached {status}: {domain}");
    }
}

async fn verify(addr: std::net::SocketAddr, id: &str) {
    let response = call(
        addr,
        Method::POST,
        &format!("/domains/{id}/verify"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(response.json(), json!({ "object": "domain", "id": id }));
}

#[tokio::test]
async fn a_domain_gives_its_records_and_verifies_once_they_are_published() {
    let dns = TestDns::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), &dns_config(&dns)).await;
    let addr = running.http_addr;
    // A webhook for domain events, at an address that refuses connections: its messages
    // stay pending and show what was recorded.
    let hook = json!({ "endpoint": "http://127.0.0.1:9/hook", "events": ["domain.created", "domain.updated"] });
    let created = call(addr, Method::POST, "/webhooks", Some(OPERATOR_KEY), Some(hook)).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());

    let domain = create(addr, json!({ "name": "Example.TEST" })).await;
    let id = domain["id"].as_str().expect("id").to_owned();
    assert_eq!(domain["object"], "domain");
    assert_eq!(domain["name"], "example.test");
    assert_eq!(domain["status"], "not_started");
    assert_eq!(domain["region"], "us-east-1");
    let dkim = record(&domain, "DKIM", "TXT");
    assert_eq!(dkim["name"], "herald._domainkey");
    assert!(
        dkim["value"]
            .as_str()
            .is_some_and(|v| v.starts_with("v=DKIM1; k=rsa; p=MII")),
        "{dkim}"
    );
    assert_eq!(dkim["status"], "not_started");
    assert_eq!(dkim["ttl"], "Auto");
    let mx = record(&domain, "SPF", "MX");
    assert_eq!(
        (mx["name"].as_str(), mx["value"].as_str(), mx["priority"].as_u64()),
        (Some("send"), Some("herald.test"), Some(10))
    );
    assert_eq!(record(&domain, "SPF", "TXT")["value"], "v=spf1 a:herald.test ~all");
    // Only the record kinds the SDKs know are in `records` (the Rust and .NET SDKs
    // decode `record` strictly); the recommended DMARC record has a field of its own.
    let kinds: Vec<&str> = domain["records"]
        .as_array()
        .expect("records")
        .iter()
        .filter_map(|r| r["record"].as_str())
        .collect();
    assert!(
        kinds
            .iter()
            .all(|k| ["SPF", "DKIM", "Receiving", "Tracking", "TrackingCAA"].contains(k)),
        "{kinds:?}"
    );
    assert_eq!(domain["dmarc"]["name"], "_dmarc");
    assert_eq!(domain["dmarc"]["type"], "TXT");
    assert_eq!(domain["dmarc"]["value"], "v=DMARC1; p=none;");
    assert_eq!(domain["dmarc"]["recommended"], true);
    assert_eq!(domain.get("tracking_subdomain"), None, "left out when none: {domain}");
    let text = domain.to_string();
    assert!(
        !text.contains("private") && !text.contains("pkcs8"),
        "no private key material: {text}"
    );

    publish(&dns, &domain);
    verify(addr, &id).await;
    let verified = wait_for_status(addr, &id, "verified").await;
    assert_eq!(record(&verified, "DKIM", "TXT")["status"], "verified");
    assert_eq!(record(&verified, "SPF", "MX")["status"], "verified");
    assert_eq!(verified["dmarc"]["status"], "failed", "DMARC is reported, not required");

    // Verified domains are re-checked; one whose DKIM record disappears stops being verified.
    dns.remove(&format!("herald._domainkey.{}", "example.test"));
    let lost = wait_for_status(addr, &id, "partially_failed").await;
    assert_eq!(record(&lost, "DKIM", "TXT")["status"], "failed");

    // Every change wrote its event in the same batch; the dispatcher fans them out.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let messages = util::webhook_messages(&running.state);
        let kinds: Vec<String> = messages
            .iter()
            .map(|m| serde_json::from_str::<Value>(&m.body).expect("json"))
            .filter(|b| b["data"]["id"] == id.as_str())
            .filter_map(|b| b["type"].as_str().map(str::to_owned))
            .collect();
        let updates = kinds.iter().filter(|k| *k == "domain.updated").count();
        if kinds.first().map(String::as_str) == Some("domain.created") && updates >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "{kinds:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    running.shutdown().await;
}

#[tokio::test]
async fn wrong_missing_and_unreachable_records_give_their_statuses() {
    let dns = TestDns::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), &dns_config(&dns)).await;
    let addr = running.http_addr;

    let wrong = create(addr, json!({ "name": "wrong.test", "dkim_algorithm": "ed25519" })).await;
    assert!(
        record(&wrong, "DKIM", "TXT")["value"]
            .as_str()
            .is_some_and(|v| v.starts_with("v=DKIM1; k=ed25519; p="))
    );
    publish(&dns, &wrong);
    dns.set_txt(
        "herald._domainkey.wrong.test",
        &["v=DKIM1; k=ed25519; p=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="],
    );
    let id = wrong["id"].as_str().expect("id");
    verify(addr, id).await;
    let checked = wait_for_status(addr, id, "partially_failed").await;
    assert_eq!(record(&checked, "DKIM", "TXT")["status"], "failed");
    assert_eq!(record(&checked, "SPF", "TXT")["status"], "verified");

    let missing = create(addr, json!({ "name": "missing.test" })).await;
    let id = missing["id"].as_str().expect("id");
    verify(addr, id).await;
    let checked = wait_for_status(addr, id, "failed").await;
    assert!(
        checked["records"]
            .as_array()
            .expect("records")
            .iter()
            .all(|r| r["status"] == "failed"),
        "{checked}"
    );

    let flaky = create(addr, json!({ "name": "flaky.test", "custom_return_path": "bounces" })).await;
    assert_eq!(record(&flaky, "SPF", "TXT")["name"], "bounces");
    publish(&dns, &flaky);
    dns.fail("herald._domainkey.flaky.test");
    let id = flaky["id"].as_str().expect("id");
    verify(addr, id).await;
    // DNS that cannot be asked is a record's `temporary_failure`; the domain stays
    // `pending` (Resend's domain statuses have no `temporary_failure`, and the SDKs that
    // decode them strictly fail on it).
    let checked = util::eventually(Duration::from_secs(20), "DKIM to fail temporarily", || async {
        let domain = call(addr, Method::GET, &format!("/domains/{id}"), Some(OPERATOR_KEY), None)
            .await
            .json();
        (record(&domain, "DKIM", "TXT")["status"] == "temporary_failure").then_some(domain)
    })
    .await;
    assert_eq!(checked["status"], "pending", "{checked}");
    let listed = call(addr, Method::GET, "/domains", Some(OPERATOR_KEY), None)
        .await
        .json();
    assert!(
        listed["data"]
            .as_array()
            .expect("data")
            .iter()
            .all(|d| d["status"] != "temporary_failure"),
        "{listed}"
    );
    // Once DNS answers again, the background re-check verifies it without another request.
    dns.remove("herald._domainkey.flaky.test");
    publish(&dns, &flaky);
    wait_for_status(addr, id, "verified").await;
    running.shutdown().await;
}

#[tokio::test]
async fn domains_are_validated_updated_listed_and_deleted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    for (body, name) in [
        (json!({}), "missing_required_field"),
        (json!({ "name": "" }), "missing_required_field"),
        (json!({ "name": "not a domain" }), "validation_error"),
        (json!({ "name": "localhost" }), "validation_error"),
        (json!({ "name": "a.test", "region": "mars-1" }), "invalid_region"),
        (
            json!({ "name": "a.test", "custom_return_path": "a.b" }),
            "validation_error",
        ),
        (json!({ "name": "a.test", "dkim_algorithm": "dsa" }), "validation_error"),
        (json!({ "name": "a.test", "tls": "sometimes" }), "validation_error"),
        (
            json!({ "name": "a.test", "capabilities": { "receiving": "enabled" } }),
            "validation_error",
        ),
        (
            json!({ "name": "a.test", "capabilities": { "sending": "disabled" } }),
            "validation_error",
        ),
        (
            json!({ "name": "a.test", "tracking_subdomain": "not valid!" }),
            "validation_error",
        ),
    ] {
        let response = call(addr, Method::POST, "/domains", Some(OPERATOR_KEY), Some(body.clone())).await;
        assert_eq!(
            response.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {}",
            response.text()
        );
        assert_eq!(response.json()["name"], name, "{body}");
    }
    let receiving = call(
        addr,
        Method::POST,
        "/domains",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "a.test", "capabilities": { "receiving": "enabled" } })),
    )
    .await;
    assert!(
        receiving.json()["message"]
            .as_str()
            .is_some_and(|m| m.contains("does not receive mail")),
        "{}",
        receiving.text()
    );
    let first = create(
        addr,
        json!({
            "name": "one.test",
            "dkim_algorithm": "ed25519",
            "tracking_subdomain": "Links",
            "capabilities": { "sending": "enabled", "receiving": "disabled" },
        }),
    )
    .await;
    assert_eq!(first["tracking_subdomain"], "links", "stored and answered: {first}");
    let duplicate = call(
        addr,
        Method::POST,
        "/domains",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "ONE.test" })),
    )
    .await;
    assert_eq!(duplicate.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        duplicate.json()["message"]
            .as_str()
            .is_some_and(|m| m.contains("already"))
    );
    create(addr, json!({ "name": "two.test", "dkim_algorithm": "ed25519" })).await;
    create(addr, json!({ "name": "three.test", "dkim_algorithm": "ed25519" })).await;

    let page = call(addr, Method::GET, "/domains?limit=2", Some(OPERATOR_KEY), None)
        .await
        .json();
    let names: Vec<&str> = page["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert_eq!(names, vec!["three.test", "two.test"]);
    assert_eq!(page["has_more"], true);
    assert!(page["data"][0].get("records").is_none(), "list items carry no records");

    let id = first["id"].as_str().expect("id");
    let patched = call(
        addr,
        Method::PATCH,
        &format!("/domains/{id}"),
        Some(OPERATOR_KEY),
        Some(json!({ "open_tracking": true, "click_tracking": true, "tls": "enforced", "tracking_subdomain": "t" })),
    )
    .await;
    assert_eq!(patched.json(), json!({ "object": "domain", "id": id }));
    let refused = call(
        addr,
        Method::PATCH,
        &format!("/domains/{id}"),
        Some(OPERATOR_KEY),
        Some(json!({ "capabilities": { "receiving": "enabled" } })),
    )
    .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
    let read = call(addr, Method::GET, &format!("/domains/{id}"), Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(
        (
            read["open_tracking"].as_bool(),
            read["click_tracking"].as_bool(),
            read["tls"].as_str()
        ),
        (Some(true), Some(true), Some("enforced"))
    );
    assert_eq!(read["tracking_subdomain"], "t");
    let listed = call(addr, Method::GET, "/domains", Some(OPERATOR_KEY), None)
        .await
        .json();
    let item = listed["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|d| d["id"] == id)
        .cloned()
        .expect("listed");
    assert_eq!(item["tracking_subdomain"], "t", "{item}");
    let cleared = call(
        addr,
        Method::PATCH,
        &format!("/domains/{id}"),
        Some(OPERATOR_KEY),
        Some(json!({ "tracking_subdomain": null })),
    )
    .await;
    assert_eq!(cleared.status, StatusCode::OK, "{}", cleared.text());
    let read = call(addr, Method::GET, &format!("/domains/{id}"), Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(read.get("tracking_subdomain"), None, "left out when cleared: {read}");

    let deleted = call(
        addr,
        Method::DELETE,
        &format!("/domains/{id}"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(deleted.json(), json!({ "object": "domain", "id": id, "deleted": true }));
    let gone = call(addr, Method::GET, &format!("/domains/{id}"), Some(OPERATOR_KEY), None).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    assert_eq!(gone.json()["message"], "Domain not found");
    create(addr, json!({ "name": "one.test", "dkim_algorithm": "ed25519" })).await;
    running.shutdown().await;
}

#[tokio::test]
async fn only_the_operator_may_verify_without_dns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let team = call(
        addr,
        Method::POST,
        "/teams",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "T" })),
    )
    .await
    .json();
    let team_key = team["api_key"]["token"].as_str().expect("token").to_owned();
    let theirs = call(
        addr,
        Method::POST,
        "/domains",
        Some(&team_key),
        Some(json!({ "name": "t.test", "dkim_algorithm": "ed25519" })),
    )
    .await
    .json();
    let their_id = theirs["id"].as_str().expect("id");
    let refused = call(
        addr,
        Method::POST,
        &format!("/domains/{their_id}/verify"),
        Some(&team_key),
        Some(json!({ "skip_dns": true })),
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);

    let ours = create(addr, json!({ "name": "local.test", "dkim_algorithm": "ed25519" })).await;
    let id = ours["id"].as_str().expect("id");
    let skipped = call(
        addr,
        Method::POST,
        &format!("/domains/{id}/verify"),
        Some(OPERATOR_KEY),
        Some(json!({ "skip_dns": true })),
    )
    .await;
    assert_eq!(skipped.status, StatusCode::OK);
    let read = call(addr, Method::GET, &format!("/domains/{id}"), Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(read["status"], "verified");
    assert_eq!(
        read["dns_verification_skipped"], true,
        "the API shows how it was verified"
    );
    running.shutdown().await;
}

#[tokio::test]
async fn a_temporary_failure_stored_by_an_older_build_is_answered_as_pending() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let created = create(addr, json!({ "name": "legacy.test", "dkim_algorithm": "ed25519" })).await;
    let id: herald_queue::Id = created["id"].as_str().expect("id").parse().expect("id");
    let state = &running.state;
    let mut domain = state
        .domains()
        .all()
        .expect("domains")
        .into_iter()
        .find(|d| d.id == id)
        .expect("stored");
    domain.status = herald::domains::DomainStatus::TemporaryFailure;
    domain.checks = herald::domains::RecordChecks::all(herald::domains::RecordStatus::TemporaryFailure);
    let state = state.clone();
    tokio::task::spawn_blocking(move || herald::domains::save(&state, &domain, false))
        .await
        .expect("join")
        .expect("save");
    let read = call(addr, Method::GET, &format!("/domains/{id}"), Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(read["status"], "pending", "{read}");
    assert_eq!(record(&read, "DKIM", "TXT")["status"], "temporary_failure");
    let listed = call(addr, Method::GET, "/domains", Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(listed["data"][0]["status"], "pending", "{listed}");
    running.shutdown().await;
}
