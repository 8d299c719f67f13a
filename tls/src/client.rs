//! The outbound side: rustls client configs for delivering to remote MX hosts.

use std::path::Path;
use std::sync::Arc;

use rustls::{ClientConfig, RootCertStore};

use crate::danger::AcceptAnyServerCertificate;
use crate::{Error, PROTOCOL_VERSIONS, pem, provider};

/// How much an outbound connection trusts the server's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// Encrypt, but accept any certificate. This is what SMTP between MX hosts does in
    /// practice (RFC 7435 opportunistic security): many MX hosts present self-signed or
    /// mismatched certificates, and refusing them would push the mail back to plaintext.
    /// The handshake signatures are still checked, so the peer must hold the key of the
    /// certificate it presents.
    Opportunistic,
    /// Verify the certificate chain and name against the webpki roots and any extra CA
    /// file, as for MTA-STS or a configured smarthost.
    Required,
}

/// Builds the client config for `mode`.
///
/// `extra_roots` is a PEM file of additional trust anchors (the `[delivery] ca_file`
/// setting), added to the webpki roots in [`Verification::Required`] mode. It is ignored
/// in [`Verification::Opportunistic`] mode, which trusts every certificate anyway.
///
/// # Errors
///
/// In `Required` mode, when `extra_roots` cannot be read, holds no PEM certificate, or
/// holds a certificate that cannot serve as a trust anchor.
pub fn client_config(mode: Verification, extra_roots: Option<&Path>) -> Result<Arc<ClientConfig>, Error> {
    let provider = provider();
    let algorithms = provider.signature_verification_algorithms;
    let builder = ClientConfig::builder_with_provider(provider).with_protocol_versions(PROTOCOL_VERSIONS)?;
    let config = match mode {
        Verification::Opportunistic => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyServerCertificate::new(algorithms)))
            .with_no_client_auth(),
        Verification::Required => builder
            .with_root_certificates(root_store(extra_roots)?)
            .with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// The webpki roots plus every certificate in `extra_roots`.
fn root_store(extra_roots: Option<&Path>) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    if let Some(path) = extra_roots {
        for certificate in pem::read_certificates(path)? {
            roots.add(certificate).map_err(|source| Error::InvalidCertificate {
                path: path.to_owned(),
                source,
            })?;
        }
        tracing::debug!(ca_file = %path.display(), "added extra trust anchors");
    }
    Ok(roots)
}

/// Whether the PEM chain at `path` is one a receiver would trust for `hostname` now:
/// valid today, for that name, and chaining to the webpki roots. The answer says what is
/// wrong, for the deliverability insights.
pub fn check_certificate(path: &Path, hostname: &str) -> Result<(), String> {
    let chain = pem::read_certificates(path).map_err(|error| error.to_string())?;
    let Some((end_entity, intermediates)) = chain.split_first() else {
        return Err(format!("{} holds no certificate", path.display()));
    };
    let roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    use rustls::client::danger::ServerCertVerifier as _;
    let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .map_err(|error| error.to_string())?;
    let name = rustls::pki_types::ServerName::try_from(hostname.to_owned()).map_err(|error| error.to_string())?;
    verifier
        .verify_server_cert(
            end_entity,
            intermediates,
            &name,
            &[],
            rustls::pki_types::UnixTime::now(),
        )
        .map(drop)
        .map_err(|error| format!("{} is not trusted for {hostname}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{TestResult, handshake, write_pair};
    use crate::{ServerTls, ServerTlsOptions};
    use rustls::pki_types::ServerName;
    use rustls::{CertificateError, ClientConnection, ServerConnection};

    /// A server with a fresh self-signed certificate for `mx.example.org`, and the
    /// directory holding its files (kept alive by the caller).
    fn self_signed_server() -> Result<(ServerTls, tempfile::TempDir), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let tls = ServerTls::load(&ServerTlsOptions {
            cert: None,
            key: None,
            extra: Vec::new(),
            data_dir: dir.path().to_owned(),
            hostname: "mx.example.org".to_owned(),
        })?;
        Ok((tls, dir))
    }

    fn connect(config: Arc<ClientConfig>, server: &ServerTls) -> Result<(), rustls::Error> {
        let name = ServerName::try_from("mx.example.org").map_err(|error| rustls::Error::General(error.to_string()))?;
        let mut client = ClientConnection::new(config, name)?;
        let mut server = ServerConnection::new(server.server_config())?;
        handshake(&mut client, &mut server)
    }

    #[test]
    fn opportunistic_accepts_self_signed() -> TestResult {
        let (server, _dir) = self_signed_server()?;
        connect(client_config(Verification::Opportunistic, None)?, &server)?;
        Ok(())
    }

    #[test]
    fn required_rejects_self_signed() -> TestResult {
        let (server, _dir) = self_signed_server()?;
        let result = connect(client_config(Verification::Required, None)?, &server);
        assert!(
            matches!(
                result,
                Err(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer))
            ),
            "{result:?}"
        );
        Ok(())
    }

    #[test]
    fn required_accepts_certificate_from_ca_file() -> TestResult {
        let (server, dir) = self_signed_server()?;
        let ca_file = dir.path().join("tls/self-signed-cert.pem");
        connect(client_config(Verification::Required, Some(&ca_file))?, &server)?;
        Ok(())
    }

    #[test]
    fn required_still_checks_the_name() -> TestResult {
        let (server, dir) = self_signed_server()?;
        let ca_file = dir.path().join("tls/self-signed-cert.pem");
        let config = client_config(Verification::Required, Some(&ca_file))?;
        let mut client = ClientConnection::new(config, ServerName::try_from("other.example")?)?;
        let mut server = ServerConnection::new(server.server_config())?;
        let result = handshake(&mut client, &mut server);
        assert!(
            matches!(
                result,
                Err(rustls::Error::InvalidCertificate(
                    CertificateError::NotValidForNameContext { .. }
                ))
            ),
            "{result:?}"
        );
        Ok(())
    }

    #[test]
    fn ca_file_errors_name_the_file() -> TestResult {
        let dir = tempfile::tempdir()?;
        let missing = dir.path().join("missing.pem");
        let err = client_config(Verification::Required, Some(&missing)).err();
        assert!(matches!(err, Some(Error::Io { path, .. }) if path == missing));

        let pair = write_pair(dir.path(), "a", "a.example")?;
        let err = client_config(Verification::Required, Some(&pair.key)).err();
        assert!(matches!(err, Some(Error::NoCertificates { path }) if path == pair.key));
        Ok(())
    }
}
