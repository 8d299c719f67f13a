//! The inbound side: loading the server's certificates and building its rustls config.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::CertificateDer;

use crate::certkey::{CertKeyPaths, ServerKey};
use crate::resolver::{KeySet, SniResolver};
use crate::{Error, PROTOCOL_VERSIONS, PairMember, provider, selfsigned, server_provider};

/// TLS 1.2 sessions kept for resumption (about 100 bytes each).
const SESSION_CACHE_ENTRIES: usize = 4096;

/// Where the server's certificates come from; the `[tls]` section of the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTlsOptions {
    /// PEM certificate chain of the default certificate. Set together with `key`, or leave
    /// both unset to use a generated self-signed certificate.
    pub cert: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1) of the default certificate.
    pub key: Option<PathBuf>,
    /// Further pairs, offered to clients whose SNI name they are valid for.
    pub extra: Vec<CertKeyPaths>,
    /// herald's data directory; the self-signed pair lives in its `tls/` subdirectory.
    pub data_dir: PathBuf,
    /// The name the self-signed certificate is issued for (besides `localhost`).
    pub hostname: String,
}

/// The server's TLS state: a rustls config and the certificates behind it.
///
/// Cloning is cheap and clones share state, so a reload through one clone is seen by
/// every listener holding another.
#[derive(Debug, Clone)]
pub struct ServerTls {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    options: ServerTlsOptions,
    resolver: Arc<SniResolver>,
    config: Arc<ServerConfig>,
}

impl ServerTls {
    /// Loads and validates every configured pair (or the self-signed one) and builds the
    /// server config.
    ///
    /// # Errors
    ///
    /// [`Error::MissingPair`] when only one of `cert` and `key` is set; otherwise the first
    /// file that cannot be read, is not PEM, holds no certificate or key, or whose key does
    /// not match its certificate, or a failure to generate or write the self-signed pair.
    pub fn load(options: &ServerTlsOptions) -> Result<Self, Error> {
        let keys = load_keys(options)?;
        let resolver = Arc::new(SniResolver::new(keys));
        let mut config = ServerConfig::builder_with_provider(server_provider())
            .with_protocol_versions(PROTOCOL_VERSIONS)?
            .with_no_client_auth()
            .with_cert_resolver(Arc::clone(&resolver) as _);
        config.ignore_client_order = true;
        // Resumption spares a returning client the certificate signature and its
        // verification. Stateless tickets (TLS 1.3) hold nothing on the server, the
        // session cache serves TLS 1.2 clients; the ticket keys rotate every 6 hours and
        // live only in memory, so a restart invalidates every ticket.
        config.ticketer = rustls::crypto::aws_lc_rs::Ticketer::new()?;
        config.session_storage = rustls::server::ServerSessionMemoryCache::new(SESSION_CACHE_ENTRIES);
        config.send_tls13_tickets = 1;
        // TLS 1.3 lets the server send application data right after its Finished, in its
        // first flight. SMTP servers speak first: the greeting, which says nothing secret,
        // reaches the client with the handshake instead of a round trip later. rustls
        // sends it early only without client authentication; herald's SMTP driver holds
        // what TLS 1.3 writes after the client's Finished until the client speaks, so a
        // greeting that was not sent early would wait for nothing.
        config.send_half_rtt_data = true;
        Ok(Self {
            inner: Arc::new(Inner {
                options: options.clone(),
                resolver,
                config: Arc::new(config),
            }),
        })
    }

    /// The rustls config for accepting connections (STARTTLS or implicit TLS). It is built
    /// once; reloads change the certificates it resolves, not the config itself.
    #[must_use]
    pub fn server_config(&self) -> Arc<ServerConfig> {
        Arc::clone(&self.inner.config)
    }

    /// Re-reads every PEM file, for SIGHUP. New handshakes use the new certificates;
    /// connections already established are unaffected.
    ///
    /// # Errors
    ///
    /// The same as [`ServerTls::load`]. On error nothing changes: the previous
    /// certificates stay in use.
    pub fn reload(&self) -> Result<(), Error> {
        let keys = load_keys(&self.inner.options)?;
        self.inner.resolver.store(keys);
        Ok(())
    }

    /// The DER of the default certificate currently offered (the first of its chain), for
    /// logging a fingerprint or checking that a reload took effect.
    #[must_use]
    pub fn default_certificate_der(&self) -> CertificateDer<'static> {
        self.inner.resolver.load().default.end_entity.clone()
    }

    /// Whether the default certificate is the generated self-signed one.
    #[must_use]
    pub fn is_self_signed(&self) -> bool {
        self.inner.options.cert.is_none()
    }
}

/// Loads the default pair, then the extras in order.
fn load_keys(options: &ServerTlsOptions) -> Result<KeySet, Error> {
    let default_paths = default_paths(options)?;
    let provider = provider();
    let default = ServerKey::load(&default_paths, &provider)?;
    let extra = options
        .extra
        .iter()
        .map(|paths| ServerKey::load(paths, &provider))
        .collect::<Result<Vec<_>, _>>()?;
    tracing::info!(
        cert = %default_paths.cert.display(),
        extra = extra.len(),
        "loaded TLS certificates"
    );
    Ok(KeySet { default, extra })
}

/// The configured default pair, or the self-signed pair when none is configured.
fn default_paths(options: &ServerTlsOptions) -> Result<CertKeyPaths, Error> {
    match (&options.cert, &options.key) {
        (Some(cert), Some(key)) => Ok(CertKeyPaths {
            cert: cert.clone(),
            key: key.clone(),
        }),
        (None, None) => selfsigned::ensure(&options.data_dir, &options.hostname),
        (Some(_), None) => Err(Error::MissingPair {
            which: PairMember::PrivateKey,
        }),
        (None, Some(_)) => Err(Error::MissingPair {
            which: PairMember::Certificate,
        }),
    }
}

#[cfg(test)]
mod tests;
