//! Storage faults (issue #8): a data directory on a small tmpfs is filled below
//! `[spool] min_free_space`. SMTP answers `452 4.3.1` and the API `503
//! service_unavailable`, `/healthz` says why, nothing accepted before is lost, and
//! acceptance resumes by itself once the space is back.
//!
//! Mounting a tmpfs needs root (CI and the development machines run tests as root); as
//! another user the test says so and returns.

mod util;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use hyper::{Method, StatusCode};
use serde_json::json;
use util::{OPERATOR_KEY, call};

/// The file system's size.
const TMPFS_SIZE: &str = "256m";
/// Free space below which new mail is refused.
const MINIMUM: u64 = 64 << 20;
/// The bound on waiting for the guard to notice a change (it rereads every 250 ms).
const NOTICE: Duration = Duration::from_secs(10);

/// A tmpfs mounted for the test's lifetime.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path) -> Option<Tmpfs> {
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={TMPFS_SIZE}"), "tmpfs"])
            .arg(at)
            .status()
            .ok()?;
        status.success().then(|| Tmpfs(at.to_owned()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_new_mail_clearly_loses_nothing_and_recovers_by_itself() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(tmpfs) = Tmpfs::mount(dir.path()) else {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    };
    let mut config = util::config(&tmpfs.0, "[api]\nrate_limit = \"1000/s\"\n");
    config.spool.min_free_space = MINIMUM;
    let running = util::start_with_key(config, Some(OPERATOR_KEY)).await;
    let http = running.http_addr;
    let implicit = running.smtp[1].1;
    util::verified_domain(http, "example.test").await;

    let mut accepted = vec![send_api(http).await.expect("accepted while there is room")];
    accepted.push(send_smtp(implicit).await.expect("accepted while there is room"));

    // Fill the file system until less than the minimum is free.
    let filler = tmpfs.0.join("filler");
    let free = fs4::available_space(&tmpfs.0).expect("statvfs");
    let fill = free.saturating_sub(MINIMUM / 2);
    std::fs::write(&filler, vec![0_u8; usize::try_from(fill).expect("fits")]).expect("fill the disk");

    // Mail sent before the guard rereads the free space is still accepted, and counts.
    let started = Instant::now();
    let refused = loop {
        match send_api(http).await {
            Err(refused) => break refused,
            Ok(id) => accepted.push(id),
        }
        assert!(started.elapsed() < NOTICE, "the API still accepts on a full disk");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let (status, body) = refused;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["name"], "service_unavailable", "{body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("storage") || m.contains("disk")),
        "the error says why: {body}"
    );
    let reply = send_smtp(implicit).await.expect_err("SMTP refuses on a full disk");
    assert!(reply.starts_with("452 4.3.1 "), "{reply}");
    let health = util::get(http, "/healthz").await;
    assert_eq!(health.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        health.json()["reason"]
            .as_str()
            .is_some_and(|r| r.contains("insufficient storage")),
        "{:?}",
        health.json()
    );
    // Reads go on, and everything accepted before is there.
    assert_eq!(listed(http).await, sorted(&accepted), "accepted mail is all listed");

    std::fs::remove_file(&filler).expect("free the space");
    let id = wait_for(NOTICE, "the API to accept again", || async {
        send_api(http).await.ok()
    })
    .await;
    accepted.push(id);
    accepted.push(send_smtp(implicit).await.expect("SMTP accepts again"));
    assert_eq!(util::get(http, "/healthz").await.status, StatusCode::OK);
    assert_eq!(listed(http).await, sorted(&accepted));
    running.shutdown().await;
}

/// `POST /emails`: the id, or the status and error body.
async fn send_api(http: std::net::SocketAddr) -> Result<String, (StatusCode, serde_json::Value)> {
    let body = json!({
        "from": "Acme <hello@example.test>",
        "to": ["user@example.org"],
        "subject": "disk",
        "text": "hello",
    });
    let response = call(http, Method::POST, "/emails", Some(OPERATOR_KEY), Some(body)).await;
    if response.status == StatusCode::OK {
        Ok(response.json()["id"].as_str().expect("id").to_owned())
    } else {
        Err((response.status, response.json()))
    }
}

/// One message over SMTPS: its id, or the reply to the end of data.
async fn send_smtp(addr: std::net::SocketAddr) -> Result<String, String> {
    let script = format!(
        "EHLO c\r\nAUTH PLAIN {}\r\nMAIL FROM:<hello@example.test>\r\nRCPT TO:<user@example.org>\r\nDATA\r\n\
         From: hello@example.test\r\nTo: user@example.org\r\nSubject: disk\r\n\r\nhello\r\n.\r\nQUIT\r\n",
        util::auth_plain(OPERATOR_KEY)
    );
    let transcript = util::smtps_transcript(addr, &script).await;
    let last = transcript
        .lines()
        .rfind(|line| line.starts_with("250 2.0.0 OK ") || line.starts_with("452") || line.starts_with("451"))
        .unwrap_or_else(|| panic!("no answer to the data: {transcript}"));
    match last.strip_prefix("250 2.0.0 OK ") {
        Some(id) => Ok(id.trim().to_owned()),
        None => Err(last.to_owned()),
    }
}

/// Every email id `GET /emails` lists, sorted.
async fn listed(http: std::net::SocketAddr) -> Vec<String> {
    let list = call(http, Method::GET, "/emails?limit=100", Some(OPERATOR_KEY), None)
        .await
        .json();
    let mut ids: Vec<String> = list["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|e| e["id"].as_str().expect("id").to_owned())
        .collect();
    ids.sort();
    ids
}

fn sorted(ids: &[String]) -> Vec<String> {
    let mut ids = ids.to_vec();
    ids.sort();
    ids
}

/// Polls `attempt` until it gives a value, for at most `deadline`.
async fn wait_for<T, F, Fut>(deadline: Duration, what: &str, mut attempt: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(value) = attempt().await {
            return value;
        }
        assert!(start.elapsed() < deadline, "waited {deadline:?} for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
