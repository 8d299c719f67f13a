//! The herald under test, on loopback with a verified domain, and the checks every test
//! makes after an abuse: nothing was recorded that should not be, and it still serves.

use std::net::{IpAddr, SocketAddr};

use hyper::{Method, StatusCode};

use super::client::Client;
use crate::util::{self, OPERATOR_KEY};
use crate::{DOMAIN, LOCAL, SENDER, message};

/// Herald on loopback with `example.test` verified for the operator's team, and the number
/// of messages it should hold.
pub(super) struct Server {
    pub(super) running: herald::server::Running,
    pub(super) expected: usize,
    _dir: tempfile::TempDir,
}

/// The test config in `dir`: `smtp` added to its `[smtp]` table, both listeners `mx` as
/// given, `tail` (more tables) at the end.
fn config(dir: &tempfile::TempDir, smtp: &str, mx: bool, tail: &str) -> herald::config::Config {
    let mut text = util::config_text(dir.path(), "[api]\nrate_limit = \"1000/s\"\n").replacen(
        "[smtp]\n",
        &format!("[smtp]\n{smtp}\n"),
        1,
    );
    if mx {
        text = text
            .replace("tls = \"starttls\" }", "tls = \"starttls\", mx = true }")
            .replace("tls = \"implicit\" }", "tls = \"implicit\", mx = true }");
        assert!(text.contains("mx = true"), "{text}");
    }
    text.push_str(tail);
    herald::config::Config::from_toml(&text, None).expect("test config is valid")
}

impl Server {
    /// Starts herald with `smtp` added to its `[smtp]` table.
    pub(super) async fn start(smtp: &str) -> Server {
        Server::start_with(smtp, false).await
    }

    async fn start_with(smtp: &str, mx: bool) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let running = util::start_with_key(config(&dir, smtp, mx, ""), Some(OPERATOR_KEY)).await;
        util::verified_domain(running.http_addr, DOMAIN).await;
        Server {
            running,
            expected: 0,
            _dir: dir,
        }
    }

    /// Starts herald as [`Server::start`] does (both listeners `mx` as given), then again
    /// on the same data with clients from `network` trusted as the operator's key (whose id
    /// exists only once herald has made it).
    pub(super) async fn start_trusted(smtp: &str, mx: bool, network: &str) -> Server {
        let first = Server::start_with(smtp, mx).await;
        let keys = util::call(first.http(), Method::GET, "/api-keys", Some(OPERATOR_KEY), None).await;
        let key_id = keys.json()["data"][0]["id"]
            .as_str()
            .expect("the operator's key")
            .to_owned();
        let Server { running, _dir: dir, .. } = first;
        assert!(running.shutdown().await);
        let trusted = format!("[[smtp.trusted]]\nnetwork = \"{network}\"\napi_key_id = \"{key_id}\"\n");
        let running = util::start_with_key(config(&dir, smtp, mx, &trusted), Some(OPERATOR_KEY)).await;
        Server {
            running,
            expected: 0,
            _dir: dir,
        }
    }

    pub(super) fn http(&self) -> SocketAddr {
        self.running.http_addr
    }

    pub(super) fn starttls(&self) -> SocketAddr {
        self.running.smtp[0].1
    }

    pub(super) fn implicit(&self) -> SocketAddr {
        self.running.smtp[1].1
    }

    /// The ids `GET /emails` lists for the operator's team, page by page, and the depth
    /// of the spool (every team's messages: delivery is off in tests).
    pub(super) async fn recorded(&self) -> (Vec<String>, u64) {
        let mut ids = Vec::new();
        let mut path = "/emails?limit=100".to_owned();
        loop {
            let page = util::call(self.http(), Method::GET, &path, Some(OPERATOR_KEY), None).await;
            assert_eq!(page.status, StatusCode::OK, "{}", page.text());
            let page = page.json();
            let data = page["data"].as_array().expect("data");
            ids.extend(data.iter().filter_map(|email| email["id"].as_str().map(str::to_owned)));
            match (page["has_more"].as_bool(), ids.last()) {
                (Some(true), Some(last)) => path = format!("/emails?limit=100&after={last}"),
                _ => break,
            }
        }
        (ids, self.running.state.spool().depth())
    }

    /// Fails unless herald holds exactly the messages it should.
    pub(super) async fn check_recorded(&self) -> Result<(), String> {
        let (ids, depth) = self.recorded().await;
        if ids.len() == self.expected && depth == self.expected as u64 {
            Ok(())
        } else {
            Err(format!(
                "herald lists {} emails and spools {depth}; {} expected",
                ids.len(),
                self.expected
            ))
        }
    }

    /// After a failed row, counts what herald holds now so that the next row is judged
    /// on its own.
    pub(super) async fn resync(&mut self) {
        self.expected = self.recorded().await.0.len();
    }

    /// `/healthz` answers 200 and a fresh client from `from` authenticates and submits a
    /// message: its id.
    pub(super) async fn serves(&self, from: IpAddr) -> Result<String, String> {
        let health = util::get(self.http(), "/healthz").await;
        if health.status != StatusCode::OK {
            return Err(format!("/healthz answered {}: {}", health.status, health.text()));
        }
        let mut client = Client::implicit(self.implicit(), from).await?;
        let outcome = async {
            client.command("EHLO client.test", 250, "").await?;
            let auth = format!("AUTH PLAIN {}", util::auth_plain(OPERATOR_KEY));
            client.command(&auth, 235, "2.7.0").await?;
            client.command(&format!("MAIL FROM:<{SENDER}>"), 250, "2.1.0").await?;
            client.command("RCPT TO:<user@example.org>", 250, "2.1.5").await?;
            client.command("DATA", 354, "").await?;
            let done = format!("{}.", message(SENDER, "healthy"));
            let accepted = client.command(&done, 250, "2.0.0").await?;
            client.command("QUIT", 221, "2.0.0").await?;
            accepted
                .text
                .strip_prefix("250 2.0.0 OK ")
                .map(str::to_owned)
                .ok_or_else(|| format!("no id in {}", accepted.text))
        }
        .await;
        outcome.map_err(|why| format!("{why}\n{}", client.transcript))
    }

    /// [`Server::serves`], then checks that exactly that message was added.
    pub(super) async fn check_healthy(&mut self, from: IpAddr) -> Result<(), String> {
        self.serves(from).await?;
        self.expected += 1;
        self.check_recorded().await
    }

    /// After a table row: notes in `failures` why the row failed (its own `outcome`, or
    /// mail recorded that should not be), then checks that herald still serves, and stops
    /// the table if it does not.
    pub(super) async fn after_row(&mut self, name: &str, outcome: Result<(), String>, failures: &mut Vec<String>) {
        let recorded = self.check_recorded().await;
        let whys: Vec<String> = [outcome.err(), recorded.err()].into_iter().flatten().collect();
        if !whys.is_empty() {
            failures.push(format!("[{name}] {}", whys.join("\n")));
        }
        self.resync().await;
        if let Err(why) = self.check_healthy(LOCAL).await {
            panic!("after [{name}] herald stopped serving: {why}");
        }
    }
}

/// Fails with every failed row of a table of `rows` `kind` cases.
pub(super) fn assert_rows_passed(kind: &str, rows: usize, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} of {rows} {kind} cases failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
