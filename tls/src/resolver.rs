//! Choosing the server certificate for each handshake by SNI, from a set that
//! [`ServerTls::reload`](crate::ServerTls::reload) can replace at any time.

use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwap;
use rustls::pki_types::ServerName;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::certkey::ServerKey;

/// The certificates a server offers. The default is a separate field so that "there is
/// always a certificate to fall back to" holds by construction.
pub(crate) struct KeySet {
    /// Offered when the client sends no SNI or no certificate matches it.
    pub(crate) default: ServerKey,
    /// Further certificates, tried after the default in configuration order.
    pub(crate) extra: Vec<ServerKey>,
}

impl KeySet {
    /// The first key whose certificate is valid for `name`, if any.
    fn matching(&self, name: &str) -> Option<&ServerKey> {
        let Ok(name) = ServerName::try_from(name) else {
            // rustls only passes syntactically valid DNS names, so this is defensive.
            return None;
        };
        // Parsing per handshake is a few field slices over DER already in memory, cheap
        // next to the handshake's signature; caching parsed names would tie KeySet to a
        // borrowed webpki type for little gain.
        std::iter::once(&self.default).chain(&self.extra).find(|key| {
            webpki::EndEntityCert::try_from(&key.end_entity)
                .is_ok_and(|cert| cert.verify_is_valid_for_subject_name(&name).is_ok())
        })
    }
}

/// A [`ResolvesServerCert`] over a swappable [`KeySet`].
pub(crate) struct SniResolver {
    keys: ArcSwap<KeySet>,
}

impl SniResolver {
    pub(crate) fn new(keys: KeySet) -> Self {
        Self {
            keys: ArcSwap::from_pointee(keys),
        }
    }

    /// Replaces the key set; handshakes that already resolved keep the old keys.
    pub(crate) fn store(&self, keys: KeySet) {
        self.keys.store(Arc::new(keys));
    }

    /// The current key set.
    pub(crate) fn load(&self) -> Arc<KeySet> {
        self.keys.load_full()
    }
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let keys = self.keys.load();
        let chosen = match client_hello.server_name() {
            Some(name) => keys.matching(name).unwrap_or_else(|| {
                tracing::debug!(sni = name, "no certificate matches SNI; using the default");
                &keys.default
            }),
            None => &keys.default,
        };
        Some(Arc::clone(&chosen.certified))
    }
}

impl fmt::Debug for SniResolver {
    // The derived form would dump every certificate's DER bytes into logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SniResolver")
            .field("certificates", &(1 + self.keys.load().extra.len()))
            .finish()
    }
}
