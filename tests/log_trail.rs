//! One email followed through the real binary's JSON log at debug level: its acceptance,
//! its delivery to a real SMTP sink and the webhook request that reported it each log a
//! line naming its id, so an operator can follow it from acceptance to the webhook.

mod util;

use std::time::Duration;

use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use util::process::{Log, Process};
use util::sink::{Sink, SinkOptions};
use util::webhook_receiver::Receiver;
use util::{OPERATOR_KEY, call, real};

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_email_can_be_followed_in_the_log_from_acceptance_to_its_webhook() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sink = Sink::start(SinkOptions::default());
    let receiver = Receiver::start().await;
    let extra = format!(
        "{}[webhooks]\nallowed_networks = [\"127.0.0.0/8\"]\nretry_intervals = [\"1s\"]\n",
        real::load_sections(sink.addr()).replace("[log]\n", "[log]\nlevel = \"info,herald=debug\"\n")
    );
    let config = real::write_config(dir.path(), Duration::from_secs(5), &extra);
    let log = Log::default();
    let mut herald = Process::start(&config, &log, 1, WAIT).await;
    util::verified_domain(herald.http, "example.test").await;
    let hook = json!({
        "endpoint": format!("http://{}/hook", receiver.addr()),
        "events": ["email.delivered"],
    });
    let created = call(herald.http, Method::POST, "/webhooks", Some(OPERATOR_KEY), Some(hook)).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());

    let body = json!({ "from": "app@example.test", "to": "bob@example.net", "subject": "hi", "text": "Hello." });
    let sent = call(herald.http, Method::POST, "/emails", Some(OPERATOR_KEY), Some(body)).await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    let id = sent.json()["id"].as_str().expect("id").to_owned();
    let reported = receiver
        .wait_for(WAIT, |r| {
            r.all()
                .iter()
                .any(|request| request.payload()["data"]["email_id"] == id.as_str())
        })
        .await;
    assert!(reported, "the webhook never reported {id}");

    // The webhook's log line follows its request; give it a moment to be written.
    let messages = |log: &Log| -> Vec<String> {
        log.matching(&id)
            .iter()
            .filter_map(|line| line.split_once("] ").map(|(_, json)| json.to_owned()))
            .filter_map(|json| serde_json::from_str::<Value>(&json).ok())
            .filter_map(|line| line["message"].as_str().map(str::to_owned))
            .collect()
    };
    real::wait_until(
        WAIT,
        || messages(&log).iter().any(|m| m == "webhook request"),
        || format!("a webhook line for {id}: {:?}", log.matching(&id)),
    )
    .await;
    let trail = messages(&log);
    for step in ["email accepted", "delivery outcome", "webhook request"] {
        assert!(
            trail.iter().any(|m| m == step),
            "no {step:?} line names {id}: {trail:?}"
        );
    }
    let accepted = log
        .matching(&id)
        .into_iter()
        .find(|line| line.contains("email accepted"))
        .expect("accepted line");
    assert!(
        accepted.contains("\"path\":\"/emails\""),
        "the acceptance carries its request's span: {accepted}"
    );
    herald.terminate(WAIT).await;
}
