//! Tests for [`ServerTls`]: loading, self-signed fallback, SNI selection through real
//! in-memory handshakes, reload, and protocol versions.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, ProtocolVersion, ServerConnection};

use super::*;
use crate::test_support::{TestResult, certificate_at, client_trusting, handshake, write_pair};
use crate::{Verification, client_config};

fn options(data_dir: &Path) -> ServerTlsOptions {
    ServerTlsOptions {
        cert: None,
        key: None,
        extra: Vec::new(),
        data_dir: data_dir.to_owned(),
        hostname: "mx.example.org".to_owned(),
    }
}

fn with_default(data_dir: &Path, paths: &CertKeyPaths) -> ServerTlsOptions {
    ServerTlsOptions {
        cert: Some(paths.cert.clone()),
        key: Some(paths.key.clone()),
        ..options(data_dir)
    }
}

/// Connects `client` to `server` as `sni` (or without SNI when `None`, still verifying
/// against `verify_as`), returning the certificate the client received.
fn peer_certificate(
    mut client: ClientConfig,
    server: &ServerTls,
    sni: Option<&'static str>,
    verify_as: &'static str,
) -> Result<CertificateDer<'static>, Box<dyn std::error::Error>> {
    client.enable_sni = sni.is_some();
    let name = ServerName::try_from(sni.unwrap_or(verify_as))?;
    let mut client = ClientConnection::new(Arc::new(client), name)?;
    let mut server = ServerConnection::new(server.server_config())?;
    handshake(&mut client, &mut server)?;
    let chain = client.peer_certificates().ok_or("no peer certificates")?;
    Ok(chain.first().ok_or("empty peer chain")?.clone())
}

#[test]
fn self_signed_is_generated_then_reused() -> TestResult {
    let data = tempfile::tempdir()?;
    let first = ServerTls::load(&options(data.path()))?;
    assert!(first.is_self_signed());
    let second = ServerTls::load(&options(data.path()))?;
    assert_eq!(first.default_certificate_der(), second.default_certificate_der());
    Ok(())
}

#[test]
fn provided_pair_is_loaded() -> TestResult {
    let dir = tempfile::tempdir()?;
    let pair = write_pair(dir.path(), "a", "a.example")?;
    let tls = ServerTls::load(&with_default(dir.path(), &pair))?;
    assert!(!tls.is_self_signed());
    assert_eq!(tls.default_certificate_der(), certificate_at(&pair.cert)?);
    // A provided pair means no self-signed files are written.
    assert!(!dir.path().join("tls").exists());
    Ok(())
}

#[test]
fn half_a_pair_names_the_missing_half() -> TestResult {
    let dir = tempfile::tempdir()?;
    let pair = write_pair(dir.path(), "a", "a.example")?;

    let only_cert = ServerTlsOptions {
        key: None,
        ..with_default(dir.path(), &pair)
    };
    let err = ServerTls::load(&only_cert).err();
    assert!(matches!(
        &err,
        Some(Error::MissingPair {
            which: PairMember::PrivateKey
        })
    ));
    assert!(err.map(|e| e.to_string()).unwrap_or_default().contains("private key"));

    let only_key = ServerTlsOptions {
        cert: None,
        ..with_default(dir.path(), &pair)
    };
    assert!(matches!(
        ServerTls::load(&only_key),
        Err(Error::MissingPair {
            which: PairMember::Certificate
        })
    ));
    Ok(())
}

#[test]
fn mismatched_key_is_rejected() -> TestResult {
    let dir = tempfile::tempdir()?;
    let a = write_pair(dir.path(), "a", "a.example")?;
    let b = write_pair(dir.path(), "b", "b.example")?;
    let crossed = ServerTlsOptions {
        cert: Some(a.cert.clone()),
        key: Some(b.key.clone()),
        ..options(dir.path())
    };
    assert!(matches!(
        ServerTls::load(&crossed),
        Err(Error::KeyMismatch { cert, key }) if cert == a.cert && key == b.key
    ));
    Ok(())
}

#[test]
fn bad_extra_pair_fails_the_load() -> TestResult {
    let dir = tempfile::tempdir()?;
    let a = write_pair(dir.path(), "a", "a.example")?;
    let b = write_pair(dir.path(), "b", "b.example")?;
    let options = ServerTlsOptions {
        extra: vec![CertKeyPaths {
            cert: b.cert,
            key: dir.path().join("missing-key.pem"),
        }],
        ..with_default(dir.path(), &a)
    };
    assert!(matches!(ServerTls::load(&options), Err(Error::Io { path, .. }) if path.ends_with("missing-key.pem")));
    Ok(())
}

#[test]
fn sni_picks_the_matching_certificate() -> TestResult {
    let dir = tempfile::tempdir()?;
    let a = write_pair(dir.path(), "a", "a.example")?;
    let b = write_pair(dir.path(), "b", "b.example")?;
    let tls = ServerTls::load(&ServerTlsOptions {
        extra: vec![b.clone()],
        ..with_default(dir.path(), &a)
    })?;
    let (a_der, b_der) = (certificate_at(&a.cert)?, certificate_at(&b.cert)?);
    let trusting_both = Arc::unwrap_or_clone(client_trusting(&[a_der.clone(), b_der.clone()])?);

    let received = peer_certificate(trusting_both.clone(), &tls, Some("b.example"), "b.example")?;
    assert_eq!(received, b_der);
    let received = peer_certificate(trusting_both.clone(), &tls, Some("a.example"), "a.example")?;
    assert_eq!(received, a_der);
    // Without SNI the default (first) certificate is offered.
    let received = peer_certificate(trusting_both, &tls, None, "a.example")?;
    assert_eq!(received, a_der);
    Ok(())
}

#[test]
fn unknown_sni_falls_back_to_the_default() -> TestResult {
    let dir = tempfile::tempdir()?;
    let a = write_pair(dir.path(), "a", "a.example")?;
    let b = write_pair(dir.path(), "b", "b.example")?;
    let tls = ServerTls::load(&ServerTlsOptions {
        extra: vec![b],
        ..with_default(dir.path(), &a)
    })?;
    let any = Arc::unwrap_or_clone(client_config(Verification::Opportunistic, None)?);
    let received = peer_certificate(any, &tls, Some("c.example"), "c.example")?;
    assert_eq!(received, certificate_at(&a.cert)?);
    Ok(())
}

#[test]
fn reload_picks_up_a_new_certificate_and_keeps_it_on_failure() -> TestResult {
    let dir = tempfile::tempdir()?;
    let pair = write_pair(dir.path(), "live", "a.example")?;
    let tls = ServerTls::load(&with_default(dir.path(), &pair))?;
    let config = tls.server_config();
    let old = tls.default_certificate_der();

    let replacement = write_pair(dir.path(), "next", "a.example")?;
    std::fs::copy(&replacement.cert, &pair.cert)?;
    std::fs::copy(&replacement.key, &pair.key)?;
    tls.reload()?;
    let new = certificate_at(&replacement.cert)?;
    assert_ne!(old, new);
    assert_eq!(tls.default_certificate_der(), new);
    // The config built before the reload serves the new certificate.
    assert!(Arc::ptr_eq(&config, &tls.server_config()));
    let trusting_new = Arc::unwrap_or_clone(client_trusting(std::slice::from_ref(&new))?);
    assert_eq!(
        peer_certificate(trusting_new, &tls, Some("a.example"), "a.example")?,
        new
    );

    std::fs::write(&pair.key, "garbage")?;
    assert!(matches!(tls.reload(), Err(Error::NoPrivateKey { path }) if path == pair.key));
    assert_eq!(tls.default_certificate_der(), new);
    Ok(())
}

#[test]
fn clones_share_reloads() -> TestResult {
    let dir = tempfile::tempdir()?;
    let pair = write_pair(dir.path(), "live", "a.example")?;
    let tls = ServerTls::load(&with_default(dir.path(), &pair))?;
    let clone = tls.clone();
    let replacement = write_pair(dir.path(), "next", "a.example")?;
    std::fs::copy(&replacement.cert, &pair.cert)?;
    std::fs::copy(&replacement.key, &pair.key)?;
    tls.reload()?;
    assert_eq!(clone.default_certificate_der(), certificate_at(&replacement.cert)?);
    Ok(())
}

/// Connects with a client limited to `version`, returning what was negotiated.
fn negotiate(
    tls: &ServerTls,
    version: &'static rustls::SupportedProtocolVersion,
) -> Result<Option<ProtocolVersion>, Box<dyn std::error::Error>> {
    let client = ClientConfig::builder_with_provider(crate::provider())
        .with_protocol_versions(&[version])?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(crate::danger::AcceptAnyServerCertificate::new(
            crate::provider().signature_verification_algorithms,
        )))
        .with_no_client_auth();
    let mut client = ClientConnection::new(Arc::new(client), ServerName::try_from("mx.example.org")?)?;
    let mut server = ServerConnection::new(tls.server_config())?;
    handshake(&mut client, &mut server)?;
    Ok(server.protocol_version())
}

#[test]
fn tls12_and_tls13_clients_are_served() -> TestResult {
    let data = tempfile::tempdir()?;
    let tls = ServerTls::load(&options(data.path()))?;
    assert_eq!(
        negotiate(&tls, &rustls::version::TLS12)?,
        Some(ProtocolVersion::TLSv1_2)
    );
    assert_eq!(
        negotiate(&tls, &rustls::version::TLS13)?,
        Some(ProtocolVersion::TLSv1_3)
    );
    Ok(())
}

#[test]
fn tls10_client_hello_is_refused() -> TestResult {
    let data = tempfile::tempdir()?;
    let tls = ServerTls::load(&options(data.path()))?;
    let mut server = ServerConnection::new(tls.server_config())?;

    // A minimal TLS 1.0 ClientHello: version 3.1, a zero random, no session id, one
    // cipher suite (TLS_RSA_WITH_AES_128_CBC_SHA), null compression, no extensions.
    let mut hello = vec![0x03, 0x01];
    hello.extend([0; 32]);
    hello.extend([0x00, 0x00, 0x02, 0x00, 0x2f, 0x01, 0x00]);
    let mut handshake_message = vec![0x01, 0x00, 0x00, u8::try_from(hello.len())?];
    handshake_message.extend(hello);
    let mut record = vec![0x16, 0x03, 0x01, 0x00, u8::try_from(handshake_message.len())?];
    record.extend(handshake_message);

    server.read_tls(&mut record.as_slice())?;
    let result = server.process_new_packets();
    assert!(matches!(result, Err(rustls::Error::PeerIncompatible(_))), "{result:?}");
    Ok(())
}
