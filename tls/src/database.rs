//! The client side toward a database: what libpq's `sslmode` values `require`,
//! `verify-ca` and `verify-full` mean, as rustls configs. tokio-postgres parses none of
//! the verifying modes, so herald reads them from the URL and builds the verifier here.

use std::path::Path;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::danger::AcceptAnyServerCertificate;
use crate::{Error, PROTOCOL_VERSIONS, pem, provider};

/// How much a connection to the database trusts the server's certificate, as libpq's
/// `sslmode` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatabaseVerification {
    /// `require` (and `prefer`) without a root certificate: encrypt, authenticate nothing.
    Encrypt,
    /// `verify-ca`, or `require` with a root certificate: the chain must lead to a trusted
    /// root; the name is not checked.
    Chain,
    /// `verify-full`: the chain and the host name both.
    Full,
}

/// The client config for `mode`, trusting the certificates in `root_cert` (libpq's
/// `sslrootcert`) or, without one, the webpki roots.
///
/// # Errors
///
/// When `root_cert` cannot be read or holds no usable certificate.
pub fn database_client_config(
    mode: DatabaseVerification,
    root_cert: Option<&Path>,
) -> Result<Arc<ClientConfig>, Error> {
    let provider = provider();
    let algorithms = provider.signature_verification_algorithms;
    let builder = ClientConfig::builder_with_provider(provider.clone()).with_protocol_versions(PROTOCOL_VERSIONS)?;
    let config = match mode {
        DatabaseVerification::Encrypt => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyServerCertificate::new(algorithms)))
            .with_no_client_auth(),
        DatabaseVerification::Full => builder.with_root_certificates(roots(root_cert)?).with_no_client_auth(),
        DatabaseVerification::Chain => {
            let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots(root_cert)?), provider)
                .build()
                .map_err(|source| Error::Verifier(source.to_string()))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(ChainOnly { inner }))
                .with_no_client_auth()
        }
    };
    Ok(Arc::new(config))
}

/// The certificates of `root_cert`, or the webpki roots without one.
fn roots(root_cert: Option<&Path>) -> Result<RootCertStore, Error> {
    let Some(path) = root_cert else {
        return Ok(RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        });
    };
    let mut roots = RootCertStore::empty();
    for certificate in pem::read_certificates(path)? {
        roots.add(certificate).map_err(|source| Error::InvalidCertificate {
            path: path.to_owned(),
            source,
        })?;
    }
    Ok(roots)
}

/// `verify-ca`: the web PKI's verification, except that a certificate for another name
/// passes. Everything else (expiry, an unknown issuer, a bad signature) still fails.
#[derive(Debug)]
struct ChainOnly {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
