//! Helpers for tests of the real `herald` binary ([`Process`](super::process::Process)):
//! its config file, waiting on conditions from async code, load clients, and the sink's
//! receipts.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

/// How often [`wait_until`] checks its condition.
const POLL: Duration = Duration::from_millis(10);

/// Writes `dir/herald.toml`: loopback port 0 everywhere, one SMTPS listener, data in
/// `dir/data`, `grace` to shut down, then `extra` (which must set `[log] format = "json"`
/// for [`Process`](super::process::Process)); its path.
pub fn write_config(dir: &Path, grace: Duration, extra: &str) -> PathBuf {
    let base = super::base_config(dir, grace, r#"{ addr = "127.0.0.1:0", tls = "implicit" }"#);
    let path = dir.join("herald.toml");
    std::fs::write(&path, format!("{base}{extra}")).expect("write config");
    path
}

/// The config sections of a load test, for [`write_config`]: a rate limit no load
/// reaches, JSON logs, and delivery through the SMTP sink at `sink` with a one-second
/// retry.
pub fn load_sections(sink: SocketAddr) -> String {
    format!(
        r#"[api]
rate_limit = "10000/s"
[log]
format = "json"
[delivery]
enabled = true
relay = "{sink}"
retry_intervals = ["1s"]
connect_timeout = "2s"
command_timeout = "10s"
"#
    )
}

/// Checks `done` every [`POLL`] until it holds; panics after `timeout` with `what`.
pub async fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool, what: impl Fn() -> String) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {}",
            what()
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Waits up to `timeout` for every load client to finish; panics if one panicked or
/// they did not.
pub async fn join_clients(clients: &mut JoinSet<()>, timeout: Duration) {
    let joined = tokio::time::timeout(timeout, async {
        while let Some(client) = clients.join_next().await {
            client.expect("a load client panicked");
        }
    })
    .await;
    assert!(joined.is_ok(), "the load clients did not stop within {timeout:?}");
}

/// The email id in herald's VERP envelope sender `<id>@<return-path host>`.
pub fn email_id_of(received: &super::sink::Received) -> String {
    let (id, _) = received
        .mail_from
        .split_once('@')
        .unwrap_or_else(|| panic!("envelope sender {:?} is not VERP", received.mail_from));
    id.to_owned()
}
