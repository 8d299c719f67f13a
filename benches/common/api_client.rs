//! The keep-alive HTTP/1.1 API client the benches share: one connection, requests one
//! after another, authenticated with the bench's operator key.

use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// A keep-alive connection to the API.
pub struct Client {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    key: String,
}

impl Client {
    /// Connects to `addr`, sending `key` as the bearer token.
    pub async fn connect(addr: SocketAddr, key: &str) -> Client {
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("handshake");
        tokio::spawn(connection);
        Client {
            sender,
            key: key.to_owned(),
        }
    }

    /// POSTs `body` (JSON) to `path`; the status and the response body.
    pub async fn post(&mut self, path: &str, body: Bytes) -> (u16, Bytes) {
        let request = Request::post(path)
            .header("host", "bench")
            .header("authorization", format!("Bearer {}", self.key))
            .header("content-type", "application/json")
            .body(Full::new(body))
            .expect("request");
        self.sender.ready().await.expect("ready");
        let response = self.sender.send_request(request).await.expect("response");
        let status = response.status().as_u16();
        (status, response.into_body().collect().await.expect("body").to_bytes())
    }

    /// GETs `path`; the status and the response body.
    #[allow(dead_code, reason = "not every bench reads")]
    pub async fn get(&mut self, path: &str) -> (u16, Bytes) {
        let request = Request::get(path)
            .header("host", "bench")
            .header("authorization", format!("Bearer {}", self.key))
            .body(Full::new(Bytes::new()))
            .expect("request");
        self.sender.ready().await.expect("ready");
        let response = self.sender.send_request(request).await.expect("response");
        let status = response.status().as_u16();
        (status, response.into_body().collect().await.expect("body").to_bytes())
    }
}
