//! The HTTP listener: REST API, `/healthz`, `/metrics` and the public pages (tracking
//! hosts, unsubscribe), on hyper 1.
//!
//! One task accepts connections; each connection is served by hyper's HTTP/1 server in
//! its own task and watched by a graceful-shutdown handle, so shutdown lets responses in
//! progress finish within the grace period. `[http] tls_listen` serves the same routes
//! over HTTPS: the TLS handshake (certificate chosen by SNI from `[tls]`) runs in the
//! connection's task, bounded by [`HANDSHAKE_TIMEOUT`].

pub mod format;
pub mod pagination;
pub(crate) mod public;
pub mod ratelimit;
mod request;
pub mod request_log;
mod response;
mod router;
mod routes;
pub mod upload;

use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

pub use request::{ApiRequest, BODY_MAX};
pub use response::ApiError;
pub use router::Route;

/// A response body: whole (almost every answer) or streamed (a CSV export).
pub type Body = http_body_util::combinators::UnsyncBoxBody<bytes::Bytes, std::convert::Infallible>;

use crate::server::AppState;
use crate::shutdown::Shutdown;

/// Time a client has to send a request's headers. Bounds slowloris-style connections
/// that trickle header bytes.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Time a client has to finish the TLS handshake on `[http] tls_listen`.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The rustls config for HTTPS: `[tls]`'s (the same certificates, reloaded with them),
/// offering HTTP/1.1 by ALPN.
pub fn tls_acceptor(config: &rustls::ServerConfig) -> TlsAcceptor {
    let mut config = config.clone();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    TlsAcceptor::from(Arc::new(config))
}

/// Serves HTTP on `listener` until shutdown; HTTPS when `tls` is given.
pub async fn serve(listener: TcpListener, state: Arc<AppState>, tls: Option<TlsAcceptor>, mut shutdown: Shutdown) {
    let graceful = GracefulShutdown::new();
    let connections = Arc::new(tokio::sync::Semaphore::new(state.config().http.connections_max));
    loop {
        let (stream, peer) = tokio::select! {
            // A shutdown wins over a connection waiting at the same moment.
            biased;
            () = shutdown.triggered() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Accept fails transiently (EMFILE, ECONNABORTED); pause briefly so a
                    // full file table does not spin the loop.
                    tracing::warn!(%error, "HTTP accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Responses are written whole; waiting for more bytes to coalesce (Nagle) would
        // only delay them behind the client's delayed ACK.
        let _ = stream.set_nodelay(true);
        let Ok(permit) = Arc::clone(&connections).try_acquire_owned() else {
            metrics::counter!("herald_http_connections_refused_total").increment(1);
            tokio::spawn(refuse(stream));
            continue;
        };
        let state = Arc::clone(&state);
        let service = service_fn(move |request| {
            let state = Arc::clone(&state);
            async move { Ok::<_, std::convert::Infallible>(routes::handle(&state, request, peer.ip()).await) }
        });
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT);
        let handle = shutdown.clone();
        let Some(tls) = tls.clone() else {
            let connection = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::debug!(%error, %peer, "HTTP connection ended with an error");
                }
                drop((handle, permit));
            });
            continue;
        };
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(stream)).await {
                Ok(Ok(stream)) => {
                    let connection = builder.serve_connection(TokioIo::new(stream), service);
                    if let Err(error) = watcher.watch(connection).await {
                        tracing::debug!(%error, %peer, "HTTPS connection ended with an error");
                    }
                }
                Ok(Err(error)) => {
                    metrics::counter!("herald_http_tls_failures_total").increment(1);
                    tracing::debug!(%error, %peer, "HTTPS handshake failed");
                }
                Err(_) => {
                    metrics::counter!("herald_http_tls_failures_total").increment(1);
                    tracing::debug!(%peer, "HTTPS handshake timed out");
                }
            }
            drop((handle, permit));
        });
    }
    graceful.shutdown().await;
}

/// Time to tell a connection over `[http] connections_max` why it is closed.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(1);

/// Bytes of a refused connection's request read at most before answering it.
const REFUSAL_READ_MAX: usize = 8 * 1024;

/// Answers a connection over `[http] connections_max` with `503` and closes it. The
/// request's head is read first (for at most [`REFUSAL_TIMEOUT`] and
/// [`REFUSAL_READ_MAX`] bytes): an HTTP client that gets an answer before it has sent
/// its request takes it for a broken server, not a busy one.
async fn refuse(mut stream: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut head = Vec::with_capacity(1024);
    let _ = tokio::time::timeout(REFUSAL_TIMEOUT, async {
        let mut chunk = [0_u8; 1024];
        while head.len() < REFUSAL_READ_MAX && !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(read) => head.extend_from_slice(&chunk[..read]),
            }
        }
    })
    .await;
    let body = ApiError::unavailable("Too many connections to this server; try again later")
        .body()
        .to_string();
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSAL_TIMEOUT, async {
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
}
