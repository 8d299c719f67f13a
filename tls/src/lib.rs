//! herald's TLS: the rustls server configuration for inbound SMTP and the client
//! configurations for outbound delivery.
//!
//! # Server side
//!
//! [`ServerTls::load`] reads the operator's PEM certificate chain and private key, plus
//! any extra pairs chosen by SNI, validates that each key matches its certificate, and
//! builds one [`rustls::ServerConfig`] ([`ServerTls::server_config`]). When no
//! certificate is configured, a self-signed pair for the host name is generated on first
//! start under `<data_dir>/tls/` and reused afterwards, so STARTTLS works out of the box.
//!
//! The config never holds a certificate directly: it asks a resolver, which reads the
//! current set of keys from an [`arc_swap::ArcSwap`]. [`ServerTls::reload`] (wired to
//! SIGHUP by the binary) re-reads the PEM files and swaps the set, so new handshakes use
//! the new certificate without rebuilding listeners; a failed reload keeps the old set.
//!
//! # Client side
//!
//! [`client_config`] builds the outbound configuration for a [`Verification`] mode:
//! `Opportunistic` encrypts without authenticating the server (what most MX delivery
//! does today), `Required` verifies against the webpki roots plus an optional CA file.
//! [`database_client_config`] builds the one toward a database for libpq's `sslmode`.
//!
//! # Choices
//!
//! One crypto provider, aws-lc-rs, is passed explicitly to every builder rather than
//! installed process-wide, and only TLS 1.3 and 1.2 are enabled. Errors are [`Error`],
//! whose messages name the file at fault. herald targets Unix: private key files are
//! written with mode 0600.

mod certkey;
mod client;
mod danger;
mod database;
mod error;
mod pem;
mod resolver;
mod selfsigned;
mod server;
#[cfg(test)]
mod test_support;

use std::sync::Arc;

use rustls::SupportedProtocolVersion;
use rustls::crypto::CryptoProvider;

pub use certkey::CertKeyPaths;
pub use client::{Verification, check_certificate, client_config};
pub use database::{DatabaseVerification, database_client_config};
pub use error::{Error, PairMember};
pub use server::{ServerTls, ServerTlsOptions};

/// The protocol versions herald speaks, newest first. rustls has never implemented TLS 1.0
/// or 1.1; listing the versions explicitly keeps that a visible decision rather than a
/// default that could change under us.
const PROTOCOL_VERSIONS: &[&SupportedProtocolVersion] = &[&rustls::version::TLS13, &rustls::version::TLS12];

/// The one crypto provider used by every config in this crate.
///
/// A fresh value per call rather than a process-wide default: building it is cheap (it is
/// a table of static references) and passing it explicitly means no other crate in the
/// process can change which provider herald uses.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// The provider for accepting connections: the same algorithms, with the AES-128-GCM
/// suites ahead of AES-256-GCM. The server picks by this order (see
/// `ServerConfig::ignore_client_order`), because most clients list AES-256-GCM with
/// SHA-384 first, and SHA-384 has no CPU instructions where SHA-256 does: every key
/// schedule and transcript hash of a handshake costs about twice as much for no practical
/// gain in security. Handshakes are the main cost of one-message submission sessions.
fn server_provider() -> Arc<CryptoProvider> {
    use rustls::CipherSuite::{
        TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS13_AES_128_GCM_SHA256,
    };
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    let rank = |suite: &rustls::SupportedCipherSuite| {
        !matches!(
            suite.suite(),
            TLS13_AES_128_GCM_SHA256 | TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 | TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
        )
    };
    // A stable sort keeps TLS 1.3 suites ahead of TLS 1.2 ones within each rank only if
    // they were already; rustls chooses the version first, so the order across versions
    // does not matter.
    provider.cipher_suites.sort_by_key(rank);
    Arc::new(provider)
}
