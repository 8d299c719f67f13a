//! A certificate verifier that authenticates nothing, for opportunistic outbound TLS.
//!
//! It lives in its own module, named for what it is, so that every use is easy to find.

use rustls::DigitallySignedStruct;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{Error, SignatureScheme};

/// Accepts any server certificate, but still checks that the handshake was signed by the
/// key in the certificate presented. That check is cheap, keeps the handshake well-formed,
/// and means a peer cannot present a certificate (say, the real MX host's) whose key it
/// does not hold; it does not stop a peer presenting a certificate of its own.
#[derive(Debug)]
pub(crate) struct AcceptAnyServerCertificate {
    algorithms: WebPkiSupportedAlgorithms,
}

impl AcceptAnyServerCertificate {
    /// A verifier checking signatures with the provider's `algorithms`.
    pub(crate) fn new(algorithms: WebPkiSupportedAlgorithms) -> Self {
        Self { algorithms }
    }
}

impl ServerCertVerifier for AcceptAnyServerCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
