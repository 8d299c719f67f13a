//! SMTP submission listeners: a thin tokio driver around the sans-IO session of
//! [`herald_smtp`]. The driver owns sockets, TLS and timeouts; credentials are checked
//! against the API key store, and accepted messages go through the same path as
//! `POST /emails` ([`crate::emails::raw`] and [`crate::emails::submit`]).

mod bind;
mod cork;
mod driver;
mod guard;
mod trusted;

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

pub use bind::{BindError, Bound, LISTEN_BACKLOG, bind_listeners, listen};
pub use guard::Guard;
pub use trusted::Trusted;

use crate::config::Listener;
use crate::server::AppState;
use crate::shutdown::Shutdown;

/// What a listener's connections need.
#[derive(Clone)]
pub struct ListenerContext {
    /// Shared state (config, store, key authentication).
    pub state: Arc<AppState>,
    /// TLS for implicit-TLS ports and STARTTLS.
    pub tls: TlsAcceptor,
    /// Connection and AUTH-failure limits, shared by every listener.
    pub guard: Arc<Guard>,
    /// Networks whose clients submit without AUTH.
    pub trusted: Arc<Trusted>,
}

/// Accepts connections on one listener until shutdown.
pub async fn serve(listener: TcpListener, config: Listener, context: ListenerContext, mut shutdown: Shutdown) {
    let label = config.addr.port().to_string();
    loop {
        let (stream, peer) = tokio::select! {
            // A shutdown wins over a connection waiting at the same moment.
            biased;
            () = shutdown.triggered() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, listener = %config.addr, "SMTP accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        metrics::counter!("herald_smtp_connections_total", "listener" => label.clone()).increment(1);
        let context = context.clone();
        let handle = shutdown.clone();
        tokio::spawn(async move {
            let slot = match context.guard.admit(peer.ip()) {
                Ok(slot) => slot,
                Err(why) => {
                    metrics::counter!("herald_smtp_refused_total", "reason" => "connections").increment(1);
                    driver::refuse(stream, why).await;
                    return;
                }
            };
            if let Err(error) = driver::connection(stream, peer, config.tls, config.mx, &context, handle).await {
                tracing::debug!(%error, %peer, "SMTP connection ended with an error");
            }
            drop(slot);
        });
    }
}

/// Wraps a rustls server config for tokio.
pub fn acceptor(config: Arc<rustls::ServerConfig>) -> TlsAcceptor {
    TlsAcceptor::from(config)
}
