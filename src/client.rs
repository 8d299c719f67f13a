//! A small client for herald's own REST API, used by the command line
//! (`herald domains|keys|teams ...`) to talk to the running server.

use std::net::SocketAddr;
use std::path::Path;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;

use crate::accounts::BOOTSTRAP_KEY_FILE;
use crate::config::Config;

/// Largest response the client reads.
const RESPONSE_MAX: usize = 16 * 1024 * 1024;

/// Where the server is and which key to use.
#[derive(Debug, Clone)]
pub struct Client {
    authority: String,
    key: String,
}

impl Client {
    /// A client for the server `config` describes: `url` (`http://host:port`) when given,
    /// else `[http] listen`; the key from `key` (`HERALD_API_KEY`) when given, else the
    /// bootstrap key file in the data directory.
    pub fn new(config: &Config, url: Option<&str>, key: Option<String>) -> anyhow::Result<Client> {
        let authority = match url {
            Some(url) => {
                let uri: hyper::Uri = url.parse().with_context(|| format!("invalid --url {url:?}"))?;
                if uri.scheme_str().is_some_and(|s| s != "http") {
                    bail!("--url must be an http:// URL (the API is meant to be reached on the host itself)");
                }
                uri.authority()
                    .map(ToString::to_string)
                    .with_context(|| format!("--url {url:?} has no host"))?
            }
            None => reachable(config.http.listen).to_string(),
        };
        let key = match key {
            Some(key) => key,
            None => read_key(&config.server.data_dir.join(BOOTSTRAP_KEY_FILE))?,
        };
        Ok(Client { authority, key })
    }

    /// Sends one request; returns the JSON body of a success, or an error carrying the
    /// server's error name and message.
    pub async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> anyhow::Result<Value> {
        let stream = TcpStream::connect(&self.authority).await.with_context(|| {
            format!(
                "cannot reach herald at http://{} (is `herald serve` running?)",
                self.authority
            )
        })?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        let body = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("host", &self.authority)
            .header("authorization", format!("Bearer {}", self.key))
            .header("content-type", "application/json")
            .header("user-agent", concat!("herald-cli/", env!("CARGO_PKG_VERSION")))
            .body(Full::new(body))?;
        let response = sender.send_request(request).await?;
        let status = response.status();
        let bytes = http_body_util::Limited::new(response.into_body(), RESPONSE_MAX)
            .collect()
            .await
            .map_err(|e| anyhow::anyhow!("cannot read the response: {e}"))?
            .to_bytes();
        let value: Value = serde_json::from_slice(&bytes)
            .with_context(|| format!("the server answered {status} with a body that is not JSON"))?;
        if status.is_success() {
            Ok(value)
        } else {
            bail!(
                "{} ({}): {}",
                value["name"].as_str().unwrap_or("error"),
                status.as_u16(),
                value["message"].as_str().unwrap_or_default()
            )
        }
    }
}

/// The address to connect to for a listen address: a wildcard becomes loopback.
fn reachable(listen: SocketAddr) -> SocketAddr {
    match listen.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => SocketAddr::from(([127, 0, 0, 1], listen.port())),
        ip if ip.is_unspecified() => SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, listen.port())),
        _ => listen,
    }
}

fn read_key(path: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read the API key from {} (set HERALD_API_KEY, or run as the user herald runs as)",
            path.display()
        )
    })?;
    Ok(text.trim().to_owned())
}
