//! `herald queue` and `/queue` against a real server delivering to a real SMTP sink,
//! found as the MX through a real DNS server: what is listed, shown and counted, retry
//! and delete, and that a team sees and touches only its own mail.

mod util;

use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::Duration;

use herald::emails::EmailState;
use herald::server::Running;
use herald_queue::Id;
use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use util::dns::TestDns;
use util::sink::{Sink, SinkOptions};
use util::{OPERATOR_KEY, call};

const HERALD: &str = env!("CARGO_BIN_EXE_herald");
const WAIT: Duration = Duration::from_secs(30);

struct World {
    dns: TestDns,
    sink: Sink,
    running: Running,
    _dir: tempfile::TempDir,
}

impl World {
    /// A server whose deferred mail waits an hour before its next attempt, so that only a
    /// retry brings it back early.
    async fn start() -> World {
        let dns = TestDns::start().await;
        dns.set_mx("example.net", &[(10, "mx.example.net")]);
        dns.set_a("mx.example.net", &[Ipv4Addr::LOCALHOST]);
        let sink = Sink::start(SinkOptions::default());
        let dir = tempfile::tempdir().expect("tempdir");
        let extra = format!(
            "[api]\nrate_limit = \"1000/s\"\n[delivery]\nenabled = true\nnameservers = [\"{}\"]\nmx_port = {}\nretry_intervals = [\"1h\"]\n[domains]\nretry_intervals = [\"1s\"]\n",
            dns.addr(),
            sink.addr().port()
        );
        let running = util::start_with_key(util::config(dir.path(), &extra), Some(OPERATOR_KEY)).await;
        util::verified_domain(running.http_addr, "sender.test").await;
        World {
            dns,
            sink,
            running,
            _dir: dir,
        }
    }

    fn addr(&self) -> SocketAddr {
        self.running.http_addr
    }

    async fn call(&self, key: &str, method: Method, path: &str, body: Option<Value>) -> util::HttpResponse {
        call(self.addr(), method, path, Some(key), body).await
    }

    /// Sends from `from` with `key`; the email's id.
    async fn send(&self, key: &str, from: &str, to: &str, extra: Value) -> String {
        let mut body = json!({ "from": from, "to": to, "subject": "queued", "text": "Hello." });
        if let (Value::Object(body), Value::Object(extra)) = (&mut body, extra) {
            body.extend(extra);
        }
        let response = self.call(key, Method::POST, "/emails", Some(body)).await;
        assert_eq!(response.status, StatusCode::OK, "{}", response.text());
        response.json()["id"].as_str().expect("id").to_owned()
    }

    /// A new team with a domain verified through DNS; its full-access key.
    async fn team(&self, domain: &str) -> String {
        let team = self
            .call(OPERATOR_KEY, Method::POST, "/teams", Some(json!({ "name": "Tenant" })))
            .await;
        assert_eq!(team.status, StatusCode::CREATED, "{}", team.text());
        let key = team.json()["api_key"]["token"].as_str().expect("token").to_owned();
        let created = self
            .call(
                &key,
                Method::POST,
                "/domains",
                Some(json!({ "name": domain, "dkim_algorithm": "ed25519" })),
            )
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
        let created = created.json();
        self.dns.publish_domain(&created);
        let id = created["id"].as_str().expect("id");
        self.call(&key, Method::POST, &format!("/domains/{id}/verify"), None)
            .await;
        util::eventually(WAIT, "the team's domain is verified", || async {
            let domain = self
                .call(&key, Method::GET, &format!("/domains/{id}"), None)
                .await
                .json();
            (domain["status"] == "verified").then_some(())
        })
        .await;
        key
    }

    /// The queue entry of `id` as `key` sees it, once it is in `status`.
    async fn queued_as(&self, key: &str, id: &str, status: &str) -> Value {
        util::eventually(WAIT, &format!("{id} is {status}"), || async {
            let shown = self.call(key, Method::GET, &format!("/queue/{id}"), None).await;
            let shown = shown.json();
            (shown["status"] == status).then_some(shown)
        })
        .await
    }

    async fn ids(&self, key: &str, query: &str) -> Vec<String> {
        let list = self.call(key, Method::GET, &format!("/queue{query}"), None).await;
        assert_eq!(list.status, StatusCode::OK, "{}", list.text());
        list.json()["data"]
            .as_array()
            .expect("data")
            .iter()
            .map(|m| m["id"].as_str().expect("id").to_owned())
            .collect()
    }

    /// Runs `herald queue ARGS` against the server with `key`; its standard output.
    fn cli(&self, key: &str, args: &[&str]) -> String {
        let output = Command::new(HERALD)
            .arg("queue")
            .args(args)
            .env("HERALD_URL", format!("http://{}", self.addr()))
            .env("HERALD_API_KEY", key)
            .env_remove("RUST_LOG")
            .output()
            .expect("run herald queue");
        assert!(output.status.success(), "herald queue {args:?}: {output:?}");
        String::from_utf8(output.stdout).expect("utf-8")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_is_listed_shown_counted_retried_and_deleted_per_team() {
    let world = World::start().await;
    let team_key = world.team("tenant.test").await;
    let from = "App <app@sender.test>";
    let deferred = world.send(OPERATOR_KEY, from, "defer-a@example.net", json!({})).await;
    let scheduled = world
        .send(
            OPERATOR_KEY,
            from,
            "later@example.net",
            json!({ "scheduled_at": "in 1 hour" }),
        )
        .await;
    let deferonce = world
        .send(OPERATOR_KEY, from, "deferonce-c@example.net", json!({}))
        .await;
    let theirs = world
        .send(&team_key, "Tenant <t@tenant.test>", "defer-d@example.net", json!({}))
        .await;

    // Each first attempt got `451` and waits an hour; the scheduled one waits its time.
    let shown = world.queued_as(OPERATOR_KEY, &deferred, "deferred").await;
    world.queued_as(OPERATOR_KEY, &deferonce, "deferred").await;
    world.queued_as(OPERATOR_KEY, &theirs, "deferred").await;
    world.queued_as(OPERATOR_KEY, &scheduled, "scheduled").await;
    assert_eq!(shown["object"], "queued_email");
    assert_eq!(
        shown["return_path"],
        format!("{deferred}@send.sender.test"),
        "the envelope sender (VERP)"
    );
    assert_eq!(shown["header_from"], "App <app@sender.test>");
    assert_eq!(shown["subject"], "queued");
    assert_eq!(shown["recipients_left"], 1);
    assert_eq!(shown["attempts"], 1);
    assert!(
        shown["last_reply"].as_str().is_some_and(|r| r.contains("451")),
        "{shown}"
    );
    let recipient = &shown["recipient_states"][0];
    assert_eq!(
        (recipient["address"].as_str(), recipient["state"].as_str()),
        (Some("defer-a@example.net"), Some("deferred"))
    );
    assert!(recipient["next_attempt_at"].is_string(), "{shown}");
    let attempt = &shown["attempt_log"][0];
    assert!(attempt["reply"].as_str().is_some_and(|r| r.contains("451")), "{shown}");
    assert_eq!(attempt["recipients"], json!(["defer-a@example.net"]));

    // The operator sees every team's mail, oldest first; filters narrow it.
    let all = vec![deferred.clone(), scheduled.clone(), deferonce.clone(), theirs.clone()];
    assert_eq!(world.ids(OPERATOR_KEY, "").await, all);
    assert_eq!(
        world.ids(OPERATOR_KEY, "?status=scheduled").await,
        vec![scheduled.clone()]
    );
    assert_eq!(
        world.ids(OPERATOR_KEY, "?status=deferred&domain=EXAMPLE.net").await,
        vec![deferred.clone(), deferonce.clone(), theirs.clone()]
    );
    assert!(world.ids(OPERATOR_KEY, "?domain=example.org").await.is_empty());
    let page = world
        .call(OPERATOR_KEY, Method::GET, "/queue?limit=2", None)
        .await
        .json();
    assert_eq!(page["has_more"], true);
    assert_eq!(
        world.ids(OPERATOR_KEY, &format!("?after={scheduled}")).await,
        vec![deferonce.clone(), theirs.clone()]
    );
    let bad = world.call(OPERATOR_KEY, Method::GET, "/queue?status=stuck", None).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text());

    let stats = world.call(OPERATOR_KEY, Method::GET, "/queue/stats", None).await.json();
    assert_eq!(stats["messages"], 4, "{stats}");
    assert_eq!(stats["by_status"]["deferred"], 3, "{stats}");
    assert_eq!(stats["by_status"]["scheduled"], 1, "{stats}");
    assert_eq!(
        stats["by_domain"][0],
        json!({ "domain": "example.net", "messages": 4, "recipients": 4, "deferred": 3 })
    );
    assert_eq!(stats["oldest"]["id"], deferred.as_str());
    // The operator also sees the room each store table takes; every table is listed.
    let tables = stats["tables"].as_array().expect("tables");
    assert_eq!(tables.len(), herald_queue::Table::ALL.len(), "{stats}");
    let emails = tables
        .iter()
        .find(|t| t["table"] == "emails")
        .expect("the emails table");
    assert!(
        emails["disk_bytes"].as_u64().unwrap_or(0) + emails["memory_bytes"].as_u64().unwrap_or(0) > 0,
        "{emails}"
    );

    // A team sees, counts and changes only its own mail; the operator's is not there.
    assert_eq!(world.ids(&team_key, "").await, vec![theirs.clone()]);
    let team_stats = world.call(&team_key, Method::GET, "/queue/stats", None).await.json();
    assert_eq!(team_stats["messages"], 1, "{team_stats}");
    assert_eq!(
        team_stats["tables"],
        json!([]),
        "the host's tables are the operator's to see"
    );
    for (method, path) in [
        (Method::GET, format!("/queue/{deferred}")),
        (Method::POST, format!("/queue/{deferred}/retry")),
        (Method::DELETE, format!("/queue/{deferred}")),
    ] {
        let refused = world.call(&team_key, method, &path, None).await;
        assert_eq!(refused.status, StatusCode::NOT_FOUND, "{path}: {}", refused.text());
    }
    let retried = world
        .call(&team_key, Method::POST, "/queue/retry", Some(json!({ "all": true })))
        .await
        .json();
    assert_eq!(
        (retried["messages"].as_u64(), retried["recipients"].as_u64()),
        (Some(1), Some(1))
    );
    let again = world.queued_as(OPERATOR_KEY, &deferred, "deferred").await;
    assert_eq!(
        again["next_attempt_at"], shown["next_attempt_at"],
        "the team's retry left the operator's mail alone"
    );
    let sending = world
        .call(
            &team_key,
            Method::POST,
            "/api-keys",
            Some(json!({ "name": "s", "permission": "sending_access" })),
        )
        .await
        .json();
    let sending = sending["token"].as_str().expect("token");
    let restricted = world.call(sending, Method::GET, "/queue", None).await;
    assert_eq!(restricted.status, StatusCode::UNAUTHORIZED, "{}", restricted.text());

    // Retrying makes a deferred recipient due now: `deferonce` is accepted the second time.
    let not_deferred = world
        .call(OPERATOR_KEY, Method::POST, &format!("/queue/{scheduled}/retry"), None)
        .await;
    assert_eq!(
        not_deferred.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        not_deferred.text()
    );
    let cli = world.cli(OPERATOR_KEY, &["retry", &deferonce]);
    assert!(cli.contains("1 recipients of 1 emails brought forward"), "{cli}");
    util::eventually(WAIT, "the retried email is delivered", || async {
        let gone = world
            .call(OPERATOR_KEY, Method::GET, &format!("/queue/{deferonce}"), None)
            .await;
        (gone.status == StatusCode::NOT_FOUND).then_some(())
    })
    .await;
    assert!(
        world
            .sink
            .received()
            .iter()
            .any(|m| m.rcpt_to == ["deferonce-c@example.net"]),
        "the sink has it"
    );

    // The command line shows the same queue.
    let listed = world.cli(OPERATOR_KEY, &["list", "--status", "deferred"]);
    assert!(listed.contains(&deferred) && listed.contains(&theirs), "{listed}");
    assert!(!listed.contains(&scheduled), "{listed}");
    assert!(listed.contains("451"), "{listed}");
    let shown = world.cli(OPERATOR_KEY, &["show", &deferred]);
    assert!(
        shown.contains("defer-a@example.net") && shown.contains("deferred"),
        "{shown}"
    );
    let counted = world.cli(&team_key, &["stats"]);
    assert!(
        counted.contains("1 emails") && counted.contains("example.net"),
        "{counted}"
    );

    // Deleting cancels what is left, with an event per recipient, and the email says so.
    let deleted = world.cli(&team_key, &["delete", &theirs]);
    assert!(deleted.contains("1 recipients canceled"), "{deleted}");
    let email = world
        .call(&team_key, Method::GET, &format!("/emails/{theirs}"), None)
        .await
        .json();
    assert_eq!(email["last_event"], "canceled", "{email}");
    let id: Id = theirs.parse().expect("id");
    let events = world.running.state.emails().timeline(id).expect("the timeline");
    assert!(
        events
            .iter()
            .any(|e| e.kind == EmailState::Canceled && e.data["to"] == json!(["defer-d@example.net"])),
        "{events:?}"
    );
    assert_eq!(world.ids(OPERATOR_KEY, "").await, vec![deferred, scheduled]);
    world.running.shutdown().await;
}
