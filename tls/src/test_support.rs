//! Helpers shared by the unit tests: certificate generation and an in-memory handshake.

use std::path::Path;
use std::sync::Arc;

use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::{ClientConfig, ClientConnection, ConnectionCommon, RootCertStore, ServerConnection};

use crate::{CertKeyPaths, PROTOCOL_VERSIONS, provider};

/// The result type of tests that use `?`.
pub(crate) type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The most flights any handshake here needs, with margin; more means it is stuck.
const HANDSHAKE_ROUNDS_MAX: usize = 10;

/// A self-signed certificate for `name`, and its PKCS#8 key, both PEM. The name is also
/// the subject CN so that trust anchors for different names have different subjects.
pub(crate) fn generate_pem(name: &str) -> Result<(String, String), rcgen::Error> {
    let mut params = CertificateParams::new(vec![name.to_owned()])?;
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, name);
    params.distinguished_name = subject;
    let key = KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Writes a fresh pair for `name` to `<dir>/<stem>-cert.pem` and `<dir>/<stem>-key.pem`.
pub(crate) fn write_pair(dir: &Path, stem: &str, name: &str) -> Result<CertKeyPaths, Box<dyn std::error::Error>> {
    let (cert_pem, key_pem) = generate_pem(name)?;
    let paths = CertKeyPaths {
        cert: dir.join(format!("{stem}-cert.pem")),
        key: dir.join(format!("{stem}-key.pem")),
    };
    std::fs::write(&paths.cert, cert_pem)?;
    std::fs::write(&paths.key, key_pem)?;
    Ok(paths)
}

/// The first certificate in the PEM file at `path`.
pub(crate) fn certificate_at(path: &Path) -> Result<CertificateDer<'static>, Box<dyn std::error::Error>> {
    Ok(CertificateDer::from_pem_file(path)?)
}

/// A client config trusting exactly `roots`.
pub(crate) fn client_trusting(
    roots: &[CertificateDer<'static>],
) -> Result<Arc<ClientConfig>, Box<dyn std::error::Error>> {
    let mut store = RootCertStore::empty();
    for root in roots {
        store.add(root.clone())?;
    }
    let config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(PROTOCOL_VERSIONS)?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Runs a handshake by moving bytes between the two connections in memory until both are
/// done, returning the first error either side reports.
pub(crate) fn handshake(client: &mut ClientConnection, server: &mut ServerConnection) -> Result<(), rustls::Error> {
    for _ in 0..HANDSHAKE_ROUNDS_MAX {
        if !client.is_handshaking() && !server.is_handshaking() {
            return Ok(());
        }
        transfer(&mut **client, &mut **server)?;
        server.process_new_packets()?;
        transfer(&mut **server, &mut **client)?;
        client.process_new_packets()?;
    }
    Err(rustls::Error::General("handshake did not finish".to_owned()))
}

/// Moves every pending TLS record from `from` to `to`.
fn transfer<A, B>(from: &mut ConnectionCommon<A>, to: &mut ConnectionCommon<B>) -> Result<(), rustls::Error> {
    let as_rustls = |error: std::io::Error| rustls::Error::General(error.to_string());
    let mut bytes = Vec::new();
    while from.wants_write() {
        from.write_tls(&mut bytes).map_err(as_rustls)?;
    }
    let mut unread = bytes.as_slice();
    while !unread.is_empty() {
        to.read_tls(&mut unread).map_err(as_rustls)?;
    }
    Ok(())
}
