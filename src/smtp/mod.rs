//! SMTP submission listeners.
//!
//! This module binds the listeners `[smtp] listeners` names, with the rules DESIGN.md
//! fixes for privileged ports, and serves each connection. Submission itself (the
//! sans-IO session, AUTH, DATA/BDAT) is not built yet: connections are answered with a
//! `421` that says so, after the TLS handshake on implicit-TLS ports, so that clients and
//! operators see the listeners, the certificate and the honest state of the service.

mod bind;

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

pub use bind::{BindError, Bound, bind_listeners};

use crate::config::{Listener, TlsMode};
use crate::shutdown::Shutdown;

/// Time allowed for a client's TLS handshake on an implicit-TLS port.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a listener's connections need.
#[derive(Clone)]
pub struct ListenerContext {
    /// The EHLO/greeting name.
    pub hostname: String,
    /// TLS for implicit-TLS ports (and STARTTLS, later).
    pub tls: TlsAcceptor,
}

/// Accepts connections on one listener until shutdown.
pub async fn serve(listener: TcpListener, config: Listener, context: ListenerContext, mut shutdown: Shutdown) {
    let label = config.addr.port().to_string();
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, listener = %config.addr, "SMTP accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.triggered() => break,
        };
        metrics::counter!("herald_smtp_connections_total", "listener" => label.clone()).increment(1);
        let context = context.clone();
        let handle = shutdown.clone();
        tokio::spawn(async move {
            if let Err(error) = answer(stream, config.tls, &context).await {
                tracing::debug!(%error, %peer, "SMTP connection ended with an error");
            }
            drop(handle);
        });
    }
}

async fn answer(stream: TcpStream, mode: TlsMode, context: &ListenerContext) -> std::io::Result<()> {
    let reply = format!(
        "421 4.3.2 {} SMTP submission is not available on this server yet; use the REST API\r\n",
        context.hostname
    );
    match mode {
        TlsMode::StartTls => {
            let mut stream = stream;
            stream.write_all(reply.as_bytes()).await?;
            stream.shutdown().await
        }
        TlsMode::Implicit => {
            let mut tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, context.tls.accept(stream))
                .await
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "TLS handshake timed out"))??;
            tls.write_all(reply.as_bytes()).await?;
            tls.shutdown().await
        }
    }
}

/// Wraps a rustls server config for tokio.
pub fn acceptor(config: Arc<rustls::ServerConfig>) -> TlsAcceptor {
    TlsAcceptor::from(config)
}
