//! Secrets at rest (issue #8): the real `herald` binary, logging at `trace`, is put through
//! everything that handles a secret: the bootstrap key from `HERALD_BOOTSTRAP_API_KEY`, a
//! created API key (its token answered once), two domains (an Ed25519 and an RSA DKIM
//! key, both used to sign delivered mail), a webhook (its signing secret used to sign
//! requests), a wrong bearer token and a wrong SMTP password. Once it has stopped:
//!
//! - no log line holds any of those secrets, the base64 of an `AUTH PLAIN` carrying one,
//!   a DKIM private key, or the start of one (`PRIVATE KEY`, the base64 PKCS#8 prefixes);
//! - the data directory is mode 0700, and nothing inside it (the spool's files, the TLS
//!   key, the bootstrap key file) is open to group or others either;
//! - API keys are stored hashed: no key or value of any table, and no byte of any file
//!   under the data directory, holds a token; their SHA-256 digests are there instead.

mod util;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use herald::domains::{Domain, KeyAlgorithm};
use herald_queue::{Scan, Store, StoreOptions, Table};
use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use util::process::{Log, Process};
use util::sink::{Sink, SinkOptions};
use util::webhook_receiver::Receiver;
use util::{OPERATOR_KEY, call, copy_tree};

/// The bound on a start, a stop, and the deliveries and webhook requests.
const WAIT: Duration = Duration::from_secs(20);
/// A well-formed token herald never issued.
const WRONG_TOKEN: &str = "re_wrong_token_that_was_never_issued_0123";
/// Ed25519 and RSA-2048 private keys as base64 PKCS#8 begin with these. `MIIE` alone also
/// begins a 2048-bit certificate, which is no secret; the `v` makes it a private key's.
const PKCS8_PREFIXES: &[&str] = &["MC4CAQAw", "MIIEv"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_reach_the_log_the_data_directory_is_private_and_tokens_are_stored_hashed() {
    let started = Instant::now();
    // STARTTLS at the sink puts herald's outbound TLS client under the trace log too.
    let sink = Sink::start(SinkOptions {
        starttls: true,
        ..SinkOptions::default()
    });
    let receiver = Receiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), sink.addr());
    let log = Log::default();
    let mut herald = Process::start(&config, &log, 0, WAIT).await;
    let http = herald.http;
    let smtps = herald.smtp[0];

    verified_domain(http, "ed25519.test", "ed25519").await;
    verified_domain(http, "rsa.test", "rsa").await;
    let created = call(
        http,
        Method::POST,
        "/api-keys",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "secrets test" })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let token = created.json()["token"].as_str().expect("token").to_owned();
    let listed = call(http, Method::GET, "/api-keys", Some(&token), None).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text());
    assert!(
        !listed.text().contains(&token),
        "GET /api-keys shows a token again: {}",
        listed.text()
    );
    let webhook = call(
        http,
        Method::POST,
        "/webhooks",
        Some(&token),
        Some(json!({ "endpoint": format!("http://{}/hook", receiver.addr()), "events": ["email.delivered"] })),
    )
    .await;
    assert_eq!(webhook.status, StatusCode::CREATED, "{}", webhook.text());
    let signing_secret = webhook.json()["signing_secret"]
        .as_str()
        .expect("signing_secret")
        .to_owned();

    // Mail signed with each DKIM key: two by the API with the created key, one by SMTP
    // with it as the password.
    for domain in ["ed25519.test", "rsa.test"] {
        let body = json!({ "from": format!("app@{domain}"), "to": "user@example.net", "subject": "hi", "text": "hi" });
        let sent = call(http, Method::POST, "/emails", Some(&token), Some(body)).await;
        assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    }
    let transcript = util::smtps_transcript(smtps, &submission(&token)).await;
    assert!(transcript.contains("250 2.0.0 OK "), "{transcript}");

    // Wrong credentials, last: failed AUTH slows the address's later attempts.
    let refused = call(http, Method::GET, "/domains", Some(WRONG_TOKEN), None).await;
    // Resend answers a key it does not know with 403 `invalid_api_key`, and so does herald.
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
    let transcript = util::smtps_transcript(
        smtps,
        &format!("EHLO c\r\nAUTH PLAIN {}\r\nQUIT\r\n", util::auth_plain(WRONG_TOKEN)),
    )
    .await;
    assert!(transcript.contains("\r\n535 "), "{transcript}");

    let delivered = sink.wait_for(3, WAIT).await;
    for message in &delivered {
        assert!(message.tls, "delivered without STARTTLS");
        assert!(
            message.text().contains("DKIM-Signature:"),
            "delivered unsigned: {}",
            message.text()
        );
    }
    receiver.wait_for_len(3, WAIT).await;
    for request in receiver.all() {
        request.verify(&signing_secret);
    }
    herald.terminate(WAIT).await;

    let at_rest = AtRest::read(&dir.path().join("data"));
    let tokens = [OPERATOR_KEY, token.as_str(), WRONG_TOKEN];
    let mut secrets: Vec<(&str, String)> = vec![
        ("the bootstrap key", OPERATOR_KEY.to_owned()),
        ("the created API key", token.clone()),
        ("the wrong bearer token", WRONG_TOKEN.to_owned()),
        ("the webhook signing secret", signing_secret.clone()),
        (
            "the webhook signing key",
            signing_secret.trim_start_matches("whsec_").to_owned(),
        ),
        ("AUTH PLAIN with the created key", util::auth_plain(&token)),
        ("AUTH PLAIN with the wrong token", util::auth_plain(WRONG_TOKEN)),
        ("a private key in PEM", "PRIVATE KEY".to_owned()),
    ];
    secrets.extend(
        PKCS8_PREFIXES
            .iter()
            .map(|p| ("a PKCS#8 private key's start", (*p).to_owned())),
    );
    for (algorithm, key) in &at_rest.dkim_keys {
        secrets.push((algorithm, key.clone()));
    }
    assert_eq!(at_rest.dkim_keys.len(), 2, "both domains' keys are in the store");

    // (a) The log, at trace level, holds none of them. Herald's last line is `stopped`;
    // once it is read, so is everything before it.
    wait_for_line(&log, "\"stopped\"").await;
    let lines = log.matching("");
    let verbose = lines
        .iter()
        .filter(|l| l.contains(r#""level":"DEBUG""#) || l.contains(r#""level":"TRACE""#))
        .count();
    let leaks: Vec<String> = secrets
        .iter()
        .flat_map(|(what, secret)| {
            lines
                .iter()
                .filter(move |line| line.contains(secret.as_str()))
                .map(move |line| format!("{what}: {line}"))
        })
        .collect();
    assert!(leaks.is_empty(), "secrets in the log: {leaks:#?}");

    // (b) The data directory is private to herald.
    assert_eq!(
        at_rest.data_dir_mode & 0o077,
        0,
        "the data directory is mode {:o}: group or others can reach the spool, DKIM keys and webhook secrets",
        at_rest.data_dir_mode
    );
    // Everything inside too: herald runs with umask 077, whatever it was started with.
    for (path, mode) in &at_rest.modes {
        assert_eq!(mode & 0o077, 0, "{} is mode {mode:o}", path.display());
    }

    // (c) Tokens are stored only as digests.
    for token in tokens {
        let found = at_rest.tables_containing(token.as_bytes());
        assert!(found.is_empty(), "a token is stored as it is, in {found:?}");
        let found = at_rest.files_containing(token.as_bytes());
        assert!(found.is_empty(), "a token is written as it is, in {found:?}");
    }
    for created in [OPERATOR_KEY, token.as_str()] {
        let digest = Sha256::digest(created.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert!(
            at_rest
                .tables_containing(hex.as_bytes())
                .contains(&Table::API_KEYS.name()),
            "the key records hold the token's SHA-256"
        );
        assert!(
            at_rest
                .tables_containing(&digest)
                .contains(&Table::API_KEY_DIGESTS.name()),
            "the lookup is keyed by the token's SHA-256"
        );
    }
    // The file scan sees what is written: the write-ahead log holds the webhook's secret.
    assert!(
        !at_rest.files_containing(signing_secret.as_bytes()).is_empty(),
        "no file holds the webhook's signing secret: the file scan reads nothing"
    );
    // The request log keeps `POST /api-keys` with its answer's token redacted.
    assert!(
        at_rest.tables_containing(b"<redacted>").contains(&Table::LOGS.name()),
        "the request log has no redacted body"
    );
    // The scan sees stored secrets: the webhook's must be kept as it is, to sign with.
    assert!(
        at_rest
            .tables_containing(signing_secret.as_bytes())
            .contains(&Table::WEBHOOKS.name()),
        "the scan did not find the webhook's signing secret"
    );

    let data_dir = dir.path().join("data");
    let loose: Vec<String> = at_rest
        .modes
        .iter()
        .filter(|(_, mode)| mode & 0o077 != 0)
        .map(|(path, mode)| format!("{} {mode:o}", path.strip_prefix(&data_dir).unwrap_or(path).display()))
        .collect();
    println!(
        "{} log lines ({verbose} at debug or trace) hold none of {} secrets; data directory mode {:o}, \
         {} entries under it, of them open to group or others but for it: {loose:?}; \
         {} table entries and {} files hold no token; whole test {:.1?}",
        lines.len(),
        secrets.len(),
        at_rest.data_dir_mode,
        at_rest.modes.len(),
        at_rest.tables.iter().map(|(_, entries)| entries.len()).sum::<usize>(),
        at_rest.files.len(),
        started.elapsed()
    );
}

/// What a stopped herald left in its data directory.
struct AtRest {
    data_dir_mode: u32,
    /// Every file and directory under the data directory, with its permission bits.
    modes: Vec<(PathBuf, u32)>,
    /// Every file's bytes.
    files: Vec<(PathBuf, Vec<u8>)>,
    /// Every table's raw keys and values.
    tables: Vec<(&'static str, Vec<herald_queue::RawEntry>)>,
    /// The domains' DKIM private keys (base64 PKCS#8), by algorithm.
    dkim_keys: Vec<(&'static str, String)>,
}

impl AtRest {
    /// Reads `data_dir`, opening the store from a copy so the test leaves the original as
    /// herald closed it.
    fn read(data_dir: &Path) -> AtRest {
        let mut modes = Vec::new();
        let mut files = Vec::new();
        walk(data_dir, &mut modes, &mut files);
        let copy = tempfile::tempdir().expect("tempdir");
        copy_tree(&data_dir.join("spool"), copy.path());
        let mut options = StoreOptions::new(copy.path());
        options.min_free_space = 0;
        let store = Store::open(options).expect("the spool's copy opens");
        let tables = Table::ALL
            .iter()
            .map(|table| {
                let entries = store.scan_raw(*table, Scan::prefix(b"")).expect("scan a table");
                (table.name(), entries)
            })
            .collect();
        let dkim_keys = store
            .scan::<Domain>(Scan::prefix(b""))
            .expect("scan domains")
            .into_iter()
            .map(|(_, domain)| {
                let algorithm = match domain.dkim.algorithm {
                    KeyAlgorithm::Rsa => "the RSA DKIM private key",
                    KeyAlgorithm::Ed25519 => "the Ed25519 DKIM private key",
                };
                (algorithm, domain.dkim.private_pkcs8)
            })
            .collect();
        let data_dir_mode = std::fs::metadata(data_dir).expect("data dir").permissions().mode() & 0o777;
        AtRest {
            data_dir_mode,
            modes,
            files,
            tables,
            dkim_keys,
        }
    }

    /// The tables with `needle` in a key or a value.
    fn tables_containing(&self, needle: &[u8]) -> Vec<&'static str> {
        self.tables
            .iter()
            .filter(|(_, entries)| {
                entries
                    .iter()
                    .any(|(key, value)| contains(key, needle) || contains(value, needle))
            })
            .map(|(name, _)| *name)
            .collect()
    }

    /// The files with `needle` in them. The write-ahead log holds every write as it was
    /// made, overwritten and deleted values too; table files are LZ4-compressed, where a
    /// short string can hide, which is why the tables are also read through the store.
    fn files_containing(&self, needle: &[u8]) -> Vec<&Path> {
        self.files
            .iter()
            .filter(|(_, bytes)| contains(bytes, needle))
            .map(|(path, _)| path.as_path())
            .collect()
    }
}

fn walk(dir: &Path, modes: &mut Vec<(PathBuf, u32)>, files: &mut Vec<(PathBuf, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).expect("read the data directory") {
        let entry = entry.expect("directory entry");
        let path = entry.path();
        let meta = entry.metadata().expect("metadata");
        modes.push((path.clone(), meta.permissions().mode() & 0o777));
        if meta.is_dir() {
            walk(&path, modes, files);
        } else if meta.is_file() {
            files.push((path.clone(), std::fs::read(&path).expect("read a file")));
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

/// Adds `name` with a DKIM key of `algorithm` and marks it verified without DNS.
async fn verified_domain(http: SocketAddr, name: &str, algorithm: &str) {
    let body = json!({ "name": name, "dkim_algorithm": algorithm });
    let domain = call(http, Method::POST, "/domains", Some(OPERATOR_KEY), Some(body)).await;
    assert_eq!(domain.status, StatusCode::CREATED, "{}", domain.text());
    let domain: Value = domain.json();
    assert!(
        !domain.to_string().contains("MC4CAQAw") && !domain.to_string().contains("MIIEv"),
        "POST /domains answered a private key: {domain}"
    );
    let id = domain["id"].as_str().expect("id");
    let verified = call(
        http,
        Method::POST,
        &format!("/domains/{id}/verify"),
        Some(OPERATOR_KEY),
        Some(json!({ "skip_dns": true })),
    )
    .await;
    assert_eq!(verified.status, StatusCode::OK, "{}", verified.text());
}

/// An SMTP submission authenticated with `token`, then QUIT.
fn submission(token: &str) -> String {
    format!(
        "EHLO c\r\nAUTH PLAIN {}\r\nMAIL FROM:<app@ed25519.test>\r\nRCPT TO:<user@example.net>\r\nDATA\r\n\
         From: app@ed25519.test\r\nTo: user@example.net\r\nSubject: by SMTP\r\n\r\nhi\r\n.\r\nQUIT\r\n",
        util::auth_plain(token)
    )
}

/// JSON logs at `trace`, delivery through the sink, and webhooks allowed to loopback.
fn write_config(dir: &Path, sink: SocketAddr) -> PathBuf {
    let extra = format!(
        r#"[log]
format = "json"
level = "trace"
[delivery]
enabled = true
relay = "{sink}"
retry_intervals = ["1s"]
[webhooks]
allowed_networks = ["127.0.0.0/8"]
retry_intervals = ["1s"]
"#
    );
    util::real::write_config(dir, Duration::from_secs(5), &extra)
}

/// Waits until the log has a line containing `needle`.
async fn wait_for_line(log: &Log, needle: &str) {
    let deadline = Instant::now() + WAIT;
    while log.matching(needle).is_empty() {
        assert!(Instant::now() < deadline, "no log line with {needle} within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
