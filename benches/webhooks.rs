//! Webhook dispatch throughput: events written to the outbox (as any part of herald
//! writes them) until loopback receivers have every signed request, with 1 endpoint and
//! with 100 endpoints subscribed to the same events.
//!
//! `cargo bench --profile dev --bench webhooks`

#[path = "common/api_client.rs"]
#[allow(dead_code, reason = "this bench adds no sending domain")]
mod api_client;
#[path = "common/server.rs"]
#[allow(dead_code, reason = "this bench adds no sending domain")]
mod bench_server;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use herald::accounts::Bootstrap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use bench_server::KEY;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        println!("herald webhooks: outbox -> signed POST -> loopback receivers (keep-alive), one request at a time per endpoint");
        for (endpoints, events) in [(1usize, 5000usize), (100, 100)] {
            phase(endpoints, events).await;
        }
    });
}

async fn phase(endpoints: usize, events: usize) {
    let dir = bench_server::data_dir("bench-webhooks");
    let running = bench_server::start(
        &dir,
        "[smtp]\nlisteners = []\n[delivery]\nenabled = false\n[webhooks]\nallow_private_endpoints = true\n",
    )
    .await;
    let team_id = match running.bootstrap {
        Bootstrap::Created { team_id, .. } | Bootstrap::Existing { team_id } => team_id,
    };
    let received = Arc::new(AtomicUsize::new(0));
    for _ in 0..endpoints {
        let addr = receiver(Arc::clone(&received)).await;
        let body = format!(r#"{{"endpoint":"http://{addr}/hook","events":["domain.updated"]}}"#);
        let reply = post(running.http_addr, "/webhooks", &body).await;
        assert!(reply.starts_with("HTTP/1.1 201"), "{reply}");
    }
    let started = Instant::now();
    let mut batch = herald::storage::Change::new();
    for n in 0..events {
        herald::services::outbox::push(
            &mut batch,
            &running.state,
            team_id,
            herald::events::EventKind::DomainUpdated,
            || serde_json::json!({ "id": n, "name": "bench.test", "status": "verified" }),
        )
        .expect("event");
    }
    let state = Arc::clone(&running.state);
    tokio::task::spawn_blocking(move || state.commit(batch))
        .await
        .expect("the commit ran")
        .expect("commit");
    let expected = endpoints * events;
    let deadline = Instant::now() + Duration::from_secs(300);
    while received.load(Ordering::Acquire) < expected {
        assert!(
            Instant::now() < deadline,
            "{} of {expected} requests",
            received.load(Ordering::Acquire)
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let elapsed = started.elapsed();
    println!(
        "{endpoints:>3} endpoint(s), {events} events: {expected} requests in {:.2} s = {:>6.0} deliveries/s",
        elapsed.as_secs_f64(),
        expected as f64 / elapsed.as_secs_f64()
    );
    running.shutdown().await;
}

/// A keep-alive HTTP/1.1 receiver answering 200 to every request; counts them.
async fn receiver(count: Arc<AtomicUsize>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream, Arc::clone(&count)));
        }
    });
    addr
}

async fn serve(mut stream: TcpStream, count: Arc<AtomicUsize>) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buffer.len() < end + 4 + length {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        buffer.drain(..end + 4 + length);
        count.fetch_add(1, Ordering::AcqRel);
        if stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            .await
            .is_err()
        {
            return;
        }
    }
}

async fn post(addr: SocketAddr, path: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {KEY}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply).await;
    reply
}
