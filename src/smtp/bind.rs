//! Binding the SMTP listeners, and the rule for privileged ports.
//!
//! Run as a non-root user with the built-in defaults, herald cannot bind 25, 465 and 587.
//! It skips those, says so once with the fix, and serves the rest. A listener the
//! operator named in a config file is a promise: if it cannot be bound, the start fails.

use std::io;
use std::net::SocketAddr;

use tokio::net::TcpListener;

use crate::config::{Listener, SmtpConfig};

/// The listeners that were bound and the defaults that were skipped.
#[derive(Debug)]
pub struct Bound {
    /// Bound sockets with their config.
    pub listeners: Vec<(Listener, TcpListener)>,
    /// Default listeners skipped for lack of privilege.
    pub skipped: Vec<Listener>,
}

/// A listener that had to be bound and could not be.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on {addr} (`smtp.listeners[{index}]`): {source}{hint}")]
pub struct BindError {
    /// Position in `[smtp] listeners`.
    pub index: usize,
    /// The address.
    pub addr: SocketAddr,
    /// Why.
    pub source: io::Error,
    /// How to fix it, when known.
    pub hint: &'static str,
}

/// The fix for privileged ports, said once.
const PRIVILEGE_HINT: &str = "; ports below 1024 need root or CAP_NET_BIND_SERVICE \
     (`setcap cap_net_bind_service=+ep herald`, or AmbientCapabilities= in the systemd unit), \
     or choose other ports in [smtp] listeners";

/// Connections the kernel holds for a listener before it accepts them. std's (and so
/// tokio's) `bind` asks for 128: a burst of a few hundred clients overflowed that queue,
/// and the kernel dropped their handshakes instead of letting herald answer them, even
/// with a `421`. The kernel caps it at `net.core.somaxconn`.
pub const LISTEN_BACKLOG: u32 = 4096;

/// A listening socket on `addr` with [`LISTEN_BACKLOG`], for SMTP and HTTP.
///
/// # Errors
///
/// What creating, binding or listening on the socket returns.
pub fn listen(addr: std::net::SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As std does for listeners: a restart can bind while old connections linger.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Binds every listener of `config`, skipping privileged defaults that need root.
pub async fn bind_listeners(config: &SmtpConfig) -> Result<Bound, BindError> {
    let mut bound = Bound {
        listeners: Vec::new(),
        skipped: Vec::new(),
    };
    for (index, listener) in config.listeners.iter().enumerate() {
        match listen(listener.addr) {
            Ok(socket) => bound.listeners.push((*listener, socket)),
            Err(error) if may_skip(&error, listener, config.listeners_configured) => bound.skipped.push(*listener),
            Err(source) => {
                let hint = if source.kind() == io::ErrorKind::PermissionDenied {
                    PRIVILEGE_HINT
                } else {
                    ""
                };
                return Err(BindError {
                    index,
                    addr: listener.addr,
                    source,
                    hint,
                });
            }
        }
    }
    if !bound.skipped.is_empty() {
        let ports: Vec<String> = bound.skipped.iter().map(|l| l.addr.port().to_string()).collect();
        tracing::warn!(
            skipped = %ports.join(", "),
            "not listening on SMTP ports {}: permission denied{PRIVILEGE_HINT}",
            ports.join(", ")
        );
    }
    Ok(bound)
}

/// Only built-in defaults on privileged ports are skipped, and only for lack of
/// permission; anything else is a real failure.
fn may_skip(error: &io::Error, listener: &Listener, configured: bool) -> bool {
    !configured && error.kind() == io::ErrorKind::PermissionDenied && listener.addr.port() < 1024
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TlsMode;

    fn listener(port: u16) -> Listener {
        Listener {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            tls: TlsMode::StartTls,
            mx: false,
        }
    }

    #[test]
    fn only_unconfigured_privileged_ports_are_skipped_for_permission_errors() {
        let denied = io::Error::from(io::ErrorKind::PermissionDenied);
        let in_use = io::Error::from(io::ErrorKind::AddrInUse);
        assert!(may_skip(&denied, &listener(25), false));
        assert!(
            !may_skip(&denied, &listener(25), true),
            "a configured listener is a promise"
        );
        assert!(
            !may_skip(&denied, &listener(2587), false),
            "unprivileged ports are never skipped"
        );
        assert!(
            !may_skip(&in_use, &listener(25), false),
            "address in use is a real failure"
        );
    }

    #[tokio::test]
    async fn a_port_in_use_fails_naming_the_listener() {
        let taken = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = taken.local_addr().expect("addr");
        let config = SmtpConfig {
            listeners: vec![
                listener(0),
                Listener {
                    addr,
                    tls: TlsMode::Implicit,
                    mx: false,
                },
            ],
            listeners_configured: true,
            username: "resend".into(),
            limits: crate::config::Config::defaults().smtp.limits,
            trusted: Vec::new(),
        };
        let err = bind_listeners(&config).await.expect_err("in use");
        assert_eq!(err.index, 1);
        assert!(err.to_string().contains("smtp.listeners[1]"), "{err}");
    }
}
