//! The in-process herald every bench loads: a fresh data directory, the settings all
//! benches share (loopback API, no disk-space floor, no API rate limit, warnings only)
//! followed by the bench's own sections, the bench's API key, and a sending domain marked
//! verified without DNS.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use herald::config::Config;
use herald::server::{self, Options, Running};
use herald_queue::SystemClock;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::api_client::Client;

/// The operator key each bench server is started with.
pub const KEY: &str = "re_bench_operator_key_0123456789";

/// A fresh directory for one server's data, under `HERALD_BENCH_DIR` or else
/// `target/<bench>` of the working directory (a real disk, unlike `/tmp` on some machines).
pub fn data_dir(bench: &str) -> TempDir {
    let base = std::env::var_os("HERALD_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::current_dir().expect("cwd").join("target").join(bench));
    std::fs::create_dir_all(&base).expect("bench dir");
    tempfile::tempdir_in(&base).expect("tempdir")
}

/// Starts herald on `dir` with the shared settings and `sections`: the bench's `[smtp]`,
/// `[delivery]` and whatever else it sets, as TOML.
pub async fn start(dir: &TempDir, sections: &str) -> Running {
    let text = format!(
        "[server]\nhostname = \"bench.herald.test\"\ndata_dir = \"{}\"\n[http]\nlisten = \"127.0.0.1:0\"\n[spool]\nmin_free_space = \"0\"\n[api]\nrate_limit = \"1000000/s\"\n[log]\nlevel = \"warn\"\n{sections}",
        dir.path().join("data").display()
    );
    server::start(Options {
        config: Config::from_toml(&text, None).expect("config"),
        clock: Arc::new(SystemClock),
        bootstrap_api_key: Some(KEY.into()),
    })
    .await
    .expect("server")
}

/// Adds the sending domain `name` with `algorithm` DKIM keys through the API and marks it
/// verified without DNS; returns the domain as created (its records included).
#[allow(dead_code, reason = "not every bench sends mail")]
pub async fn verified_domain(addr: SocketAddr, name: &str, algorithm: &str) -> Value {
    let mut client = Client::connect(addr, KEY).await;
    let domain = json!({ "name": name, "dkim_algorithm": algorithm });
    let (status, created) = client.post("/domains", Bytes::from(domain.to_string())).await;
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&created));
    let created: Value = serde_json::from_slice(&created).expect("domain JSON");
    let id = created["id"].as_str().expect("domain id");
    let skip = Bytes::from(json!({ "skip_dns": true }).to_string());
    let (status, verified) = client.post(&format!("/domains/{id}/verify"), skip).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&verified));
    created
}
