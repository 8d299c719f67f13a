//! What the benchmarks that import contacts share: a CSV upload streamed from disk, and
//! the process's resident memory.

use std::net::SocketAddr;
use std::path::Path;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::bench_server::KEY;

/// Sends `csv` as a multipart upload, streaming it from disk so the client holds no copy.
pub async fn upload(addr: SocketAddr, csv: &Path, segment: &str) -> String {
    let boundary = "bench-boundary-3f9c";
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"segments\"\r\n\r\n[{{\"id\":\"{segment}\"}}]\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"c.csv\"\r\nContent-Type: text/csv\r\n\r\n"
    );
    let tail = format!("\r\n--{boundary}--\r\n");
    let length = head.len() as u64 + std::fs::metadata(csv).expect("size").len() + tail.len() as u64;
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "POST /contacts/imports HTTP/1.1\r\nhost: bench\r\nauthorization: Bearer {KEY}\r\ncontent-type: multipart/form-data; boundary={boundary}\r\ncontent-length: {length}\r\nconnection: close\r\n\r\n{head}"
    );
    stream.write_all(request.as_bytes()).await.expect("head");
    let mut file = tokio::fs::File::open(csv).await.expect("open");
    tokio::io::copy(&mut file, &mut stream).await.expect("body");
    stream.write_all(tail.as_bytes()).await.expect("tail");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("response");
    assert!(response.starts_with("HTTP/1.1 201"), "{response}");
    let body = response.split("\r\n\r\n").nth(1).expect("body");
    let body: Value = serde_json::from_str(body).expect("JSON");
    body["id"].as_str().expect("id").to_owned()
}

/// The resident memory of this process, in KiB.
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmRSS:"))
                .and_then(|line| line.split_whitespace().nth(1))
                .and_then(|kib| kib.parse().ok())
        })
        .unwrap_or(0)
}
