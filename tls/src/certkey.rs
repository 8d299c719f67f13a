//! A certificate/key pair on disk and its validated, loaded form.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;
use rustls::sign::CertifiedKey;
use rustls::{Error as RustlsError, InconsistentKeys};

use crate::{Error, pem};

/// The paths of one PEM certificate chain and its private key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertKeyPaths {
    /// The certificate chain, server certificate first, then intermediates.
    pub cert: PathBuf,
    /// The private key for the first certificate: PKCS#8, PKCS#1 or SEC1.
    pub key: PathBuf,
}

/// A certificate chain and key that have been checked to belong together.
#[derive(Debug, Clone)]
pub(crate) struct ServerKey {
    /// What rustls signs the handshake with.
    pub(crate) certified: Arc<CertifiedKey>,
    /// A copy of the first certificate of the chain. Keeping it apart from `certified`
    /// makes "the chain is not empty" a property of the type instead of an index that
    /// every reader would have to trust.
    pub(crate) end_entity: CertificateDer<'static>,
}

impl ServerKey {
    /// Reads and validates the pair at `paths`: the chain is non-empty, the key parses
    /// and is supported by `provider`, and it matches the first certificate.
    pub(crate) fn load(paths: &CertKeyPaths, provider: &CryptoProvider) -> Result<Self, Error> {
        let chain = pem::read_certificates(&paths.cert)?;
        let key_der = pem::read_private_key(&paths.key)?;
        let signing_key = provider
            .key_provider
            .load_private_key(key_der)
            .map_err(|source| Error::UnsupportedKey {
                path: paths.key.clone(),
                source,
            })?;

        let Some(end_entity) = chain.first().cloned() else {
            // read_certificates reports an empty file as NoCertificates, so this is
            // unreachable; answering with the same error keeps it harmless if that changes.
            return Err(Error::NoCertificates {
                path: paths.cert.clone(),
            });
        };
        let certified = CertifiedKey::new(chain, signing_key);
        match certified.keys_match() {
            Ok(()) => {}
            // A provider may be unable to export a public key for some key types; rustls'
            // own `CertifiedKey::from_der` accepts that case, and so do we. aws-lc-rs can
            // export all the key types it loads, so this is a formality.
            Err(RustlsError::InconsistentKeys(InconsistentKeys::Unknown)) => {
                tracing::debug!(key = %paths.key.display(), "cannot check key against certificate");
            }
            Err(RustlsError::InconsistentKeys(InconsistentKeys::KeyMismatch)) => {
                return Err(Error::KeyMismatch {
                    cert: paths.cert.clone(),
                    key: paths.key.clone(),
                });
            }
            Err(source) => {
                return Err(Error::InvalidCertificate {
                    path: paths.cert.clone(),
                    source,
                });
            }
        }
        Ok(Self {
            certified: Arc::new(certified),
            end_entity,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider;
    use crate::test_support::{TestResult, write_pair};

    #[test]
    fn loads_matching_pair() -> TestResult {
        let dir = tempfile::tempdir()?;
        let paths = write_pair(dir.path(), "a", "a.example")?;
        let key = ServerKey::load(&paths, &provider())?;
        assert_eq!(key.certified.cert.first(), Some(&key.end_entity));
        Ok(())
    }

    #[test]
    fn mismatched_key_is_rejected_naming_both_files() -> TestResult {
        let dir = tempfile::tempdir()?;
        let a = write_pair(dir.path(), "a", "a.example")?;
        let b = write_pair(dir.path(), "b", "b.example")?;
        let crossed = CertKeyPaths {
            cert: a.cert.clone(),
            key: b.key.clone(),
        };

        let err = ServerKey::load(&crossed, &provider()).err();
        let Some(err @ Error::KeyMismatch { .. }) = err else {
            panic!("expected KeyMismatch, got {err:?}");
        };
        let message = err.to_string();
        assert!(message.contains(&*a.cert.to_string_lossy()), "{message}");
        assert!(message.contains(&*b.key.to_string_lossy()), "{message}");
        Ok(())
    }

    #[test]
    fn garbage_certificate_is_invalid() -> TestResult {
        let dir = tempfile::tempdir()?;
        let paths = write_pair(dir.path(), "a", "a.example")?;
        std::fs::write(
            &paths.cert,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )?;

        let err = ServerKey::load(&paths, &provider()).err();
        assert!(
            matches!(&err, Some(Error::InvalidCertificate { path, .. }) if *path == paths.cert),
            "{err:?}"
        );
        Ok(())
    }
}
