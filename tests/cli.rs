//! The `herald` binary: config errors and exit codes, `herald config`, a real start with
//! signals, the bootstrap key from the environment, and the privileged-port rule.

mod util;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use herald::accounts::{ApiKeyDigest, Token};
use herald_queue::{Store, StoreOptions};

const HERALD: &str = env!("CARGO_BIN_EXE_herald");

fn herald(dir: &Path) -> Command {
    let mut command = Command::new(HERALD);
    command
        .current_dir(dir)
        .env_remove("HERALD_BOOTSTRAP_API_KEY")
        .env_remove("RUST_LOG");
    command
}

#[test]
fn config_prints_the_effective_defaults() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = herald(dir.path()).arg("config").output().expect("run");
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).expect("utf-8");
    assert!(text.contains("from the built-in defaults"), "{text}");
    assert!(text.contains("listen = \"127.0.0.1:3000\""), "{text}");
    assert!(text.contains("addr = \"0.0.0.0:2587\""), "{text}");
    assert!(text.contains("message_lifetime = \"3days\""), "{text}");
    assert!(text.contains("rate_limit = \"50/s\""), "{text}");
}

#[test]
fn config_reads_herald_toml_from_the_working_directory_and_redacts_secrets() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("herald.toml"),
        "[delivery]\nrelay = \"smtp.example.net:587\"\nrelay_username = \"u\"\nrelay_password = \"hunter2\"\n",
    )
    .expect("write");
    let output = herald(dir.path()).arg("config").output().expect("run");
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).expect("utf-8");
    assert!(text.contains("relay = \"smtp.example.net:587\""), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains("<redacted>"), "{text}");
}

#[test]
fn config_errors_exit_2_naming_the_file_and_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = herald(dir.path())
        .args(["serve", "--config", "nowhere.toml"])
        .output()
        .expect("run");
    assert_eq!(missing.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.contains("nowhere.toml") && stderr.contains("cannot read"),
        "{stderr}"
    );

    let file = dir.path().join("bad.toml");
    std::fs::write(&file, "[smtp]\nlistenerz = []\n").expect("write");
    let unknown = herald(dir.path())
        .args(["serve", "--config"])
        .arg(&file)
        .output()
        .expect("run");
    assert_eq!(unknown.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(stderr.contains("bad.toml") && stderr.contains("listenerz"), "{stderr}");

    std::fs::write(&file, "[delivery]\nmessage_lifetime = \"forever\"\n").expect("write");
    let bad = herald(dir.path())
        .args(["config", "--config"])
        .arg(&file)
        .output()
        .expect("run");
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("`delivery.message_lifetime`") && stderr.contains("forever"),
        "{stderr}"
    );
}

/// A running `herald serve` whose JSON log lines arrive on a channel.
struct Server {
    child: Child,
    lines: mpsc::Receiver<serde_json::Value>,
}

impl Server {
    fn start(dir: &Path, env: &[(&str, &str)]) -> Server {
        let config = dir.join("herald.toml");
        std::fs::write(&config, util::config_text(dir, "[log]\nformat = \"json\"\n")).expect("write config");
        let mut command = herald(dir);
        command
            .args(["serve", "--config"])
            .arg(&config)
            .stderr(Stdio::piped())
            .stdout(Stdio::null());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("spawn herald");
        let stderr = child.stderr.take().expect("stderr");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(value) = serde_json::from_str(&line) {
                    let _ = sender.send(value);
                }
            }
        });
        Server { child, lines }
    }

    /// Waits for the log line whose message is `message`.
    fn wait_for(&self, message: &str) -> serde_json::Value {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no {message:?} log line"));
            if line["message"] == message {
                return line;
            }
        }
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args(["-s", signal, &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
    }

    fn wait_exit(&mut self) -> std::process::ExitStatus {
        let mut status = None;
        util::wait_until(Duration::from_secs(30), "herald to exit", || {
            status = self.child.try_wait().expect("try_wait");
            status.is_some()
        });
        status.expect("exited")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn serve_starts_answers_reloads_on_sighup_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = "re_from_the_environment_0123456789";
    let mut server = Server::start(dir.path(), &[("HERALD_BOOTSTRAP_API_KEY", token)]);
    let ready = server.wait_for("herald is ready");
    let addr = ready["http"]
        .as_str()
        .expect("http address")
        .parse()
        .expect("socket address");
    let health = util::get(addr, "/healthz").await;
    assert_eq!(health.status, hyper::StatusCode::OK);

    server.signal("HUP");
    server.wait_for("reloaded TLS certificates");

    server.signal("TERM");
    let status = server.wait_exit();
    assert!(status.success(), "{status:?}");

    // The environment's token became the first key; no key file was written.
    assert!(!dir.path().join("data/bootstrap-api-key").exists());
    let mut options = StoreOptions::new(dir.path().join("data/spool"));
    options.min_free_space = 0;
    let store = Store::open(options).expect("store reopens after a clean stop");
    // Where the node keeps its records (on PostgreSQL, the key is there, and the requests
    // above authenticated with it).
    if !util::on_postgres() {
        let digest = Token::parse(token).expect("token").digest();
        assert!(store.get::<ApiKeyDigest>(digest).expect("get").is_some());
    }
}

#[test]
fn a_configured_privileged_listener_fails_the_start_for_a_non_root_user() {
    if !is_root() {
        // Without root this process cannot switch to another user; the rule itself is
        // covered by the unit tests of `smtp::bind`.
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).expect("chmod");
    let config = dir.path().join("herald.toml");
    let text = util::config_text(dir.path(), "").replace(
        "{ addr = \"127.0.0.1:0\", tls = \"starttls\" }",
        "{ addr = \"127.0.0.1:25\", tls = \"starttls\" }",
    );
    std::fs::write(&config, text).expect("write");
    std::fs::set_permissions(&config, std::os::unix::fs::PermissionsExt::from_mode(0o644)).expect("chmod");
    let output = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            HERALD,
            "serve",
            "--config",
        ])
        .arg(&config)
        .current_dir(dir.path())
        .env_remove("HERALD_BOOTSTRAP_API_KEY")
        .output()
        .expect("run as nobody");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("smtp.listeners[0]"), "{stderr}");
    assert!(stderr.contains("127.0.0.1:25"), "{stderr}");
    assert!(stderr.contains("CAP_NET_BIND_SERVICE"), "{stderr}");
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

fn admin(dir: &Path, url: &str, key: Option<&str>, args: &[&str]) -> (bool, String, String) {
    let mut command = herald(dir);
    command
        .args(args)
        .arg("--config")
        .arg(dir.join("herald.toml"))
        .arg("--url")
        .arg(url);
    if let Some(key) = key {
        command.env("HERALD_API_KEY", key);
    }
    let output = command.output().expect("run herald");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_command_line_manages_domains_keys_and_teams_through_the_api() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), &[]);
    let ready = server.wait_for("herald is ready");
    let url = format!("http://{}", ready["http"].as_str().expect("http address"));
    let dir = dir.path();

    // Without HERALD_API_KEY the bootstrap key file in the data directory is used.
    let (ok, out, err) = admin(
        dir,
        &url,
        None,
        &["domains", "add", "example.test", "--dkim-algorithm", "ed25519"],
    );
    assert!(ok, "{err}");
    assert!(
        out.contains("added example.test") && out.contains("in us-east-1"),
        "{out}"
    );
    assert!(
        out.contains("herald._domainkey.example.test") && out.contains("k=ed25519"),
        "{out}"
    );
    assert!(
        out.contains("send.example.test") && out.contains("v=spf1 a:herald.test ~all"),
        "{out}"
    );

    let (ok, out, err) = admin(dir, &url, None, &["domains", "verify", "example.test", "--skip-dns"]);
    assert!(ok, "{err}");
    assert!(out.contains("example.test: verified"), "{out}");
    let (_, out, _) = admin(dir, &url, None, &["domains", "list"]);
    assert!(
        out.lines()
            .any(|l| l.contains("verified") && l.contains("us-east-1") && l.contains("example.test")),
        "{out}"
    );
    // A region this server does not run is refused with the ones it does.
    let (ok, _, err) = admin(
        dir,
        &url,
        None,
        &["domains", "add", "eu.example.test", "--region", "eu-west-1"],
    );
    assert!(!ok, "{err}");
    assert!(err.contains("us-east-1") && err.contains("eu-west-1"), "{err}");

    let (ok, out, err) = admin(
        dir,
        &url,
        None,
        &["keys", "create", "deploy", "--sending-only", "--domain", "example.test"],
    );
    assert!(ok, "{err}");
    let token = out
        .lines()
        .find_map(|l| l.strip_prefix("token (shown only now): "))
        .expect("token printed")
        .to_owned();
    let id = out
        .lines()
        .find_map(|l| l.strip_prefix("created key "))
        .expect("id printed")
        .to_owned();
    let (_, out, _) = admin(dir, &url, None, &["keys", "list"]);
    assert!(
        out.lines()
            .any(|l| l.contains(&id) && l.contains("sending_access") && l.ends_with("deploy")),
        "{out}"
    );
    let (ok, _, err) = admin(dir, &url, Some(&token), &["domains", "list"]);
    assert!(!ok && err.contains("restricted_api_key"), "{err}");
    let (ok, out, err) = admin(dir, &url, None, &["keys", "revoke", &id]);
    assert!(ok && out.contains("revoked"), "{err}");

    let (ok, out, err) = admin(dir, &url, None, &["teams", "create", "Acme", "--rate-limit", "10/s"]);
    assert!(ok, "{err}");
    let acme = out
        .lines()
        .find_map(|l| l.strip_prefix("its first API key (shown only now): "))
        .expect("key")
        .to_owned();
    // `--plan` reaches the API, which names what is wrong: this server has no plans.
    let (ok, _, err) = admin(dir, &url, None, &["teams", "create", "Beta", "--plan", "free"]);
    assert!(
        !ok && err.contains("there is no plan `free`, and none is configured"),
        "{err}"
    );
    let (ok, _, err) = admin(dir, &url, Some(&acme), &["teams", "create", "Rogue"]);
    assert!(
        !ok && err.contains("invalid_access"),
        "only the operator creates teams: {err}"
    );
    let (_, out, _) = admin(dir, &url, Some(&acme), &["domains", "list"]);
    assert!(!out.contains("example.test"), "teams see only their own domains: {out}");

    let (ok, _, err) = admin(dir, &url, Some("re_wrong_key_0123456789"), &["domains", "list"]);
    assert!(!ok && err.contains("invalid_api_key"), "{err}");
    let (ok, _, err) = admin(dir, "http://127.0.0.1:1", None, &["domains", "list"]);
    assert!(!ok && err.contains("cannot reach herald"), "{err}");
    drop(server);
}
